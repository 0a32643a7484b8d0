#include "collective/sparse_plan.hpp"

#include <algorithm>
#include <cstddef>

#include "collective/p2p_channels.hpp"

namespace hs::collective {

std::vector<int> chain_order(int owner, const std::vector<int>& holders, const std::vector<int>& node_of) {
  const int nodes = node_of.empty() ? 1 : *std::max_element(node_of.begin(), node_of.end()) + 1;
  const int home = node_of.empty() ? 0 : node_of[owner];
  std::vector<int> order{owner};
  std::vector<int> rest;
  for (int g : holders)
    if (g != owner) rest.push_back(g);
  // Owner's node first, then nodes cyclically after it. Within a node, GPUs in order of their local
  // index counted from the owner's (rail-aligned entry: on rail-optimized fabrics the chain enters a
  // node on the owner's rail when that GPU is a holder, as NCCL's rings do).
  std::vector<int> first(nodes, -1), local(node_of.size(), 0), per_node(nodes, 0);
  for (size_t g = 0; g < node_of.size(); ++g) {
    if (first[node_of[g]] < 0) first[node_of[g]] = static_cast<int>(g);
    local[g] = static_cast<int>(g) - first[node_of[g]];
    ++per_node[node_of[g]];
  }
  auto rank = [&](int g) { return ((node_of.empty() ? 0 : node_of[g]) - home + nodes) % nodes; };
  auto pos = [&](int g) {
    if (node_of.empty()) return g;
    const int k = per_node[node_of[g]];
    return ((local[g] - local[owner]) % k + k) % k;
  };
  std::stable_sort(rest.begin(), rest.end(), [&](int a, int b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : pos(a) < pos(b);
  });
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

double sparse_finish(Coflow& c, const SparsePlacement& p, const topology::Topology& topo,
                     const std::vector<int>& node_of, BroadcastAlgo algo, bool reduce) {
  if (c.empty()) return 0.0;
  const double cap_reduce = reduce ? topo.gpu_model().hbm_bandwidth.value() / 3 : 0.0;
  double alpha = 0;
  for (const auto& t : c) alpha = std::max(alpha, topo.route(t.src, t.dst).latency.value());
  double chain = alpha;
  if (algo == BroadcastAlgo::kDirect) {
    const P2pChannels p2p(topo);
    for (auto& t : c) t.rate_cap = p2p.cap(t.src, t.dst);
  } else {
    for (std::size_t e = 0; e < p.owner.size(); ++e) {
      if (p.replicas[e].empty()) continue;
      const auto order = chain_order(p.owner[e], p.replicas[e], node_of);
      double sum = 0;
      for (std::size_t i = 0; i + 1 < order.size(); ++i) sum += topo.route(order[i], order[i + 1]).latency.value();
      chain = std::max(chain, sum);
    }
  }
  if (cap_reduce > 0)
    for (auto& t : c) t.rate_cap = t.rate_cap > 0 ? std::min(t.rate_cap, cap_reduce) : cap_reduce;
  return chain - alpha;
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
