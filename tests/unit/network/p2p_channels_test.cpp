// NCCL's point-to-point channels (collective/p2p_channels.hpp) on both network tiers.
#include <doctest/doctest.h>

#include <vector>

#include "collective/all_to_all.hpp"
#include "collective/analytic_network.hpp"
#include "collective/p2p_channels.hpp"
#include "engine/simulation.hpp"
#include "network/coflow_network.hpp"
#include "network/flow_network.hpp"
#include "support/test_platforms.hpp"
#include "topology/topology_loader.hpp"
#include "util/diagnostics.hpp"
#include "support/approx.hpp"

using namespace hs;

namespace {
// `nodes` x 8 GPUs at 400 GB/s to their switch, a 50 GB/s NIC per GPU; compute capability 8.0.
topology::Topology cluster(int nodes, int channels_per_net_peer = 0) {
  test::ClusterShape c;
  c.nodes = nodes, c.nics = 8, c.nic_bw = 50e9;
  topology::Topology t = test::make_cluster(c);
  if (channels_per_net_peer == 0) return t;
  topology::CompactSpec s;  // the same machine with NCCL_NCHANNELS_PER_NET_PEER set
  s.name = "test";
  s.gpu = {"X", FlopRate(c.peak_flops), Bandwidth(c.hbm), Bytes(80e9)};
  s.nodes = nodes;
  s.intra = {Bandwidth(c.intra_bw), 1.0, Seconds(c.intra_lat), ""};
  s.nics_per_node = 8;
  s.nic = {Bandwidth(c.nic_bw), 1.0, Seconds(c.nic_lat), ""};
  s.pcie = {Bandwidth(c.pcie_bw), 1.0, Seconds(c.pcie_lat), ""};
  s.nccl.channels_per_net_peer = channels_per_net_peer;
  return topology::build_compact(s, {"test", 0, 0});
}

double flow_time(const topology::Topology& t, const collective::Coflow& c, double extra) {
  engine::TaskGraph g;
  const auto id = g.add_task(g.add_resource("r"), Seconds(0), 0, 1);
  network::FlowNetwork net(t, 0);
  net.assign(id, c, extra);
  engine::Simulation sim(g);
  sim.add_model(&net);
  sim.run();
  return sim.end_time(id);
}

double coflow_tier_time(const topology::Topology& t, std::span<const double> m) {
  collective::AnalyticNetwork an(t);
  collective::CoflowLoads loads;
  an.alltoallv_loads(m, false, loads);
  engine::TaskGraph g;
  const auto id = g.add_task(g.add_resource("r"), Seconds(0), 0, 1);
  network::CoflowNetwork net(t);
  net.assign(id, net.define(loads));
  engine::Simulation sim(g);
  sim.add_model(&net);
  sim.run();
  return sim.end_time(id);
}
}  // namespace

TEST_CASE("channels per peer, caps and rounds follow NCCL 2.28's rules") {
  const auto t = cluster(4);
  // 32 ranks on 4 nodes. Local peers over NVLink ask 2 x (400 GB/s / 20 GB/s, NCCL's sm80 NVLink) =
  // 40 channels, network peers 2 (2 x 32 = 64 <= 4 x 32): c = pow2Up(min(32, 40, 2)) = 2.
  collective::P2pChannels p(t);
  CHECK(p.channels() == 32);
  CHECK(p.channels_per_peer() == 2);
  CHECK(p.net_cap() == hs::test::approx(2 * 14e9));   // 2 x NCCL_P2P_PER_CHANNEL_NET_BW
  CHECK(p.local_cap() == hs::test::approx(2 * 40e9)); // 2 x speedArrayIntra[0] (before sm90)
  CHECK(p.cap(0, 1) == p.local_cap());
  CHECK(p.cap(0, 8) == p.net_cap());
  CHECK(p.rounds() == 1);  // 4 epochs of 8 rounds on 32 channels (collective/p2p_channels.hpp)
  // 1,024 ranks: 2 x 1024 > 128, so 1 channel per network peer; 128 epochs of 8 rounds, each on one
  // channel (base r / 8 across nodes), on 32 channels: 4 batches.
  collective::P2pChannels big(t, 1024, true);
  CHECK(big.channels_per_peer() == 1);
  CHECK(big.rounds() == 4);
  // One node: only NVLink peers, c = min(32, pow2Up(40)) = 32: 32 x 40 GB/s, above any link here.
  collective::P2pChannels one(t, 8, false);
  CHECK(one.channels_per_peer() == 32);
  CHECK(one.local_cap() == hs::test::approx(32 * 40e9));
  // NCCL_NCHANNELS_PER_NET_PEER=4: c = min(40, 4) = 4, 56 GB/s per network connection.
  collective::P2pChannels tuned(cluster(4, 4));
  CHECK(tuned.channels_per_peer() == 4);
  CHECK(tuned.net_cap() == hs::test::approx(56e9));
}

TEST_CASE("a lone transfer to another node is held to its connection's channels, on both tiers") {
  // 100 MB from GPU 0 to GPU 8 (node 1): the NIC could carry 50 GB/s (2 ms), the connection's 2
  // channels 28 GB/s: latency + 100e6 / 28e9 = latency + 3.571 ms, + the group's launch (Simple, a
  // network peer: 8.4 us, collective/p2p_channels.hpp).
  const auto t = cluster(2);
  const int n = t.num_gpus();
  std::vector<double> m(static_cast<size_t>(n) * n, 0.0);
  m[0 * n + 8] = 100e6;
  collective::AnalyticNetwork an(t);
  const double lat = t.route(0, 8).latency.value() + 8.4e-6;
  CHECK(an.alltoallv_time(m) == doctest::Approx(lat + 100e6 / 28e9).epsilon(1e-12));
  double extra = -1;
  const auto flows = collective::alltoallv_flows(t, m, false, extra);
  REQUIRE(flows.size() == 1);
  CHECK(flows[0].rate_cap == hs::test::approx(28e9));
  CHECK(extra == hs::test::approx(8.4e-6));
  CHECK(flow_time(t, flows, extra) == doctest::Approx(lat + 100e6 / 28e9).epsilon(1e-9));
  CHECK(coflow_tier_time(t, m) == doctest::Approx(lat + 100e6 / 28e9).epsilon(1e-9));
  // With 4 channels per network peer (56 GB/s) the NIC binds again: latency + 2 ms.
  const auto tuned = cluster(2, 4);
  collective::AnalyticNetwork an4(tuned);
  CHECK(an4.alltoallv_time(m) == doctest::Approx(lat + 100e6 / 50e9).epsilon(1e-12));
}

TEST_CASE("a uniform all-to-all across nodes stays NIC-bound: the caps do not bind") {
  // 16 GPUs on 2 nodes, each sending S = 160 MB evenly (10 MB per peer): 8 remote peers put 80 MB on
  // each NIC, 1.6 ms at 50 GB/s; one connection's 10 MB at 28 GB/s takes 0.36 ms.
  const auto t = cluster(2);
  const int n = t.num_gpus();
  std::vector<double> m(static_cast<size_t>(n) * n, 10e6);
  collective::AnalyticNetwork an(t);
  double lat = 0;
  for (int d = 1; d < n; ++d) lat = std::max(lat, t.route(0, d).latency.value());
  lat += 8.4e-6;  // the launch (Simple)
  CHECK(an.alltoallv_time(m) == doctest::Approx(lat + 80e6 / 50e9).epsilon(1e-12));
  double extra = 0;
  const auto uniform_flows = collective::alltoallv_flows(t, m, false, extra);  // sets extra first
  CHECK(flow_time(t, uniform_flows, extra) ==
        doctest::Approx(lat + 80e6 / 50e9).epsilon(1e-9));
}

TEST_CASE("nccl: in a topology file: values, defaults and errors") {
  const std::string base =
      "schema: hecate-sim/topology@1\nname: t\ngpu: {model: H100, peak_bf16: 989TFLOPS, hbm_bandwidth: 3TB/s, "
      "memory: 80GiB}\nnodes: 2\ngpus_per_node: 8\nintra_node: {kind: nvswitch, bandwidth: 450GB/s, latency: 3us}\n"
      "nics_per_node: 8\nnic: {bandwidth: 400Gbps, latency: 2us}\nfabric: {kind: single-switch}\n";
  const auto t = topology::load_topology(base, "t.yaml");
  CHECK(t.nccl().p2p_channels == 32);
  // H100 (9.0): 60 GB/s per NVLink channel by default.
  CHECK(collective::P2pChannels(t).local_cap() == hs::test::approx(2 * 60e9));
  const auto u = topology::load_topology(
      base + "nccl: {p2p_channels: 16, channels_per_net_peer: 8, net_channel_bandwidth: 10GB/s, "
             "nvlink_channel_bandwidth: 30GB/s}\n",
      "t.yaml");
  collective::P2pChannels p(u);
  CHECK(p.channels() == 16);
  CHECK(p.channels_per_peer() == 8);  // min(16, 2 x 21 NVLinks' worth, 8)
  CHECK(p.net_cap() == hs::test::approx(80e9));
  CHECK(p.local_cap() == hs::test::approx(240e9));
  CHECK_THROWS_AS(topology::load_topology(base + "nccl: {p2p_channels: 24}\n", "t.yaml"), InputError);
  CHECK_THROWS_AS(topology::load_topology(base + "nccl: {net_channel_bandwidth: 0GB/s}\n", "t.yaml"), InputError);
  CHECK_THROWS_AS(topology::load_topology(base + "nccl: {channels: 4}\n", "t.yaml"), InputError);
  try {
    topology::load_topology(base + "nccl: {p2p_channels: 24}\n", "t.yaml");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("t.yaml:10") != std::string::npos);
    CHECK(std::string(e.what()).find("power of two") != std::string::npos);
  }
}
