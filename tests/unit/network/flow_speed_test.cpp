// Communication slowed beside compute on the flow tier (FlowNetwork::set_speed): each transfer of a
// task slowed to speed s is capped at s x bytes / D (D: the task's solo drain), which must time a
// collective alone as the analytic tier does (D / s + latency), keep progress across a speed change,
// and leave the bandwidth a slowed task does not take to the others.
#include <doctest/doctest.h>

#include <vector>

#include "collective/analytic_network.hpp"
#include "engine/simulation.hpp"
#include "network/coflow_network.hpp"
#include "network/flow_network.hpp"
#include "support/approx.hpp"
#include "support/end_times.hpp"
#include "support/test_platforms.hpp"

using namespace hs;

namespace {
topology::Topology one_node(int g) {
  test::ClusterShape c;
  c.gpus_per_node = g;
  return test::make_cluster(c);
}

// Coflow k runs as a communication task on device k from t = 0, beside a compute task on the same
// device for compute_s[k] seconds (0: none); communication beside compute runs at 1 / (1 + slow)
// (every traffic kind). The network model is the flow tier (exact: precision 0) or the analytic
// tier; returns the communication tasks' end times.
std::vector<double> run_beside_compute(const topology::Topology& t, const std::vector<collective::Coflow>& coflows,
                                       const std::vector<double>& compute_s, double slow, bool flow) {
  engine::TaskGraph g;
  network::FlowNetwork fnet(t, 0);
  network::CoflowNetwork cnet(t);
  engine::ActivityModel& net = flow ? static_cast<engine::ActivityModel&>(fnet) : cnet;
  engine::Simulation sim(g);
  const engine::ModelId mid = sim.add_model(&net);
  collective::AnalyticNetwork a(t);
  std::vector<engine::TaskId> ids;
  for (size_t k = 0; k < coflows.size(); ++k) {
    const int dev = static_cast<int>(k);
    const engine::TaskId c = g.add_task(g.add_resource("comm", dev), Seconds(0), 0, mid);
    g.set_activity(c, engine::Activity::kCommunication);
    ids.push_back(c);
    if (flow) {
      fnet.assign(c, coflows[k]);
    } else {
      collective::CoflowLoads l;
      a.loads(coflows[k], 0.0, l);
      cnet.assign(c, cnet.define(l));
    }
    if (compute_s[k] > 0) {
      const engine::TaskId x = g.add_task(g.add_resource("compute", dev), Seconds(compute_s[k]), 0);
      g.set_activity(x, engine::Activity::kCompute);
    }
  }
  sim.set_interference({0.0, slow});
  sim.run();
  return test::end_times(sim, ids);
}
}  // namespace

TEST_CASE("flow tier, slowed from its start and alone: D / s + latency, the analytic tier's time") {
  // Communication beside compute at 1 / (1 + 1) = 0.5 for the whole collective (the compute runs
  // 1 s). Each transfer is capped at 0.5 x bytes / D, which the links allow (D is the most loaded
  // link's time), so every transfer ends at D / 0.5 and the task at 2 D + latency, as the analytic
  // tier's coflow capped at 0.5 / D. Cases:
  //   one 40 MB transfer over a 10 GB/s NIC: D = 4 ms, 8 ms + the route latency;
  //   the same capped at 5 GB/s (an NCCL connection's channels): D = its floor, 8 ms -> 16 ms;
  //   a uniform all-to-all among 4 GPUs of one node, 10 MB per pair over 400 GB/s NVLink: each
  //     GPU's uplink carries 30 MB, D = 75 us -> 150 us (one class per transfer);
  //   a uniform all-to-all among 2 x 2 GPUs behind one NIC per node, 10 MB per pair: the NIC carries
  //     4 x 10 MB, D = 4 ms -> 8 ms (the cross-node transfers form one class of 4 equal members).
  const auto nodes = test::two_nodes_one_nic(2);
  const auto node = one_node(4);
  collective::Coflow a2a;
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d)
      if (s != d) a2a.push_back({s, d, 10e6});
  struct Case {
    const topology::Topology& t;
    collective::Coflow c;
    double drain;
  };
  const std::vector<Case> cases = {{nodes, {{0, 2, 40e6}}, 4e-3},
                                   {nodes, {{0, 2, 40e6, 5e9}}, 8e-3},
                                   {node, a2a, 30e6 / 400e9},
                                   {nodes, a2a, 40e6 / 10e9}};
  for (const auto& k : cases) {
    collective::AnalyticNetwork an(k.t);
    const double alone = an.coflow_time(k.c);  // latency + D
    const double flow = run_beside_compute(k.t, {k.c}, {1.0}, 1.0, true)[0];
    const double analytic = run_beside_compute(k.t, {k.c}, {1.0}, 1.0, false)[0];
    CHECK(flow == hs::test::approx(alone + k.drain));  // latency + 2 D
    CHECK(flow == hs::test::approx(analytic));
    // Not slowed (no compute beside it): latency + D on both, as before.
    CHECK(run_beside_compute(k.t, {k.c}, {0.0}, 1.0, true)[0] == hs::test::approx(alone));
  }
}

TEST_CASE("flow tier: a speed change mid-flight keeps the progress made") {
  // One 40 MB transfer over a 10 GB/s NIC, D = 4 ms. Compute beside it for the first 2 ms (half its
  // solo time) at speed 0.5: 0.5 x 10 GB/s x 2 ms = 10 MB, a quarter, is done by 2 ms; then speed 1:
  // 30 MB at 10 GB/s = 3 ms. The drain ends at 5 ms (1.25 D), the task at 5 ms + latency; the
  // analytic tier says the same.
  const auto t = test::two_nodes_one_nic(2);
  const collective::Coflow c{{0, 2, 40e6}};
  const double lat = t.route_latency(0, 2).value();
  CHECK(run_beside_compute(t, {c}, {2e-3}, 1.0, true)[0] == hs::test::approx(5e-3 + lat));
  CHECK(run_beside_compute(t, {c}, {2e-3}, 1.0, false)[0] == hs::test::approx(5e-3 + lat));
}

TEST_CASE("flow tier: a slowed task is capped, and the task beside it takes the bandwidth it leaves") {
  // Two nodes of 4 GPUs, one 10 GB/s NIC each (C). Task A sends B = 10 MB from GPU 0 to GPUs 4 and
  // 5 (20 MB through the NIC: D_A = 2 ms) beside compute (speed 0.5), task X sends B from GPU 1 to
  // GPU 6, not slowed. Three flows share the NIC pair: unslowed, max-min gives each C / 3 and both
  // tasks end at 3B / C = 3 ms. Slowed, A's flows are capped at 0.5 x B / D_A = C / 4 each: X takes
  // the rest, C / 2, and ends at B / (C / 2) = 2 ms; A's flows stay at their cap (C / 4 is all they
  // may take, alone or not) and end at B / (C / 4) = 4 ms = D_A / 0.5. Plus the route latency.
  const auto t = test::two_nodes_one_nic(4);
  const collective::Coflow a{{0, 4, 10e6}, {0, 5, 10e6}}, x{{1, 6, 10e6}};
  const double lat = t.route_latency(0, 4).value();
  const auto plain = run_beside_compute(t, {a, x}, {0.0, 0.0}, 1.0, true);
  CHECK(plain[0] == hs::test::approx(3e-3 + lat));
  CHECK(plain[1] == hs::test::approx(3e-3 + lat));
  const auto slowed = run_beside_compute(t, {a, x}, {1.0, 0.0}, 1.0, true);
  CHECK(slowed[0] == hs::test::approx(4e-3 + lat));
  CHECK(slowed[1] == hs::test::approx(2e-3 + lat));
}
