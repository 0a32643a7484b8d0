// Which algorithm and protocol a collective runs, chosen as NCCL's tuner does (src/enqueue.cc
// topoGetAlgoInfo, NCCL 2.30): of the (algorithm, protocol) pairs it enables for the operation
// (collective/nccl_tuning.hpp), the one of least predicted time. The prediction here is the analytic
// tier's time of each pair: the algorithm's transfers (ring, double binary tree, NVLS, NVLSTree, PAT;
// broadcast / reduce rings) with the protocol applied (wire bytes, NCCL's bandwidth caps and
// latency), so the bandwidth is the topology's and the latency NCCL's. Ties keep NCCL's order
// (tree, ring, nvls, nvls_tree, pat; LL, LL128, Simple). The flow tier runs the chosen transfers
// with the same extra latency.
#pragma once

#include <optional>
#include <span>

#include "collective/analytic_network.hpp"
#include "collective/nccl_tuning.hpp"
#include "collective/transfer.hpp"

namespace hs::collective {

using AllReduceAlgo = NcclAlgo;

struct NcclPlan {
  NcclAlgo algo = NcclAlgo::kRing;
  NcclProto proto = NcclProto::kSimple;
  Coflow flows;               // fluid form, for the flow tier
  double extra_latency = 0;   // NCCL's latency beyond one route latency
  double time = 0;            // analytic-tier time
};
using AllReducePlan = NcclPlan;

// The fastest enabled pair for `coll` of `bytes` over `group` (root group[0] for broadcast and
// reduce); `algo` / `proto` restrict the choice (NCCL_ALGO / NCCL_PROTO of one call). Empty flows
// when nothing enabled can run.
NcclPlan plan_nccl(AnalyticNetwork& net, NcclColl coll, std::span<const int> group, double bytes,
                   std::optional<NcclAlgo> algo = std::nullopt, std::optional<NcclProto> proto = std::nullopt);
AllReducePlan plan_all_reduce(AnalyticNetwork& net, std::span<const int> group, double bytes);

}  // namespace hs::collective
