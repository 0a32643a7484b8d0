// Which algorithm an all-reduce runs, chosen as NCCL's tuner does: the one its cost model predicts
// fastest for this group and size. Candidates: ring (always), double binary tree (group spans 2+
// nodes), NVLS (group inside one node of a topology whose switches reduce). The prediction is the
// analytic tier's time of each decomposition; the flow tier runs the chosen one's flows.
#pragma once

#include <span>

#include "collective/analytic_network.hpp"
#include "collective/transfer.hpp"

namespace hs::collective {

enum class AllReduceAlgo { kRing, kTree, kNvls };
const char* to_string(AllReduceAlgo a);

struct AllReducePlan {
  AllReduceAlgo algo = AllReduceAlgo::kRing;
  Coflow flows;               // fluid form, for the flow tier
  double extra_latency = 0;   // pipeline latency beyond one route latency
  double time = 0;            // analytic-tier time
};

AllReducePlan plan_all_reduce(AnalyticNetwork& net, std::span<const int> group, double bytes);

}  // namespace hs::collective
