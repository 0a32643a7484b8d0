#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "collective/all_reduce.hpp"
#include "collective/analytic_network.hpp"
#include "collective/ring.hpp"
#include "engine/simulation.hpp"
#include "network/coflow_drain.hpp"
#include "network/flow_network.hpp"
#include "support/test_platforms.hpp"
#include "topology/topology_builder.hpp"
#include "topology/topology_loader.hpp"
#include "util/rng.hpp"
#include "support/approx.hpp"
#include "support/end_times.hpp"

using namespace hs;

namespace {
topology::Topology cluster(int nodes, int g, int nics, double nic_bw) {
  test::ClusterShape c;
  c.nodes = nodes, c.gpus_per_node = g, c.nics = nics, c.nic_bw = nic_bw;
  c.fabric = nodes > 2 ? "rail-optimized" : "single-switch";
  return test::make_cluster(c);
}
// Runs coflows as tasks on separate resources (concurrently) through the flow tier; returns end times.
// precision 0: exact max-min, one event per distinct completion time.
std::vector<double> run_flow(const topology::Topology& t, const std::vector<collective::Coflow>& coflows,
                             double precision = 0, network::FlowStats* stats = nullptr) {
  engine::TaskGraph g;
  network::FlowNetwork net(t, precision);
  std::vector<engine::TaskId> ids;
  for (size_t i = 0; i < coflows.size(); ++i)
    ids.push_back(g.add_task(g.add_resource("r"), Seconds(0), 0, 1));
  for (size_t i = 0; i < coflows.size(); ++i) net.assign(ids[i], coflows[i]);
  engine::Simulation sim(g);
  sim.add_model(&net);
  sim.run();
  if (stats) *stats = net.stats();
  return test::end_times(sim, ids);
}
// Max-min rates of a skewed all-to-all over every GPU pair, solved with every hop and with only the
// hops Topology::may_bind keeps: checks they agree flow by flow; returns the hops left out.
int pruning_changes_no_rate(const topology::Topology& t) {
  solver::MaxMinSolver full, pruned;
  for (const auto& l : t.links()) full.add_link(l.bandwidth.value()), pruned.add_link(l.bandwidth.value());
  int dropped = 0;
  std::vector<std::pair<int, int>> ids;
  for (int s = 0; s < t.num_gpus(); ++s)
    for (int d = 0; d < t.num_gpus(); ++d) {
      if (s == d) continue;
      std::vector<solver::Element> a, b;
      for (const auto& h : t.route(s, d).hops) {
        a.push_back({h.link, h.fraction});
        if (t.may_bind(h.link)) b.push_back({h.link, h.fraction});
        else ++dropped;
      }
      const double w = 1 + (s * 5 + d * 3) % 7;  // unequal weights: a skewed mix of classes
      ids.push_back({full.add_flow(a, w), pruned.add_flow(b, w)});
    }
  full.solve();
  pruned.solve();
  for (auto [a, b] : ids) CHECK(pruned.rate(b) == doctest::Approx(full.rate(a)).epsilon(1e-12));
  return dropped;
}

// A bundled topology preset, read from the source tree (HECATE_SOURCE_ROOT); nullopt without it.
std::optional<topology::Topology> preset(const std::string& name) {
  const char* root = std::getenv("HECATE_SOURCE_ROOT");
  if (!root) return std::nullopt;
  const std::string path = std::string(root) + "/topologies/" + name + ".yaml";
  std::ifstream in(path);
  return topology::load_topology(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), path);
}
}  // namespace

TEST_CASE("flow tier equals analytic tier for one uncontended collective") {
  // Uniform all-to-all inside one node: every flow gets B/(n-1) on its uplink and downlink and all
  // finish together at (n-1)/n * S / B (+ latency), the analytic closed form.
  auto t = cluster(1, 8, 0, 1);
  collective::Coflow c;
  for (int s = 0; s < 8; ++s)
    for (int d = 0; d < 8; ++d)
      if (s != d) c.push_back({s, d, 10e6});
  collective::AnalyticNetwork a(t);
  CHECK(run_flow(t, {c})[0] == doctest::Approx(a.coflow_time(c)).epsilon(1e-9));
  // A single inter-node transfer through an ECMP fabric (4 nodes, rail-optimized, cross-rail).
  auto big = cluster(4, 4, 4, 50e9);
  collective::Coflow one{{0, 13, 100e6}};
  collective::AnalyticNetwork ab(big);
  CHECK(run_flow(big, {one})[0] == doctest::Approx(ab.coflow_time(one)).epsilon(1e-9));
}

TEST_CASE("assign_view runs the caller's transfers as assign runs its copy") {
  const auto t = cluster(2, 4, 4, 25e9);
  hs::Rng rng(5);
  std::vector<collective::Coflow> coflows(3);
  for (auto& c : coflows)
    for (int s = 0; s < t.num_gpus(); ++s)
      for (int d = 0; d < t.num_gpus(); ++d)
        if (s != d && rng.uniform() < 0.5) c.push_back({s, d, 1e5 * (1 + static_cast<int>(rng.below(20)))});
  std::vector<double> ends[2];
  for (int view = 0; view < 2; ++view) {
    engine::TaskGraph g;
    network::FlowNetwork net(t, network::kDefaultFlowPrecision);
    std::vector<engine::TaskId> ids;
    for (size_t i = 0; i < coflows.size(); ++i) ids.push_back(g.add_task(g.add_resource("r"), Seconds(0), 0, 1));
    for (size_t i = 0; i < coflows.size(); ++i) {
      if (view) net.assign(ids[i], {{0, 1, 1.0}});  // replaced by the view below (its copy freed)
      if (view) net.assign_view(ids[i], coflows[i], 1e-6);
      else net.assign(ids[i], coflows[i], 1e-6);
    }
    engine::Simulation sim(g);
    sim.add_model(&net);
    sim.run();
    ends[view] = test::end_times(sim, ids);
  }
  CHECK(ends[0] == ends[1]);
}

TEST_CASE("eight GPUs behind one NIC each get an eighth of it") {
  // 2 nodes x 8 GPUs, one 12.5 GB/s NIC per node; 8 transfers of 100 MB across: 800 MB / 12.5 GB/s.
  auto t = cluster(2, 8, 1, 12.5e9);
  collective::Coflow c;
  for (int i = 0; i < 8; ++i) c.push_back({i, 8 + i, 100e6});
  const double lat = t.route(0, 8).latency.value();
  CHECK(run_flow(t, {c})[0] == hs::test::approx(lat + 800e6 / 12.5e9));
}

TEST_CASE("incast onto one GPU, and two concurrent collectives slow each other down") {
  // 7 GPUs send 10 MB each to GPU 0 over 400 GB/s NVLink: the downlink serializes 70 MB.
  auto t = cluster(1, 8, 0, 1);
  collective::Coflow incast;
  for (int s = 1; s < 8; ++s) incast.push_back({s, 0, 10e6});
  const double lat = t.route(1, 0).latency.value();
  CHECK(run_flow(t, {incast})[0] == hs::test::approx(lat + 70e6 / 400e9));
  // The same incast run twice concurrently (e.g. an all-to-all beside a sparse all-gather): both
  // share the downlink, so each takes twice as long; the analytic tier would say 1x for each.
  auto both = run_flow(t, {incast, incast});
  CHECK(both[0] == hs::test::approx(lat + 140e6 / 400e9));
  CHECK(both[1] == hs::test::approx(lat + 140e6 / 400e9));
}

TEST_CASE("time is monotone in bandwidth and in latency") {
  // The same skewed coflow on 2 nodes x 8 GPUs: halving the NICs' bandwidth, or raising their
  // latency from 2 to 20 us, can only lengthen it; with exact solves and with merged completions.
  collective::Coflow c;
  for (int s = 0; s < 16; ++s)
    for (int d = 0; d < 16; ++d)
      if (s != d) c.push_back({s, d, 1e5 * (1 + (s * 3 + d * 7) % 11)});
  auto fast = cluster(2, 8, 8, 50e9), slow = cluster(2, 8, 8, 25e9);
  test::ClusterShape lc;
  lc.nodes = 2, lc.gpus_per_node = 8, lc.nics = 8, lc.nic_bw = 50e9, lc.nic_lat = 20e-6;
  auto far = test::make_cluster(lc);
  for (double e : {0.0, 1e-3, 1e-2}) {
    CAPTURE(e);
    const double base = run_flow(fast, {c}, e)[0];
    CHECK(run_flow(slow, {c}, e)[0] > base);
    CHECK(run_flow(far, {c}, e)[0] > base);
  }
}

TEST_CASE("relabelling GPUs within and across nodes does not change the flow tier's result") {
  // A skewed coflow on 2 nodes x 4 GPUs; then the same coflow with GPUs renamed by a permutation that
  // maps nodes to nodes (swap the nodes, reverse GPUs inside each): same completion time.
  auto t = cluster(2, 4, 4, 25e9);
  collective::Coflow c;
  for (int s = 0; s < 8; ++s)
    for (int d = 0; d < 8; ++d)
      if (s != d) c.push_back({s, d, 1e6 * (1 + (s * 3 + d * 5) % 7)});
  auto perm = [](int g) { return (g < 4 ? 4 : 0) + (3 - g % 4); };
  collective::Coflow r;
  for (const auto& x : c) r.push_back({perm(x.src), perm(x.dst), x.bytes});
  CHECK(run_flow(t, {c})[0] == doctest::Approx(run_flow(t, {r})[0]).epsilon(1e-9));
}

TEST_CASE("merged completions (precision > 0): every byte delivered, fewer events, error of the order of the precision") {
  // A skewed all-to-all-v on 4 nodes x 4 GPUs with one NIC per GPU: exact max-min has one event
  // per distinct completion. With precision e, completions projected within e x (elapsed time) of
  // the earliest are merged at the latest of them; the makespan moves by about e (measured here
  // to stay within 2e, both ways since max-min is not monotone), and each flow still carries all
  // its bytes (delivered == offered).
  auto t = cluster(4, 4, 4, 25e9);
  collective::Coflow c;
  double offered = 0;
  for (int s = 0; s < 16; ++s)
    for (int d = 0; d < 16; ++d)
      if (s != d) {
        c.push_back({s, d, 1e5 * (1 + (s * 7 + d * 11) % 23) * (d == 3 ? 4 : 1)});
        offered += c.back().bytes;
      }
  network::FlowStats exact_stats, merged_stats;
  const double exact = run_flow(t, {c}, 0, &exact_stats)[0];
  CHECK(exact_stats.bytes_delivered == doctest::Approx(offered).epsilon(1e-12));
  for (double e : {1e-3, 1e-2, 5e-2}) {
    const double merged = run_flow(t, {c}, e, &merged_stats)[0];
    CAPTURE(e);
    CHECK(merged_stats.bytes_delivered == doctest::Approx(offered).epsilon(1e-12));
    CHECK(merged_stats.events == exact_stats.events);  // every flow completes once
    CHECK(merged_stats.completion_events < exact_stats.completion_events);
    CHECK(std::abs(merged - exact) <= 2 * e * exact);
  }
}

TEST_CASE("an NVLS all-reduce alone runs at its analytic time on the flow tier") {
  // Each GPU port carries exactly one flow of S(n+1)/n, so max-min gives every flow the port
  // bandwidth, as the analytic tier assumes: time = alpha + S(n+1)/n / B + the multicast latency.
  test::ClusterShape c;  // one node, 8 GPUs, 400 GB/s NVSwitch ports
  c.nvls = true;
  auto t = test::make_cluster(c);
  collective::AnalyticNetwork a(t);
  std::vector<int> g{0, 1, 2, 3, 4, 5, 6, 7};
  const auto plan = collective::plan_all_reduce(a, g, 1e9);
  REQUIRE(plan.algo == collective::AllReduceAlgo::kNvls);
  engine::TaskGraph graph;
  network::FlowNetwork net(t, 0);
  auto id = graph.add_task(graph.add_resource("r"), Seconds(0), 0, 1);
  net.assign(id, plan.flows, plan.extra_latency);
  engine::Simulation sim(graph);
  sim.add_model(&net);
  sim.run();
  CHECK(sim.end_time(id) == doctest::Approx(plan.time).epsilon(1e-12));
}

TEST_CASE("leaving never-binding links out of the max-min problem changes no rate") {
  // Topology::may_bind drops links dominated by a tighter link on every route through them, and
  // all but one of a set of twins (same capacity, same fraction of every route). The max-min
  // allocation without them must equal the one with every hop, flow by flow: a skewed all-to-all
  // on 4 nodes x 4 GPUs with 64 GB/s PCIe in front of 25 GB/s NICs (PCIe pruned), and with 20 GB/s
  // PCIe (NIC links pruned instead), on a rail-optimized fabric with ECMP spines: non-blocking
  // (leaf-spine links pruned: each carries 1/S of its leaf's NICs' traffic at 1/S of their
  // capacity) and 2:1 oversubscribed (they stay, and bind: one per set of twins); and on 2:1 fat
  // trees of 2 nodes per leaf, routes stored per pair and factored (as the large presets are).
  for (double pcie : {64e9, 20e9})
  for (double ovs : {1.0, 2.0}) {
    CAPTURE(pcie);
    CAPTURE(ovs);
    test::ClusterShape c;
    c.nodes = 4, c.gpus_per_node = 4, c.nics = 4, c.nic_bw = 25e9, c.pcie_bw = pcie, c.fabric = "rail-optimized";
    c.oversubscription = ovs;
    auto t = test::make_cluster(c);
    CHECK(pruning_changes_no_rate(t) > 0);
    int fabric_kept = 0;
    for (int l = 0; l < t.num_links(); ++l) fabric_kept += t.link(l).link_class == "fabric" && t.may_bind(l);
    CHECK((fabric_kept == 0) == (ovs == 1.0));
  }
  for (bool factored : {false, true}) {
    CAPTURE(factored);
    test::ClusterShape c;
    c.nodes = 6, c.gpus_per_node = 4, c.nics = 4, c.nic_bw = 25e9, c.pcie_bw = 64e9, c.fabric = "fat-tree";
    c.oversubscription = 2.0;
    c.factored = factored;
    auto t = test::make_cluster(c);
    REQUIRE(t.factored_routes() == factored);
    CHECK(pruning_changes_no_rate(t) > 0);
  }
}

TEST_CASE("property: classes (flows sharing their binding links, solved as one weighted flow) change no time") {
  // Random skewed coflows on fabrics where GPUs share NICs (2 or 4 nodes, 8 GPUs, 1 or 2 NICs per
  // node: all flows between two nodes' NIC pairs form one class), three running concurrently: the
  // same end times, exact (precision 0) and merged, as with one solver flow per transfer; every
  // byte delivered either way. And on a NIC-per-GPU fabric classes have one member each.
  hs::Rng rng(31);
  for (int inst = 0; inst < 12; ++inst) {
    const int nodes = inst % 2 ? 4 : 2, nics = inst % 3 ? 1 : 2;
    auto t = cluster(nodes, 8, nics, 12.5e9);
    const int n = nodes * 8;
    std::vector<collective::Coflow> cos(3);
    for (auto& c : cos)
      for (int s = 0; s < n; ++s)
        for (int d = 0; d < n; ++d)
          if (s != d && rng.uniform() < 0.6) c.push_back({s, d, 1e5 * (1 + static_cast<int>(rng.below(20)))});
    for (double e : {0.0, 1e-3}) {
      CAPTURE(inst);
      CAPTURE(e);
      engine::TaskGraph g1, g2;
      std::vector<engine::TaskId> ids;
      for (size_t i = 0; i < cos.size(); ++i) {
        ids.push_back(g1.add_task(g1.add_resource("r"), Seconds(0), 0, 1));
        g2.add_task(g2.add_resource("r"), Seconds(0), 0, 1);
      }
      network::FlowNetwork classes(t, e, true), single(t, e, false);
      for (size_t i = 0; i < cos.size(); ++i) classes.assign(ids[i], cos[i]), single.assign(ids[i], cos[i]);
      engine::Simulation s1(g1), s2(g2);
      s1.add_model(&classes);
      s2.add_model(&single);
      s1.run();
      s2.run();
      for (auto id : ids) CHECK(s1.end_time(id) == doctest::Approx(s2.end_time(id)).epsilon(1e-9));
      CHECK(classes.stats().classes < single.stats().classes);
      CHECK(classes.stats().flows == single.stats().flows);
      CHECK(classes.stats().bytes_delivered == doctest::Approx(classes.stats().bytes_offered).epsilon(1e-9));
      CHECK(single.stats().bytes_delivered == doctest::Approx(single.stats().bytes_offered).epsilon(1e-9));
    }
  }
  auto per_gpu = cluster(2, 4, 4, 25e9);
  collective::Coflow c;
  for (int s = 0; s < 8; ++s)
    for (int d = 0; d < 8; ++d)
      if (s != d) c.push_back({s, d, 1e6});
  network::FlowStats st;
  run_flow(per_gpu, {c}, 0, &st);
  CHECK(st.classes == st.flows);
}

TEST_CASE("one member per class (a NIC per GPU, pairs ascending): classes made without grouping time the same") {
  // On a NIC-per-GPU fabric a task listing its GPU pairs in ascending order skips the grouping (its
  // transfers are its classes); listed in descending order, or with a pair twice, it is grouped. Three
  // concurrent skewed coflows, exact and merged: the same end times and bytes either way, and
  // mass completions (a uniform coflow's) included.
  hs::Rng rng(43);
  for (int inst = 0; inst < 4; ++inst) {
    auto t = cluster(inst % 2 ? 4 : 2, 4, 4, 25e9);
    const int n = t.num_gpus();
    std::vector<collective::Coflow> up(3);
    for (size_t k = 0; k < up.size(); ++k)
      for (int s = 0; s < n; ++s)
        for (int d = 0; d < n; ++d)
          if (s != d && rng.uniform() < 0.7) up[k].push_back({s, d, k == 0 ? 1e6 : 1e5 * (1 + static_cast<double>(rng.below(20)))});
    auto down = up;
    for (auto& c : down) std::reverse(c.begin(), c.end());
    auto twice = up;
    for (auto& c : twice) c.push_back(c.front());  // a pair twice: one class of two members
    for (double e : {0.0, 1e-3}) {
      CAPTURE(inst);
      CAPTURE(e);
      network::FlowStats a, b, c;
      const auto ta = run_flow(t, up, e, &a), tb = run_flow(t, down, e, &b);
      run_flow(t, twice, e, &c);
      for (size_t k = 0; k < ta.size(); ++k) CHECK(ta[k] == doctest::Approx(tb[k]).epsilon(1e-9));
      CHECK(a.classes == a.flows);
      CHECK(b.classes == b.flows);
      CHECK(c.classes == c.flows - 3);
      CHECK(a.bytes_delivered == doctest::Approx(a.bytes_offered).epsilon(1e-9));
      CHECK(b.bytes_delivered == doctest::Approx(a.bytes_offered).epsilon(1e-9));
      CHECK(c.bytes_delivered == doctest::Approx(c.bytes_offered).epsilon(1e-9));
    }
  }
}

TEST_CASE("a mass completion where some classes keep members (8 GPUs per NIC, coarse merging): every byte, on the slow side") {
  // Intra-node pairs all the same size, inter-node pairs (64 per class) of mixed sizes: with e = 0.5
  // or 0.1 the first event finishes the intra-node flows and the inter-node classes' small members
  // at once, and those classes go on with fewer members (the mass path's one-by-one branch). Every
  // byte is delivered, and the time errs on the slow side of the exact one, by less than 2e.
  hs::Rng rng(5);
  auto t = cluster(2, 8, 1, 12.5e9);
  collective::Coflow c;
  for (int s = 0; s < 16; ++s)
    for (int d = 0; d < 16; ++d)
      if (s != d) c.push_back({s, d, s / 8 == d / 8 ? 1e6 : 1e4 * (1 + static_cast<double>(rng.below(100)))});
  const double exact = run_flow(t, {c}, 0)[0];
  for (double e : {0.5, 0.1}) {
    CAPTURE(e);
    network::FlowStats st;
    const double merged = run_flow(t, {c}, e, &st)[0];
    CHECK(merged >= exact * (1 - 1e-12));
    CHECK(merged <= exact * (1 + 2 * e));
    CHECK(st.classes < st.flows);
    CHECK(st.bytes_delivered == doctest::Approx(st.bytes_offered).epsilon(1e-9));
  }
}

TEST_CASE("uniform all-to-all on one hybrid cube-mesh node: latency + max link load / bandwidth, on both tiers") {
  // 8 GPUs joined as a DGX-1V (kHybridCubeMesh), 25 GB/s per NVLink (efficiency 1 here): NV1 pairs
  // 25 GB/s, NV2 pairs 50 GB/s, 3 us per hop. Every ordered pair exchanges S. Adjacent pairs (4 per
  // GPU) go direct; each of a GPU's 3 others shares exactly two neighbours with it and goes through
  // the cheaper (sum of 1 / bandwidth), half through each on a tie. Link 0 -> 4 (NV2) carries its
  // own S; relayed from GPU 0: to 5 (via 1 or 4, a tie: S/2), to 6 (via 4, NV2 + NV1, beats via 2,
  // NV1 + NV1: S), to 7 (via 4, NV2 + NV2, beats via 3, NV2 + NV1: S); relayed into GPU 4 through 0:
  // from 1 (via 0 or 5, a tie: S/2), from 2 (via 0, NV1 + NV2, beats via 6, NV1 + NV1: S), from 3
  // (via 0, NV2 + NV2, beats via 7, NV1 + NV2: S). Total 6S on 50 GB/s, the same on 4 -> 0, 1 -> 5
  // and 5 -> 1 by symmetry; every NV1 link carries 2S on 25 GB/s and every other NV2 link 2S on 50,
  // so those four bind: time = 2 x 3 us (the relayed routes' latency) + 6S / 50 GB/s; with S = 10 MB,
  // 6 us + 1.2 ms, + NCCL's launch of the grouped send/receive (Simple, 8.4 us). (The 150 GB/s-per-GPU switch the mesh used to be modelled as: 7S / 150 GB/s.)
  test::ClusterShape c;
  c.intra_kind = "hybrid-cube-mesh", c.intra_bw = 25e9, c.intra_lat = 3e-6;
  auto t = test::make_cluster(c);
  const double S = 10e6;
  std::vector<double> m(64, S);
  for (int g = 0; g < 8; ++g) m[g * 8 + g] = 0;
  collective::AnalyticNetwork a(t);
  CHECK(a.alltoallv_time(m) == doctest::Approx(6e-6 + 8.4e-6 + 6 * S / 50e9).epsilon(1e-12));
  const auto& bottleneck = t.link(a.last_bottleneck());
  const std::string binding = t.vertices()[bottleneck.from].name + " -> " + t.vertices()[bottleneck.to].name;
  CAPTURE(binding);
  CHECK((binding == "node0.gpu0 -> node0.gpu4" || binding == "node0.gpu4 -> node0.gpu0" ||
         binding == "node0.gpu1 -> node0.gpu5" || binding == "node0.gpu5 -> node0.gpu1"));
  // Alone on the flow tier: every flow through a binding link gets its max-min share until the end,
  // so the same time.
  collective::Coflow co;
  for (int s = 0; s < 8; ++s)
    for (int d = 0; d < 8; ++d)
      if (s != d) co.push_back({s, d, S});
  CHECK(run_flow(t, {co})[0] == doctest::Approx(a.coflow_time(co)).epsilon(1e-9));
}

TEST_CASE("flow tier equals analytic tier on the as-built p3dn, p4d and p5 presets when nothing contends") {
  // One coflow alone: the uniform all-to-all over every GPU, the one inside node 0 (relays on the
  // p3dn's mesh), a relayed pair, an inter-node pair (host-staged on p3dn, through the PCIe switch
  // on p4d, split over the GPU's four NICs on p5) and ring all-reduces (below). Links left out of
  // the max-min problem (may_bind) change no rate.
  for (const std::string name : {"aws-p3dn-v100-2node", "aws-p4d-a100-4node", "aws-p5-h100-4node"}) {
    CAPTURE(name);
    const auto t = preset(name);
    if (!t) {
      MESSAGE("HECATE_SOURCE_ROOT not set: presets not checked");
      return;
    }
    CHECK(pruning_changes_no_rate(*t) > 0);
    collective::Coflow all, node0;
    for (int s = 0; s < t->num_gpus(); ++s)
      for (int d = 0; d < t->num_gpus(); ++d)
        if (s != d) {
          all.push_back({s, d, 4e6});
          if (t->node_of(s) == 0 && t->node_of(d) == 0) node0.push_back({s, d, 4e6});
        }
    // And ring all-reduces, in node 0 (p3dn: 6 rings over the mesh's direct NVLinks) and over every GPU.
    std::vector<int> gpus0, every;
    for (int g = 0; g < t->num_gpus(); ++g) {
      every.push_back(g);
      if (t->node_of(g) == 0) gpus0.push_back(g);
    }
    double extra = 0;
    const auto ring0 = collective::ring_flows(*t, gpus0, 256e6, collective::RingOp::kAllReduce, extra);
    const auto ring_all = collective::ring_flows(*t, every, 256e6, collective::RingOp::kAllReduce, extra);
    collective::AnalyticNetwork a(*t);
    for (const auto& c : {all, node0, collective::Coflow{{0, 5, 64e6}}, collective::Coflow{{0, 9, 64e6}}, ring0, ring_all})
      CHECK(run_flow(*t, {c})[0] == doctest::Approx(a.coflow_time(c)).epsilon(1e-9));
  }
}

namespace {
// A skewed all-to-all-v among `gpus` (log-normal sizes, one per pair), every `capped`-th transfer
// (0: none) with a rate cap of `cap` bytes/s.
collective::Coflow skewed(int gpus, uint64_t seed, int capped = 0, double cap = 0) {
  Rng rng(seed);
  collective::Coflow c;
  int i = 0;
  for (int s = 0; s < gpus; ++s)
    for (int d = 0; d < gpus; ++d)
      if (s != d) c.push_back({s, d, 1e6 * std::exp(rng.normal()), capped > 0 && ++i % capped == 0 ? cap : 0});
  return c;
}

// p3dn-like nodes (hybrid cube-mesh NVLink, NICs on the host behind PCIe switches), four of them:
// some routes cross more than four links that may bind, and the drain declines them; `pair` gets one.
topology::Topology wide_routes(std::pair<int, int>& pair) {
  test::ClusterShape c;
  c.nodes = 4, c.gpus_per_node = 8, c.intra_kind = "hybrid-cube-mesh", c.intra_bw = 25e9, c.nics = 1, c.nic_bw = 12.5e9;
  c.pcie_bw = 12e9, c.gpus_per_pcie_switch = 2, c.gpudirect_rdma = false;  // (PCIe slower than the NIC: it binds)
  auto t = test::make_cluster(c);
  pair = {-1, -1};
  for (int s = 0; s < t.num_gpus() && pair.first < 0; ++s)
    for (int d = 0; d < t.num_gpus(); ++d)
      if (s != d && t.binding_hops(s, d).size() > 4) {
        pair = {s, d};
        break;
      }
  return t;
}
}  // namespace

TEST_CASE("one coflow alone, solved link by link, takes FlowNetwork's time") {
  // network::drain_coflow finds each link's fill level (a flow's rate = the lowest level of its
  // links, or its cap) and scans the flows at every event instead of keeping a heap of finishes:
  // the same max-min rates and the same merged completions as FlowNetwork, so the same time, to
  // rounding (1e-9 here) at precision 0. Fabrics: a shared NIC (four GPUs behind it: the NIC's
  // links carry many flows of different pairs), a NIC per GPU behind a rail-optimized core, one
  // NVSwitch node, and routes over three or four links: 2:1 fat trees (a cross-leaf route: its
  // NICs, one uplink and one downlink, the spines' twins left out, at fraction 1/spines; with two
  // leaves the uplinks of one are the downlinks' twins: three links) and the relays of a hybrid
  // cube-mesh node (four NVLinks at 1/2); coflows: skewed all-to-all-v with and without rate caps,
  // a ring all-reduce, one pair; with extra latency on top.
  struct Case {
    topology::Topology t;
    std::string name;
  };
  std::vector<Case> cases;
  cases.push_back({cluster(2, 4, 1, 10e9), "2 nodes, one NIC per node"});
  cases.push_back({cluster(4, 8, 8, 50e9), "4 nodes, NIC per GPU, rail-optimized"});
  cases.push_back({cluster(1, 8, 0, 1), "one NVSwitch node"});
  for (int nodes : {12, 8}) {
    test::ClusterShape c;
    c.nodes = nodes, c.gpus_per_node = 2, c.nics = 2, c.nic_bw = 50e9, c.fabric = "fat-tree", c.oversubscription = 2.0;
    cases.push_back({test::make_cluster(c), std::to_string(nodes / 4) + "-leaf 2:1 fat tree"});
  }
  {
    test::ClusterShape c;
    c.nodes = 1, c.gpus_per_node = 8, c.intra_kind = "hybrid-cube-mesh", c.intra_bw = 25e9;
    cases.push_back({test::make_cluster(c), "hybrid cube-mesh node"});
  }
  for (const auto& k : cases) {
    CAPTURE(k.name);
    const int n = k.t.num_gpus();
    std::vector<int> every(static_cast<size_t>(n));
    for (int g = 0; g < n; ++g) every[static_cast<size_t>(g)] = g;
    double extra = 0;
    const auto ring = collective::ring_flows(k.t, every, 64e6, collective::RingOp::kAllReduce, extra);
    size_t widest = 0;
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d)
        if (s != d) widest = std::max(widest, k.t.binding_hops(s, d).size());
    CHECK(widest <= 4);
    if (k.name.find("3-leaf") != std::string::npos || k.name.find("cube") != std::string::npos) CHECK(widest == 4);
    if (k.name.find("2-leaf") != std::string::npos) CHECK(widest == 3);
    int which = 0;
    // Caps on every third flow (2 GB/s: they bind from the start), and on every flow (as a collective
    // caps each connection) at a rate reached only once few flows share a link: the solve takes the
    // caps below a link's level first, whenever they come.
    double late_cap = 0;
    for (const auto& h : k.t.binding_hops(0, n - 1)) late_cap = 0.3 * k.t.link(h.link).bandwidth.value();
    for (const auto& c : {skewed(n, 3), skewed(n, 5, 3, 2e9), skewed(n, 9, 1, late_cap), ring, collective::Coflow{{0, n - 1, 8e6}}}) {
      CAPTURE(++which);
      const auto d = network::drain_coflow(k.t, c, 0, 0);
      REQUIRE(d.has_value());
      CHECK(d->seconds == doctest::Approx(run_flow(k.t, {c})[0]).epsilon(1e-9));
      // Extra latency is paid after the drain, as FlowNetwork's timer pays it.
      CHECK(network::drain_coflow(k.t, c, 7e-6, 0)->seconds == doctest::Approx(d->seconds + 7e-6).epsilon(1e-12));
      // Merged completions: the same merge rule, so the same time unless a last-bit difference moves
      // a completion across a window's edge (bounded by the merge error, ~2 x precision).
      const auto m = network::drain_coflow(k.t, c, 0, 1e-3);
      CHECK(std::abs(m->seconds - run_flow(k.t, {c}, 1e-3)[0]) <= 2e-3 * d->seconds);
      CHECK(m->stats.events <= d->stats.events);
    }
  }
}

TEST_CASE("one CoflowDrain timing coflow after coflow gives what a fresh one gives each time") {
  // The collective command keeps one drain for all its sizes: nothing of a coflow may leak into the
  // next (rates caps, link loads, latency, a declined coflow in between, an empty one).
  const auto t = cluster(4, 8, 8, 50e9);
  test::ClusterShape c;
  c.nodes = 8, c.gpus_per_node = 2, c.nics = 2, c.nic_bw = 50e9, c.fabric = "fat-tree", c.oversubscription = 2.0;
  const auto ft = test::make_cluster(c);
  network::CoflowDrain drain(t, 1e-3);
  // (The last pair but one stays inside a node: a lower route latency than the others'.)
  const std::vector<collective::Coflow> seq = {skewed(32, 3), skewed(32, 5, 3, 2e9), {}, skewed(16, 7), collective::Coflow{{0, 31, 8e6}},
                                               collective::Coflow{{0, 1, 8e6}}, skewed(32, 3)};
  for (size_t i = 0; i < seq.size(); ++i) {
    CAPTURE(i);
    const auto again = drain.time(seq[i], 2e-6);
    const auto fresh = network::drain_coflow(t, seq[i], 2e-6, 1e-3);
    REQUIRE(again.has_value());
    CHECK(again->seconds == fresh->seconds);  // bit for bit
    CHECK(again->stats.events == fresh->stats.events);
  }
  std::pair<int, int> wide;
  const auto mesh = wide_routes(wide);
  REQUIRE(wide.first >= 0);
  network::CoflowDrain on_mesh(mesh, 1e-3);
  CHECK_FALSE(on_mesh.time({{wide.first, wide.second, 1e6}}).has_value());  // declined (over 4 links) ...
  const collective::Coflow inside{{0, 2, 5e6}, {2, 0, 3e6}, {1, 3, 4e6}};
  CHECK(on_mesh.time(inside)->seconds == network::drain_coflow(mesh, inside, 0, 1e-3)->seconds);  // ... and then one it takes
  // A coflow over four links (a fat tree's cross-leaf routes) after one over two, and again.
  network::CoflowDrain on_ft(ft, 1e-3);
  for (const auto& co : {skewed(16, 5), inside, skewed(16, 5)}) CHECK(on_ft.time(co)->seconds == network::drain_coflow(ft, co, 0, 1e-3)->seconds);
}

TEST_CASE("one coflow alone, link by link: empty coflows, and routes it leaves to FlowNetwork") {
  auto t = cluster(2, 4, 1, 10e9);
  // Nothing to send (or only to itself): the task takes its extra latency, as on FlowNetwork.
  CHECK(network::drain_coflow(t, {}, 3e-6, 0)->seconds == 3e-6);
  CHECK(network::drain_coflow(t, {{2, 2, 1e6}, {0, 1, 0}}, 3e-6, 0)->seconds == 3e-6);
  // A single transfer: bytes / bandwidth + latency (40 MB over a 10 GB/s NIC: 4 ms).
  const auto one = network::drain_coflow(t, {{0, 4, 40e6}}, 0, 0);
  CHECK(one->seconds == doctest::Approx(4e-3 + t.route_latency(0, 4).value()).epsilon(1e-12));
  CHECK(one->stats.flows == 1);
  CHECK(one->stats.events == 1);
  // Host-staged routes between cube-mesh nodes cross more than four links that may bind: drain_coflow
  // declines, and FlowNetwork times the coflow.
  std::pair<int, int> wide;
  const auto mesh = wide_routes(wide);
  REQUIRE(wide.first >= 0);
  CHECK_FALSE(network::drain_coflow(mesh, {{wide.first, wide.second, 1e6}}, 0, 0).has_value());
  // Inside a node it takes at most four: solved, and equal to FlowNetwork.
  const collective::Coflow inside{{0, 2, 5e6}, {2, 0, 3e6}, {1, 3, 4e6}, {0, 5, 2e6}};
  REQUIRE(network::drain_coflow(mesh, inside, 0, 0).has_value());
  CHECK(network::drain_coflow(mesh, inside, 0, 0)->seconds == doctest::Approx(run_flow(mesh, {inside})[0]).epsilon(1e-9));
}

TEST_CASE("one coflow alone, link by link, on the as-built presets: FlowNetwork's time, or declined") {
  for (const std::string name : {"aws-p3dn-v100-2node", "aws-p4d-a100-4node", "aws-p5-h100-4node", "dgx-h100-4node",
                                 "h100-fattree-2to1-16node"}) {
    CAPTURE(name);
    const auto t = preset(name);
    if (!t) {
      MESSAGE("HECATE_SOURCE_ROOT not set: presets not checked");
      return;
    }
    const auto c = skewed(t->num_gpus(), 11);
    const auto d = network::drain_coflow(*t, c, 0, 0);
    if (!d) {
      MESSAGE(name << ": declined (a route crosses more than four links that may bind)");
      continue;
    }
    CHECK(d->seconds == doctest::Approx(run_flow(*t, {c})[0]).epsilon(1e-9));
  }
}

TEST_CASE("a class of capped flows keeps its cap when a member finishes") {
  // GPUs 0 and 1 behind one 10 GB/s NIC send 1 MB and 2 MB to GPU 3, each capped at 2 GB/s (an
  // NCCL connection's channels): one class of two members. Both run at their cap (4 of the 10 GB/s);
  // the first is done at 0.5 ms and the second, still capped, at 1 ms (+ route latency). A class
  // re-made without its cap after the first finish ran the second at the whole NIC (0.6 ms).
  auto t = cluster(2, 2, 1, 10e9);
  const collective::Coflow c{{0, 3, 1e6, 2e9}, {1, 3, 2e6, 2e9}};
  const double expect = 1e-3 + t.route_latency(0, 3).value();
  network::FlowStats st;
  CHECK(run_flow(t, {c}, 0, &st)[0] == doctest::Approx(expect).epsilon(1e-12));
  CHECK(st.classes == 1);
  CHECK(network::drain_coflow(t, c, 0, 0)->seconds == doctest::Approx(expect).epsilon(1e-12));
}

namespace {
// Runs the coflows one after another (one resource: each task starts when the previous ends) on
// one FlowNetwork; returns each one's duration.
std::vector<double> run_in_sequence(const topology::Topology& t, const std::vector<collective::Coflow>& coflows,
                                    network::FlowStats* stats = nullptr) {
  engine::TaskGraph g;
  network::FlowNetwork net(t, 0);
  const auto r = g.add_resource("r");
  std::vector<engine::TaskId> ids;
  for (size_t i = 0; i < coflows.size(); ++i) ids.push_back(g.add_task(r, Seconds(0), 0, 1));
  for (size_t i = 0; i < coflows.size(); ++i) net.assign(ids[i], coflows[i]);
  engine::Simulation sim(g);
  sim.add_model(&net);
  sim.run();
  std::vector<double> out;
  double prev = 0;
  for (auto id : ids) out.push_back(sim.end_time(id) - prev), prev = sim.end_time(id);
  if (stats) *stats = net.stats();
  return out;
}
}  // namespace

TEST_CASE("a task with the same transfers as a recent one reuses its classes, and times the same") {
  // Four GPUs share each node's NIC, so a ring's transfers group into classes (the node's ring
  // edges through the NIC share it). Rings over two different groups alternate, with different
  // sizes, as a model's layers alternate dense and expert-gradient all-reduces; each task's time
  // must equal the same coflow run alone on a fresh network (the expected value), whether its
  // classes were grouped afresh or read from a recorded grouping (network/group_plan.hpp). A task
  // whose endpoints match but whose caps differ, or where one transfer makes no flow, is grouped
  // afresh.
  auto t = cluster(2, 4, 1, 10e9);
  const std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7}, half{0, 1, 4, 5};
  double extra = 0;
  const auto ring = [&](const std::vector<int>& grp, double bytes) {
    return collective::ring_flows(t, grp, bytes, collective::RingOp::kAllReduce, extra);
  };
  auto capped = ring(all, 32e6);
  for (auto& tr : capped) tr.rate_cap = 1e9;
  auto one_empty = ring(all, 32e6);
  one_empty[1].bytes = 0;
  const std::vector<collective::Coflow> seq{ring(all, 64e6), ring(half, 16e6), ring(all, 32e6), ring(half, 48e6),
                                            capped,          ring(all, 8e6),    one_empty,        ring(all, 64e6)};
  network::FlowStats st;
  const auto got = run_in_sequence(t, seq, &st);
  REQUIRE(got.size() == seq.size());
  for (size_t i = 0; i < seq.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(run_flow(t, {seq[i]})[0]).epsilon(1e-12));
  }
  // Reused: tasks 2 and 3 (the first two's transfers), 5 (task 0's, recorded before the capped one),
  // 7 (task 0's again). Grouped afresh: 0, 1, 4 (caps), 6 (one transfer makes no flow).
  CHECK(st.groupings_reused == 4);
  // The capped ring is slower than the same ring uncapped: its four NIC-crossing transfers get
  // 10 / 4 = 2.5 GB/s uncapped, 1 GB/s capped (a class that lost its cap would time as task 2).
  CHECK(got[4] > 1.5 * got[2]);
}
