#include <doctest/doctest.h>

#include <vector>

#include "collective/nccl_op.hpp"
#include "topology/topology_builder.hpp"
#include "support/approx.hpp"

using namespace hs;
using collective::NcclOp;

namespace {
// One node of n GPUs on an NVSwitch: every GPU has an uplink and a downlink of B bytes/s; the
// topology's intra_node.latency a is GPU to GPU (each link carries a / 2): a route's latency is a.
topology::Topology nvswitch_node(int n, double B, double a) {
  topology::CompactSpec s;
  s.name = "node";
  s.gpu.model = "H100";
  s.gpu.peak_flops = FlopRate(1e15);
  s.gpu.hbm_bandwidth = Bandwidth(3e12);
  s.gpu.memory = Bytes(80e9);
  s.nodes = 1;
  s.gpus_per_node = n;
  s.intra.line_rate = Bandwidth(B);
  s.intra.latency = Seconds(a);
  return topology::build_compact(s, {"t", 0, 0});
}
}  // namespace

TEST_CASE("nccl-tests conventions: bus factors and op names") {
  CHECK(collective::bus_factor(NcclOp::kAllReduce, 8) == hs::test::approx(1.75));  // 2(n-1)/n
  CHECK(collective::bus_factor(NcclOp::kAllGather, 8) == hs::test::approx(0.875));  // (n-1)/n
  CHECK(collective::bus_factor(NcclOp::kReduceScatter, 4) == hs::test::approx(0.75));
  CHECK(collective::bus_factor(NcclOp::kAllToAll, 16) == hs::test::approx(15.0 / 16));
  CHECK(collective::bus_factor(NcclOp::kBroadcast, 8) == 1);
  CHECK(collective::bus_factor(NcclOp::kSendRecv, 8) == 1);
  CHECK(collective::nccl_op_in_name("logs/all_reduce_perf-2node.txt") == NcclOp::kAllReduce);
  CHECK(collective::nccl_op_in_name("reduce_scatter_perf.log") == NcclOp::kReduceScatter);
  CHECK(collective::nccl_op_in_name("alltoall_perf.log") == NcclOp::kAllToAll);
  CHECK(collective::nccl_op_in_name("reduce_perf.log") == NcclOp::kReduce);
  CHECK_FALSE(collective::nccl_op_in_name("perf.log"));
  CHECK(collective::parse_nccl_op("sendrecv") == NcclOp::kSendRecv);
}

TEST_CASE("closed forms inside one NVSwitch node") {
  const int n = 8;
  const double B = 300e9, a = 2e-6, S = 1 << 28;
  auto t = nvswitch_node(n, B, a);
  collective::AnalyticNetwork net(t);
  std::vector<int> g;
  for (int i = 0; i < n; ++i) g.push_back(i);
  // Ring all-reduce: 2(n-1) steps of S/n per GPU link, Simple at 256 MiB; NCCL's latency
  // (collective/nccl_tuning.hpp): base 8.4 us + 2(n-1) steps of hwLat NVLINK 3.4 us scaled by the
  // route's a / 3.4 us, i.e. 2(n-1) x a: t = 2(n-1)/n x S/B + 8.4 us + 2(n-1) x a.
  auto ring = collective::nccl_op_plan(net, NcclOp::kAllReduce, g, S, "ring");
  CHECK(ring.proto == "Simple");
  CHECK(ring.analytic_s == doctest::Approx(2.0 * (n - 1) / n * S / B + 8.4e-6 + 2.0 * (n - 1) * a).epsilon(1e-6));
  // All-gather (S = gathered size): (n-1) steps of S/n: (n-1)/n x S/B + 8.4 us + (n-1) x a.
  auto ag = collective::nccl_op_plan(net, NcclOp::kAllGather, g, S);
  CHECK(ag.analytic_s == doctest::Approx(1.0 * (n - 1) / n * S / B + 8.4e-6 + (n - 1) * a).epsilon(1e-6));
  // Uniform all-to-all (S sent per GPU, S/n to each, its own share stays): every uplink carries
  // (n-1)/n x S at once: one route latency + (n-1)/n x S/B, + the launch of the grouped send/receive
  // (Simple at this size: 8.4 us, collective/p2p_channels.hpp).
  auto a2a = collective::nccl_op_time(net, NcclOp::kAllToAll, g, S);
  CHECK(a2a.seconds == doctest::Approx(a + 8.4e-6 + 1.0 * (n - 1) / n * S / B).epsilon(1e-9));
  // Send/receive to the next rank: S over one uplink and one downlink.
  auto sr = collective::nccl_op_time(net, NcclOp::kSendRecv, g, S);
  CHECK(sr.seconds == doctest::Approx(a + S / B).epsilon(1e-9));
  // The planner's all-reduce is never slower than the ring, and tree needs two nodes.
  CHECK(collective::nccl_op_plan(net, NcclOp::kAllReduce, g, S).analytic_s <= ring.analytic_s + 1e-15);
  CHECK(collective::nccl_op_plan(net, NcclOp::kAllReduce, g, S, "tree").flows.empty());
}
