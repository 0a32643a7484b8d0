#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "collective/all_to_all.hpp"
#include "collective/analytic_network.hpp"
#include "collective/ring.hpp"
#include "support/test_platforms.hpp"
#include "topology/topology_builder.hpp"
#include "support/approx.hpp"
#include "util/rng.hpp"

using namespace hs;
using namespace hs::topology;
using namespace hs::collective;

namespace {
Topology one_node(int n, double bw, double lat) {
  test::ClusterShape c;
  c.gpus_per_node = n, c.intra_bw = bw, c.intra_lat = lat;
  return test::make_cluster(c);
}
Topology cluster(int nodes, int g, int nics, double nic_bw) {
  test::ClusterShape c;
  c.nodes = nodes, c.gpus_per_node = g, c.nics = nics, c.nic_bw = nic_bw;
  return test::make_cluster(c);
}
}  // namespace

TEST_CASE("uniform all-to-all in one NVSwitch node: latency + (n-1)/n * S / B") {
  // n = 8 GPUs, each sends S = 80 MB split evenly (10 MB to each GPU, its own share stays local):
  // every uplink carries 7/8 * 80 MB = 70 MB at 100 GB/s = 0.7 ms, plus the route latency 5 us (GPU
  // to GPU through the switch) and the launch of NCCL's grouped send/receive, Simple at 10 MB a peer
  // (8.4 us, collective/p2p_channels.hpp).
  const int n = 8;
  Topology t = one_node(n, 100e9, 5e-6);
  AnalyticNetwork net(t);
  std::vector<double> m(n * n, 80e6 / n);
  CHECK(net.alltoallv_time(m) == hs::test::approx(5e-6 + 8.4e-6 + (n - 1.0) / n * 80e6 / 100e9, 1e-6));
  // Transposed (combine) of a symmetric matrix: the same time.
  CHECK(net.alltoallv_time(m, true) == hs::test::approx(net.alltoallv_time(m)));
}

TEST_CASE("incast onto one GPU is limited by its downlink") {
  // 7 GPUs each send 10 MB to GPU 0: its downlink carries 70 MB at 100 GB/s = 0.7 ms (+ the launch
  // of the grouped send/receive, Simple: 8.4 us).
  Topology t = one_node(8, 100e9, 0);
  AnalyticNetwork net(t);
  std::vector<double> m(64, 0.0);
  for (int s = 1; s < 8; ++s) m[s * 8 + 0] = 10e6;
  CHECK(net.alltoallv_time(m) == hs::test::approx(0.7e-3 + 8.4e-6));
  // Transposed: GPU 0 sends 7 x 10 MB through its uplink, same 0.7 ms.
  CHECK(net.alltoallv_time(m, true) == hs::test::approx(0.7e-3 + 8.4e-6));
}

TEST_CASE("eight GPUs behind one NIC share it") {
  // 2 nodes x 8 GPUs, one 12.5 GB/s NIC per node. Every GPU of node 0 sends 100 MB to its peer in
  // node 1: the NIC carries 800 MB -> 64 ms, i.e. each GPU gets an eighth of the NIC.
  Topology t = cluster(2, 8, 1, 12.5e9);
  AnalyticNetwork net(t);
  Coflow c;
  for (int i = 0; i < 8; ++i) c.push_back({i, 8 + i, 100e6});
  const double lat = t.route(0, 8).latency.value();
  CHECK(net.coflow_time(c) == hs::test::approx(lat + 800e6 / 12.5e9));
}

TEST_CASE("bytes are conserved on every route and time is monotone in bandwidth") {
  Topology t = cluster(2, 8, 8, 50e9);
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b) {
      if (a == b) continue;
      // Bytes leaving the source GPU: fractions on its out-links sum to 1.
      double out = 0;
      for (const auto& h : t.route(a, b).hops)
        if (t.link(h.link).from == t.gpu_vertex(a)) out += h.fraction;
      CHECK(out == hs::test::approx(1.0));
    }
  Topology slow = cluster(2, 8, 8, 25e9);
  AnalyticNetwork fast_net(t), slow_net(slow);
  std::vector<double> m(256, 1e6);
  CHECK(slow_net.alltoallv_time(m) > fast_net.alltoallv_time(m));
}

TEST_CASE("ring all-reduce inside a node matches NCCL's model") {
  // n = 8, S = 1 GB, B = 100 GB/s, per-step latency 1 us (intra_node.latency is GPU to GPU: each of
  // the route's two switch links carries half): 2(n-1) steps x (S/n / B + 1 us) = 14 x (1.25 ms + 1 us).
  Topology t = one_node(8, 100e9, 1e-6);
  AnalyticNetwork net(t);
  std::vector<int> g(8);
  std::iota(g.begin(), g.end(), 0);
  CHECK(ring_time(net, g, 1e9, RingOp::kAllReduce) == hs::test::approx(14 * (1e9 / 8 / 100e9 + 1e-6)));
  CHECK(ring_time(net, g, 1e9, RingOp::kAllGather) == hs::test::approx(7 * (1e9 / 8 / 100e9 + 1e-6)));
}

namespace {
// An uneven all-to-all-v over n GPUs: pair (s, d) sends a random 0..4 MB, a quarter of the pairs
// nothing (seeded, so the same matrix every run).
std::vector<double> uneven_matrix(int n) {
  Rng rng(7);
  std::vector<double> m(static_cast<size_t>(n) * n);
  for (auto& x : m) x = rng.below(4) == 0 ? 0.0 : static_cast<double>(rng.below(4'000'000));
  return m;
}
void check_same(const CoflowLoads& a, const CoflowLoads& b) {
  REQUIRE(a.links.size() == b.links.size());
  for (size_t i = 0; i < a.links.size(); ++i) {
    CHECK(a.links[i].link == b.links[i].link);
    CHECK(a.links[i].bytes == b.links[i].bytes);
    CHECK(a.links[i].flows == b.links[i].flows);
  }
  CHECK(a.latency == b.latency);
  CHECK(a.floor == b.floor);
}
}  // namespace

TEST_CASE("both directions of an all-to-all-v at once: the same loads as one at a time") {
  // The combine (transposed) of matrix m is the dispatch of m's transpose, so three ways of timing
  // it must agree: alltoallv_loads_both, alltoallv_loads(m, true) and alltoallv_loads(m^T, false),
  // exactly (the same sums in the same order); and the dispatch likewise. Both on an
  // endpoint-separable cluster (one pass for both directions) and with one NIC per node (transfer
  // by transfer; the transposed matrix read in bands of 64 sources: 72 GPUs make a partial band).
  for (const auto& [nodes, nics] : {std::pair{3, 8}, std::pair{3, 1}, std::pair{9, 1}}) {
    CAPTURE(nodes);
    CAPTURE(nics);
    const Topology t = cluster(nodes, 8, nics, 50e9);
    const int n = t.num_gpus();
    const std::vector<double> m = uneven_matrix(n);
    std::vector<double> mt(m.size());
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) mt[static_cast<size_t>(d) * n + s] = m[static_cast<size_t>(s) * n + d];
    AnalyticNetwork net(t);
    CoflowLoads fwd, tr, one, other;
    const auto both = net.alltoallv_loads_both(m, fwd, tr);
    const double t_fwd = net.alltoallv_loads(m, false, one);
    CHECK(both.fwd == t_fwd);
    CHECK(both.link_fwd == net.last_bottleneck());
    check_same(fwd, one);
    const double t_tr = net.alltoallv_loads(m, true, one);
    CHECK(both.tr == t_tr);
    CHECK(both.link_tr == net.last_bottleneck());
    check_same(tr, one);
    CHECK(net.alltoallv_loads(mt, false, other) == t_tr);
    check_same(tr, other);
    // The transfers themselves (collective::alltoallv_flows) give the same loads, up to summation order.
    double extra = 0;
    const Coflow flows = alltoallv_flows(t, m, true, extra);
    CHECK(net.loads(flows, extra, other) == hs::test::approx(t_tr));
    REQUIRE(other.links.size() == tr.links.size());
    for (size_t i = 0; i < tr.links.size(); ++i) CHECK(other.links[i].bytes == hs::test::approx(tr.links[i].bytes));
  }
}

TEST_CASE("all-to-all-v on a topology that is not endpoint-separable: the transfers' loads to the bit") {
  // Without the separable pass, the all-to-all loads each pair's binding hops in (source,
  // destination) order, the order of its transfers (alltoallv_flows), holding a source's first
  // link in registers while its pairs keep it (AnalyticNetwork::alltoallv_add): every link then
  // takes the same additions in the same order as loads() over the transfers, so its bytes and
  // flow count are equal exactly, both directions, on GPUs sharing a NIC (one NIC per node, and
  // two GPUs per NIC) and with rows that skip pairs.
  for (const auto& [nodes, nics] : {std::pair{3, 1}, std::pair{4, 4}, std::pair{9, 1}}) {
    CAPTURE(nodes);
    CAPTURE(nics);
    const Topology t = cluster(nodes, 8, nics, 50e9);
    REQUIRE(!t.endpoint_separable());
    const std::vector<double> m = uneven_matrix(t.num_gpus());
    AnalyticNetwork net(t);
    for (const bool transpose : {false, true}) {
      CoflowLoads pass, by_transfers;
      double extra = 0;
      const Coflow flows = alltoallv_flows(t, m, transpose, extra);
      const double t_pass = net.alltoallv_loads(m, transpose, pass);
      const double t_flows = net.loads(flows, extra, by_transfers);
      CHECK(t_pass == t_flows);
      check_same(pass, by_transfers);
    }
  }
}

TEST_CASE("all-to-all-v in a stage's block: the whole matrix's loads and time to the bit") {
  // A pipeline stage's all-to-all: GPUs [lo, hi) hold every non-zero entry. On a topology that is
  // not endpoint-separable the pass then reads only that block (the pairs outside it carry no
  // bytes and add nothing), so time, bottleneck, every link's bytes and count and the latency are
  // exactly those of the whole matrix's pass, both directions, for blocks aligned to nodes or not.
  const Topology t = cluster(4, 8, 1, 50e9);
  REQUIRE(!t.endpoint_separable());
  const int n = t.num_gpus();
  for (const auto& [lo, hi] : {std::pair{8, 24}, std::pair{5, 19}, std::pair{0, 32}}) {
    CAPTURE(lo);
    CAPTURE(hi);
    Rng rng(static_cast<uint64_t>(lo * 100 + hi));
    std::vector<double> m(static_cast<size_t>(n) * n, 0.0);
    for (int s = lo; s < hi; ++s)
      for (int d = lo; d < hi; ++d)
        if (s != d && rng.uniform() < 0.9) m[static_cast<size_t>(s) * n + d] = 1e6 * (1 + rng.uniform());
    AnalyticNetwork net(t);
    for (const bool transpose : {false, true}) {
      CoflowLoads whole, block;
      const double t_whole = net.alltoallv_loads(m, transpose, whole);
      const auto link_whole = net.last_bottleneck();
      const double t_block = net.alltoallv_loads(m, transpose, block, {lo, hi});
      CHECK(t_whole > 0);
      CHECK(t_block == t_whole);
      CHECK(net.last_bottleneck() == link_whole);
      check_same(whole, block);
      CHECK(net.alltoallv_time(m, transpose, {lo, hi}) == t_whole);
    }
    CoflowLoads f1, r1, f2, r2;
    const auto a = net.alltoallv_loads_both(m, f1, r1), b = net.alltoallv_loads_both(m, f2, r2, {lo, hi});
    CHECK(a.fwd == b.fwd);
    CHECK(a.tr == b.tr);
    check_same(f1, f2);
    check_same(r1, r2);
  }
}

TEST_CASE("all-to-all-v pass: dense rows, rows with gaps and node-local rows against the transfers") {
  // The pass reads a row as the GPUs before its node, its node less itself and the GPUs after it,
  // and takes a row's latency from its precomputed largest when the row has a peer in every other
  // GPU. Either way the loads are those of the transfers (alltoallv_flows, up to summation order)
  // and the latency is exactly the largest route latency among the pairs that carry bytes (plus
  // the same batch latency), here for: every pair, every pair but one per row, only pairs inside
  // a node, and pairs inside a node plus one cross-node pair in the last row.
  const Topology t = cluster(4, 8, 8, 50e9);
  const int n = t.num_gpus();
  std::vector<std::vector<double>> cases(4, std::vector<double>(static_cast<size_t>(n) * n, 0.0));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const double b = 1e6 + 1e3 * s + d;
      cases[0][static_cast<size_t>(s) * n + d] = b;
      cases[1][static_cast<size_t>(s) * n + d] = d == (s + 5) % n ? 0.0 : b;
      if (t.node_of(s) == t.node_of(d)) cases[2][static_cast<size_t>(s) * n + d] = cases[3][static_cast<size_t>(s) * n + d] = b;
    }
  cases[3][static_cast<size_t>(n - 1) * n] = 2e6;  // GPU n-1 (last node) -> GPU 0 (first node)
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    AnalyticNetwork net(t);
    CoflowLoads fwd, tr, other;
    net.alltoallv_loads_both(cases[i], fwd, tr);
    for (const bool transpose : {false, true}) {
      const CoflowLoads& got = transpose ? tr : fwd;
      double extra = 0;
      const Coflow flows = alltoallv_flows(t, cases[i], transpose, extra);
      double alpha = 0;
      for (const auto& f : flows) alpha = std::max(alpha, t.route_latency(f.src, f.dst).value());
      net.loads(flows, extra, other);
      CHECK(got.latency == other.latency);
      CHECK(got.latency == alpha + extra);
      REQUIRE(got.links.size() == other.links.size());
      for (size_t k = 0; k < got.links.size(); ++k) {
        CHECK(got.links[k].link == other.links[k].link);
        CHECK(got.links[k].bytes == hs::test::approx(other.links[k].bytes));
        CHECK(got.links[k].flows == hs::test::approx(other.links[k].flows));
      }
    }
  }
}

TEST_CASE("all-to-all-v transfers: the transposed matrix read in bands lists what the transpose lists") {
  // alltoallv_flows(m, transpose = true) reads m column-wise in bands of 64 sources; it must list
  // exactly the transfers of alltoallv_flows(m^T, false): same pairs in (src, dst) order, same
  // bytes, same caps, same batch latency. 72 GPUs (bands of 64 and 8) with gaps in the matrix, and
  // 264 GPUs, 33 epochs of 8 rounds on 32 channels: two scheduling batches, so the extra latency is
  // the largest route latency among the pairs with bytes (here every pair but self), + the launch
  // (Simple: the pairs cross nodes, 8.4 us).
  for (const int nodes : {9, 33}) {
    CAPTURE(nodes);
    const Topology t = cluster(nodes, 8, 8, 50e9);
    const int n = t.num_gpus();
    const auto un = static_cast<size_t>(n);
    Rng rng(7);
    std::vector<double> m(un * un, 0.0), mt(un * un, 0.0);
    for (size_t s = 0; s < un; ++s)
      for (size_t d = 0; d < un; ++d) {
        const double b = nodes == 9 && (s * 7 + d) % 5 == 0 ? 0.0 : 1e5 * (1 + rng.uniform());
        m[s * un + d] = b;
        mt[d * un + s] = b;
      }
    double ea = -1, eb = -1;
    const Coflow a = alltoallv_flows(t, m, true, ea);
    const Coflow b = alltoallv_flows(t, mt, false, eb);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      CHECK(a[i].src == b[i].src);
      CHECK(a[i].dst == b[i].dst);
      CHECK(a[i].bytes == b[i].bytes);
      CHECK(a[i].rate_cap == b[i].rate_cap);
    }
    CHECK(ea == eb);
    if (nodes == 33) {
      double alpha = 0;
      for (int s = 0; s < n; ++s)
        for (int d = 0; d < n; ++d)
          if (s != d) alpha = std::max(alpha, t.route_latency(s, d).value());
      CHECK(ea == hs::test::approx(alpha + 8.4e-6));  // (2 batches - 1) x the largest route latency + launch
    } else {
      CHECK(ea == hs::test::approx(8.4e-6));  // one batch: the launch
    }
  }
}
