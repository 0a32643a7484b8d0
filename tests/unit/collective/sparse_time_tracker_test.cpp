#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "collective/analytic_network.hpp"
#include "collective/sparse_plan.hpp"
#include "collective/sparse_plan_cache.hpp"
#include "collective/sparse_time_tracker.hpp"
#include "support/test_platforms.hpp"
#include "util/rng.hpp"

using namespace hs;
using namespace hs::collective;

namespace {

// Chunk e's holders changed at random: a random sorted subset (often none, sometimes every GPU) of
// the GPUs other than its owner, which moves one time in ten.
void redraw(Rng& rng, SparsePlacement& p, int e, int gpus) {
  if (rng.uniform() < 0.1) p.owner[e] = static_cast<int>(rng.below(gpus));
  const double u = rng.uniform();
  const double share = u < 0.3 ? 0.0 : u < 0.45 ? 1.0 : rng.uniform();
  p.replicas[e].clear();
  for (int g = 0; g < gpus; ++g)
    if (g != p.owner[e] && rng.uniform() < share) p.replicas[e].push_back(g);
}

// The time SparsePlanCache gives, built afresh: the plan's transfers one by one on the analytic tier
// plus sparse_finish's latency.
double fresh_time(const SparsePlacement& p, double bytes, const topology::Topology& topo, const std::vector<int>& node_of,
                  BroadcastAlgo algo, bool reduce, int channels, AnalyticNetwork& net) {
  Coflow c = reduce ? sparse_reduce_scatter(p, bytes, node_of, algo, channels)
                    : sparse_allgather(p, bytes, node_of, algo, channels);
  if (c.empty()) return 0.0;
  const double latency = sparse_finish(c, p, topo, node_of, algo, reduce, channels);
  return net.coflow_time(c) + latency;
}

// A random walk of placements (each step redraws 1-3 chunks, a few steps start over) timed by the
// tracker and afresh: equal bit for bit. Adds the tracker's counters to updated and fresh.
void walk(const topology::Topology& topo, BroadcastAlgo algo, bool reduce, double bytes, std::uint64_t seed,
          std::size_t& updated, std::size_t& fresh) {
  std::vector<int> node_of;
  for (int g = 0; g < topo.num_gpus(); ++g) node_of.push_back(topo.node_of(g));
  const int channels = chain_channels(topo), gpus = topo.num_gpus(), chunks = 12;
  SparsePlanCache plans(topo, node_of, algo, channels);
  SparseTimeTracker tracker(topo, node_of, algo, channels, reduce, 40);  // forgets now and then
  AnalyticNetwork net(topo);
  Rng rng(seed);
  SparsePlacement p{std::vector<int>(chunks), std::vector<std::vector<int>>(chunks)};
  for (int e = 0; e < chunks; ++e) p.owner[e] = static_cast<int>(rng.below(gpus));
  for (int step = 0; step < 300; ++step) {
    if (rng.uniform() < 0.05) {
      for (int e = 0; e < chunks; ++e) redraw(rng, p, e, gpus);
    } else {
      const int k = 1 + static_cast<int>(rng.below(3));
      for (int i = 0; i < k; ++i) redraw(rng, p, static_cast<int>(rng.below(chunks)), gpus);
    }
    const double want = fresh_time(p, bytes, topo, node_of, algo, reduce, channels, net);
    CHECK(tracker.time(p, bytes, plans, net) == want);  // bit-identical, not approximately
  }
  updated += tracker.updated();
  fresh += tracker.fresh();
}

// ECMP over an oversubscribed core: fractions below 1 on some binding hops; `factored`: its routes
// stored as large presets store them.
topology::Topology fat_tree(bool factored) {
  test::ClusterShape c;
  c.nodes = 8, c.gpus_per_node = 2, c.nics = 2, c.nic_bw = 50e9, c.fabric = "fat-tree", c.oversubscription = 2.0;
  c.factored = factored;
  return test::make_cluster(c);
}

topology::Topology two_nodes_two_nics() {  // chains span nodes: channels and hop latencies matter
  test::ClusterShape c;
  c.nodes = 2, c.gpus_per_node = 4, c.nics = 2, c.nic_bw = 25e9;
  return test::make_cluster(c);
}

}  // namespace

// What is checked: the time of a placement, t(P) = alpha + max(max_l load_l / bw_l, floor) +
// max(alpha', longest) - alpha' over its transfers (0 without copies), computed by the tracker from
// the last placement's link loads with the changed chunks' loads taken off and put on, equals the
// same formula over the plan built afresh, exactly. With chunk bytes of few significant bits (1e6:
// every term a multiple of 2^j far below 2^53 2^j) the loads are updated; with a full 53-bit
// mantissa (1e6 + 2^-33: loads of two chunks already pass 2^53 2^j) the bound fails and the cache
// answers; both give the fresh time.
TEST_CASE("SparseTimeTracker: a time from updated loads equals a fresh one (random walks, both broadcasts, both directions)") {
  const topology::Topology topos[] = {two_nodes_two_nics(), fat_tree(false), fat_tree(true)};
  bool split = false;  // the fat tree splits some routes' bytes over links (fraction < 1)
  for (int s = 0; s < topos[1].num_gpus(); ++s)
    for (int d = 0; d < topos[1].num_gpus(); ++d)
      if (s != d)
        for (const auto& h : topos[1].binding_hops(s, d)) split = split || h.fraction < 1;
  CHECK(split);
  std::uint64_t seed = 1;
  for (const auto& topo : topos)
    for (auto algo : {BroadcastAlgo::kChain, BroadcastAlgo::kDirect})
      for (bool reduce : {false, true}) {
        std::size_t updated = 0, fresh = 0;
        walk(topo, algo, reduce, 1e6, seed++, updated, fresh);
        CHECK(updated > 0);
        CHECK(fresh == 0);  // dyadic terms, small loads: always exact
        updated = fresh = 0;
        walk(topo, algo, reduce, 1e6 + std::ldexp(1.0, -33), seed++, updated, fresh);
        CHECK(fresh > 0);  // the bound fails once two chunks share a link
      }
}
