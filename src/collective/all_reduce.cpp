#include "collective/all_reduce.hpp"

#include "collective/nvls.hpp"
#include "collective/ring.hpp"
#include "collective/tree.hpp"

namespace hs::collective {

const char* to_string(AllReduceAlgo a) {
  switch (a) {
    case AllReduceAlgo::kRing: return "ring";
    case AllReduceAlgo::kTree: return "tree";
    case AllReduceAlgo::kNvls: return "nvls";
  }
  return "?";
}

AllReducePlan plan_all_reduce(AnalyticNetwork& net, std::span<const int> group, double bytes) {
  const auto& topo = net.topology();
  AllReducePlan best;
  if (group.size() < 2 || bytes <= 0) return best;
  best.time = ring_time(net, group, bytes, RingOp::kAllReduce);
  best.flows = ring_flows(topo, group, bytes, RingOp::kAllReduce, best.extra_latency);
  auto consider = [&](AllReduceAlgo algo, Coflow flows, double extra) {
    if (flows.empty()) return;
    const double t = net.coflow_time(flows) + extra;
    if (t < best.time) best = {algo, std::move(flows), extra, t};
  };
  double extra = 0;
  auto tree = tree_all_reduce_flows(topo, group, bytes, extra);
  consider(AllReduceAlgo::kTree, std::move(tree), extra);
  auto nvls = nvls_all_reduce_flows(topo, group, bytes, extra);
  consider(AllReduceAlgo::kNvls, std::move(nvls), extra);
  return best;
}

}  // namespace hs::collective
