// The standalone time of a sparse collective's plan (spAG, or spRS: collective/sparse_plan.hpp) on
// the analytic tier, for placements asked one after another that differ in a few chunks (FSSDP's
// overlap-degree search: from t to t + 1 one more expert gets copies): the plan's link loads are
// updated by the chunks that changed instead of rebuilt. The value is SparsePlanCache::time's, bit
// for bit (tests/unit/collective checks it on random walks of placements).
//
// Why chunk by chunk. A plan's transfers are its chunks' own plans (a chunk's chains, or its direct
// sends, depend on its owner and holders only) listed in chunk order, so in AnalyticNetwork's
//     time = alpha + max(max over links l of load_l / bandwidth_l, floor)   (0 when nothing is loaded)
// and sparse_finish's latency max(alpha', longest) - alpha' (SparsePlanBuild), alpha (the largest
// route latency), floor (the slowest capped transfer), alpha' and longest are maxima over the
// chunks' own, and load_l is the sum over chunks of the chunk's load on l.
//
// Why exactly. A floating-point sum depends on its order in general. Here every term a transfer puts
// on a link (bytes x ECMP fraction, as AnalyticNetwork::add adds it) must be an exact product and an
// integer multiple of 2^j; with q = 2^j for the smallest j over the placement's terms, while every
// link's load stays below 2^53 q every partial sum, in any order, is a multiple of q below 2^53 q: a
// representable double. Every addition (and the subtraction of a chunk that changed) is then exact,
// and the loads equal AnalyticNetwork's, which adds the same terms one transfer at a time. The bound
// is checked on every placement's loads (a sum that went inexact ends at or above 2^53 q: rounding
// is monotone, 2^53 q is representable and the terms are not negative); when it fails (terms of very
// different scales, or loads too large) the time comes from SparsePlanCache and the next placement
// starts again from empty loads.
#pragma once

#include <cstddef>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collective/analytic_network.hpp"
#include "collective/sparse_plan.hpp"
#include "collective/sparse_plan_cache.hpp"
#include "topology/topology.hpp"

namespace hs::collective {

class SparseTimeTracker {
 public:
  // node_of: GPU -> node for every GPU of `topo` (placements use topology GPU ids); the settings of
  // the SparsePlanCache it answers for. It remembers up to `capacity` chunks' loads, then forgets
  // them all (results do not depend on it).
  SparseTimeTracker(const topology::Topology& topo, std::vector<int> node_of, BroadcastAlgo algo, int channels,
                    bool reduce, std::size_t capacity = std::size_t{1} << 12);

  // plans.time(p, chunk_bytes, reduce, net): `plans` built with the tracker's topology, node_of,
  // algo and channels, `net` on its topology. `plans` answers when the update would not be exact.
  double time(const SparsePlacement& p, double chunk_bytes, SparsePlanCache& plans, AnalyticNetwork& net);

  std::size_t updated() const { return updated_; }  // placements timed from updated loads
  std::size_t fresh() const { return fresh_; }      // placements SparsePlanCache timed

 private:
  static constexpr int kInexact = std::numeric_limits<int>::min();
  // One chunk's plan (its owner and holders) reduced to what the time needs.
  struct Chunk {
    std::vector<std::pair<int, double>> loads;  // (link, the chunk's bytes on it), by link
    double route_alpha = 0;                     // its transfers' largest route latency (AnalyticNetwork's alpha)
    double alpha = 0, longest = 0;              // SparsePlanBuild's
    double floor = 0;                           // its slowest capped transfer: bytes / cap
    int quantum = kInexact;                     // j: every term an exact multiple of 2^j; kInexact: none
  };
  struct KeyHash {
    std::size_t operator()(const std::vector<int>& k) const;
  };
  const Chunk& chunk(int owner, const std::vector<int>& replicas);
  void forget();

  const topology::Topology& topo_;
  std::vector<int> node_of_;
  BroadcastAlgo algo_;
  int channels_;
  bool reduce_;
  std::size_t capacity_, updated_ = 0, fresh_ = 0;
  double bytes_ = -1;  // the chunk bytes the memo holds
  std::unordered_map<std::vector<int>, Chunk, KeyHash> memo_;  // key: owner, then the replicas
  std::vector<double> inv_bw_;                                 // per link: 1 / bandwidth, as AnalyticNetwork
  // The last placement asked, each chunk's entry (null without copies) and the link loads they sum
  // to; `exact_`: the loads passed the bound (else the next placement starts from empty loads).
  SparsePlacement last_;
  std::vector<const Chunk*> in_;
  std::vector<double> load_;
  bool exact_ = false;
  std::vector<double> scratch_;  // chunk(): per-link sums of one chunk
  std::vector<int> changed_;
};

}  // namespace hs::collective
