#include "collective/sparse_plan.hpp"

#include <algorithm>
#include <cstddef>

namespace hs::collective {

std::vector<int> chain_order(int owner, const std::vector<int>& holders, const std::vector<int>& node_of) {
  const int nodes = node_of.empty() ? 1 : *std::max_element(node_of.begin(), node_of.end()) + 1;
  const int home = node_of.empty() ? 0 : node_of[owner];
  std::vector<int> order{owner};
  std::vector<int> rest;
  for (int g : holders)
    if (g != owner) rest.push_back(g);
  // Owner's node first, then nodes cyclically after it; GPUs in id order within a node.
  auto rank = [&](int g) { return ((node_of.empty() ? 0 : node_of[g]) - home + nodes) % nodes; };
  std::stable_sort(rest.begin(), rest.end(), [&](int a, int b) { return rank(a) != rank(b) ? rank(a) < rank(b) : a < b; });
  order.insert(order.end(), rest.begin(), rest.end());
  return order;
}

Coflow sparse_allgather(const SparsePlacement& p, double chunk_bytes, const std::vector<int>& node_of,
                        BroadcastAlgo algo) {
  Coflow c;
  for (std::size_t e = 0; e < p.owner.size(); ++e) {
    if (p.replicas[e].empty()) continue;
    if (algo == BroadcastAlgo::kDirect) {
      for (int g : p.replicas[e])
        if (g != p.owner[e]) c.push_back({p.owner[e], g, chunk_bytes});
      continue;
    }
    const auto order = chain_order(p.owner[e], p.replicas[e], node_of);
    for (std::size_t i = 0; i + 1 < order.size(); ++i) c.push_back({order[i], order[i + 1], chunk_bytes});
  }
  return c;
}

Coflow sparse_reduce_scatter(const SparsePlacement& p, double chunk_bytes, const std::vector<int>& node_of,
                             BroadcastAlgo algo) {
  Coflow c = sparse_allgather(p, chunk_bytes, node_of, algo);
  for (auto& t : c) std::swap(t.src, t.dst);
  return c;
}

GpuVolumes volumes(const Coflow& c, int gpus) {
  GpuVolumes v{std::vector<double>(gpus, 0.0), std::vector<double>(gpus, 0.0)};
  for (const auto& t : c) {
    v.sent[t.src] += t.bytes;
    v.received[t.dst] += t.bytes;
  }
  return v;
}

}  // namespace hs::collective
