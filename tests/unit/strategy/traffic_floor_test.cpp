// The traffic half of the lower bound (strategy/policy/bound/traffic_floor.hpp), worked by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "cost/memory_model.hpp"
#include "strategy/policy/bound/traffic_floor.hpp"
#include "support/test_platforms.hpp"

using namespace hs;

namespace {

// 2 nodes x 4 GPUs; each GPU: 400 GB/s to the node switch and 200 GB/s PCIe to its own 25 GB/s NIC.
// Node level: 4 NICs x 25 GB/s leave each node -> 200 GB/s out over both nodes (and in).
topology::Topology two_nodes() {
  test::ClusterShape c;
  c.nodes = 2, c.gpus_per_node = 4, c.nics = 4, c.nic_bw = 25e9;
  return test::make_cluster(c);
}

// counts[layer][gpu][expert] of the tiny model (2 MoE layers, 8 experts) with only layer 0's expert
// 0 used: node 0's GPUs send x tokens each, node 1's y.
std::vector<double> one_expert(double x, double y) {
  std::vector<double> c(2 * 8 * 8, 0.0);
  for (int g = 0; g < 8; ++g) c[static_cast<size_t>(g) * 8 + 0] = g < 4 ? x : y;
  return c;
}

}  // namespace

TEST_CASE("traffic floor: replicating across nodes beats shipping tokens when tokens outweigh an expert") {
  // Tiny model: token = 512 x 2 B = 1024 B; expert = 512 x 1024 x 2 matrices x 2 B = 2 MiB (P_e);
  // P_dense = count_params(m).dense x 2 B, every unit sends at least that for the dense all-reduce.
  // x = y = 1000: node 0 and node 1 each route 4000 tokens to expert 0.
  //   node level: one holder -> the other node sends 2 x 1024 B x 4000 = 8.192 MB;
  //               both hold it -> 2 x P_e = 4.194 MB: the floor is 4.194 MB + 2 P_dense,
  //               over 200 GB/s.
  //   GPU level:  8 GPUs of 1000 tokens: one holder -> 7 x 2.048 MB = 14.336 MB, k holders
  //               k x 2.097 + (8 - k) x 2.048 MB > that; + 8 P_dense over 8 x 600 GB/s: smaller.
  const auto m = test::tiny_moe_model();
  const auto t = two_nodes();
  const double p_e = 512.0 * 1024 * 2 * 2, p_dense = cost::count_params(m).dense * 2;
  const auto f = strategy::traffic_floor(t, m, one_expert(1000, 1000));
  CHECK(f.level == "node links");
  CHECK(f.bytes == doctest::Approx(2 * p_e + 2 * p_dense).epsilon(1e-12));
  CHECK(f.seconds == doctest::Approx((2 * p_e + 2 * p_dense) / 200e9).epsilon(1e-12));
}

TEST_CASE("traffic floor: a light node ships its tokens to the heavy one") {
  // x = 1000, y = 100: node 1 routes 400 tokens, 2 x 1024 x 400 = 0.8192 MB < 2 P_e = 4.19 MB.
  const auto m = test::tiny_moe_model();
  const auto t = two_nodes();
  const double p_dense = cost::count_params(m).dense * 2;
  const auto f = strategy::traffic_floor(t, m, one_expert(1000, 100));
  CHECK(f.level == "node links");
  CHECK(f.bytes == doctest::Approx(2 * 1024.0 * 400 + 2 * p_dense).epsilon(1e-12));
}

TEST_CASE("traffic floor: one node has only the GPU level, and one GPU nothing") {
  // node8: 8 GPUs, 200 GB/s each to the switch (and no NIC): GPU level only, 8 x 200 GB/s.
  // Expert 0 with 1000 tokens from every GPU: one holder -> 7 x 2.048 MB = 14.336 MB (k >= 2
  // holders cost more: 2.097 MB each against 2.048 MB saved), + 8 P_dense.
  const auto m = test::tiny_moe_model();
  const auto t = test::node8();
  const double p_dense = cost::count_params(m).dense * 2;
  const auto f = strategy::traffic_floor(t, m, one_expert(1000, 1000));
  CHECK(f.level == "GPU links");
  CHECK(f.bytes == doctest::Approx(7 * 2 * 1024.0 * 1000 + 8 * p_dense).epsilon(1e-12));
  CHECK(f.seconds == doctest::Approx(f.bytes / (8 * 200e9)).epsilon(1e-12));
  test::ClusterShape one;
  one.gpus_per_node = 1;
  const auto single = test::make_cluster(one);
  std::vector<double> c(2 * 1 * 8, 100.0);
  const auto none = strategy::traffic_floor(single, m, c);
  CHECK(none.seconds == 0);
  CHECK(none.level.empty());
}

TEST_CASE("property: the traffic floor is invariant under relabelling GPUs within a node, and nodes") {
  // Swapping two GPUs of one node permutes the GPU-level units and keeps every node's sums;
  // swapping the nodes' blocks of GPUs permutes the node-level units: the same least bytes.
  const auto m = test::tiny_moe_model();
  const auto t = two_nodes();
  std::vector<double> c(2 * 8 * 8);
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<double>((i * 7919) % 1733);
  auto row = [](std::vector<double>& v, int l, int g) { return v.begin() + (l * 8 + g) * 8; };
  auto within = c, nodes = c;
  for (int l = 0; l < 2; ++l) {
    std::swap_ranges(row(within, l, 1), row(within, l, 1) + 8, row(within, l, 2));
    std::swap_ranges(row(nodes, l, 0), row(nodes, l, 4), row(nodes, l, 4));
  }
  const auto a = strategy::traffic_floor(t, m, c);
  for (const auto& v : {within, nodes}) {
    const auto b = strategy::traffic_floor(t, m, v);
    CHECK(a.bytes == doctest::Approx(b.bytes).epsilon(1e-12));
    CHECK(a.level == b.level);
  }
}
