// The task graph of one training iteration for strategies whose MoE layers follow the
// gate -> dispatch all-to-all -> expert FFN -> combine all-to-all pattern: EP, the balanced oracle,
// SmartMoE, FlexMoE and FSSDP (which adds sparse collectives). Built once per run; each iteration only changes
// durations, so a 1,000-iteration run builds one graph.
//
// Per GPU g there are in-order resources compute[g], a2a[g] (token all-to-alls), dp[g]
// (data-parallel gradient reductions, overlapping backward as Megatron/DeepSpeed do) and, with
// sparse collectives, sparse[g] (FSSDP's spAG/spRS). Per micro-batch (grad_accum of them, one after
// another), per block b:
//   forward : attn_fwd[g] -> (MoE) router[g] -> [calibration spAG(all)] -> dispatch(all)
//             -> expert_fwd[g] -> combine(all) -> unpermute[g];   dense block: dense_ffn_fwd[g]
//             spAG(all) of an MoE layer is issued when the attention before it starts, so it runs
//             concurrently with that attention; expert_fwd waits for it.
//   LM head : head_fwd[g], head_bwd[g]
//   backward, blocks reversed: unpermute_bwd[g] -> combine_grad(all) -> expert_bwd[g]
//             -> dispatch_grad(all) -> router_bwd[g] -> attn_bwd[g];
//             spRS(all) of an MoE layer right after its expert backward (overlapping the attention
//             backward); with re-materialization a second spAG is issued when the attention backward
//             preceding the layer (in backward order) starts; after the last micro-batch, block b's
//             dense gradients are all-reduced (ring) on dp[*] as soon as every GPU finished attn_bwd,
//             followed on dp[*] by the MoE layer's expert-gradient all-reduces, if any: EP replica
//             sets (ep_size < N) or FlexMoE's per-expert replica groups (replica_allreduce).
//   re-shard migration (all) before everything, optimizer[g] after everything.
// With FasterMoE's shadowing (`shadow`), as its smart schedule issues it (fastmoe
// cuda/fastermoe/smart_schedule.h): forward, the shadowed experts' parameters are broadcast
// (shadow_bcast(all)) on the all-to-all stream right after the dispatch; expert_fwd[g] needs only
// the dispatch, then each GPU copies the broadcast parameters into its expert buffer (copy[g]) and
// computes its own tokens of the shadowed experts (shadow_fwd[g]); the combine follows expert_fwd
// (shadow outputs are local) and the broadcast (stream order). Backward: shadow_bwd[g] needs no
// all-to-all and runs first, its gradients are copied out (copy[g]) and reduced to the owners
// (shadow_reduce(all)), which FasterMoE issues on the compute stream: expert_bwd[g] waits for the
// reduce and the combine_grad. Both per micro-batch. In the breakdown the broadcast counts as
// exposed_spag and the reduce as exposed_sprs (a sparse all-gather / reduce of whole experts),
// only for the part not overlapped by compute.
// With FSSDP, a materialize copy[g] (compute) precedes each expert_fwd that uses freshly gathered
// copies (the received parameters copied into the layer's contiguous expert-weight buffer), and a
// gradient copy[g] follows each expert_bwd whose copies' gradients spRS returns (packed into the
// send buffer). `single_queue` puts the sparse collectives on the all-to-all stream: one
// communicator queue, as the Hecate runtime hands every communication task to NCCL from one queue,
// so a layer's dispatch waits for its spAG and a dispatch_grad for its spRS.
//
// Communication tasks run on a network model: the analytic tier's coflow sharing
// (network/coflow_network.hpp) or the flow tier; on both, collectives in flight at once share the
// links they have in common. Compute tasks run for their cost-model duration, longer while
// communication is active on their GPU (engine interference, Context::interference).
// A collective task spans every participant's resource, so it starts when the slowest participant
// reaches it: the straggler effect emerges from the graph, it is not added by hand.
//
// Breakdown: the critical path is walked back from the last task. A compute task slowed by
// communication beside it is charged its own duration, and the excess to overlap_slowdown. When the path enters a
// communication task that runs beside compute (spAG, spRS, dense all-reduce), only the part that
// outlasted the compute it overlapped is charged to it ("exposed"); the walk then continues along the
// compute that ran meanwhile, so the components still sum to the iteration time. The overlapped part
// is reported as hidden communication.
//
// Micro-batches: with a trace that records them (micro-batch axis, LayerPlan::micro), micro-batch mb
// routes its own counts under the iteration's placement, so every micro-batch has its own expert
// durations and all-to-all byte matrices, and EP's straggler is the busiest GPU of each micro-batch:
// sum over micro-batches of max over GPUs >= max over GPUs of the sum, the understatement of routing
// counts / grad_accum gone. Without the axis (LayerPlan::micro empty) every micro-batch routes the
// iteration's counts divided by grad_accum, as traces before v1.1 imply. Placement-level
// communication (spAG/spRS, calibration, re-shard, replica all-reduces) is the iteration's either way;
// FasterMoE's shadows, decided per forward call, come per micro-batch.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "collective/analytic_network.hpp"
#include "engine/simulation.hpp"
#include "engine/task_graph.hpp"
#include "network/coflow_network.hpp"
#include "network/flow_network.hpp"
#include "strategy/path_breakdown.hpp"
#include "strategy/strategy.hpp"

namespace hs::strategy {

// What a strategy decided for one MoE layer in one iteration (whole-iteration token counts).
struct LayerPlan {
  std::vector<std::vector<double>> expert_tokens;  // [gpu] -> tokens of each expert instance it runs
  std::vector<double> dispatch_bytes;              // n x n, row = source GPU
  std::vector<double> received_tokens;             // [gpu] tokens it computes (for activation memory)
  // Sparse collectives of this layer (seconds for the analytic tier, transfers for the flow tier;
  // FSSDP only).
  double spag = 0, sprs = 0, calibration_spag = 0;
  collective::Coflow spag_flows, sprs_flows, calibration_flows;
  // Latency each adds beyond its largest route latency (a chain's hops: collective::sparse_finish).
  double spag_latency = 0, sprs_latency = 0, calibration_latency = 0;
  std::vector<double> copy_bytes;  // [gpu] parameter bytes of the copies it holds (empty = none)
  // FasterMoE: [gpu] -> tokens of each expert (all E) it computes locally as a shadow (empty = none);
  // spag_flows / sprs_flows then carry the shadows' broadcast and gradient reduce.
  std::vector<std::vector<double>> shadow_tokens;
  // FlexMoE: the replica groups' expert-gradient all-reduces of this layer (every replicated
  // expert's ring among its holders, all at once; collective::concurrent_ring_flows) and the ring
  // step latencies beyond the first. Used with MoeGraphOptions::replica_allreduce.
  collective::Coflow replica_grad_flows;
  double replica_grad_latency = 0;
  // The lower bound (`bound`): [gpu] expert FFN seconds per micro-batch, forward and backward, used
  // instead of the cost model on expert_tokens (empty = from expert_tokens, every other strategy).
  std::vector<double> expert_fwd_seconds, expert_bwd_seconds;
  // Traces with a micro-batch axis: one entry per micro-batch (grad_accum of them), routed under this
  // iteration's placement. In an entry expert_tokens, dispatch_bytes, received_tokens, shadow_tokens
  // and (the bound) expert_fwd/bwd_seconds are that micro-batch's own, not divided by grad_accum;
  // FasterMoE, which decides its shadows per micro-batch, also sets there the shadows' broadcast and
  // reduce (spag_flows, sprs_flows) and copy_bytes; every other field is read from the iteration's
  // plan. Empty: every micro-batch routes this plan's iteration counts / grad_accum.
  std::vector<LayerPlan> micro;
};

struct MoeGraphOptions {
  // EP groups of ep_size consecutive GPUs; with ep_size < n the groups are data-parallel replicas
  // and each MoE layer's expert gradients are all-reduced across the GPUs that hold the same
  // experts (ring per replica set, all sets at once), after the layer's backward.
  int ep_size = 0;  // 0 = all GPUs
  double expert_grad_bytes_per_gpu_layer = 0;
  // Parameters each GPU updates in the optimizer step (uniform; FSSDP passes per-GPU counts to run()).
  double optimizer_params_per_gpu = 0;
  bool sparse = false;           // FSSDP sparse collectives
  bool rematerialize = false;    // FSSDP: spAG again for backward (and spRS per micro-batch)
  bool calibration = false;      // FSSDP: calibration-stage spAG after the gate
  bool migrations = false;       // a migration task before the iteration (SmartMoE; FSSDP has one anyway)
  bool single_queue = false;     // FSSDP: sparse collectives on the all-to-all stream (one NCCL queue)
  bool shadow = false;           // FasterMoE: shadow broadcast, local shadow compute, gradient reduce
  // FlexMoE: each MoE layer's replica-group gradient all-reduce (LayerPlan::replica_grad_flows) on
  // the dp stream after the block's dense all-reduce, overlapping the rest of backward.
  bool replica_allreduce = false;
};

struct IterationExtras {
  double reshard = 0;                        // seconds, before the iteration
  collective::Coflow reshard_flows;          // the same migration for the flow tier
  std::vector<double> optimizer_params;      // per GPU; empty = options' uniform count
};

class MoeIterationGraph {
 public:
  MoeIterationGraph(const Context& ctx, MoeGraphOptions opt);
  // Runs one iteration. `plans` has one entry per MoE layer. Fills time, breakdown, bottlenecks;
  // the caller fills memory.
  IterationResult run(std::span<const LayerPlan> plans, const IterationExtras& extras = {},
                      TimelineSink* timeline = nullptr);
  // The same run a layer at a time, for a strategy that routes one layer into a plan it re-uses:
  // begin(), then layer(l, plan of layer l) for l = 0, 1, ..., L-1 in that order (what run() does
  // with plans[l]; the plan is not read after layer() returns), then finish(). `plans` of finish()
  // may be empty unless the graph has replica all-reduces (MoeGraphOptions::replica_allreduce),
  // which read every layer's plan there.
  void begin();
  void layer(int l, const LayerPlan& plan);
  IterationResult finish(const IterationExtras& extras = {}, TimelineSink* timeline = nullptr,
                         std::span<const LayerPlan> plans = {});
  collective::AnalyticNetwork& network() { return net_; }
  // The algorithm the all-reduce planner picked for the per-block dense gradients.
  const char* dense_allreduce_algo() const { return dense_algo_; }

 private:
  enum class Kind : uint8_t {
    kAttnFwd, kAttnBwd, kDenseFwd, kDenseBwd, kRouter, kUnpermute, kRouterBwd, kUnpermuteBwd,
    kExpertFwd, kExpertBwd, kDispatch, kCombine, kCombineGrad, kDispatchGrad, kHeadFwd, kHeadBwd,
    kDpAllReduce, kOptimizer, kSpag, kSprs, kCalibration, kReshard, kCopyIn, kCopyOut,
    kShadowBcast, kShadowReduce, kShadowFwd, kShadowBwd
  };
  struct Info {
    Kind kind;
    int16_t moe_layer;  // index among MoE layers, -1 otherwise
    int32_t gpu;        // -1 for collectives
    int32_t mb;         // micro-batch, -1 outside them (re-shard, optimizer)
  };
  engine::TaskId add(Kind k, int moe_layer, int gpu, std::span<const engine::ResourceId> res, double dur,
                     engine::ModelId model = engine::kFixedModel);
  static Component component(Kind k);
  static const char* kind_name(Kind k);
  void emit(const engine::Simulation& sim, TimelineSink& sink) const;
  static bool overlappable(Kind k) {
    return k == Kind::kSpag || k == Kind::kSprs || k == Kind::kDpAllReduce || k == Kind::kShadowBcast ||
           k == Kind::kShadowReduce;
  }
  static bool communication(Kind k);
  void define_coflows(std::span<const LayerPlan> plans, const IterationExtras& extras);
  void breakdown(const engine::Simulation& sim, const std::vector<double>& mean_fwd,
                 const std::vector<double>& mean_bwd, IterationResult& res) const;

  const Context& ctx_;
  MoeGraphOptions opt_;
  int n_;
  engine::TaskGraph graph_;
  std::vector<Info> info_;
  collective::AnalyticNetwork net_;
  std::unique_ptr<network::FlowNetwork> flow_;      // set on the flow tier; communication tasks use it
  std::unique_ptr<network::CoflowNetwork> coflow_;  // set on the analytic tier
  engine::ModelId comm_model_ = 1;                  // the id Simulation::add_model gives the network
  collective::CoflowLoads block_loads_, emb_loads_, expert_ar_loads_;  // dense all-reduces (analytic tier)
  std::vector<std::vector<engine::TaskId>> copy_in_, copy_out_;  // [layer] -> [k * n + gpu]
  enum class DpKind : uint8_t { kBlock, kExpert, kEmbedding, kReplica };
  struct DpTask { engine::TaskId task; DpKind kind; int layer; };  // layer: MoE layer of a kReplica
  std::vector<DpTask> dp_;
  collective::CoflowLoads loads_, loads_tr_;  // scratch
  // The iteration in progress between begin() and finish(): its result so far, the mean expert
  // seconds over GPUs per [layer * G + micro-batch] (what straggling is measured against) and the
  // slowest all-to-all so far (the bottleneck link's).
  IterationResult res_;
  std::vector<double> mean_fwd_, mean_bwd_, scratch_;
  double worst_a2a_ = -1;
  const char* dense_algo_ = "none";
  int building_mb_ = -1;  // the micro-batch whose tasks the constructor is adding
  std::vector<std::vector<engine::TaskId>> expert_fwd_, expert_bwd_;  // [layer] -> [mb * n + gpu]
  std::vector<std::vector<engine::TaskId>> shadow_fwd_, shadow_bwd_;  // [layer] -> [mb * n + gpu]
  // [layer] -> all-to-all tasks; `transposed` ones carry the combine direction (expert GPU -> source).
  struct A2aTask { engine::TaskId task; bool transposed; };
  std::vector<std::vector<A2aTask>> a2a_;
  std::vector<std::vector<engine::TaskId>> spag_, sprs_, calib_;      // [layer] -> tasks (shadow ones too)
  std::vector<engine::TaskId> optimizer_;
  engine::TaskId reshard_ = engine::kNoTask;
  double default_optimizer_time_ = 0;
  StreamPredecessors prev_;  // of every task, for the breakdown walk
};

}  // namespace hs::strategy
