// dispatch() (strategy/policy/fssdp/materialization.hpp) memoized by its exact inputs
// (util/exact_memo.hpp): the counts (every entry's bits), the placement (owners and replica lists),
// the GPUs' nodes, the rule, the token bytes and the capacity. A stateful strategy routes the same
// counts under the same placement again whenever its plan and the trace's record come back (every
// cycle of a cycling trace), and dispatch() is a pure function of these, so a hit gives exactly
// the routing a fresh call gives.
//
// Cost per call: O(n x E + copies) to write and hash the key; a hit copies the stored result (the n
// instance lists and the n x n bytes) instead of routing every (source, expert). Memory: at most
// kBudget bytes of keys and results, least recently used dropped first. Owned by the strategy that
// routes (no globals): one per strategy instance, so concurrent sweeps share nothing.
#pragma once

#include <limits>
#include <span>
#include <vector>

#include "collective/sparse_plan.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "util/exact_memo.hpp"

namespace hs::strategy {

class DispatchMemo {
 public:
  static constexpr size_t kBudget = size_t{32} << 20;
  // As dispatch(counts, n, p, node_of, rule, token_bytes, out, cap).
  void dispatch(std::span<const double> counts, int n, const collective::SparsePlacement& p,
                const std::vector<int>& node_of, DispatchRule rule, double token_bytes, DispatchResult& out,
                double cap = std::numeric_limits<double>::infinity());
  long hits() const { return memo_.hits(); }

 private:
  MemoKey key_;
  ExactMemo<DispatchResult> memo_{kBudget};
};

}  // namespace hs::strategy
