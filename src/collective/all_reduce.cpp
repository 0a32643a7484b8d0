#include "collective/all_reduce.hpp"

#include "collective/chain.hpp"
#include "collective/nvls.hpp"
#include "collective/ring.hpp"
#include "collective/tree.hpp"

namespace hs::collective {

namespace {

// The algorithm's Simple-protocol transfers (empty where it cannot run on the group).
Coflow algo_flows(const topology::Topology& topo, NcclColl coll, NcclAlgo a, std::span<const int> group, double bytes) {
  double x = 0;
  switch (a) {
    case NcclAlgo::kRing:
    case NcclAlgo::kPat:  // PAT moves what a ring moves per GPU with one GPU per node; its 0.75 is the protocol step's
      switch (coll) {
        case NcclColl::kAllReduce: return a == NcclAlgo::kRing ? ring_flows(topo, group, bytes, RingOp::kAllReduce, x) : Coflow{};
        case NcclColl::kAllGather: return ring_flows(topo, group, bytes, RingOp::kAllGather, x);
        case NcclColl::kReduceScatter: return ring_flows(topo, group, bytes, RingOp::kReduceScatter, x);
        case NcclColl::kBroadcast: return broadcast_flows(topo, group, group[0], bytes, x);
        case NcclColl::kReduce: return reduce_flows(topo, group, group[0], bytes, x);
      }
      return {};
    case NcclAlgo::kTree: return tree_all_reduce_flows(topo, group, bytes, x);
    case NcclAlgo::kNvls: return nvls_all_reduce_flows(topo, group, bytes, x);
    case NcclAlgo::kNvlsTree: return nvls_tree_all_reduce_flows(topo, group, bytes, x);
  }
  return {};
}

}  // namespace

NcclPlan plan_nccl(AnalyticNetwork& net, NcclColl coll, std::span<const int> group, double bytes,
                   std::optional<NcclAlgo> algo, std::optional<NcclProto> proto) {
  const auto& topo = net.topology();
  NcclPlan best;
  if (group.size() < 2 || bytes <= 0) return best;
  const NcclTuning t = nccl_tuning(topo, group);
  const NcclTuning choice = t.uncalibrated();
  bool found = false;
  for (NcclAlgo a : {NcclAlgo::kTree, NcclAlgo::kRing, NcclAlgo::kNvls, NcclAlgo::kNvlsTree, NcclAlgo::kPat}) {
    if (algo && a != *algo) continue;
    Coflow base;
    bool built = false;
    for (NcclProto p : kNcclProtos) {
      if (proto && p != *proto) continue;
      if (!nccl_enabled(topo, t, coll, a, p)) continue;
      if (!built) base = algo_flows(topo, coll, a, group, bytes), built = true;
      if (base.empty()) break;
      Coflow c = base;
      double extra = 0;
      apply_nccl_protocol(topo, choice, coll, a, p, bytes, c, extra);
      const double time = net.coflow_time(c) + extra;
      if (!found || time < best.time) best = {a, p, std::move(c), extra, time}, found = true;
    }
  }
  // A calibration's per-protocol factors time the choice NCCL's own figures made (NcclTuning).
  if (found && t.calibrated()) {
    Coflow c = algo_flows(topo, coll, best.algo, group, bytes);
    double extra = 0;
    apply_nccl_protocol(topo, t, coll, best.algo, best.proto, bytes, c, extra);
    best.time = net.coflow_time(c) + extra;
    best.flows = std::move(c);
    best.extra_latency = extra;
  }
  return best;
}

AllReducePlan plan_all_reduce(AnalyticNetwork& net, std::span<const int> group, double bytes) {
  return plan_nccl(net, NcclColl::kAllReduce, group, bytes);
}

}  // namespace hs::collective
