#include "collective/sparse_time_tracker.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace hs::collective {

namespace {

// The largest j with x an integer multiple of 2^j (x > 0, finite): x = f 2^e with f in [0.5, 1), so
// x = m 2^(e - 53) with m = f 2^53 an integer of at most 53 bits, and j = e - 53 + (m's trailing zeros).
int lowest_bit(double x) {
  int e = 0;
  const double f = std::frexp(x, &e);
  const auto m = static_cast<std::uint64_t>(std::ldexp(f, 53));
  return e - 53 + std::countr_zero(m);
}

}  // namespace

std::size_t SparseTimeTracker::KeyHash::operator()(const std::vector<int>& k) const {
  std::uint64_t h = k.size();
  for (int v : k) h = (h ^ static_cast<std::uint32_t>(v)) * 0x9e3779b97f4a7c15ULL;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

SparseTimeTracker::SparseTimeTracker(const topology::Topology& topo, std::vector<int> node_of, BroadcastAlgo algo,
                                     int channels, bool reduce, std::size_t capacity)
    : topo_(topo), node_of_(std::move(node_of)), algo_(algo), channels_(channels), reduce_(reduce),
      capacity_(capacity), load_(topo.num_links(), 0.0), scratch_(topo.num_links(), 0.0) {
  for (const auto& l : topo.links()) inv_bw_.push_back(1.0 / l.bandwidth.value());
}

void SparseTimeTracker::forget() {
  memo_.clear();
  last_ = {};
  in_.clear();
  exact_ = false;
}

const SparseTimeTracker::Chunk& SparseTimeTracker::chunk(int owner, const std::vector<int>& replicas) {
  std::vector<int> key;
  key.reserve(replicas.size() + 1);
  key.push_back(owner);
  key.insert(key.end(), replicas.begin(), replicas.end());
  auto [it, added] = memo_.try_emplace(std::move(key));
  Chunk& c = it->second;
  if (!added) return c;
  const SparsePlacement one{{owner}, {replicas}};
  const SparsePlanBuild b = build_sparse_plan(one, bytes_, topo_, node_of_, algo_, reduce_, channels_);
  c.alpha = b.alpha;
  c.longest = b.longest;
  // The loads as AnalyticNetwork::add puts them: every transfer (but a GPU's to itself, or of no
  // bytes) adds bytes x fraction on each of its route's binding hops.
  bool exact = true;
  int j = std::numeric_limits<int>::max();
  std::vector<int> links;
  for (const Transfer& t : b.flows) {
    if (t.src == t.dst || t.bytes <= 0) continue;
    c.route_alpha = std::max(c.route_alpha, topo_.route_latency(t.src, t.dst).value());
    if (t.rate_cap > 0) c.floor = std::max(c.floor, t.bytes / t.rate_cap);
    for (const auto& h : topo_.binding_hops(t.src, t.dst)) {
      const double term = t.bytes * h.fraction;
      if (term == 0) continue;  // adds nothing, in any order
      exact = exact && std::isfinite(term) && std::fma(t.bytes, h.fraction, -term) == 0;  // the product is exact
      if (exact) j = std::min(j, lowest_bit(term));
      if (scratch_[h.link] == 0) links.push_back(h.link);
      scratch_[h.link] += term;
    }
  }
  std::sort(links.begin(), links.end());
  double most = 0;
  for (int l : links) {
    c.loads.emplace_back(l, scratch_[l]);
    most = std::max(most, scratch_[l]);
    scratch_[l] = 0;
  }
  // The chunk's own sums are exact under the same bound (they are partial sums of a link's load).
  if (exact && (links.empty() || most < std::ldexp(1.0, 53 + j))) c.quantum = links.empty() ? 0 : j;
  return c;
}

double SparseTimeTracker::time(const SparsePlacement& p, double chunk_bytes, SparsePlanCache& plans,
                               AnalyticNetwork& net) {
  if (chunk_bytes != bytes_ || memo_.size() > capacity_) {
    forget();
    bytes_ = chunk_bytes;
  }
  const std::size_t chunks = p.owner.size();
  if (!exact_ || last_.owner.size() != chunks) {  // from empty loads
    last_.owner.assign(chunks, -1);
    last_.replicas.assign(chunks, {});
    in_.assign(chunks, nullptr);
    std::fill(load_.begin(), load_.end(), 0.0);
  }
  // Chunks that changed: their old loads come off (exact: what is left is part of the last exact
  // sums), then their new ones go on.
  changed_.clear();
  for (std::size_t e = 0; e < chunks; ++e)
    if (p.owner[e] != last_.owner[e] || p.replicas[e] != last_.replicas[e]) changed_.push_back(static_cast<int>(e));
  for (int e : changed_)
    if (in_[e])
      for (const auto& [l, b] : in_[e]->loads) load_[l] -= b;
  for (int e : changed_) {
    in_[e] = p.replicas[e].empty() ? nullptr : &chunk(p.owner[e], p.replicas[e]);
    if (in_[e])
      for (const auto& [l, b] : in_[e]->loads) load_[l] += b;
    last_.owner[e] = p.owner[e];
    last_.replicas[e] = p.replicas[e];
  }
  double route_alpha = 0, alpha = 0, longest = 0, floor = 0;
  int j = std::numeric_limits<int>::max();
  bool any = false;
  for (const Chunk* c : in_) {
    if (!c) continue;
    any = true;
    route_alpha = std::max(route_alpha, c->route_alpha);
    alpha = std::max(alpha, c->alpha);
    longest = std::max(longest, c->longest);
    floor = std::max(floor, c->floor);
    j = std::min(j, c->quantum);
  }
  exact_ = true;
  if (!any) {  // no copies: no transfer (SparsePlanCache's 0)
    ++updated_;
    return 0.0;
  }
  double worst = 0, most = 0;
  for (std::size_t l = 0; l < load_.size(); ++l) {
    worst = std::max(worst, load_[l] * inv_bw_[l]);
    most = std::max(most, load_[l]);
  }
  if (j == kInexact || !(most < std::ldexp(1.0, 53 + j))) {
    exact_ = false;
    ++fresh_;
    return plans.time(p, chunk_bytes, reduce_, net);
  }
  ++updated_;
  // AnalyticNetwork's coflow time (0 when no link is loaded), plus sparse_finish's latency.
  const double coflow = worst > 0 ? route_alpha + std::max(worst, floor) : 0.0;
  return coflow + (std::max(alpha, longest) - alpha);
}

}  // namespace hs::collective
