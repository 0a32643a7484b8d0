#include "collective/tree.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "collective/nvls.hpp"
#include "collective/ring.hpp"

namespace hs::collective {

namespace {

// The double binary tree's transfers; `chains`: the node's GPUs form a chain to the head (tree),
// else the node reduces in its switch and only heads talk across nodes (NVLSTree, whose NVLS part
// the caller adds).
Coflow dbt_flows(const topology::Topology& topo, std::span<const int> group, double bytes, bool chains, double& extra) {
  extra = 0;
  std::map<int, std::vector<int>> by_node;
  for (int g : group) by_node[topo.node_of(g)].push_back(g);
  const int m = static_cast<int>(by_node.size());
  if (m < 2 || bytes <= 0) return {};
  std::vector<const std::vector<int>*> nodes;
  size_t longest_chain = 0;
  for (auto& [node, gpus] : by_node) nodes.push_back(&gpus), longest_chain = std::max(longest_chain, gpus.size());
  const int channels = default_ring_channels(topo, group);
  const double d = bytes / (2.0 * channels);
  Coflow out;
  auto both = [&](int a, int b) {
    out.push_back({a, b, d});  // reduce
    out.push_back({b, a, d});  // broadcast
  };
  int depth = 0;
  while ((2 << depth) - 1 < m) ++depth;  // levels below the root of a heap-shaped tree of m nodes
  for (int c = 0; c < channels; ++c)
    for (int t = 0; t < 2; ++t) {
      // Tree t: heap position i holds node i (t = 0) or node m-1-i (t = 1, the mirror).
      auto node_at = [&](int i) { return t == 0 ? i : m - 1 - i; };
      std::vector<int> head(m);
      for (int i = 0; i < m; ++i) {
        const auto& gpus = *nodes[node_at(i)];
        const int k = static_cast<int>(gpus.size());
        const int r = (c + t * (k / 2)) % k;  // every GPU heads one channel of each tree
        head[i] = gpus[r];
        if (chains)
          for (int j = 0; j + 1 < k; ++j) both(gpus[(r + j + 1) % k], gpus[(r + j) % k]);  // chain toward head
      }
      for (int i = 1; i < m; ++i) both(head[i], head[(i - 1) / 2]);
    }
  // Route latencies of the pipeline beyond the first hop, one way leaf GPU to root head and back.
  double alpha = 0;
  for (const auto& tr : out) alpha = std::max(alpha, topo.route(tr.src, tr.dst).latency.value());
  const int hops = depth + (chains ? static_cast<int>(longest_chain) - 1 : 0);
  extra = alpha * std::max(0, 2 * hops - 1);
  return out;
}

}  // namespace

Coflow tree_all_reduce_flows(const topology::Topology& topo, std::span<const int> group, double bytes,
                             double& extra_latency) {
  return dbt_flows(topo, group, bytes, true, extra_latency);
}

Coflow nvls_tree_all_reduce_flows(const topology::Topology& topo, std::span<const int> group, double bytes,
                                  double& extra_latency) {
  extra_latency = 0;
  if (!topo.nvls() || bytes <= 0) return {};
  std::map<int, std::vector<int>> by_node;
  for (int g : group) by_node[topo.node_of(g)].push_back(g);
  if (by_node.size() < 2) return {};
  Coflow out = dbt_flows(topo, group, bytes, false, extra_latency);
  double nvls_extra = 0;
  for (const auto& [node, gpus] : by_node) {
    if (gpus.size() < 2) return {};  // NVLS needs two GPUs on the switch
    double x = 0;
    const Coflow in_node = nvls_all_reduce_flows(topo, gpus, bytes, x);
    nvls_extra = std::max(nvls_extra, x);
    out.insert(out.end(), in_node.begin(), in_node.end());
  }
  extra_latency += 2 * nvls_extra;  // the switch's reduce before the tree, its multicast after
  return out;
}

}  // namespace hs::collective
