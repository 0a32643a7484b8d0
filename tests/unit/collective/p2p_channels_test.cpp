#include <doctest/doctest.h>

#include <vector>

#include "collective/all_to_all.hpp"
#include "collective/analytic_network.hpp"
#include "collective/p2p_channels.hpp"
#include "support/approx.hpp"
#include "support/test_platforms.hpp"

using namespace hs;
using namespace hs::collective;

namespace {
topology::Topology nodes_of(int nodes, int g) {
  test::ClusterShape c;
  c.nodes = nodes, c.gpus_per_node = g, c.intra_bw = 400e9, c.intra_lat = 1e-6;
  if (nodes > 1) c.nics = g, c.nic_bw = 50e9;
  return test::make_cluster(c);
}
std::vector<double> uniform(int n, double per_peer) {
  std::vector<double> m(static_cast<size_t>(n) * n, per_peer);
  for (int g = 0; g < n; ++g) m[static_cast<size_t>(g) * n + g] = 0;
  return m;
}
}  // namespace

TEST_CASE("NCCL 2.28's p2p batches per channel, by hand") {
  // One node, 4 ranks, 8 channels an operation, 32 channels: rounds 0..3 start at reverseBits(r, 5)
  // = 0, 16, 8, 24 and take 8 channels each: no channel twice, one batch.
  CHECK(nccl_p2p_batches(4, 32, 8, false) == 1);
  // One node, 64 ranks, one channel an operation: round r and r + 32 start on the same channel
  // (reverseBits keeps the low 5 bits) and lie in different epochs of 8 rounds: two batches.
  CHECK(nccl_p2p_batches(64, 32, 1, false) == 2);
  CHECK(nccl_p2p_batches(32, 32, 1, false) == 1);
  // Across nodes the 8 rounds of an epoch share a channel (base = r / 8): 2,048 ranks are 256
  // epochs on 32 channels, 8 a channel; 256 ranks are 32 epochs, one a channel.
  CHECK(nccl_p2p_batches(2048, 32, 1, true) == 8);
  CHECK(nccl_p2p_batches(256, 32, 1, true) == 1);
  CHECK(nccl_p2p_batches(257, 32, 1, true) == 2);
}

TEST_CASE("the launch latency of a grouped exchange: LL's 6.6 us up to c x 16 KiB a peer, else Simple's 8.4 us") {
  // One node of 4 GPUs: one batch, so extra_latency is only the launch. A peer's operation runs LL
  // up to c x P2P_LL_THRESHOLD bytes (c channels per peer): at that size 6.6 us, one byte more 8.4 us
  // (src/graph/tuning.cc baseLatencies, ring LL and Simple).
  const auto t = nodes_of(1, 4);
  const P2pChannels p2p(t, 4, false);
  const double ll_max = p2p.channels_per_peer() * 16384.0;
  CHECK(p2p.ll_threshold() == ll_max);
  double extra = -1;
  alltoallv_flows(t, uniform(4, ll_max), false, extra);
  CHECK(extra == hs::test::approx(6.6e-6));
  alltoallv_flows(t, uniform(4, ll_max + 1), false, extra);
  CHECK(extra == hs::test::approx(8.4e-6));
  // Nothing to send: no launch.
  alltoallv_flows(t, std::vector<double>(16, 0.0), false, extra);
  CHECK(extra == 0.0);
  // A peer on another node: its connection has no LL buffers (NCCL_ALLOC_P2P_NET_LL_BUFFERS off), so
  // Simple's, however small.
  const auto t2 = nodes_of(2, 4);
  alltoallv_flows(t2, uniform(8, 1024), false, extra);
  CHECK(extra == hs::test::approx(8.4e-6));
  // The analytic network adds the same extra to the transfers' time.
  AnalyticNetwork net(t);
  const auto m = uniform(4, 1e6);
  const Coflow flows = alltoallv_flows(t, m, false, extra);
  AnalyticNetwork plain(t);
  CHECK(net.alltoallv_time(m) == hs::test::approx(plain.coflow_time(flows) + extra));
}

TEST_CASE("large all-to-alls keep their time: the launch is under 1% of the bandwidth-bound end") {
  // 8 GPUs of one node and 2 x 4 across nodes, 256 MiB a peer: the launch (8.4 us) against the
  // transfers' time, which the term does not touch.
  for (const int nodes : {1, 2}) {
    const auto t = nodes_of(nodes, 8 / nodes);
    const auto m = uniform(8, 256.0 * (1 << 20));
    double extra = 0;
    const Coflow flows = alltoallv_flows(t, m, false, extra);
    AnalyticNetwork net(t);
    const double with = net.alltoallv_time(m);
    const double without = with - 8.4e-6;
    CAPTURE(nodes);
    CHECK(extra == hs::test::approx(8.4e-6));
    CHECK((with - without) / without < 0.01);
    AnalyticNetwork plain(t);
    CHECK(without == hs::test::approx(plain.coflow_time(flows)));
  }
}
