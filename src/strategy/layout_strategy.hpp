// Strategies under a parallel layout (`--layout`): the layout's iteration graph
// (strategy/layout_iteration.hpp) with a strategy's MoE policy inside each stage's EP groups.
// Built so far: EP (experts in contiguous blocks of E/ep over each EP group, as make_ep does). The
// other strategies are refused with a message naming --strategy (exit 2) until they compose.
#pragma once

#include <memory>

#include "strategy/strategy.hpp"
#include "workload/parallel_layout.hpp"

namespace hs::strategy {

// `layout` must be resolved (workload::resolve_layout) against ctx's topology and model.
std::unique_ptr<Strategy> make_layout_strategy(const StrategySpec& spec, const Context& ctx,
                                               const workload::ParallelLayout& layout);

}  // namespace hs::strategy
