#include <doctest/doctest.h>

#include <map>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "collective/analytic_network.hpp"
#include "collective/chain.hpp"
#include "collective/ring.hpp"
#include "collective/ring_search.hpp"
#include "support/test_platforms.hpp"
#include "topology/topology_builder.hpp"

using namespace hs;
using namespace hs::collective;

namespace {
std::vector<int> iota(int n, int from = 0) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}
// `nodes` DGX-1V / p3dn nodes: the hybrid cube-mesh at 20 GB/s per NVLink (NV2 pairs 40 GB/s),
// 3 us per hop; one 12.5 GB/s NIC per node when there are several, on 12 GB/s PCIe (slower than
// NVLink, as on the real machine, so GPUs of a node talk over NVLink).
topology::Topology cube_mesh(int nodes = 1) {
  test::ClusterShape c;
  c.nodes = nodes;
  c.intra_kind = "hybrid-cube-mesh", c.intra_bw = 20e9, c.intra_lat = 3e-6;
  if (nodes > 1) c.nics = 1, c.nic_bw = 12.5e9, c.pcie_bw = 12e9;
  return test::make_cluster(c);
}
// Whether a -> b is one GPU-GPU link (no switch, no relaying GPU).
bool direct(const topology::Topology& t, int a, int b) { return t.route(a, b).hops.size() == 1; }
// Channel c of a switch node as before the search: the group rotated by c.
std::vector<int> rotated(std::span<const int> g, int c) {
  std::vector<int> o;
  for (size_t i = 0; i < g.size(); ++i) o.push_back(g[(i + c) % g.size()]);
  return o;
}
}  // namespace

TEST_CASE("rings on the DGX-1V matrix: 6 Hamiltonian cycles over direct NVLinks, every link used as often as it is wide") {
  // Each GPU has 6 NVLinks (2 NV1 + 2 NV2 neighbours), so at one link's speed at most 6 rings leave
  // it; 6 rings x 8 edges = 48 directed link uses = the 2 x 24 directed NVLinks of the matrix
  // (NV2 counted twice), so a search that reaches the bound uses every NVLink, both ways, exactly
  // as many times as it is wide.
  const auto t = cube_mesh();
  const auto g = iota(8);
  const auto links = direct_links(t, g);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) CHECK(links.at(a, b) == topology::kHybridCubeMesh[a][b]);
  const auto rings = search_rings(links);
  REQUIRE(rings.size() == 6);
  CHECK(default_ring_channels(t, g) == 6);
  std::map<std::pair<int, int>, int> uses;
  for (const auto& r : rings) {
    CHECK(std::set<int>(r.begin(), r.end()) == std::set<int>(g.begin(), g.end()));  // covers each GPU once
    for (int i = 0; i < 8; ++i) {
      const int a = r[i], b = r[(i + 1) % 8];
      CHECK(topology::kHybridCubeMesh[a][b] > 0);
      CHECK(direct(t, a, b));
      ++uses[{a, b}];
    }
  }
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (topology::kHybridCubeMesh[a][b] > 0) CHECK(uses[{a, b}] == topology::kHybridCubeMesh[a][b]);
  // Deterministic: the orders the ring collectives use are these rings, every time.
  CHECK(ring_orders(t, g, 6) == rings);
  CHECK(ring_orders(t, g, 6) == ring_orders(t, g, 6));
}

TEST_CASE("one cube-mesh node: ring all-reduce at 6 rings x one NVLink, 6x the rank-order ring") {
  // 6 rings, each edge one 20 GB/s NVLink per ring (an NV2 pair's 40 GB/s carries its two rings):
  // a step moves S/(n x 6) per ring edge, one 3 us hop, so
  //   T = 2(n-1) x (S / (8 x 6) / 20 GB/s + 3 us),  busbw = 2(n-1)/n x S / T -> 6 x 20 = 120 GB/s.
  // S = 1 GB: T = 14 x (1.0417 ms + 3 us) = 14.625 ms, busbw 119.66 GB/s. The rank-order ring
  // 0-1-...-7 crossed NV1 links (0-1, 4-5) and relayed pairs (3-4, 7-0): one ring at 20 GB/s.
  const auto t = cube_mesh();
  AnalyticNetwork net(t);
  const auto g = iota(8);
  const double S = 1e9;
  const double want = 14 * (S / 48 / 20e9 + 3e-6);
  CHECK(ring_time(net, g, S, RingOp::kAllReduce) == doctest::Approx(want).epsilon(1e-9));
  CHECK(2.0 * 7 / 8 * S / want / 1e9 == doctest::Approx(119.66).epsilon(1e-4));
  CHECK(ring_time(net, g, S, RingOp::kAllGather) == doctest::Approx(7 * (S / 48 / 20e9 + 3e-6)).epsilon(1e-9));
  // Broadcast follows the same rings from the root: each of the 6 chains carries S/6 over 7 direct hops.
  double extra = 0;
  const auto b = broadcast_flows(t, g, 0, S, extra);
  CHECK(b.size() == 6 * 7);
  for (const auto& x : b) CHECK(direct(t, x.src, x.dst));
  CHECK(net.coflow_time(b) + extra == doctest::Approx(S / 6 / 20e9 + 7 * 3e-6).epsilon(1e-9));
}

TEST_CASE("cube-mesh subsets: rings over the direct links they have, else the rank order") {
  const auto t = cube_mesh();
  // {0,1,2,3}: every pair linked (0-3, 1-2, 2-3 NV2; 0-1, 0-2, 1-3 NV1); GPU 0 has 1+1+2 = 4 link
  // widths out, so at most 4 rings, and the search finds 4, each over direct links only.
  const std::vector<int> quad{0, 1, 2, 3};
  const auto orders = ring_orders(t, quad, default_ring_channels(t, quad));
  CHECK(orders.size() == 4);
  for (const auto& o : orders)
    for (int i = 0; i < 4; ++i) CHECK(direct(t, o[i], o[(i + 1) % 4]));
  // {0,5}: no NVLink between them (relayed), so no ring over direct links: one channel, rank order.
  const std::vector<int> pair{0, 5};
  CHECK(default_ring_channels(t, pair) == 1);
  CHECK(ring_orders(t, pair, 1) == std::vector<std::vector<int>>{{0, 5}});
}

TEST_CASE("cube-mesh nodes in a multi-node ring: each node crossed along direct links, entered and left as before") {
  // 2 nodes: 8 channels (one per GPU of a node, as on any multi-node group); channel c enters each
  // node at its GPU c and, where a direct-link path exists, leaves from GPU c-1 as the rotation did.
  const auto t = cube_mesh(2);
  const auto g = iota(16);
  REQUIRE(default_ring_channels(t, g) == 8);
  const auto orders = ring_orders(t, g, 8);
  std::map<std::pair<int, int>, int> uses;
  for (int c = 0; c < 8; ++c) {
    CAPTURE(c);
    const auto& o = orders[c];
    REQUIRE(o.size() == 16);
    for (int node = 0; node < 2; ++node) {
      CHECK(o[node * 8] == node * 8 + c);
      for (int i = 0; i + 1 < 8; ++i) {
        CHECK(direct(t, o[node * 8 + i], o[node * 8 + i + 1]));
        ++uses[{o[node * 8 + i] % 8, o[node * 8 + i + 1] % 8}];
      }
    }
    // Leaves from GPU c-1: a direct-link path c -> c-1 exists for every c on the mesh, also for
    // the two pairs without an NVLink of their own (0 -> 7 and 4 -> 3), e.g. 0 3 2 1 5 6 4 7.
    CHECK(o[7] % 8 == (c + 7) % 8);
  }
  // 8 channels x 7 intra-node hops = 56 uses over 48 directed link widths: spread, so no link is
  // left idle.
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (topology::kHybridCubeMesh[a][b] > 0) CHECK(uses[{a, b}] > 0);
}

TEST_CASE("switch nodes keep the rotation: NVSwitch rings unchanged") {
  test::ClusterShape c;
  c.nodes = 2, c.nics = 8, c.nic_bw = 50e9;
  const auto t = test::make_cluster(c);
  const auto one = iota(8);
  CHECK(default_ring_channels(t, one) == 1);
  CHECK(search_rings(direct_links(t, one)).empty());
  CHECK(ring_orders(t, one, 3) == std::vector<std::vector<int>>{rotated(one, 0), rotated(one, 1), rotated(one, 2)});
  const auto all = iota(16);
  REQUIRE(default_ring_channels(t, all) == 8);
  const auto orders = ring_orders(t, all, 8);
  for (int ch = 0; ch < 8; ++ch) {
    auto want = rotated(iota(8), ch);
    for (int x : rotated(iota(8, 8), ch)) want.push_back(x);
    CHECK(orders[ch] == want);
  }
}
