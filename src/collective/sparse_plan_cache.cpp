#include "collective/sparse_plan_cache.hpp"

#include <bit>
#include <cstdint>
#include <utility>

namespace hs::collective {

namespace {

// One multiply per 64-bit word (FNV-1a's step on whole words rather than on each byte: a
// placement of E experts on n GPUs is up to E x n words), and splitmix64's finalizer so that every
// bit of the result depends on every word. Only the map's speed depends on it, never a result.
struct WordHash {
  std::uint64_t h = 1469598103934665603ULL;
  void add(std::uint64_t v) { h = (h ^ v) * 1099511628211ULL; }
  std::uint64_t done() const {
    std::uint64_t z = h;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

}  // namespace

std::size_t SparsePlanCache::KeyHash::operator()(const KeyView& k) const {
  WordHash f;
  f.add(std::bit_cast<std::uint64_t>(k.bytes));
  f.add(k.reduce ? 1 : 0);
  for (int o : k.p.owner) f.add(static_cast<std::uint64_t>(o));
  for (const auto& r : k.p.replicas) {
    f.add(0xffffffffULL + r.size());
    for (int g : r) f.add(static_cast<std::uint64_t>(g));
  }
  return static_cast<std::size_t>(f.done());
}

SparsePlanCache::SparsePlanCache(const topology::Topology& topo, std::vector<int> node_of, BroadcastAlgo algo,
                                 int channels, std::size_t capacity)
    : topo_(topo), node_of_(std::move(node_of)), algo_(algo), channels_(channels), capacity_(capacity) {}

std::shared_ptr<SparsePlanCache::Plan> SparsePlanCache::entry(const SparsePlacement& p, double chunk_bytes,
                                                              bool reduce) {
  if (auto it = map_.find(KeyView{p, chunk_bytes, reduce}); it != map_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  auto plan = std::make_shared<Plan>();
  auto built = build_sparse_plan(p, chunk_bytes, topo_, node_of_, algo_, reduce, channels_);
  plan->flows = std::move(built.flows);
  plan->latency = built.latency;
  if (held_ + plan->flows.size() > capacity_) {
    map_.clear();
    held_ = 0;
  }
  held_ += plan->flows.size();
  map_.emplace(Key{p, chunk_bytes, reduce}, plan);
  return plan;
}

std::shared_ptr<const SparsePlanCache::Plan> SparsePlanCache::plan(const SparsePlacement& p, double chunk_bytes,
                                                                   bool reduce) {
  return entry(p, chunk_bytes, reduce);
}

double SparsePlanCache::time(const SparsePlacement& p, double chunk_bytes, bool reduce, AnalyticNetwork& net) {
  const auto plan = entry(p, chunk_bytes, reduce);
  if (plan->time < 0) plan->time = plan->flows.empty() ? 0.0 : net.coflow_time(plan->flows) + plan->latency;
  return plan->time;
}

}  // namespace hs::collective
