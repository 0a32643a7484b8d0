// The task graph of one training iteration for strategies whose MoE layers follow the classic
// gate -> dispatch all-to-all -> expert FFN -> combine all-to-all pattern (EP, the balanced oracle,
// and the base FSSDP builds on). Built once per run; each iteration only changes durations.
//
// Per GPU g there are three in-order resources: compute[g], a2a[g] (token all-to-alls) and dp[g]
// (data-parallel gradient reductions, overlapping backward as Megatron/DeepSpeed do). Per
// micro-batch (grad_accum of them, run one after another), per block b:
//   forward : attn_fwd[g] -> (MoE) router[g] -> dispatch(all) -> expert_fwd[g] -> combine(all) -> unpermute[g]
//             (dense block) dense_ffn_fwd[g]
//   LM head : head_fwd[g], head_bwd[g]
//   backward, blocks reversed: unpermute_bwd[g] -> combine_grad(all) -> expert_bwd[g] -> dispatch_grad(all)
//             -> router_bwd[g] -> attn_bwd[g]; after the last micro-batch, block b's dense gradients are
//             all-reduced (ring) on dp[*] as soon as every GPU finished attn_bwd of b.
//   optimizer[g] after all of it.
// A collective task spans every participant's resource, so it starts when the slowest participant
// reaches it: the straggler effect emerges from the graph, it is not added by hand.
//
// Simplification (documented): every micro-batch of an iteration routes the iteration's counts
// divided by grad_accum (traces record per-iteration counts).
#pragma once

#include <span>
#include <vector>

#include "collective/analytic_network.hpp"
#include "engine/simulation.hpp"
#include "engine/task_graph.hpp"
#include "strategy/strategy.hpp"

namespace hs::strategy {

// What a strategy decided for one MoE layer in one iteration (whole-iteration token counts).
struct LayerPlan {
  std::vector<std::vector<double>> expert_tokens;  // [gpu] -> tokens of each expert instance it runs
  std::vector<double> dispatch_bytes;              // n x n, row = source GPU
  std::vector<double> received_tokens;             // [gpu] tokens it computes (for activation memory)
};

struct MoeGraphOptions {
  // EP groups of ep_size consecutive GPUs; with ep_size < n the groups are data-parallel replicas
  // and each MoE layer's expert gradients are all-reduced across the GPUs that hold the same
  // experts (ring per replica set, all sets at once), after the layer's backward.
  int ep_size = 0;  // 0 = all GPUs
  double expert_grad_bytes_per_gpu_layer = 0;
  // Parameters each GPU updates in the optimizer step.
  double optimizer_params_per_gpu = 0;
};

class MoeIterationGraph {
 public:
  MoeIterationGraph(const Context& ctx, MoeGraphOptions opt);
  // Runs one iteration. `plans` has one entry per MoE layer. Fills time, breakdown, bottlenecks;
  // the caller fills memory.
  IterationResult run(std::span<const LayerPlan> plans);
  collective::AnalyticNetwork& network() { return net_; }

 private:
  enum class Kind : uint8_t {
    kAttnFwd, kAttnBwd, kDenseFwd, kDenseBwd, kRouter, kUnpermute, kRouterBwd, kUnpermuteBwd,
    kExpertFwd, kExpertBwd, kDispatch, kCombine, kCombineGrad, kDispatchGrad, kHeadFwd, kHeadBwd,
    kDpAllReduce, kOptimizer
  };
  struct Info {
    Kind kind;
    int16_t moe_layer;  // index among MoE layers, -1 otherwise
    int32_t gpu;        // -1 for collectives
  };
  engine::TaskId add(Kind k, int moe_layer, int gpu, std::span<const engine::ResourceId> res, double dur);
  Component component(Kind k) const;

  const Context& ctx_;
  int n_;
  engine::TaskGraph graph_;
  std::vector<Info> info_;
  collective::AnalyticNetwork net_;
  // Task ids whose durations change per iteration: [moe_layer] -> tasks.
  std::vector<std::vector<engine::TaskId>> expert_fwd_, expert_bwd_;  // [layer] -> [mb * n + gpu]
  // [layer] -> all-to-all tasks; `transposed` ones carry the combine direction (expert GPU -> source).
  struct A2aTask { engine::TaskId task; bool transposed; };
  std::vector<std::vector<A2aTask>> a2a_;
};

}  // namespace hs::strategy
