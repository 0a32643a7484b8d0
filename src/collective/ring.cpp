#include "collective/ring.hpp"

#include <algorithm>
#include <map>

namespace hs::collective {

int ring_steps(RingOp op, int n) { return op == RingOp::kAllReduce ? 2 * (n - 1) : n - 1; }

int default_ring_channels(const topology::Topology& topo, std::span<const int> group) {
  if (group.empty()) return 1;
  const int node0 = topo.node_of(group[0]);
  int per_node = 0;
  bool multi = false;
  for (int g : group) {
    if (topo.node_of(g) != node0) multi = true;
    if (topo.node_of(g) == node0) ++per_node;
  }
  return multi ? std::max(1, std::min(per_node, 8)) : 1;
}

std::vector<int> ring_order(const topology::Topology& topo, std::span<const int> group, int channel) {
  // Group GPUs by node, keeping the given order inside each node; rotate each node's GPUs by the
  // channel so every channel leaves a node from a different GPU (NIC).
  std::map<int, std::vector<int>> by_node;
  for (int g : group) by_node[topo.node_of(g)].push_back(g);
  std::vector<int> order;
  order.reserve(group.size());
  for (auto& [node, gpus] : by_node) {
    const int k = static_cast<int>(gpus.size());
    for (int i = 0; i < k; ++i) order.push_back(gpus[(i + channel) % k]);
  }
  return order;
}

Coflow ring_step(const topology::Topology& topo, std::span<const int> group, double bytes, int channels) {
  const int n = static_cast<int>(group.size());
  Coflow out;
  if (n < 2) return out;
  const double chunk = bytes / n / channels;
  for (int c = 0; c < channels; ++c) {
    const auto order = ring_order(topo, group, c);
    for (int i = 0; i < n; ++i) out.push_back({order[i], order[(i + 1) % n], chunk});
  }
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
