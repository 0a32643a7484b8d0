// Strategies under a parallel layout (`--layout`, or without one strategy::default_layout): the
// one iteration graph (strategy/graph/layout_iteration.hpp) with a strategy's MoE policy inside each
// stage's EP groups. The registry (registry.cpp) has one factory per strategy, all of them here:
// EP (experts in contiguous blocks of E/ep over each EP group, route_ep_layer), the
// oracle (EP with every GPU of a stage computing the stage's mean), FSSDP
// (each EP group of a stage an FSSDP group: strategy/policy/fssdp/layout_fssdp.cpp), FSDP of experts (FSSDP
// with every expert materialized in the group), SmartMoE (each group re-plans its placement:
// strategy/policy/smartmoe/layout_smartmoe.cpp), FlexMoE (replicas per group: strategy/policy/flexmoe/layout_flexmoe.cpp), FasterMoE
// (each group shadows: strategy/policy/fastermoe/layout_fastermoe.cpp) and the lower bound (strategy/policy/bound/layout_bound.cpp).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "strategy/graph/layout_iteration.hpp"
#include "strategy/strategy.hpp"
#include "layout/parallel_layout.hpp"

namespace hs::strategy {

// What EP, the oracle and the bound under a layout keep: the layout's graph, one plan per MoE layer
// and the stage holding each MoE layer.
class LayoutStrategyBase : public Strategy {
 protected:
  LayoutStrategyBase(const Context& ctx, const workload::ParallelLayout& layout);
  const Context& ctx_;
  workload::ParallelLayout layout_;
  LayoutIterationGraph graph_;
  std::vector<LayerPlan> plans_;
  std::vector<int> stage_;  // [MoE layer] -> pipeline stage
  std::vector<double> nccl_;  // [gpu] NCCL buffer bytes: the layout's communicators, all-to-all on EP
};

// `layout` must be resolved (workload::resolve_layout) against ctx's topology and model; the
// registry's factory for spec's strategy (make_strategy).
std::unique_ptr<Strategy> make_layout_strategy(const StrategySpec& spec, const Context& ctx,
                                               const workload::ParallelLayout& layout);

// An ep_size knob (ep, oracle, fastermoe) names the EP group: it must be the layout's ep (0 or
// absent: whatever the layout says). InputError naming the knob otherwise.
void check_ep_size_knob(const StrategySpec& spec, const workload::ParallelLayout& layout);

// EP and the oracle (balanced EP) inside each stage's EP groups.
std::unique_ptr<Strategy> make_layout_ep(const StrategySpec& spec, const Context& ctx,
                                         const workload::ParallelLayout& layout);
std::unique_ptr<Strategy> make_layout_oracle(const StrategySpec& spec, const Context& ctx,
                                             const workload::ParallelLayout& layout);

// FSSDP inside each stage's EP groups (layout_fssdp.cpp), every knob of the registry's row.
std::unique_ptr<Strategy> make_layout_fssdp(const StrategySpec& spec, const Context& ctx,
                                            const workload::ParallelLayout& layout);
// FSDP of experts inside each stage's EP groups (layout_fssdp.cpp): every expert gathered to every
// GPU of its group per layer, gradients reduce-scattered back; rematerialize (default true, FSDP's
// reshard after forward) gathers them for every micro-batch's forward and backward.
std::unique_ptr<Strategy> make_layout_fsdp(const StrategySpec& spec, const Context& ctx,
                                           const workload::ParallelLayout& layout);
// The last iteration's per-MoE-layer plans of a strategy make_layout_fssdp built (null otherwise).
const std::vector<LayerPlan>* layout_fssdp_plans(const Strategy& s);

// SmartMoE inside each stage's EP groups (layout_smartmoe.cpp): each group re-plans its own placement
// every `period` iterations; needs E / ep >= 2.
std::unique_ptr<Strategy> make_layout_smartmoe(const StrategySpec& spec, const Context& ctx,
                                               const workload::ParallelLayout& layout);

// FlexMoE inside each stage's EP groups (layout_flexmoe.cpp): each group re-plans its replicas in
// reserve_slots extra slots per GPU and MoE layer every `period` iterations; knobs as flexmoe's.
std::unique_ptr<Strategy> make_layout_flexmoe(const StrategySpec& spec, const Context& ctx,
                                              const workload::ParallelLayout& layout);

// FasterMoE inside each stage's EP groups (layout_fastermoe.cpp): per layer, micro-batch and group
// FastMoE's shadowing policy, broadcast, local compute and gradient reduce; ep_size is refused.
std::unique_ptr<Strategy> make_layout_fastermoe(const StrategySpec& spec, const Context& ctx,
                                                const workload::ParallelLayout& layout);

// One layer's counts as routed under the layout: the rows of stage `stage`'s GPUs / tp (a GPU routes
// its s x b / tp tokens of a micro-batch), every other GPU's zero; written into `rows` (n x E).
std::span<const double> stage_rows(const workload::ParallelLayout& layout, int stage, std::span<const double> counts,
                                   int n, int E, std::vector<double>& rows);

// The lower bound under the layout (layout_bound.cpp): the layout's graph with each stage's expert
// compute at its floor (launch + the stage's summed per-expert GEMMs / its GPUs) and no all-to-all bytes.
std::unique_ptr<Strategy> make_layout_bound(const StrategySpec& spec, const Context& ctx,
                                            const workload::ParallelLayout& layout);

// The MoE layers GPU x holds, in model order, each with the GPU whose entries of the layer's plan
// it runs: the layers of its stage (x itself) and, under DualPipe, those of its mirrored stage, whose
// second copy it holds in the place of its mirror (ParallelLayout::mirror_rank). `stage`: the stage
// holding each MoE layer (its plan's GPUs).
struct HeldLayer {
  int layer, gpu;
};
std::vector<HeldLayer> held_layers(const workload::ParallelLayout& layout, std::span<const int> stage, int x);

// The worst GPU's memory under the layout, routed tokens per micro-batch over the MoE layers it holds
// (held_layers: under DualPipe its mirrored stage's too; plans[l].received_tokens, stage[l] the
// stage holding MoE layer l), into r.memory / r.memory_gpu; every GPU holds `reserve_slots` more
// experts per MoE layer it holds (FlexMoE's); `add`, when
// given, adds a strategy's own buffers to GPU x's breakdown (FasterMoE's shadows).
// `nccl`: per GPU NCCL buffer bytes (layout_nccl_bytes). `moves`, when given, says per MoE layer
// whether its all-to-all moves tokens between GPUs (layer_moves_tokens of a plan whose dispatch
// matrix is gone: streamed into the graph); else it is read from plans[l].dispatch_bytes.
void set_layout_memory(const workload::ModelSpec& m, const workload::ParallelLayout& layout,
                       const std::vector<int>& stage, std::span<const LayerPlan> plans, std::span<const double> nccl,
                       IterationResult& r, int reserve_slots = 0,
                       const std::function<void(int x, cost::MemoryBreakdown&)>& add = {},
                       std::span<const char> moves = {});

// The resolved settings every strategy under a layout reports: layout, pp_bubble, the TP / PP /
// DP communication on the critical path (dp_comm_on_path_ms: the DP communication overlap left
// exposed), dp_comm_ms (all of it, the largest stage's) and dp_buckets (stage 0's gradient buckets).
std::vector<ResolvedSetting> layout_resolved(const workload::ParallelLayout& layout, const LayoutStats& st);

}  // namespace hs::strategy
