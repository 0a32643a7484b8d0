// NCCL's algorithm / protocol model (collective/nccl_tuning.hpp, NCCL 2.30.7 src/graph/tuning.cc)
// and the tuner's choice (collective/all_reduce.hpp plan_nccl), worked by hand.
#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "collective/all_reduce.hpp"
#include "collective/analytic_network.hpp"
#include "collective/nccl_tuning.hpp"
#include "topology/topology_loader.hpp"
#include "util/diagnostics.hpp"

using namespace hs;
using namespace hs::collective;

namespace {

std::vector<int> iota(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// H100 nodes of 8 GPUs with NCCL's own Simple ring latencies on the routes: 3.4 us GPU to GPU
// inside a node (3.4 us given, 1.7 per NVSwitch link), 14 us across nodes (1 + 5 + 2 + 5 + 1 us from GPU to
// NIC, NIC to leaf, leaf to leaf... as routed), so NcclTuning's scales are 1 and NCCL's formulas
// apply as written. One NIC per GPU (8 x 400 Gb/s).
std::string h100(int nodes, bool nvls, const std::string& more = "") {
  return "schema: hecate-sim/topology@1\nname: t\n"
         "gpu: {model: H100-SXM5-80GB, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, memory: 80GiB, compute_capability: 9.0}\n"
         "nodes: " + std::to_string(nodes) + "\ngpus_per_node: 8\n"
         "intra_node: {kind: nvswitch, nvls: " + (nvls ? "true" : "false") + ", bandwidth: 450GB/s, efficiency: 0.82, latency: 3.4us}\n"
         "nics_per_node: 8\nnic: {bandwidth: 400Gbps, efficiency: 0.95, latency: 6us}\n"
         "pcie: {bandwidth: 64GB/s, efficiency: 0.85, latency: 1us}\n"
         "fabric: {kind: rail-optimized, oversubscription: 1.0, switch_latency: 0us}\n" + more;
}

}  // namespace

TEST_CASE("NCCL's latency formulas by hand") {
  NcclTuning t;
  t.ranks = 16, t.nodes = 2, t.sm = 90, t.arch = 2, t.graph_channels = 8, t.comm_channels = 16;
  // Ring all-reduce, 16 ranks on 2 nodes: nsteps 2(16-1) = 30, of which 2(2-1) = 2 cross nodes.
  // LL: 6.6 + 28 x max(0.6, net overhead 1.0) + 2 x 2.7 = 40.0 us.
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kRing, NcclProto::kLL, 8) == doctest::Approx(40.0e-6));
  // LL128: 14 + 28 x max(1.9, 1.0) + 2 x 4.0 = 75.2 us.
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kRing, NcclProto::kLL128, 8) == doctest::Approx(75.2e-6));
  // Simple: 8.4 + 28 x max(3.4, 3 x 1.0) + 2 x 14 = 131.6 us; at 8 B below the plateau
  // (8 / (16 channels x 16 ranks) < 64), from 16 KiB x1.4 (sm80+): 184.24 us.
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kRing, NcclProto::kSimple, 8) == doctest::Approx(131.6e-6));
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kRing, NcclProto::kSimple, 16384) == doctest::Approx(184.24e-6));
  // Tree LL: 6.8 + 2 ((8 - 1) x 0.6 + log2(2) x 5.0) = 25.2 us (measured 25-29 us for small
  // all-reduces on 2 H100 nodes).
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kTree, NcclProto::kLL, 8) == doctest::Approx(25.2e-6));
  // NVLSTree: 25 + 2 x log2(2) x 20.9 = 66.8 us.
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kNvlsTree, NcclProto::kSimple, 8) == doctest::Approx(66.8e-6));
  // p4d-like: 32 ranks on 4 nodes, Simple ring at 8 B: 8.4 + (62 - 6) x 3.4 + 6 x 14 = 282.8 us.
  t.ranks = 32, t.nodes = 4, t.sm = 80, t.arch = 1;
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kRing, NcclProto::kSimple, 8) == doctest::Approx(282.8e-6));
}

TEST_CASE("a calibration's network step latency: NCCL's latencyInter, per network step, twice for Simple") {
  NcclTuning t;
  t.ranks = 16, t.nodes = 2, t.sm = 90, t.arch = 2, t.graph_channels = 8, t.comm_channels = 16;
  t.net_step_us = 50;
  CHECK(t.calibrated());
  CHECK_FALSE(t.uncalibrated().calibrated());  // NCCL's choice does not see it
  // Tree LL: 6.8 + 2 ((8 - 1) x 0.6 + log2(2) x (5.0 + 50)) = 125.2 us (25.2 without).
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kTree, NcclProto::kLL, 8) == doctest::Approx(125.2e-6));
  // Ring LL: 6.6 + 28 x 1.0 + 2 x (2.7 + 50) = 140.0 us: the 2 network steps only.
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kRing, NcclProto::kLL, 8) == doctest::Approx(140.0e-6));
  // Tree Simple: 8.4 + 2 ((8 - 1) x 4 + 1 x (14 + 2 x 50)) = 292.4 us (the flush's second latencyInter).
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kTree, NcclProto::kSimple, 8) == doctest::Approx(292.4e-6));
  // One node: no network step, nothing added. Ring LL on 8 ranks: 6.6 + 14 x 0.6 = 15.0 us.
  t.ranks = 8, t.nodes = 1;
  CHECK(nccl_latency(t, NcclColl::kAllReduce, NcclAlgo::kRing, NcclProto::kLL, 8) == doctest::Approx(15.0e-6));
}

TEST_CASE("an 8-byte ring all-reduce on 2 H100 nodes takes NCCL's LL latency") {
  const auto topo = topology::load_topology(h100(2, false), "t.yaml");
  const auto g = iota(16);
  const NcclTuning t = nccl_tuning(topo, g);
  // The routes carry NCCL's Simple figures: 3.4 us inside a node, 14 us across.
  CHECK(topo.route_latency(0, 1).value() == doctest::Approx(3.4e-6).epsilon(1e-6));
  CHECK(topo.route_latency(0, 8).value() == doctest::Approx(14e-6).epsilon(1e-6));
  CHECK(t.intra_scale == doctest::Approx(1).epsilon(1e-6));
  CHECK(t.net_scale == doctest::Approx(1).epsilon(1e-6));
  CHECK(t.graph_channels == 8);  // one channel per NIC
  AnalyticNetwork net(topo);
  const auto p = plan_nccl(net, NcclColl::kAllReduce, g, 8, NcclAlgo::kRing);
  CHECK(p.proto == NcclProto::kLL);
  // 40.0 us (above) plus draining 8 B x 2 (LL's flags) at link speed: well under a nanosecond.
  CHECK(p.time == doctest::Approx(40.0e-6).epsilon(1e-3));
  // Free to choose, NCCL takes the tree with LL: 25.2 us.
  const auto q = plan_nccl(net, NcclColl::kAllReduce, g, 8);
  CHECK(q.algo == NcclAlgo::kTree);
  CHECK(q.proto == NcclProto::kLL);
  CHECK(q.time == doctest::Approx(25.2e-6).epsilon(1e-3));
}

TEST_CASE("protocol switch points on a sweep: LL small, LL128 mid, Simple large") {
  // One H100 node without NVLS, ring all-reduce over 8 GPUs, 14 steps.
  //   LL     6.6 + 14 x 0.6 = 15.0 us, half the link bandwidth, busBw at most llMaxBw 141 GB/s
  //   LL128  14 + 14 x 1.9 = 40.6 us, 0.92 of it, at most channels x 36.7 GB/s
  //   Simple 8.4 + 14 x 3.4 = 56.0 us, all of it
  // Algorithm bandwidths (n / 2(n-1) = 8/14 of busBw; links 369 GB/s per port, 7 channels = 450 /
  // 60 GB/s): LL min(369 / 2, 141) x 8/14 = 80.6 GB/s, LL128 min(369 x 0.92, 7 x 36.7) x 8/14 =
  // 146.8 GB/s, Simple 369 x 8/14 = 210.9 GB/s. LL128 overtakes LL where S (1/80.6 - 1/146.8) GB/s
  // = 25.6 us, S ~ 4.6 MB; Simple overtakes LL128 where S (1/146.8 - 1/210.9) = 15.4 us, S ~ 7.5 MB:
  // 6 MB runs LL128 (83.4 us against LL 93.4, Simple 85.8). Steps of 1.25x so the window is hit.
  const auto topo = topology::load_topology(h100(1, false), "t.yaml");
  const auto g = iota(8);
  AnalyticNetwork net(topo);
  std::vector<NcclProto> seen;
  for (double s = 8; s <= double(1 << 30); s *= 1.25) {
    const auto p = plan_nccl(net, NcclColl::kAllReduce, g, s);
    CHECK(p.algo == NcclAlgo::kRing);
    if (seen.empty() || seen.back() != p.proto) seen.push_back(p.proto);
  }
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == NcclProto::kLL);
  CHECK(seen[1] == NcclProto::kLL128);
  CHECK(seen[2] == NcclProto::kSimple);
  CHECK(plan_nccl(net, NcclColl::kAllReduce, g, 8).time == doctest::Approx(15.0e-6).epsilon(1e-3));
  CHECK(plan_nccl(net, NcclColl::kAllReduce, g, 6e6).proto == NcclProto::kLL128);
  CHECK(plan_nccl(net, NcclColl::kAllReduce, g, 4e6).proto == NcclProto::kLL);
  CHECK(plan_nccl(net, NcclColl::kAllReduce, g, 8e6).proto == NcclProto::kSimple);
  // NCCL_PROTO=simple in the file keeps only Simple.
  const auto simple = topology::load_topology(h100(1, false, "nccl: {proto: simple}\n"), "t.yaml");
  AnalyticNetwork net2(simple);
  CHECK(plan_nccl(net2, NcclColl::kAllReduce, g, 8).proto == NcclProto::kSimple);
}

TEST_CASE("two H100 nodes: NVLSTree for a large all-reduce") {
  // NCCL's model per algorithm, 16 ranks on 2 nodes, 8 channels (one per NIC), algorithm bandwidth:
  //   nvlstree: 8 x perChMaxNVLSTreeBw 57.7 GB/s = 461.6 busBw x 16/30     = 246.2 GB/s
  //   ring:     the NICs: 2(n-1)/n S over 8 x 47.5 GB/s per node        ~= 202.7 GB/s
  //   tree:     8 x perChMaxTreeBw 41.4 = 331.2 busBw x 1/2             = 165.6 GB/s
  const auto topo = topology::load_topology(h100(2, true), "t.yaml");
  const auto g = iota(16);
  AnalyticNetwork net(topo);
  const double S = double(1 << 30);
  const auto p = plan_nccl(net, NcclColl::kAllReduce, g, S);
  CHECK(p.algo == NcclAlgo::kNvlsTree);
  CHECK(p.proto == NcclProto::kSimple);
  // Capped at 246.2 GB/s, plus 66.8 us.
  CHECK(p.time == doctest::Approx(S / (461.6e9 * 16 / 30) + 66.8e-6).epsilon(1e-3));
  const auto tree = plan_nccl(net, NcclColl::kAllReduce, g, S, NcclAlgo::kTree);
  CHECK(tree.time > S / 165.6e9);
  // Small messages still take the tree with LL.
  CHECK(plan_nccl(net, NcclColl::kAllReduce, g, 4096).algo == NcclAlgo::kTree);
}

TEST_CASE("NCCL knobs in the topology file") {
  const auto t = topology::load_topology(h100(2, false, "nccl: {algo: 'ring,nvls_tree', proto: LL128, min_ctas: 4, max_ctas: 8}\n"),
                                         "t.yaml");
  CHECK(t.nccl().algos == std::vector<std::string>{"ring", "nvlstree"});
  CHECK(t.nccl().protos == std::vector<std::string>{"ll128"});
  const auto g = iota(16);
  const NcclTuning tu = nccl_tuning(t, g);
  CHECK(tu.comm_channels == 8);
  CHECK(tu.graph_channels == 8);
  AnalyticNetwork net(t);
  const auto p = plan_nccl(net, NcclColl::kAllReduce, g, 8);
  CHECK(p.algo == NcclAlgo::kRing);
  CHECK(p.proto == NcclProto::kLL128);
  try {
    topology::load_topology(h100(2, false, "nccl: {algo: collnet}\n"), "t.yaml");
    FAIL("expected an error");
  } catch (const InputError& e) {
    const std::string m = e.what();
    MESSAGE(m);
    CHECK(m.find("t.yaml:11") != std::string::npos);
    CHECK(m.find("nccl.algo") != std::string::npos);
    CHECK(m.find("'collnet' is not one of ring, tree, nvls") != std::string::npos);
  }
  try {
    topology::load_topology(h100(2, false, "nccl: {min_ctas: 9, max_ctas: 8}\n"), "t.yaml");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("min_ctas") != std::string::npos);
  }
}
