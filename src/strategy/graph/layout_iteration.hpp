// One training iteration under a parallel layout (layout/parallel_layout.hpp): tensor parallelism
// with sequence parallelism, a pipeline of stages run by the 1F1B schedule, expert parallelism
// inside each stage's EP groups and the distributed optimizer's data-parallel reduce-scatter and
// all-gather. It is the one iteration graph: a run without --layout is the layout tp=1, pp=1
// (strategy::default_layout). A task graph on the engine; the pipeline bubble is not a
// formula, it is the idle time the schedule's dependencies leave on each stage's streams.
//
// Streams per GPU: compute (kernels and, as in Megatron without --tp-comm-overlap, the TP
// collectives that block them), a2a (dispatch / combine), dp (gradient reduce-scatter, parameter
// all-gather), pp_fwd and pp_bwd (activations to the next stage, gradients to the previous one).
// Every task keeps a label (what it is, its pass, micro-batch, block, bucket) from which the
// timeline names it (layout_timeline.cpp); the engine sees only the tag.
//
// Stage s runs blocks [first, last) of the model (ParallelLayout::stage_blocks). One micro-batch's
// forward on stage s, per block:
//   sp on : all-gather(TP) -> attention / tp -> reduce-scatter(TP); dense block: all-gather ->
//           FFN / tp -> reduce-scatter; MoE block: router (s*b/tp tokens) -> dispatch(EP, stage-wide
//           task) -> experts (whole experts, E/ep per GPU) -> combine -> unpermute
//   sp off: attention / tp -> all-reduce(TP) (and FFN / tp -> all-reduce)
// Every TP collective carries the s x b x h activation (act_bytes each) of the TP group: ring
// all-gather / reduce-scatter move (tp-1)/tp of it per GPU, an all-reduce twice that
// (Korthikanti et al. 2022, §4.2.2: sequence parallelism replaces each all-reduce with a
// reduce-scatter + all-gather of the same volume). Backward mirrors the forward (an all-gather's
// gradient is a reduce-scatter and back) with the compute's backward costs; the last stage adds the
// LM head (vocab-parallel, / tp) forward and backward.
// Between stages: after a forward on stage s every GPU sends its s*b*h/tp activation shard to the
// GPU with the same (tp, dp) coordinates on stage s+1 (one task spanning the stage's pp_fwd
// streams); the backward sends the gradient of the same size to stage s-1 on pp_bwd.
// 1F1B (Narayanan et al. 2021, PipeDream-Flush): stage s runs min(pp-s-1, m) warm-up forwards, then
// alternates one forward and one backward, then drains the remaining backwards. With vpp > 1 the
// stage holds vpp model chunks (virtual stages chunk x pp + s) and runs Megatron's interleaved
// schedule (interleaved_1f1b): a micro-batch's activations leave stage pp-1's chunk k for stage 0's
// chunk k+1, so each micro-batch crosses the pipeline vpp times and the bubble shrinks about vpp-fold.
// The schedule is the layout's (ParallelLayout::schedule, pipeline_ops). ZB-H1 (zb_h1) splits each
// backward into B (input gradients: recomputation, TP collectives and all-to-alls, the send to the
// previous stage) and a later W op (the weight-gradient GEMMs of every block, no communication; the
// gradient buckets fill there). DualPipe (dualpipe) runs slots v = chunk x pp + s whose pieces are
// ParallelLayout::piece_of (chunk 0: piece s, chunk 1: piece pp - 1 - s); micro-batches m/2 .. m - 1
// travel chunk 1 from stage pp - 1 to stage 0 (prev_slot / next_slot) and run every MoE layer on the
// mirror of its stage (run() moves the plan's expert work and all-to-alls to the mirrored GPUs,
// ParallelLayout::mirror_rank, and so the plan's sparse collectives, shadows, replica all-reduces and
// migrations: the mirrored stage holds the same experts and copies in the same places, gathers its
// copies for its direction's first micro-batch, m/2, and returns them after its last, m - 1). Its
// paired ops (a forward and the next backward) start once both inputs have arrived and are emitted as
// two coroutines resumed in turn (iteration_builder.cpp, Steps), each up to its next all-to-all, so the
// compute stream interleaves the two chunks and one's all-to-all runs while the other computes. Stage
// s and its mirror pp - 1 - s hold the same two pieces: their DP groups span both (the copies are
// two more data-parallel replicas), so one reduction per pair sums and shards the copies' gradients.
// The blocks of a piece are ParallelLayout::chunk_blocks: the even split, or Megatron's
// pipeline_layout / first and last stage layer counts.
// Tasks are created in an order consistent with every dependency, stage by stage in rounds.
// After its last backward each stage reduce-scatters the dense gradients over its DP groups and the
// expert gradients over its expert-DP groups (one task each on dp, every group's ring at once),
// steps the optimizer on its shard (1/dp of the dense, 1/edp of the expert parameters; DualPipe:
// 1/(2 dp), 1/(2 edp)) and
// all-gathers the updated parameters; without the distributed optimizer it all-reduces and steps
// the whole state. The iteration ends when every stage has.
// Overlap of the distributed optimizer's communication (Megatron-Core's DistributedDataParallel,
// layout keys overlap_grad_reduce / overlap_param_gather, both off by default as in Megatron-Core):
// each model chunk's parameters are in gradient buckets (dense over DP, experts over expert-DP;
// bucket_size parameters, Megatron's default max(40M, 1M x dp); only stage 0's first chunk is split
// into several, as Megatron does: every other chunk is one bucket per buffer). With
// overlap_grad_reduce, during the last micro-batch's backward of a chunk, a bucket's reduce-scatter
// is issued on dp as soon as the backward has produced its last gradients (the head, a block's
// experts, MLP side, attention, the embeddings: see chunk_buckets), so it runs beside the backward
// of earlier blocks and shares the links with the all-to-alls, TP and PP traffic; the optimizer
// waits for every bucket. With overlap_param_gather the all-gathers of the updated parameters
// leave the iteration's end: every bucket's all-gather starts at the iteration's start (the
// previous step's parameters; Megatron-LM's align_param_gather issues all stages' at once), in the
// order the forward uses the buckets, and the first micro-batch's first use of a bucket's
// parameters (and a layer's spAG of its experts) waits for it.
// Sparse collectives (FSSDP inside each stage's EP groups, LayoutSparse): an MoE layer whose plan
// holds copies (spag_flows not empty) gathers them once per iteration, issued with the first
// micro-batch's forward when the attention before the layer starts (one task for the stage, every
// group's spAG at once, on the a2a stream with single_queue, else on a sparse stream of its own);
// each GPU copies the arrived parameters into its expert buffer (compute, before the expert
// forward; the dispatch does not wait for them). After the last micro-batch's expert backward each
// GPU copies its copies' gradients out and the stage's spRS returns them to the owners (same
// stream), which the expert-DP reduction of the stage waits for.
// A split backward (ZB-H1, DualPipe) leaves the experts' weight gradients to its W op: the copies'
// gradient copy-out and spRS (and FlexMoE's replica all-reduce) follow that W, not the B.
// With re-materialization (LayoutSparse::rematerialize, as FSSDP's without a layout) every
// micro-batch's forward gathers the layer's copies again (spAG from when the attention before the
// layer starts), its backward gathers them once more (issued when the op starts for the chunk's
// last block, else when the attention backward of the block above starts) and copies them in
// before the expert backward (before the recomputed expert forward with recompute=full), and each
// micro-batch's expert backward is followed by the gradient copy-out and spRS.
// FasterMoE's shadows (LayoutSparse::shadow), per MoE layer and micro-batch: the shadows' broadcast
// after the dispatch on the a2a stream, copy-in and shadow forward after the regular experts (the
// combine waits for the regular experts only); backward, the shadows' backward and gradient copy-out
// before the regular experts' backward, which waits for their reduce (on the sparse stream).
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "collective/analytic_network.hpp"
#include "engine/simulation.hpp"
#include "engine/task_graph.hpp"
#include "network/coflow_network.hpp"
#include "network/flow_network.hpp"
#include "strategy/deepep_dispatch.hpp"
#include "strategy/layer_plan.hpp"
#include "strategy/graph/path_breakdown.hpp"
#include "strategy/graph/pipeline_phases.hpp"
#include "util/exact_memo.hpp"
#include "layout/parallel_layout.hpp"

namespace hs::strategy {

// Micro-batch order of one stage: (pass, micro-batch, model chunk). A backward is the whole
// backward (input and weight gradients) unless `split`: then it computes the input gradients only
// (B, what the previous stage waits for) and a later `weight` op (W) the weight gradients of the same
// micro-batch and chunk (Qi et al., arXiv 2401.10241 §2). `paired`: a forward that DualPipe runs
// overlapped with the backward that follows it (DeepSeek-V3 report, arXiv 2412.19437 §3.2.1, Fig. 4).
struct PipelineOp {
  bool forward = true;
  int mb = 0;
  int chunk = 0;  // which of the stage's model chunks (ParallelLayout::piece_of)
  bool split = false;
  bool weight = false;
  bool paired = false;
};
std::vector<PipelineOp> one_f_one_b(int stages, int stage, int micro_batches);
// Megatron's interleaved 1F1B with `chunks` (vpp) model chunks per stage (chunks = 1: one_f_one_b).
// The k-th forward runs micro-batch (k / (pp vpp)) pp + k % pp through chunk (k % (pp vpp)) / pp, the
// k-th backward the same micro-batch through chunk vpp - 1 - (k % (pp vpp)) / pp; stage s warms up
// with (pp - s - 1) x 2 + (vpp - 1) x pp forwards (all of them when m == pp), then alternates one
// forward and one backward. Needs m % pp == 0 (resolve_layout checks it).
std::vector<PipelineOp> interleaved_1f1b(int stages, int stage, int micro_batches, int chunks);
// ZB-H1 (Qi et al., arXiv 2401.10241 §3.1, Fig. 3): 1F1B's order of forwards and backwards, every
// backward split into B and W; stage s runs the W of micro-batch k - s after the B of micro-batch k
// (W deferred by s: stage s then holds at most pp micro-batches' activations, the peak 1F1B has
// on stage 0) and the rest at the end, so that in the cool-down the B passes travel up the pipeline
// without waiting for W passes, which fill the stages' waits instead.
std::vector<PipelineOp> zb_h1(int stages, int stage, int micro_batches);
// DualPipe (deepseek-ai/DualPipe, dualpipe.py, DualPipe.step, steps 1-8): micro-batches 0 .. m/2 - 1
// enter at stage 0 (chunk 0: piece s), m/2 .. m - 1 at stage pp - 1 (chunk 1: piece pp - 1 - s).
// With h = pp/2 and r = min(s, pp - 1 - s), in the directions of stage s (its first half's "phase 0"
// is chunk 0, its second half's chunk 1): 2(h - r - 1) forwards of phase 0; r + 1 times a forward of
// each phase; h - r - 1 times B (split) of phase 1, a W, a forward of phase 1; m/2 - pp + r + 1 times
// the pairs F0&B1, F1&B0 (the middle stages run their first F0 and B1 unpaired); h - r - 1 times a
// backward of phase 1 and the pair F1&B0; r + 1 times the backwards of phase 1 and 0 (the later half
// split); h - r - 1 times a W and a split backward of phase 0; the remaining r + 1 W's. W's run in
// the order their B's ran (DualPipe's WeightGradStore is a FIFO).
std::vector<PipelineOp> dualpipe(int stages, int stage, int micro_batches);
// The op order of stage s under the layout's schedule.
std::vector<PipelineOp> pipeline_ops(const workload::ParallelLayout& l, int stage, int micro_batches);

// Per transformer block, forward (backward moves the same): the TP collectives one GPU runs, each on
// `payload` bytes (the s x b x h activation), and the bytes it sends in them on a ring.
struct TpTraffic {
  int collectives = 0;
  bool all_reduce = false;  // sp off: all-reduces; sp on: all-gathers and reduce-scatters
  double payload = 0;
  double sent_per_gpu = 0;
};
TpTraffic tp_traffic(const workload::ModelSpec& m, const workload::ParallelLayout& l, bool moe_block);

// What the last iteration's critical path spent on each kind of layout communication, and the
// bubble that emerged.
struct LayoutStats {
  double tp_comm = 0;      // seconds of TP collectives on the critical path
  double pp_comm = 0;      // of stage-to-stage sends
  double dp_comm = 0;      // of DP reduce-scatter / all-gather (or all-reduce): the exposed part
  double dp_comm_total = 0;  // every DP collective's time, overlapped or not (the largest stage's)
  int dense_buckets = 1;   // gradient buckets of stage 0's first chunk (1 each without overlap_grad_reduce)
  int expert_buckets = 1;
  double bubble = 0;       // mean over stages of the schedule's idle fraction of their first GPU's
                           // compute stream (waits on the stage's own communication and sends excluded)
  PipelinePhases phases;   // stage 0's first GPU's compute stream by op kind (pipeline_phases.hpp)
};

struct LayoutSparse {
  bool single_queue = true;  // spAG / spRS on the all-to-all's stream (one NCCL queue)
  // Re-materialization: copies freed after every micro-batch's forward, gathered again for its
  // backward, their gradients returned (spRS) after every micro-batch's expert backward.
  bool rematerialize = false;
  // FasterMoE's shadows (layout_fastermoe.cpp), per MoE layer and micro-batch from the plan's
  // micro-batch variant: after the dispatch the shadows' broadcast (spag_flows) on the all-to-all
  // stream, beside the owners' expert forward; each GPU then copies the parameters in (copy_bytes)
  // and computes its own tokens of the shadowed experts (shadow_tokens), the combine waiting only for
  // the regular experts. Backward: the shadows' backward and gradient copy-out first, their reduce to
  // the owners (sprs_flows) on the sparse stream, which the regular experts' backward waits for.
  // spag_flows then never gather FSSDP copies.
  bool shadow = false;
};

class LayoutIterationGraph {
 public:
  LayoutIterationGraph(const Context& ctx, const workload::ParallelLayout& layout, LayoutSparse sparse = {});
  // plans: one per MoE layer, routed over all GPUs (only the GPUs of the layer's stage route
  // tokens); spag/sprs flows and copy_bytes where the layer materializes copies; expert seconds per
  // micro-batch from expert_fwd/bwd_seconds where set (the bound), else the cost model on
  // expert_tokens / grad_accum. A plan with `micro` (grad_accum entries: a trace with a micro-batch
  // axis) gives micro-batch mb its own expert seconds / tokens and all-to-all bytes, micro[mb]'s
  // (not divided); the copies stay the iteration plan's. Fills time and breakdown (TP, PP and DP communication are charged to dense_allreduce,
  // the component of non-MoE communication); the caller fills memory.
  // `migrations`, when not empty (SmartMoE's moves of experts with their optimizer state), run as one
  // coflow on every GPU's a2a stream before the iteration's first forward, charged to
  // reshard_migration.
  // A plan with replica_grad_flows (FlexMoE's replicated experts inside the stage's EP groups) has
  // them all-reduced once per iteration, after the stage's last micro-batch's backward of the layer
  // (one task for the stage, every group's rings at once, on dp beside the expert-DP reduction,
  // which waits for it; charged to dense_allreduce where exposed, as without a layout).
  // `extra_step_params`, when not empty, adds per GPU parameters to its optimizer step (FlexMoE's
  // replica instances).
  // The graph is built once and kept while its shape stays (which MoE layers gather copies, whether
  // there are migrations): later iterations only set the expert and copy durations and bind the
  // all-to-alls, spAG / spRS and migrations to this iteration's bytes. A changed shape rebuilds it.
  // With `timeline`, the iteration's tasks are reported to it (layout_timeline.cpp: which GPUs, the
  // names and args).
  IterationResult run(std::span<const LayerPlan> plans, const collective::Coflow& migrations = {},
                      std::span<const double> extra_step_params = {}, TimelineSink* timeline = nullptr);
  // Streams MoE layer l's plan into the next run() (layer_intake.cpp): its expert durations and its
  // all-to-alls (the coflows' link loads on the analytic tier, the transfers on the flow tier, and
  // with `for_timeline` every GPU's dispatch bytes) are taken now, so that the caller may reuse the
  // plan's dispatch_bytes for the next layer: one n x n matrix alive instead of one per layer. run()
  // takes every layer not taken since the last run() from `plans` (whose dispatch_bytes it then
  // does not read for a taken layer); layers are taken in increasing order. The same results as
  // passing every matrix to run().
  void take_layer(int l, const LayerPlan& plan, bool for_timeline);
  const LayoutStats& stats() const { return stats_; }
  // How often run() built the graph (tests: once per distinct shape while at most kKeptShapes
  // shapes alternate).
  int builds() const { return builds_; }
  // The memos (below: runs, all-to-alls, expert seconds) on or off; off by default. They pay where
  // inputs repeat from run to run: a stateful strategy's (FSSDP, SmartMoE, FlexMoE) on a cycling
  // trace. A stateless strategy's iterations are cached by record (strategy/runner.cpp): its runs
  // never repeat, and writing and hashing keys would be pure overhead.
  void set_memo(bool on) { memo_on_ = on; }
  // Runs answered by the run memo, and runs that simulated while it was on.
  long memo_hits() const { return run_memo_.hits(); }
  long memo_misses() const { return run_memo_.misses(); }
  // Graphs of other shapes kept for when their shape comes back (SmartMoE's migrations every
  // period, FlexMoE's replicas, FSSDP's copies come and go): at most this many, the least recently
  // used given up first.
  static constexpr size_t kKeptShapes = 4;

 private:
  // A communication pattern that no load changes (TP collectives, stage-to-stage sends, the DP
  // reductions): its transfers and, once computed, its link loads on the analytic tier.
  struct FixedComm {
    collective::Coflow flows;
    double extra = 0;
    collective::CoflowLoads loads;
    bool loaded = false;
    engine::Traffic traffic = engine::Traffic::kIntraNode;  // set with `loaded` or on the flow tier's first bind
    bool traffic_known = false;
  };
  class Builder;  // iteration_builder.cpp: the graph's construction, step by step
  friend class Builder;
  // What a task is, for the breakdown's statistics: a model chunk's compute, a TP collective, a
  // stage-to-stage send, a DP collective, an all-to-all, a sparse collective, anything else.
  enum Cls : uint8_t { kChunk, kTp, kPp, kDp, kA2a, kSparse, kOther };
  // What a communication task carries, in the order the build bound them (coflow ids follow it).
  enum class Bind : uint8_t { kFixed, kDispatch, kCombine, kSpag, kSprs, kMigration, kReplica, kCalibration };
  struct Binding {
    engine::TaskId task;
    Bind what;
    int index;  // FixedComm index or MoE layer
    int mb;     // the micro-batch whose tasks it belongs to (a layer's all-to-alls per micro-batch)
  };
  // A task whose duration depends on the loads: an expert forward / backward, a copy of the
  // layer's copies (in: parameters, before the expert forward; out: gradients, after the last
  // backward) or FasterMoE's shadows' forward / backward.
  // kOptimizer: a GPU's optimizer step (its stage's step_ plus the run's extra parameters).
  // kExpertBwdInput / kExpertW: the B and W halves of an expert backward (ZB-H1, DualPipe).
  enum class Var : uint8_t {
    kExpertFwd, kExpertBwd, kCopyIn, kCopyOut, kOptimizer, kShadowFwd, kShadowBwd, kExpertBwdInput, kExpertW
  };
  struct VarTask {
    engine::TaskId task;
    Var what;
    int layer, gpu;  // layer: the stage for kOptimizer
    int mb;
  };
  // What a task is, for the timeline: the operation, the pass and micro-batch it belongs to, the
  // block (-1: none), the virtual stage (chunk x pp + stage) and, for DP collectives, the buffer
  // (dense or expert) and gradient bucket (-1: the stage's whole buffer).
  enum class Op : uint8_t {
    kAttention, kDenseFfn, kRouter, kUnpermute, kExperts, kShadowExperts, kCopyIn, kCopyOut, kHead,
    kOptimizer, kTpAllGather, kTpReduceScatter, kTpAllReduce, kDispatch, kCombine, kShadowBcast,
    kShadowReduce, kSpag, kSprs, kReplicaAllReduce, kPpSend, kDpReduceScatter, kDpAllReduce,
    kDpAllGather, kMigration, kCalibration, kMtpProjection
  };
  enum class Pass : uint8_t { kNone, kForward, kBackward, kRecompute, kWeightGrad };  // kWeightGrad: a W op
  struct Label {
    Op op;
    Pass pass;
    bool expert;
    int16_t block, mb, chunk, bucket;
  };
  void build(const std::vector<char>& shape);
  // Makes the graph of `shape` the built one (graph_cache.cpp): kept as it is when the shape stays,
  // else taken back from kept_ when an earlier iteration had that shape, else built.
  void use_shape(const std::vector<char>& shape);
  // Slots (v = chunk x pp + stage): the slot of the previous / next model piece on the path of v's
  // micro-batches (v - 1 / v + 1; DualPipe's chunk 1 runs from stage pp - 1 towards stage 0), -1 at
  // the ends.
  int prev_slot(int v) const;
  int next_slot(int v) const;
  // One routing variant of a MoE layer (the iteration's counts / grad_accum, or one micro-batch's
  // own) as take_layer digested it.
  // A dispatch / combine pair as defined for this iteration.
  struct A2aPair {
    int dispatch_id = -1, combine_id = -1;  // analytic tier: coflows defined on coflow_
    collective::Coflow flows[2];            // flow tier: dispatch, combine
    double extra[2] = {0, 0};
    engine::Traffic traffic = engine::Traffic::kIntraNode;  // both directions: some bytes cross nodes or none
  };
  struct TakenVariant {
    std::vector<double> ef, eb, sf, sb;  // [gpu] expert (and FasterMoE shadow) seconds, fwd / bwd
    double ef_mean = 0, eb_mean = 0;     // over the stage's GPUs
    A2aPair a2a;
    A2aPair mirror;  // DualPipe: the same between the mirrors of the GPUs (micro-batches fed from stage pp - 1)
    std::vector<double> sent, received;  // [gpu] dispatch bytes (for the timeline)
  };
  // Defines the all-to-all pair of `matrix` (per-pair assignment bytes of one micro-batch; plan `p`
  // for DeepEP's expert counts) on this iteration's network, NCCL's all-to-all-v or DeepEP's
  // (layer_intake.cpp); returns both directions' solo times and bottleneck links.
  // `block`: the GPUs [first, second) holding every non-zero entry of `matrix` (the layer's stage).
  collective::AnalyticNetwork::PairTimes define_a2a(const std::vector<double>& matrix, const LayerPlan& p,
                                                    std::pair<int, int> block, A2aPair& out);
  // Starts the iteration's intake (networks, taken_) unless it is open.
  void open_iteration();
  // Reports the simulated iteration's tasks (layout_timeline.cpp).
  void emit_timeline(const engine::Simulation& sim, std::span<const LayerPlan> plans, TimelineSink& sink) const;
  std::string task_name(const Label& l) const;

  const Context& ctx_;
  workload::ParallelLayout layout_;
  LayoutSparse sparse_;
  collective::AnalyticNetwork net_;
  LayoutStats stats_;
  // The built graph and what run() sets on it.
  // [MoE layer] gathers copies, then: migrations, [MoE layer] replica all-reduces, [MoE layer]
  // calibration spAG.
  std::vector<char> shape_;
  int builds_ = 0;
  // A graph of another shape than the one in use: everything build() sets, swapped in and out of
  // the members below whole (graph_cache.cpp); `used` orders them by last use.
  struct KeptGraph {
    engine::TaskGraph g;
    std::vector<Component> comp;
    std::vector<Label> labels;
    std::vector<uint8_t> cls;
    std::vector<double> mean;
    std::vector<FixedComm> fixed;
    std::vector<Binding> bindings;
    std::vector<VarTask> vars;
    StreamPredecessors prev;
    std::vector<engine::ResourceId> first_compute;
    std::vector<std::pair<engine::TaskId, int>> dp_tasks;
    std::vector<double> step;
    int dense_buckets = 1, expert_buckets = 1;
    long used = 0;
  };
  void swap_built(KeptGraph& k);
  std::map<std::vector<char>, KeptGraph> kept_;
  engine::TaskGraph g_;
  std::vector<Component> comp_;  // per task tag
  std::vector<Label> labels_;    // per task tag
  std::vector<uint8_t> cls_;
  std::vector<double> mean_;     // expert tasks: the stage's mean, for the straggler split
  std::vector<FixedComm> fixed_;
  // The analytic loads of each (bound kind, layer, micro-batch) sparse collective or migration, with
  // the transfers they were made of: defined once per iteration for all the tasks that run them,
  // and loaded again only when the transfers differ from the last iteration's (FSDP's never do;
  // FSSDP's repeat while its plan holds). Exact: the same transfers give the same loads. Lists
  // longer than kKeep are not kept (FSDP's on 1,024 GPUs: ~300 MB of copies), only loaded anew.
  struct SparseLoads {
    static constexpr size_t kKeep = size_t{1} << 16;
    bool kept = false;  // `flows` holds the transfers `loads` were made of
    collective::Coflow flows;
    double extra = 0;
    collective::CoflowLoads loads;
    int id = -1;
    long run = -1;  // the run() that defined `id`
  };
  std::map<std::tuple<int, int, int>, SparseLoads> sparse_loads_;
  long runs_ = 0;  // run() calls so far
  std::vector<Binding> bindings_;
  std::unique_ptr<engine::Simulation> sim_;  // of g_, kept between runs (sim_graph_: the graph it was made for)
  const engine::TaskGraph* sim_graph_ = nullptr;
  // This run's transfers of each sparse collective or migration binding (null: the others), for the
  // timeline; DualPipe's mirrored copies of a plan's transfers, keyed (bind kind, layer, micro-batch).
  std::vector<const collective::Coflow*> bound_;
  std::map<std::tuple<int, int, int>, collective::Coflow> mirrored_;
  std::vector<VarTask> vars_;
  StreamPredecessors prev_;  // of the built graph, for the breakdown walk
  std::vector<engine::ResourceId> first_compute_;  // [stage] its first GPU's compute stream
  std::vector<std::pair<engine::TaskId, int>> dp_tasks_;  // DP collectives and their stages
  std::vector<double> step_;  // [stage] parameters each GPU's optimizer steps
  // This iteration's intake (take_layer): the networks the all-to-alls are defined on, each MoE
  // layer's variants (empty: not taken yet), the slowest all-to-all and its bottleneck link.
  bool open_ = false;
  std::unique_ptr<network::FlowNetwork> flow_;
  std::unique_ptr<network::CoflowNetwork> coflow_;
  std::vector<std::vector<TakenVariant>> taken_;
  double worst_a2a_ = -1;
  topology::LinkId bottleneck_link_ = -1;
  // The run memo (analytic tier, no timeline): the outcome of the simulation and of everything run()
  // derives from it (the time, the critical path's breakdown, hidden communication, bottleneck GPU,
  // stats_), keyed by all it depends on (util/exact_memo.hpp): the shape (which graph), every task's
  // duration and kernel class or traffic kind, the expert tasks' stage means and the coflow network's
  // definitions and assignments. The graph's structure, labels and the layout are fixed per shape.
  // A stateful strategy on a cycling trace meets the same inputs once per cycle (FSSDP and SmartMoE
  // on a 50-record trace: ~94 % of 1,000 iterations). Budget: kMemoBytes of keys and outcomes (a
  // 32-GPU GPT-MoE-S iteration's key: ~60 kB).
  struct RunOutcome {
    double time = 0;
    std::array<double, kNumComponents> breakdown{};
    double hidden_comm = 0;
    int bottleneck_gpu = -1;
    LayoutStats stats;
  };
  static constexpr size_t kMemoBytes = size_t{64} << 20;
  bool memo_on_ = false;
  MemoKey memo_key_;
  std::vector<uint8_t> memo_kinds_;  // scratch: the tasks' kinds, as bytes of the key
  ExactMemo<RunOutcome> run_memo_{kMemoBytes};
  // The all-to-all memo (analytic tier, NCCL's all-to-all-v): a dispatch matrix's coflow loads in both
  // directions, solo times, bottleneck links and traffic kind, keyed by the matrix (every entry's
  // bits). They are functions of the matrix alone (the topology is fixed), and a stateful strategy
  // on a cycling trace routes the same matrices again each cycle. Up to kA2aMemoGpus GPUs: a key
  // is n x n words, hashing it costs about what loading a sparse matrix does on thousands of GPUs.
  struct A2aLoads {
    collective::AnalyticNetwork::PairTimes times;
    collective::CoflowLoads fwd, tr;
    engine::Traffic traffic = engine::Traffic::kIntraNode;
  };
  static constexpr int kA2aMemoGpus = 256;
  static constexpr size_t kA2aMemoBytes = size_t{32} << 20;
  MemoKey a2a_key_;
  ExactMemo<A2aLoads> a2a_memo_{kA2aMemoBytes};
  // The expert memo: one GPU's grouped-GEMM forward and backward seconds (ComputeCost::expert_forward,
  // expert_backward: pure functions of the tokens per expert instance) keyed by those tokens; a GPU
  // computes the same tokens again whenever its experts' loads come back. Both into fwd, bwd.
  void expert_seconds(std::span<const double> tokens, double& fwd, double& bwd);
  static constexpr size_t kExpertMemoBytes = size_t{8} << 20;
  MemoKey expert_key_;
  ExactMemo<std::pair<double, double>> expert_memo_{kExpertMemoBytes};
  // Fills what the plans alone give (token-dropping tallies) into res.
  void finish_result(std::span<const LayerPlan> plans, IterationResult& res) const;
  std::unique_ptr<DeepEpMatrix> deepep_;  // dispatcher=deepep: the per-pair bytes, kept between iterations
  // take_layer's n x n scratch, kept between calls and all zero outside the stage block it is
  // writing: a micro-batch's bytes (a plan's / grad_accum) and DualPipe's mirrored matrix. Fresh
  // vectors per call cost a page fault per 4 KiB (two 33.5 MB matrices per MoE layer on 2,048
  // GPUs: a fifth of a DeepSeek-V3 step's simulation was the kernel zeroing pages).
  std::vector<double> scaled_bytes_, mirror_bytes_;
  int dense_buckets_ = 1, expert_buckets_ = 1;
 public:
  collective::AnalyticNetwork& network() { return net_; }
};

}  // namespace hs::strategy
