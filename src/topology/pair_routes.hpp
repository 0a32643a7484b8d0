// All-pairs routes in the builder's working form (TopologyBuilder: routes up to kAllPairsMaxGpus
// GPUs), before they are laid out in the Topology's per-pair arrays.
//
// Routing rules: Topology (shortest paths at link_cost, ECMP splitting, GPUs forward only as NVLink
// relays); the constructor (pair_routes.cpp) documents them. They are computed one destination d at
// a time over the DAG of next hops toward d. A source's route starts with a chain: while the vertex
// reached has a single next hop, the whole byte stream crosses it (fraction exactly 1; a GPU's link
// to its NIC, the NIC's link to its leaf). Where the chain ends, at the first vertex x with several
// next hops, the rest of the route is x's own route to d: the ECMP walk from x with all the bytes,
// the same bits whichever source reached x (the walk splits 1.0 there as it would from x; the
// chain's vertices lie above x in distance, so nothing below x adds to them). That tail is computed
// once per (x, d).
//
// Stored, a route is its ones, the links all its bytes cross (the chain and the tail's links at
// fraction 1), and a rest, the tail's other hops, kept once per distinct content: on a
// rail-optimized 1,024-GPU fabric a route is 2 to 4 ones plus one of ~60 rests (a leaf's split over
// the spines toward another rail), ~25 MB for all pairs instead of ~300 MB, which is what every
// pass over all pairs before the layout (binding analysis) reads; a rest shared by many routes also
// lets that analysis apply it once (DominatorCandidates::add_shared).
//
// Latency and hop count of a route (its longest equal-cost path, from d back) depend only on the
// vertex it starts from: one pass over the DAG per destination gives them for every source.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "topology/topology.hpp"
#include "util/diagnostics.hpp"

namespace hs::topology {

// Integer routing cost of a link: prefers high-bandwidth paths (NVLink over a NIC hairpin) and makes
// identical links tie exactly, which is what lets ECMP splitting see equal-cost paths.
inline int64_t link_cost(const Link& l) {
  return 1 + static_cast<int64_t>(std::llround(1e13 / std::max(l.bandwidth.value(), 1.0)));
}

class PairRoutes {
 public:
  // Routes every ordered pair of t's GPUs; latency[s * n + d] and hop_count[s * n + d] (sized n x n
  // by the caller) get each route's latency (as float) and hop count (capped at 255). A pair without
  // a path is reported to diags (at `where`) and gets an empty route.
  PairRoutes(const Topology& t, std::vector<float>& latency, std::vector<uint8_t>& hop_count, Diagnostics& diags,
             const SourceLocation& where);

  // Route (s, d), s != d, as its ones, the links all its bytes cross (fraction 1; in no particular
  // order), and its rest, the other hops (sorted by link; several pairs share one, by id). The
  // binding analysis defers what a repeated rest would only repeat (DominatorCandidates).
  std::span<const LinkId> ones(int s, int d) const {
    const size_t q = index(s, d);
    return {ones_.data() + ones_off_[q], ones_off_[q + 1] - ones_off_[q]};
  }
  uint32_t rest_id(int s, int d) const { return rest_[index(s, d)]; }
  // Every route's ones, end to end (a link crossed whole by some route appears here).
  std::span<const LinkId> all_ones() const { return ones_; }
  std::span<const RouteHop> rest_hops(uint32_t r) const { return {rest_hops_.data() + rest_off_[r], rest_off_[r + 1] - rest_off_[r]}; }
  uint32_t num_rests() const { return static_cast<uint32_t>(rest_off_.size() - 1); }
  // A pass over the pairs into one destination reads these arrays n entries apart (a cache miss
  // each): it asks for a pair's a few iterations ahead.
  void prefetch(int s, int d) const {
    const size_t q = index(s, d);
    __builtin_prefetch(rest_.data() + q);
    __builtin_prefetch(ones_off_.data() + q);
  }
  // Calls f(const RouteHop&) on every hop of route(s, d), s != d, in no particular order.
  template <class F>
  void for_each_hop(int s, int d, const F& f) const {
    for (LinkId l : ones(s, d)) f(RouteHop{l, 1.0});
    for (const RouteHop& h : rest_hops(rest_id(s, d))) f(h);
  }

  // The per-pair CSR arrays of Topology (pair p = src * n + dst): every route's hops sorted by link,
  // and those whose link may bind (may_bind[link] != 0), in the same order.
  void lay_out(const std::vector<char>& may_bind, std::vector<uint32_t>& route_offset, std::vector<RouteHop>& route_hops,
               std::vector<uint32_t>& bind_offset, std::vector<RouteHop>& bind_hops) const;

 private:
  // Stored source-major: pair (s, d) is q = s * n + d.
  size_t index(int s, int d) const { return static_cast<size_t>(s) * static_cast<size_t>(n_) + static_cast<size_t>(d); }
  int n_ = 0;
  std::vector<uint32_t> ones_off_;  // per pair q: ones_[ones_off_[q] .. ones_off_[q + 1]): chain, then tail's
  std::vector<LinkId> ones_;
  std::vector<uint32_t> rest_;      // per pair q: its rest; rest 0 is empty
  std::vector<uint32_t> rest_off_;  // per rest: rest_hops_[rest_off_[r] .. rest_off_[r + 1]), sorted by link
  std::vector<RouteHop> rest_hops_;
};

}  // namespace hs::topology
