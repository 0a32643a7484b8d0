// Routing of one MoE layer inside the EP groups of its pipeline stage, for strategies under a
// layout whose groups each keep a placement of their own (SmartMoE, FlexMoE): group k of the stage
// (GPUs stage x stage_size + k x ep + i, i < ep) dispatches its GPUs' trace rows / tp to its
// placement's holders (group-local GPU ids) by `rule`; nothing crosses groups.
#pragma once

#include <span>
#include <vector>

#include "collective/sparse_plan.hpp"
#include "strategy/capacity.hpp"
#include "strategy/dispatch_memo.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "strategy/layer_plan.hpp"
#include "strategy/strategy.hpp"
#include "layout/parallel_layout.hpp"

namespace hs::strategy {

// `all`: the layer's counts over every GPU (n x E, the iteration's or one micro-batch's);
// placement[k]: group k's owners and replicas; node_of: every GPU's node. Fills plan's
// expert_tokens, dispatch_bytes and received_tokens over all n GPUs (the other stages' GPUs get
// none). group_loads, when given, gets each group's tokens per expert ([group][expert]), as the gate
// routed them: before `cap`, the assignments a GPU may send one instance of an expert
// (strategy/capacity.hpp: the capacity of `all`, an iteration's or a micro-batch's; infinite = dropless),
// which dispatch() applies per replica group; plan's routed_tokens / dropped_tokens get the tally.
// `memo`, when given, routes each group through it (strategy/dispatch_memo.hpp: the same results).
void route_in_groups(std::span<const double> all, const workload::ParallelLayout& layout, int stage, int experts,
                     const std::vector<int>& node_of, std::span<const collective::SparsePlacement> placement,
                     DispatchRule rule, double token_bytes, double cap, LayerPlan& plan,
                     std::vector<std::vector<double>>* group_loads = nullptr, DispatchMemo* memo = nullptr);

}  // namespace hs::strategy
