#include "topology/topology_builder.hpp"

#include <algorithm>
#include <bit>
#include <tuple>
#include <optional>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>

#include "topology/connectivity.hpp"
#include "topology/pair_routes.hpp"

namespace hs::topology {

Bandwidth Topology::route_bandwidth(int src, int dst) const {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& h : route(src, dst).hops) best = std::min(best, links_[h.link].bandwidth.value() / h.fraction);
  return Bandwidth(best);
}

TopologyBuilder::TopologyBuilder(std::string name, GpuModel gpu) {
  topo_.name_ = std::move(name);
  topo_.gpu_ = std::move(gpu);
}

VertexId TopologyBuilder::add_gpu(std::string name, int node) {
  topo_.vertices_.push_back({std::move(name), VertexKind::kGpu, node});
  const VertexId v = static_cast<VertexId>(topo_.vertices_.size() - 1);
  topo_.gpu_vertex_.push_back(v);
  topo_.gpu_node_.push_back(node);
  return v;
}

VertexId TopologyBuilder::add_switch(std::string name, int node) {
  topo_.vertices_.push_back({std::move(name), VertexKind::kSwitch, node});
  return static_cast<VertexId>(topo_.vertices_.size() - 1);
}

VertexId TopologyBuilder::add_nic(std::string name, int node) {
  topo_.vertices_.push_back({std::move(name), VertexKind::kNic, node});
  return static_cast<VertexId>(topo_.vertices_.size() - 1);
}

void TopologyBuilder::add_link(VertexId from, VertexId to, const LinkParams& p) {
  Link l;
  l.from = from;
  l.to = to;
  l.line_rate = p.line_rate;
  l.efficiency = p.efficiency;
  l.bandwidth = p.line_rate * p.efficiency;
  l.latency = p.latency;
  l.link_class = p.link_class;
  if (adjust_)
    for (const auto& a : adjust_->links)
      if (a.link_class == l.link_class) {
        l.efficiency *= a.bandwidth_scale;
        l.bandwidth = l.line_rate * l.efficiency;
        if (a.latency) l.latency = *a.latency;
      }
  topo_.links_.push_back(std::move(l));
}

void TopologyBuilder::add_duplex_link(VertexId a, VertexId b, const LinkParams& p) {
  add_link(a, b, p);
  add_link(b, a, p);
}

VertexId TopologyBuilder::find(const std::string& name) const {
  for (size_t i = 0; i < topo_.vertices_.size(); ++i)
    if (topo_.vertices_[i].name == name) return static_cast<VertexId>(i);
  return -1;
}

namespace {

// How many pairs ahead a pass over the pairs into one destination prefetches them.
constexpr int kAhead = 8;

// Candidate dominators of links, narrowed route by route: the first route through a considered
// link proposes its other hops that `accept` takes, the 4 tightest (smallest ratio x capacity;
// an ECMP route over S spines would otherwise propose ~2S and cost S^2 per route; fewer candidates
// can only keep a link in); each later route strikes the candidates it does not cross and raises
// each survivor's ratio (fraction here / fraction on the candidate) to the worst seen.
class DominatorCandidates {
 public:
  struct Cand {
    LinkId link;
    double ratio;
  };
  explicit DominatorCandidates(const Topology& t)
      : cap_(static_cast<size_t>(t.num_links())), cands_(cap_.size() * kKeep), size_(cap_.size(), 0),
        seen_(cap_.size(), 0), frac_on_(cap_.size(), 0.0) {
    for (size_t l = 0; l < cap_.size(); ++l) cap_[l] = t.link(static_cast<LinkId>(l)).bandwidth.value();
  }
  double bound(const Cand& c) const { return c.ratio * cap_[c.link]; }
  // `each(f)` calls f(const RouteHop&) on every hop of the route, in any order (the outcome does
  // not depend on it: a route crosses a link once, and the first route's proposals are sorted).
  template <class Each, class Consider, class Accept>
  void add_route(const Each& each, Consider consider, Accept accept) {
    each([&](const RouteHop& h) { frac_on_[h.link] = h.fraction; });
    each([&](const RouteHop& h) {
      if (!consider(h.link)) return;
      if (!seen_[h.link]) {
        seen_[h.link] = 1;
        touched.push_back(h.link);
        fresh_.clear();
        each([&](const RouteHop& m) {
          const Cand x{m.link, h.fraction / m.fraction};
          if (m.link != h.link && accept(h.link, x)) fresh_.push_back({bound(x), x});
        });
        keep_best(h.link);
        return;
      }
      strike(h.link, h.fraction, [&](LinkId m) { return frac_on_[m]; });
    });
    each([&](const RouteHop& h) { frac_on_[h.link] = 0.0; });
  }
  // A route given as its ones (links all its bytes cross) and a rest shared by id (PairRoutes), in
  // rounds (flush_shared ends one). Every later route of a round with an already seen rest r changes
  // a link l of r the same way: it strikes the candidates outside its ones and r (those of r stay,
  // with ratios r fixes; those in ones have fraction 1, ratio fraction(l) / 1), so all of them
  // together strike what is outside r and the intersection of their ones, and raise nothing the
  // first already did: flush_shared applies that once per rest. Such a route is applied here only
  // to its ones' links (fully when one of them is first seen: its proposals need the whole route).
  // The outcome is add_route's for each route in turn: a link's first route is the same, and a
  // later route's strikes and raises commute.
  template <class Consider, class Accept>
  void add_shared(std::span<const LinkId> ones, uint32_t r, std::span<const RouteHop> rest, Consider consider,
                  Accept accept) {
    const auto each = [&](const auto& f) {
      for (LinkId l : ones) f(RouteHop{l, 1.0});
      for (const RouteHop& h : rest) f(h);
    };
    if (r >= rest_round_.size()) rest_round_.resize(r + 1, 0), shared_.resize(r + 1);
    Shared& sh = shared_[r];
    if (rest_round_[r] != round_) {
      rest_round_[r] = round_;
      round_rests_.push_back(r);
      sh.rest = rest;
      sh.ones.assign(ones.begin(), ones.end());
      sh.repeated = false;
      add_route(each, consider, accept);
      return;
    }
    sh.repeated = true;
    sh.ones.erase(std::remove_if(sh.ones.begin(), sh.ones.end(),
                                 [&](LinkId l) { return std::find(ones.begin(), ones.end(), l) == ones.end(); }),
                  sh.ones.end());
    for (LinkId l : ones) frac_on_[l] = 1.0;
    // The fraction of the route on link m: 1 in ones, as in the rest, else 0.
    const auto frac = [&](LinkId m) {
      if (frac_on_[m] > 0) return frac_on_[m];
      const auto it = std::lower_bound(rest.begin(), rest.end(), m, [](const RouteHop& h, LinkId x) { return h.link < x; });
      return it != rest.end() && it->link == m ? it->fraction : 0.0;
    };
    for (LinkId l : ones) {
      if (!consider(l)) continue;
      if (seen_[l]) {
        strike(l, 1.0, frac);
        continue;
      }
      // l's proposals: the other ones (ratio 1), and the rest's hops (ratio 1 / fraction), of which
      // only the kKeep first accepted in (bound, link) order can make the cut.
      seen_[l] = 1;
      touched.push_back(l);
      fresh_.clear();
      for (LinkId m : ones)
        if (const Cand x{m, 1.0 / 1.0}; m != l && accept(l, x)) fresh_.push_back({bound(x), x});
      size_t took = 0;
      for (const Fresh& x : sorted_rest(r, rest)) {
        if (took == kKeep) break;
        if (accept(l, x.cand)) fresh_.push_back(x), ++took;
      }
      keep_best(l);
    }
    for (LinkId l : ones) frac_on_[l] = 0.0;
  }
  // Ends a round of add_shared: applies each repeated rest's deferred strikes and raises.
  template <class Consider>
  void flush_shared(Consider consider) {
    for (uint32_t r : round_rests_) {
      const Shared& sh = shared_[r];
      if (!sh.repeated) continue;
      for (LinkId l : sh.ones) frac_on_[l] = 1.0;
      for (const RouteHop& h : sh.rest) frac_on_[h.link] = h.fraction;
      for (const RouteHop& h : sh.rest)
        if (consider(h.link)) strike(h.link, h.fraction, [&](LinkId m) { return frac_on_[m]; });
      for (LinkId l : sh.ones) frac_on_[l] = 0.0;
      for (const RouteHop& h : sh.rest) frac_on_[h.link] = 0.0;
    }
    round_rests_.clear();
    ++round_;
  }
  // The surviving candidate with the smallest bound, or nullopt.
  std::optional<Cand> best(LinkId l) const {
    std::optional<Cand> out;
    for (uint8_t i = 0; i < size_[l]; ++i) {
      const Cand& x = cands_[static_cast<size_t>(l) * kKeep + i];
      if (!out || bound(x) < bound(*out)) out = x;
    }
    return out;
  }
  // Forgets the links considered since the last call (a new round of routes starts).
  void reset_touched() {
    for (LinkId l : touched) size_[l] = 0, seen_[l] = 0;
    touched.clear();
  }
  std::vector<LinkId> touched;  // links considered, in order

 private:
  struct Fresh {
    double bound;
    Cand cand;
  };
  static constexpr auto before = [](const Fresh& a, const Fresh& x) {
    return a.bound != x.bound ? a.bound < x.bound : a.cand.link < x.cand.link;
  };
  // l's candidates: the kKeep first of fresh_ in (bound, link) order, a total order: the same as a
  // full sort's.
  void keep_best(LinkId l) {
    const size_t keep = std::min(fresh_.size(), kKeep);
    if (fresh_.size() <= 2 * kKeep) {  // the usual few: an insertion sort
      for (size_t i = 1; i < fresh_.size(); ++i)
        for (size_t j = i; j > 0 && before(fresh_[j], fresh_[j - 1]); --j) std::swap(fresh_[j], fresh_[j - 1]);
    } else {
      std::partial_sort(fresh_.begin(), fresh_.begin() + static_cast<long>(keep), fresh_.end(), before);
    }
    size_[l] = static_cast<uint8_t>(keep);
    for (size_t i = 0; i < keep; ++i) cands_[static_cast<size_t>(l) * kKeep + i] = fresh_[i].cand;
  }
  // Rest r's hops as proposals to a link of fraction 1, sorted by (bound, link); built once.
  const std::vector<Fresh>& sorted_rest(uint32_t r, std::span<const RouteHop> rest) {
    Shared& sh = shared_[r];
    if (!sh.sorted_built) {
      for (const RouteHop& m : rest) {
        const Cand x{m.link, 1.0 / m.fraction};
        sh.sorted.push_back({bound(x), x});
      }
      std::sort(sh.sorted.begin(), sh.sorted.end(), before);
      sh.sorted_built = true;
    }
    return sh.sorted;
  }
  // A later route through l (fraction f there; frac(m): its fraction on m, 0 if it misses m)
  // strikes l's candidates it misses and raises the others' ratios to the worst seen.
  template <class Frac>
  void strike(LinkId l, double f, const Frac& frac) {
    Cand* c = &cands_[static_cast<size_t>(l) * kKeep];
    uint8_t w = 0;
    for (uint8_t i = 0; i < size_[l]; ++i) {
      const Cand x = c[i];
      if (const double fm = frac(x.link); fm > 0) c[w++] = {x.link, std::max(x.ratio, f / fm)};
    }
    size_[l] = w;
  }
  struct Shared {
    std::span<const RouteHop> rest;
    std::vector<LinkId> ones;  // the intersection of the ones of the round's routes with this rest
    bool repeated = false;
    bool sorted_built = false;
    std::vector<Fresh> sorted;
  };
  std::vector<uint32_t> rest_round_;  // per rest: the round it was last seen in
  std::vector<Shared> shared_;
  std::vector<uint32_t> round_rests_;
  uint32_t round_ = 1;
  static constexpr size_t kKeep = 4;  // candidates kept per link
  std::vector<double> cap_;           // per link: its capacity (bound's factor)
  std::vector<Cand> cands_;           // per link: kKeep slots, size_[link] of them used
  std::vector<uint8_t> size_;
  std::vector<char> seen_;
  std::vector<double> frac_on_;
  std::vector<Fresh> fresh_;          // the first route's proposals, before the cut to kKeep
};

}  // namespace

// Pass 1, single dominators (see Topology::may_bind): a link every route through which also
// crosses a link m with ratio x capacity(m) <= its own capacity. Dominated links go as long as
// following dominators ends at a kept link: one link of every cycle of dominators (e.g. the NIC
// out of one node and the NIC into the other in a two-node cluster dominate each other) is kept.
void TopologyBuilder::compute_may_bind(Topology& t, const PairRoutes* pairs) {
  const int n = t.num_gpus();
  const size_t nl = static_cast<size_t>(t.num_links());
  auto cap = [&](LinkId l) { return t.link(l).bandwidth.value(); };
  DominatorCandidates cands(t);
  const auto consider = [](LinkId) { return true; };
  const auto accept = [&](LinkId l, const DominatorCandidates::Cand& m) { return cands.bound(m) <= cap(l); };
  if (t.factored_) {
    // Every route is a concatenation of segments, each in every route through its links: a
    // segment's other links are candidates (fewer than a whole route's, which can only keep a link).
    for (size_t i = 0; i + 1 < t.seg_off_[0].size(); ++i)
      cands.add_route(
          [&](const auto& f) {
            for (uint32_t k = t.seg_off_[0][i]; k < t.seg_off_[0][i + 1]; ++k) f(t.seg_hops_[0][k]);
          },
          consider, accept);
  } else {
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d)
        if (s != d) {
          const uint32_t r = pairs->rest_id(s, d);
          cands.add_shared(pairs->ones(s, d), r, pairs->rest_hops(r), consider, accept);
        }
    cands.flush_shared(consider);
  }
  // dom[l]: the dominator with the most headroom, or -1 (the ratio only grew, so re-check).
  std::vector<LinkId> dom(nl, -1);
  for (size_t l = 0; l < nl; ++l)
    if (auto m = cands.best(static_cast<LinkId>(l)); m && cands.bound(*m) <= cap(static_cast<LinkId>(l))) dom[l] = m->link;
  t.may_bind_.assign(nl, 1);
  std::vector<int> state(nl, 0);  // 0 unvisited, 1 on the current walk, 2 done
  std::vector<LinkId> walk;
  for (size_t start = 0; start < nl; ++start) {
    walk.clear();
    LinkId l = static_cast<LinkId>(start);
    while (l >= 0 && state[l] == 0) {
      state[l] = 1;
      walk.push_back(l);
      l = dom[l];
    }
    if (l >= 0 && state[l] == 1) {  // the walk closed a cycle through l: keep its smallest link
      LinkId keep = l;
      for (LinkId x = dom[l]; x != l; x = dom[x]) keep = std::min(keep, x);
      dom[keep] = -1;
    }
    for (LinkId x : walk) state[x] = 2;
  }
  for (size_t l = 0; l < nl; ++l)
    if (dom[l] >= 0) t.may_bind_[l] = 0;
  if (pairs) prune_by_endpoint_bounds(t, *pairs);
  drop_twin_links(t, pairs);
}

// Pass 3, twins: a link that may bind, with the same capacity as another and the same fraction of
// every route (each crosses both or neither, with the same share of its bytes), puts exactly that
// link's constraint on the max-min problem: one of them is enough (the smallest id stays). ECMP
// over an oversubscribed core is like that: a leaf's S uplinks carry 1/S of each of its cross-leaf
// routes, as do the S spines' links down to the other leaf, so a route's 2 + 2S binding hops
// become 4 (a 2:1 fat tree with 8 spines: 18 elements per flow -> 4).
// Found per unit, a run of hops shared by many routes: a rest (all-pairs routes; the links of a
// route's ones, crossed whole, are left alone) or a segment (factored routes; a route is the
// concatenation of its segments). Two links in exactly the same units with the same fractions are
// twins: candidates share (capacity, number of units, a sum over their units of a 64-bit mix of the
// unit and the fraction), then every unit of a candidate is checked to hold its representative at
// the same fraction (with equal unit counts, the same units): exact, the hash only pairs them up.
void TopologyBuilder::drop_twin_links(Topology& t, const PairRoutes* pairs) {
  const size_t nl = static_cast<size_t>(t.num_links());
  std::vector<char> excluded(nl, 0);  // crossed whole by some route (all-pairs ones): not compared
  size_t units = 0;
  const auto unit = [&](size_t u) -> std::span<const RouteHop> {
    if (pairs) return pairs->rest_hops(static_cast<uint32_t>(u));
    return {t.seg_hops_[0].data() + t.seg_off_[0][u], t.seg_off_[0][u + 1] - t.seg_off_[0][u]};
  };
  if (pairs) {
    units = pairs->num_rests();
    for (LinkId l : pairs->all_ones()) excluded[static_cast<size_t>(l)] = 1;
  } else if (t.factored_) {
    units = t.seg_off_[0].size() - 1;
  } else {
    return;
  }
  const auto mix = [](uint64_t x) {  // splitmix64's finalizer
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  std::vector<uint64_t> sig(nl, 0);
  std::vector<uint32_t> count(nl, 0);
  const auto candidate = [&](LinkId l) { return t.may_bind_[static_cast<size_t>(l)] != 0 && !excluded[static_cast<size_t>(l)]; };
  for (size_t u = 0; u < units; ++u)
    for (const RouteHop& h : unit(u))
      if (candidate(h.link)) {
        sig[static_cast<size_t>(h.link)] += mix(u ^ mix(std::bit_cast<uint64_t>(h.fraction)));
        ++count[static_cast<size_t>(h.link)];
      }
  // Candidates in order of (capacity, count, signature, id): each run's first link represents it.
  std::vector<LinkId> order;
  for (size_t l = 0; l < nl; ++l)
    if (count[l] > 0 && candidate(static_cast<LinkId>(l))) order.push_back(static_cast<LinkId>(l));
  const auto key = [&](LinkId l) {
    const auto i = static_cast<size_t>(l);
    return std::tuple(t.link(l).bandwidth.value(), count[i], sig[i], l);
  };
  std::sort(order.begin(), order.end(), [&](LinkId a, LinkId b) { return key(a) < key(b); });
  std::vector<LinkId> rep(nl, -1);
  for (size_t i = 1; i < order.size(); ++i) {
    const auto [ca, na, sa, la] = key(order[i - 1]);
    const auto [cb, nb, sb, lb] = key(order[i]);
    if (ca == cb && na == nb && sa == sb) rep[static_cast<size_t>(lb)] = rep[static_cast<size_t>(la)] >= 0 ? rep[static_cast<size_t>(la)] : la;
  }
  // Checked unit by unit: a twin whose representative is missing from one of its units (at its
  // fraction) is not one.
  for (size_t u = 0; u < units; ++u) {
    const auto hops = unit(u);
    for (const RouteHop& h : hops) {
      const LinkId r = rep[static_cast<size_t>(h.link)];
      if (r < 0) continue;
      const bool there = std::any_of(hops.begin(), hops.end(), [&](const RouteHop& o) { return o.link == r && o.fraction == h.fraction; });
      if (!there) rep[static_cast<size_t>(h.link)] = -1;
    }
  }
  for (size_t l = 0; l < nl; ++l)
    if (rep[l] >= 0) t.may_bind_[l] = 0;
}

// Pass 2: links no single link dominates but whose traffic is bounded by its sources' (or
// destinations') own links, e.g. the leaf-spine links of a non-oversubscribed fabric: each carries
// 1/S of the cross-leaf traffic of its leaf's NICs at 1/S of their summed capacity. For a link l
// and a source s, the flows from s through l all cross some kept link h (s's NIC uplink), so they
// put at most ratio x capacity(h) on l; summing over sources bounds l's load (U_up), and likewise
// over destinations (U_down). If min(U_up, U_down) <= capacity(l), l never limits a flow. The bound
// is valid only while the links h it uses stay in the problem: a link whose bound uses a pruned h
// is kept again, until nothing changes.
// Factored routes skip this pass (it walks every pair): such links stay, which changes no rate.
void TopologyBuilder::prune_by_endpoint_bounds(Topology& t, const PairRoutes& pairs) {
  const int n = t.num_gpus();
  const size_t nl = static_cast<size_t>(t.num_links());
  auto cap = [&](LinkId l) { return t.link(l).bandwidth.value(); };
  auto kept = [&](LinkId l) { return t.may_bind_[l] != 0; };
  // The largest bound that prunes l (its capacity, with room for rounding).
  auto limit = [&](LinkId l) { return cap(l) * (1 + 1e-9); };
  DominatorCandidates cands(t);
  std::vector<double> bound[2] = {std::vector<double>(nl, 0.0), std::vector<double>(nl, 0.0)};
  std::vector<std::vector<LinkId>> used[2] = {std::vector<std::vector<LinkId>>(nl), std::vector<std::vector<LinkId>>(nl)};
  for (int side = 0; side < 2; ++side)
    for (int e = 0; e < n; ++e) {
      // Routes from source e (side 0) or into destination e (side 1).
      for (int o = 0; o < n; ++o)
        if (o != e) {
          if (side == 1 && o + kAhead < n) pairs.prefetch(o + kAhead, e);
          const int s = side == 0 ? e : o, d = side == 0 ? o : e;
          const uint32_t r = pairs.rest_id(s, d);
          cands.add_shared(pairs.ones(s, d), r, pairs.rest_hops(r), kept,
                           [&](LinkId, const DominatorCandidates::Cand& m) { return kept(m.link); });
        }
      cands.flush_shared(kept);
      for (LinkId l : cands.touched) {
        const auto m = cands.best(l);
        bound[side][l] += m ? cands.bound(*m) : std::numeric_limits<double>::infinity();
        // A sum of non-negative terms only grows: once over the capacity, this side can no longer
        // prune l, and its links are never read.
        if (m && bound[side][l] <= limit(l)) used[side][l].push_back(m->link);
      }
      cands.reset_touched();
    }
  std::vector<char> pruned(nl, 0);
  std::vector<int> via(nl, -1);  // which side's bound prunes the link
  for (size_t l = 0; l < nl; ++l) {
    if (!t.may_bind_[l]) continue;
    if (bound[0][l] <= limit(static_cast<LinkId>(l))) pruned[l] = 1, via[l] = 0;
    else if (bound[1][l] <= limit(static_cast<LinkId>(l))) pruned[l] = 1, via[l] = 1;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t l = 0; l < nl; ++l) {
      if (!pruned[l]) continue;
      for (LinkId h : used[via[l]][l])
        if (pruned[h]) {
          pruned[l] = 0;
          changed = true;
          break;
        }
    }
  }
  for (size_t l = 0; l < nl; ++l)
    if (pruned[l]) t.may_bind_[l] = 0;
}

// Factored routes (Topology, factored_): the generator's structure gives each GPU's way out of its
// node to its gateway and back, and the spines between gateways; they are exact routes when the
// node's GPUs can only leave it through those links (build_compact's factoring conditions) and a
// pair on one node is strictly cheaper through the node's switch than any way out and back (checked
// here; else false, and all pairs are routed). Cross-gateway traffic splits evenly over the spines
// (every spine is one hop up and one down, at the same cost from a given leaf), as ECMP does.
bool TopologyBuilder::factored_routes(Topology& t, const RouteFactoring& f) {
  const int n = t.num_gpus();
  auto cost = [&](LinkId l) { return link_cost(t.links_[l]); };
  // Fraction-weighted: a GPU's m equal branches (its NICs) count as one path.
  auto path_cost = [&](const std::vector<RouteHop>& p) {
    double c = 0;
    for (const RouteHop& h : p) c += h.fraction * static_cast<double>(cost(h.link));
    return c;
  };
  std::vector<int> local(static_cast<size_t>(n));
  for (int node = 0; node < t.num_nodes_; ++node) {
    const auto& gpus = t.node_gpus_[node];
    for (size_t i = 0; i < gpus.size(); ++i) local[gpus[i]] = static_cast<int>(i);
    for (int a : gpus)
      for (int b : gpus) {
        if (a == b) continue;
        const int64_t via_switch = cost(f.to_switch[a]) + cost(f.from_switch[b]);
        if (static_cast<double>(via_switch) >= path_cost(f.out[a]) + path_cost(f.in[b])) return false;
        // GPUs sharing a NIC also reach each other through it over their two PCIe links.
        const LinkId first = f.out[a].front().link, last = f.in[b].back().link;
        if (t.links_[first].to == t.links_[last].from && via_switch >= cost(first) + cost(last)) return false;
      }
  }
  const int gates = static_cast<int>(f.up.size());
  t.factored_ = true;
  t.num_gates_ = gates;
  t.gate_ = f.gate;
  t.local_index_ = local;
  t.seg_off_[0].assign(1, 0);
  t.seg_hops_[0].clear();
  t.seg_lat_.clear();
  t.seg_hop_count_.clear();
  // One segment: its hops sorted by link (as all-pairs routes are), its latency summed from the far
  // end (as the all-pairs routing does), its hop count.
  std::vector<RouteHop> hops;
  auto add = [&](double latency, int hop_count) {
    std::sort(hops.begin(), hops.end(), [](const RouteHop& a, const RouteHop& b) { return a.link < b.link; });
    t.seg_hops_[0].insert(t.seg_hops_[0].end(), hops.begin(), hops.end());
    t.seg_off_[0].push_back(static_cast<uint32_t>(t.seg_hops_[0].size()));
    t.seg_lat_.push_back(latency);
    t.seg_hop_count_.push_back(static_cast<uint8_t>(hop_count));
    hops.clear();
    return static_cast<uint32_t>(t.seg_lat_.size() - 1);
  };
  // Latency and hop count: fraction-weighted sums (summed from the far end), which over equal
  // parallel branches is one branch's (exact for a power-of-two branch count).
  auto add_path = [&](const std::vector<RouteHop>& p) {
    double lat = 0, count = 0;
    for (auto it = p.rbegin(); it != p.rend(); ++it) {
      lat = t.links_[it->link].latency.value() * it->fraction + lat;
      count += it->fraction;
    }
    hops.insert(hops.end(), p.begin(), p.end());
    return add(lat, static_cast<int>(std::lround(count)));
  };
  t.out_seg_.resize(static_cast<size_t>(n));
  t.in_seg_.resize(static_cast<size_t>(n));
  t.local_base_.resize(static_cast<size_t>(n));
  for (int g = 0; g < n; ++g) t.out_seg_[g] = add_path(f.out[g]);
  for (int g = 0; g < n; ++g) t.in_seg_[g] = add_path(f.in[g]);
  for (int a = 0; a < n; ++a) {
    for (int b : t.node_gpus_[t.gpu_node_[a]]) {
      const uint32_t seg = a == b ? add(0.0, 0) : add_path({{f.to_switch[a], 1.0}, {f.from_switch[b], 1.0}});
      if (b == t.node_gpus_[t.gpu_node_[a]].front()) t.local_base_[a] = seg;
    }
  }
  t.mid_base_ = static_cast<uint32_t>(t.seg_lat_.size());
  for (int a = 0; a < gates; ++a)
    for (int b = 0; b < gates; ++b) {
      if (a == b || f.up[a].empty()) {
        add(0.0, 0);
        continue;
      }
      const size_t spines = f.up[a].size();
      double lat = 0;
      for (size_t k = 0; k < spines; ++k) {
        hops.push_back({f.up[a][k], 1.0 / static_cast<double>(spines)});
        hops.push_back({f.down[b][k], 1.0 / static_cast<double>(spines)});
        lat = std::max(lat, t.links_[f.up[a][k]].latency.value() + (t.links_[f.down[b][k]].latency.value() + 0.0));
      }
      add(lat, 2);
    }
  return true;
}

Topology TopologyBuilder::build(const SourceLocation& where, const SourceLocation* links_where) {
  Diagnostics diags;
  Topology& t = topo_;
  const int n = t.num_gpus();
  if (n == 0) diags.error(where, "gpus", "the topology has no GPU");
  if (n > kMaxGpus)
    diags.error(where, "gpus", fmt::format("{} GPUs: this version supports at most {}", n, kMaxGpus));
  for (size_t i = 0; i < t.links_.size(); ++i) {
    const Link& l = t.links_[i];
    if (!(l.bandwidth.value() > 0))
      diags.error(where, fmt::format("links[{}]", i), fmt::format("link {} -> {} needs a positive bandwidth",
                                                                  t.vertices_[l.from].name, t.vertices_[l.to].name));
  }
  diags.throw_if_errors();
  if (n >= 2) {
    const GpuGroups groups = gpu_groups(t.vertices_, t.links_, t.gpu_vertex_);
    if (groups.groups.size() > 1)
      diags.error(links_where ? *links_where : where, "links",
                  "the links leave the GPUs in " + describe_gpu_groups(t.vertices_, t.gpu_vertex_, groups) +
                      " (every GPU must reach every other: add the missing links)");
    diags.throw_if_errors();
  }
  int max_node = -1;
  for (int g = 0; g < n; ++g) max_node = std::max(max_node, t.gpu_node_[g]);
  t.num_nodes_ = max_node + 1;
  t.node_gpus_.assign(t.num_nodes_, {});
  for (int g = 0; g < n; ++g) t.node_gpus_[t.gpu_node_[g]].push_back(g);

  if (factoring_ && (n > kAllPairsMaxGpus || force_factoring_) && factored_routes(t, *factoring_)) {
    factoring_.reset();
    compute_may_bind(t, nullptr);
  } else {
    factoring_.reset();
    // All pairs: the binding analysis reads the routes in their compact working form, then they
    // are laid out once, with their binding hops.
    const size_t pairs = static_cast<size_t>(n) * n;
    t.route_latency_.assign(pairs, 0.f);
    t.route_hop_count_.assign(pairs, 0);
    const PairRoutes routes(t, t.route_latency_, t.route_hop_count_, diags, where);
    diags.throw_if_errors();
    compute_may_bind(t, &routes);
    routes.lay_out(t.may_bind_, t.route_offset_, t.route_hops_, t.bind_offset_, t.bind_hops_);
  }
  compute_binding_hops(t);
  return std::move(topo_);
}

namespace {

// The GPU NIC n of a node serves first (CompactSpec: with more NICs than GPUs, its only one).
int first_gpu_of_nic(int n, int g, int k) { return k <= g ? n * (g / k) : n / (k / g); }

// One node's PCIe side (see CompactSpec): its GPUs' links to PCIe switches, the host or the NICs,
// and its NICs (appended to `nics`).
// With its own PCIe link straight to its NIC(s), GPU i's first hop gets id gpu_nic[i] (the way back
// is the next id); with several NICs per GPU that hop goes to the GPU's own PCIe switch, and
// nic_pcie[j] is the id of that switch's link to NIC j (node-major).
void add_node_pcie(TopologyBuilder& b, const CompactSpec& s, int node, const std::vector<VertexId>& gpus,
                   std::vector<VertexId>& nics, std::vector<LinkId>& gpu_nic, std::vector<LinkId>& nic_pcie) {
  const int g = s.gpus_per_node, k = s.nics_per_node;
  LinkParams p = s.pcie;
  p.link_class = "pcie";
  const int per_switch = s.gpus_per_pcie_switch;
  if (per_switch == 0 && s.gpudirect_rdma && k <= g) {  // each GPU's own PCIe link straight to its NIC
    const int per_nic = g / k;
    for (int n = 0; n < k; ++n) {
      nics.push_back(b.add_nic(fmt::format("node{}.nic{}", node, n), node));
      for (int i = n * per_nic; i < (n + 1) * per_nic; ++i) {
        gpu_nic.push_back(b.num_links());
        b.add_duplex_link(gpus[i], nics.back(), p);
      }
    }
    return;
  }
  if (per_switch == 0 && s.gpudirect_rdma) {  // GPU i -> its PCIe switch -> its k/g NICs
    const int per_gpu = k / g;
    for (int i = 0; i < g; ++i) {
      const VertexId sw = b.add_switch(fmt::format("node{}.gpu{}.pcie", node, i), node);
      gpu_nic.push_back(b.num_links());
      b.add_duplex_link(gpus[i], sw, p);
      for (int n = i * per_gpu; n < (i + 1) * per_gpu; ++n) {
        nics.push_back(b.add_nic(fmt::format("node{}.nic{}", node, n), node));
        nic_pcie.push_back(b.num_links());
        b.add_duplex_link(sw, nics.back(), p);
      }
    }
    return;
  }
  const VertexId host = b.add_switch(fmt::format("node{}.host", node), node);
  // Where GPU i's PCIe path meets the rest of the node: its switch, or the host.
  std::vector<VertexId> attach(static_cast<size_t>(g), host);
  if (per_switch > 0) {
    for (int j = 0; j < g / per_switch; ++j) {
      const VertexId sw = b.add_switch(fmt::format("node{}.pcie{}", node, j), node);
      b.add_duplex_link(sw, host, p);
      for (int i = j * per_switch; i < (j + 1) * per_switch; ++i) attach[i] = sw;
    }
  }
  for (int i = 0; i < g; ++i) b.add_duplex_link(gpus[i], attach[i], p);
  for (int n = 0; n < k; ++n) {
    nics.push_back(b.add_nic(fmt::format("node{}.nic{}", node, n), node));
    // On its GPUs' switch if they share one and the NIC reads GPU memory directly; else on the host.
    const int served = k <= g ? g / k : 1;
    const VertexId first = attach[first_gpu_of_nic(n, g, k)], last = attach[first_gpu_of_nic(n, g, k) + served - 1];
    b.add_duplex_link(nics.back(), s.gpudirect_rdma && first == last ? first : host, p);
  }
}

}  // namespace

// Binding hops per segment (factored routes; all-pairs ones come with their layout), then the
// endpoint-separable split (Topology::endpoint_separable): a
// binding link of a route belongs to its source when every route of that locality crossing it starts
// at that source (else to its destination, when they all end there); the topology is separable when
// every route's hops split so, into the same egress list for every destination of its source and the
// same ingress list for every source of its destination, and route latencies are symmetric.
void TopologyBuilder::compute_binding_hops(Topology& t) {
  const int n = t.num_gpus();
  if (t.factored_) {
    t.seg_off_[1].assign(1, 0);
    t.seg_hops_[1].clear();
    for (size_t i = 0; i + 1 < t.seg_off_[0].size(); ++i) {
      for (uint32_t k = t.seg_off_[0][i]; k < t.seg_off_[0][i + 1]; ++k)
        if (t.may_bind_[t.seg_hops_[0][k].link]) t.seg_hops_[1].push_back(t.seg_hops_[0][k]);
      t.seg_off_[1].push_back(static_cast<uint32_t>(t.seg_hops_[1].size()));
    }
  }
  t.separable_ = false;
  t.end_offset_.clear();
  t.end_hops_.clear();
  // Factored: a binding link between leaves carries traffic of many sources to many destinations,
  // so the check below would fail on it; spare its pass over every pair.
  if (t.factored_)
    for (size_t i = t.mid_base_; i + 1 < t.seg_off_[1].size(); ++i)
      if (t.seg_off_[1][i + 1] > t.seg_off_[1][i]) return;
  const size_t nl = t.links_.size();
  // Symmetric latencies, compared tile by tile (a tile and its transpose stay in cache).
  constexpr int kTile = 64;
  for (int s0 = 0; s0 < n; s0 += kTile)
    for (int d0 = s0; d0 < n; d0 += kTile)
      for (int s = s0; s < std::min(n, s0 + kTile); ++s)
        for (int d = std::max(d0, s + 1); d < std::min(n, d0 + kTile); ++d)
          if (t.route_latency(s, d).value() != t.route_latency(d, s).value()) return;
  constexpr int kNone = -1, kMany = -2;
  // Per locality and link: the one source (destination) of the routes crossing it, or kMany.
  std::vector<int> src_of(2 * nl, kNone), dst_of(2 * nl, kNone);
  auto note = [](int& slot, int who) { slot = slot == kNone || slot == who ? who : kMany; };
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      const size_t k = t.gpu_node_[s] != t.gpu_node_[d] ? 1 : 0;
      for (const auto& h : t.binding_hops(s, d)) note(src_of[k * nl + h.link], s), note(dst_of[k * nl + h.link], d);
    }
  // Each GPU's egress and ingress hops per locality, from its first route of that locality; every
  // other route must match them exactly.
  std::vector<std::vector<RouteHop>> ends(static_cast<size_t>(n) * 4);
  std::vector<char> seen(static_cast<size_t>(n) * 4, 0);
  std::vector<RouteHop> eg, in;
  auto same = [](const std::vector<RouteHop>& a, const std::vector<RouteHop>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].link != b[i].link || a[i].fraction != b[i].fraction) return false;
    return true;
  };
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      const size_t k = t.gpu_node_[s] != t.gpu_node_[d] ? 1 : 0;
      eg.clear();
      in.clear();
      for (const auto& h : t.binding_hops(s, d)) {
        if (src_of[k * nl + h.link] == s) eg.push_back(h);
        else if (dst_of[k * nl + h.link] == d) in.push_back(h);
        else return;
      }
      for (auto [slot, part] : {std::pair{(static_cast<size_t>(s) * 2 + k) * 2, &eg}, std::pair{(static_cast<size_t>(d) * 2 + k) * 2 + 1, &in}}) {
        if (!seen[slot]) seen[slot] = 1, ends[slot] = *part;
        else if (!same(ends[slot], *part)) return;
      }
    }
  t.end_offset_.assign(ends.size() + 1, 0);
  for (size_t slot = 0; slot < ends.size(); ++slot) {
    t.end_offset_[slot] = static_cast<uint32_t>(t.end_hops_.size());
    t.end_hops_.insert(t.end_hops_.end(), ends[slot].begin(), ends[slot].end());
  }
  t.end_offset_[ends.size()] = static_cast<uint32_t>(t.end_hops_.size());
  t.separable_ = true;
}

Topology build_compact(const CompactSpec& s, const SourceLocation& where, const TopologyAdjust* adjust) {
  const int g = s.gpus_per_node;
  const bool cube_mesh = s.intra_kind == "hybrid-cube-mesh";
  if (cube_mesh && g != 8)
    throw InputError(where, "intra_node.kind",
                     fmt::format("hybrid-cube-mesh is the 8-GPU NVLink layout of a DGX-1 / p3dn.24xlarge: needs "
                                 "gpus_per_node: 8, got {}", g));
  if (s.nodes > 1 && (s.nics_per_node < 1 || (g % s.nics_per_node != 0 && s.nics_per_node % g != 0)))
    throw InputError(where, "nics_per_node", fmt::format("gpus_per_node {} and nics_per_node {}: one must be a "
                                                         "multiple of the other (NIC i serves an equal block of GPUs, "
                                                         "or GPU i has an equal block of NICs)", g, s.nics_per_node));
  if (s.gpus_per_pcie_switch < 0 || (s.gpus_per_pcie_switch > 0 && g % s.gpus_per_pcie_switch != 0))
    throw InputError(where, "pcie.gpus_per_switch", fmt::format("gpus_per_node {} must be a multiple of "
                                                                "gpus_per_switch {}", g, s.gpus_per_pcie_switch));
  TopologyBuilder b(s.name, s.gpu);
  b.set_adjust(adjust);
  b.set_nvls(s.nvls && s.intra_kind == "nvswitch");
  b.set_nccl(s.nccl);
  std::vector<VertexId> nics;  // node-major
  // Factored routes (TopologyBuilder::set_factoring) when a GPU's only way out of its node is its own
  // PCIe link to its NIC, and the NIC's only link out goes to one fabric switch (its gateway).
  const bool factorable = s.nodes > 1 && !cube_mesh && s.gpus_per_pcie_switch == 0 && s.gpudirect_rdma;
  RouteFactoring f;
  // Per GPU: its first hop toward its NIC(s); per NIC: the PCIe switch's link to it (several NICs per
  // GPU only) and its link to its gateway.
  std::vector<LinkId> gpu_nic, nic_pcie, nic_gate;
  std::vector<int> nic_gate_index;
  for (int node = 0; node < s.nodes; ++node) {
    std::vector<VertexId> gpus;
    LinkParams p = s.intra;
    p.link_class = s.intra_kind == "pcie" ? "pcie" : "nvlink";
    if (cube_mesh) {
      // GPU-GPU NVLinks only; a bonded pair (NV2) is one link of twice the per-link bandwidth.
      for (int i = 0; i < g; ++i) gpus.push_back(b.add_gpu(fmt::format("node{}.gpu{}", node, i), node));
      for (int a = 0; a < g; ++a)
        for (int c = a + 1; c < g; ++c)
          if (const int links = kHybridCubeMesh[a][c]; links > 0) {
            LinkParams q = p;
            q.line_rate = p.line_rate * links;
            b.add_duplex_link(gpus[a], gpus[c], q);
          }
    } else {
      // intra_node.latency is GPU to GPU (NCCL's per-hop figure, 3.4 us for NVLink with the Simple
      // protocol); a route through the switch crosses two links, so each carries half of it.
      const VertexId sw = b.add_switch(fmt::format("node{}.{}", node, s.intra_kind), node);
      LinkParams half = p;
      half.latency = p.latency * 0.5;
      for (int i = 0; i < g; ++i) {
        gpus.push_back(b.add_gpu(fmt::format("node{}.gpu{}", node, i), node));
        f.to_switch.push_back(b.num_links());
        f.from_switch.push_back(b.num_links() + 1);
        b.add_duplex_link(gpus.back(), sw, half);
      }
    }
    if (s.nodes > 1) add_node_pcie(b, s, node, gpus, nics, gpu_nic, nic_pcie);
  }
  nic_gate.assign(nics.size(), -1);
  nic_gate_index.assign(nics.size(), 0);
  if (s.nodes > 1) {
    LinkParams nicp = s.nic;
    nicp.link_class = "nic";
    const int k = s.nics_per_node;
    if (s.fabric_kind == "single-switch") {
      const VertexId core = b.add_switch("fabric.core");
      LinkParams p = nicp;
      p.latency = p.latency + s.switch_latency;
      for (size_t j = 0; j < nics.size(); ++j) {
        nic_gate[j] = b.num_links();
        b.add_duplex_link(nics[j], core, p);
      }
      f.up.assign(1, {});
      f.down.assign(1, {});
    } else {
      // Leaves: rail-optimized = leaf r joins NIC r of every node; fat-tree = leaf per group of
      // nodes_per_leaf nodes. Spines join every leaf; uplink capacity = downlink / oversubscription.
      std::vector<std::vector<size_t>> leaf_ports;  // indices into nics
      if (s.fabric_kind == "rail-optimized") {
        // Rail of NIC r: r, or with several NICs per GPU its GPU's index (CompactSpec).
        leaf_ports.assign(std::min(k, g), {});
        for (int node = 0; node < s.nodes; ++node)
          for (int r = 0; r < k; ++r)
            leaf_ports[k <= g ? r : first_gpu_of_nic(r, g, k)].push_back(static_cast<size_t>(node) * k + r);
      } else {
        const int groups = (s.nodes + s.nodes_per_leaf - 1) / s.nodes_per_leaf;
        leaf_ports.assign(groups, {});
        for (int node = 0; node < s.nodes; ++node)
          for (int r = 0; r < k; ++r) leaf_ports[node / s.nodes_per_leaf].push_back(static_cast<size_t>(node) * k + r);
      }
      const int leaves = static_cast<int>(leaf_ports.size());
      std::vector<VertexId> leaf_v;
      for (int i = 0; i < leaves; ++i) {
        leaf_v.push_back(b.add_switch(fmt::format("fabric.leaf{}", i)));
        LinkParams p = nicp;
        p.latency = p.latency + s.switch_latency;
        for (size_t j : leaf_ports[i]) {
          nic_gate[j] = b.num_links();
          nic_gate_index[j] = i;
          b.add_duplex_link(nics[j], leaf_v.back(), p);
        }
      }
      f.up.assign(leaves, {});
      f.down.assign(leaves, {});
      if (leaves > 1) {
        // Default: up to 8 spines. Every cross-leaf transfer splits evenly over all spines, so each
        // leaf-spine link carries 1/spines of the leaf's cross traffic at 1/spines of its uplink
        // capacity: utilizations, and so every time, do not depend on the count, while routes grow
        // with it (a 1,024-GPU rail fabric with one spine per port held 260-hop routes, ~4 GB).
        const int spines = s.spines > 0 ? s.spines : std::clamp(static_cast<int>(leaf_ports[0].size()), 1, 8);
        std::vector<VertexId> spine_v;
        for (int i = 0; i < spines; ++i) spine_v.push_back(b.add_switch(fmt::format("fabric.spine{}", i)));
        for (int i = 0; i < leaves; ++i) {
          const double down = static_cast<double>(leaf_ports[i].size()) * nicp.line_rate.value();
          LinkParams up;
          up.line_rate = Bandwidth(down / s.oversubscription / spines);
          up.efficiency = nicp.efficiency;
          up.latency = s.switch_latency;
          up.link_class = "fabric";
          for (VertexId sp : spine_v) {
            f.up[i].push_back(b.num_links());
            f.down[i].push_back(b.num_links() + 1);
            b.add_duplex_link(leaf_v[i], sp, up);
          }
        }
      }
    }
  }
  if (factorable) {
    const int k = s.nics_per_node;
    const int n = s.nodes * g;
    f.gate.resize(static_cast<size_t>(n));
    f.out.resize(static_cast<size_t>(n));
    f.in.resize(static_cast<size_t>(n));
    for (int gpu = 0; gpu < n; ++gpu) {
      const size_t node_base = static_cast<size_t>(gpu / g) * k;
      if (k <= g) {
        const size_t nic = node_base + static_cast<size_t>(gpu % g / (g / k));
        f.gate[gpu] = nic_gate_index[nic];
        f.out[gpu] = {{gpu_nic[gpu], 1.0}, {nic_gate[nic], 1.0}};
        f.in[gpu] = {{nic_gate[nic] + 1, 1.0}, {gpu_nic[gpu] + 1, 1.0}};
        continue;
      }
      // k/g NICs, one branch each: switch -> NIC -> gateway (all on one gateway, see CompactSpec).
      const int per_gpu = k / g;
      const double share = 1.0 / per_gpu;
      const size_t first = node_base + static_cast<size_t>(gpu % g) * per_gpu;
      f.gate[gpu] = nic_gate_index[first];
      f.out[gpu] = {{gpu_nic[gpu], 1.0}};
      f.in[gpu].clear();
      for (size_t nic = first; nic < first + per_gpu; ++nic) {
        f.out[gpu].push_back({nic_pcie[nic], share});
        f.out[gpu].push_back({nic_gate[nic], share});
        f.in[gpu].push_back({nic_gate[nic] + 1, share});
        f.in[gpu].push_back({nic_pcie[nic] + 1, share});
      }
      f.in[gpu].push_back({gpu_nic[gpu] + 1, 1.0});
    }
    b.set_factoring(std::move(f), s.force_factored_routes);
  }
  return b.build(where);
}

}  // namespace hs::topology
