#include "collective/ring.hpp"

#include <algorithm>
#include <map>

#include "collective/ring_search.hpp"

namespace hs::collective {

int ring_steps(RingOp op, int n) { return op == RingOp::kAllReduce ? 2 * (n - 1) : n - 1; }


namespace {

// The group's GPUs node by node (in node order), keeping the given order inside each node.
std::map<int, std::vector<int>> by_node(const topology::Topology& topo, std::span<const int> group) {
  std::map<int, std::vector<int>> nodes;
  for (int g : group) nodes[topo.node_of(g)].push_back(g);
  return nodes;
}

// A one-node group's rings over direct GPU-GPU links (collective/ring_search.hpp), as GPU ranks;
// empty where the node has no such links (a switch joins its GPUs) or they close no ring.
std::vector<std::vector<int>> direct_rings(const topology::Topology& topo, std::span<const int> gpus) {
  std::vector<std::vector<int>> rings = search_rings(direct_links(topo, gpus));
  for (auto& r : rings)
    for (int& p : r) p = gpus[p];
  return rings;
}

}  // namespace

int default_ring_channels(const topology::Topology& topo, std::span<const int> group) {
  if (group.empty()) return 1;
  const int node0 = topo.node_of(group[0]);
  int per_node = 0;
  bool multi = false;
  for (int g : group) {
    if (topo.node_of(g) != node0) multi = true;
    if (topo.node_of(g) == node0) ++per_node;
  }
  int ch = multi ? std::max(1, std::min(per_node, 8)) : std::max<int>(1, static_cast<int>(direct_rings(topo, group).size()));
  // NCCL_MAX_CTAS bounds the communicator's channels (src/init.cc), so the rings that spread over NICs.
  if (topo.nccl().max_ctas > 0) ch = std::min(ch, topo.nccl().max_ctas);
  return ch;
}

std::vector<std::vector<int>> ring_orders(const topology::Topology& topo, std::span<const int> group, int channels) {
  const auto nodes = by_node(topo, group);
  std::vector<std::vector<int>> orders(channels);
  if (nodes.size() == 1) {
    const auto rings = direct_rings(topo, nodes.begin()->second);
    if (!rings.empty()) {
      for (int c = 0; c < channels; ++c) orders[c] = rings[c % rings.size()];
      return orders;
    }
  }
  for (const auto& [node, gpus] : nodes) {
    // Channel c enters the node at its c-th GPU and leaves from the one before it (the rotation by
    // c), so every channel's inter-node hop leaves from a different GPU (NIC). Where the node's GPUs
    // have links of their own, the stretch in between follows them (a searched path).
    const int k = static_cast<int>(gpus.size());
    std::vector<std::vector<int>> paths;
    if (nodes.size() > 1) {
      const DirectLinks links = direct_links(topo, gpus);
      if (links.any()) {
        std::vector<std::pair<int, int>> ends;
        for (int c = 0; c < channels; ++c) ends.emplace_back(c % k, (c + k - 1) % k);
        paths = search_paths(links, ends);
      }
    }
    for (int c = 0; c < channels; ++c) {
      if (c < static_cast<int>(paths.size()) && !paths[c].empty())
        for (int p : paths[c]) orders[c].push_back(gpus[p]);
      else
        for (int i = 0; i < k; ++i) orders[c].push_back(gpus[(i + c) % k]);
    }
  }
  return orders;
}

Coflow ring_step(const topology::Topology& topo, std::span<const int> group, double bytes, int channels) {
  const int n = static_cast<int>(group.size());
  Coflow out;
  if (n < 2) return out;
  const double chunk = bytes / n / channels;
  for (const auto& order : ring_orders(topo, group, channels))
    for (int i = 0; i < n; ++i) out.push_back({order[i], order[(i + 1) % n], chunk});
  return out;
}

Coflow ring_flows(const topology::Topology& topo, std::span<const int> group, double bytes, RingOp op,
                  double& extra_latency) {
  extra_latency = 0;
  const int n = static_cast<int>(group.size());
  if (n < 2 || bytes <= 0) return {};
  const int steps = ring_steps(op, n);
  Coflow step = ring_step(topo, group, bytes, default_ring_channels(topo, group));
  double alpha = 0;
  for (auto& t : step) {
    alpha = std::max(alpha, topo.route(t.src, t.dst).latency.value());
    t.bytes *= steps;
  }
  extra_latency = alpha * (steps - 1);
  return step;
}

Coflow concurrent_ring_flows(const topology::Topology& topo, const std::vector<std::vector<int>>& groups, double bytes,
                             RingOp op, double& extra_latency) {
  extra_latency = 0;
  Coflow all;
  for (const auto& group : groups) {
    double x = 0;
    auto part = ring_flows(topo, group, bytes, op, x);
    extra_latency = std::max(extra_latency, x);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

double ring_time(AnalyticNetwork& net, std::span<const int> group, double bytes, RingOp op) {
  const int n = static_cast<int>(group.size());
  if (n < 2 || bytes <= 0) return 0.0;
  const int ch = default_ring_channels(net.topology(), group);
  Coflow step = ring_step(net.topology(), group, bytes, ch);
  return net.coflow_time(step) * ring_steps(op, n);
}

}  // namespace hs::collective
