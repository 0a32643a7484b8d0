#include <doctest/doctest.h>

#include <vector>

#include "collective/analytic_network.hpp"
#include "collective/sparse_plan.hpp"
#include "collective/sparse_plan_cache.hpp"
#include "support/test_platforms.hpp"
#include "topology/topology_builder.hpp"
#include "util/rng.hpp"

using namespace hs;
using namespace hs::collective;

namespace {

// A random placement of `chunks` chunks on `gpus` GPUs: random owners, each chunk copied to a random
// sorted subset (often none) of the other GPUs.
SparsePlacement random_placement(Rng& rng, int chunks, int gpus) {
  SparsePlacement p;
  p.owner.resize(chunks);
  p.replicas.resize(chunks);
  for (int e = 0; e < chunks; ++e) {
    p.owner[e] = static_cast<int>(rng.below(gpus));
    const double share = rng.uniform() < 0.3 ? 0.0 : rng.uniform();
    for (int g = 0; g < gpus; ++g)
      if (g != p.owner[e] && rng.uniform() < share) p.replicas[e].push_back(g);
  }
  return p;
}

// 2 nodes x 4 GPUs, 2 NICs per node: chains span nodes, so channels and hop latencies matter.
struct TwoNodes {
  topology::Topology topo;
  std::vector<int> node_of;
  TwoNodes() : topo(make()) {
    for (int g = 0; g < topo.num_gpus(); ++g) node_of.push_back(topo.node_of(g));
  }
  static topology::Topology make() {
    test::ClusterShape c;
    c.nodes = 2, c.gpus_per_node = 4, c.nics = 2, c.nic_bw = 25e9;
    return test::make_cluster(c);
  }
};

}  // namespace

// The cache builds its plans in one pass (build_sparse_plan); "fresh" is the two calls it replaces.
TEST_CASE("SparsePlanCache: a reused plan equals a fresh one (random placements, both broadcasts, both directions)") {
  const TwoNodes two;
  const topology::Topology& topo = two.topo;
  const std::vector<int>& node_of = two.node_of;
  const int channels = chain_channels(topo);
  Rng rng(7);
  for (auto algo : {BroadcastAlgo::kChain, BroadcastAlgo::kDirect}) {
    SparsePlanCache cache(topo, node_of, algo, channels);
    AnalyticNetwork net(topo);
    std::vector<SparsePlacement> seen;
    for (int round = 0; round < 200; ++round) {
      // Half the rounds ask again for a placement already asked for (a hit), half for a new one.
      const bool again = !seen.empty() && rng.uniform() < 0.5;
      const SparsePlacement p = again ? seen[rng.below(seen.size())] : random_placement(rng, 6, topo.num_gpus());
      if (!again) seen.push_back(p);
      const double bytes = 1e6;  // one size: the same key when the placement repeats
      for (bool reduce : {false, true}) {
        Coflow fresh = reduce ? sparse_reduce_scatter(p, bytes, node_of, algo, channels)
                              : sparse_allgather(p, bytes, node_of, algo, channels);
        const double latency = fresh.empty() ? 0.0 : sparse_finish(fresh, p, topo, node_of, algo, reduce, channels);
        const double time = fresh.empty() ? 0.0 : net.coflow_time(fresh) + latency;
        const auto got = cache.plan(p, bytes, reduce);
        CHECK(got->flows == fresh);  // every transfer's fields exactly
        CHECK(got->latency == latency);
        CHECK(cache.time(p, bytes, reduce, net) == time);  // bit-identical, not approximately
      }
    }
    CHECK(cache.hits() > 0);
    CHECK(cache.misses() > 0);
    // A different chunk size is another plan: its bytes scale, it is not the cached one.
    const SparsePlacement p = seen.front();
    if (!cache.plan(p, 1e6, false)->flows.empty()) {
      const auto twice = cache.plan(p, 2e6, false);
      CHECK(twice->flows.front().bytes == 2 * cache.plan(p, 1e6, false)->flows.front().bytes);
    }
  }
}

TEST_CASE("SparsePlanCache: forgets at capacity and still answers the same") {
  const TwoNodes two;
  const topology::Topology& topo = two.topo;
  const std::vector<int>& node_of = two.node_of;
  SparsePlanCache small(topo, node_of, BroadcastAlgo::kChain, chain_channels(topo), 8);  // 8 transfers at most
  SparsePlanCache large(topo, node_of, BroadcastAlgo::kChain, chain_channels(topo));
  Rng rng(3);
  std::vector<SparsePlacement> ps;
  for (int i = 0; i < 20; ++i) ps.push_back(random_placement(rng, 4, topo.num_gpus()));
  for (int round = 0; round < 3; ++round)
    for (const auto& p : ps) CHECK(small.plan(p, 5e5, true)->flows == large.plan(p, 5e5, true)->flows);
  CHECK(small.misses() > large.misses());  // it forgot and rebuilt
}
