#include "collective/chain.hpp"

#include <algorithm>

#include "collective/ring.hpp"

namespace hs::collective {

Coflow broadcast_flows(const topology::Topology& topo, std::span<const int> group, int root, double bytes,
                       double& extra_latency) {
  extra_latency = 0;
  const int n = static_cast<int>(group.size());
  if (n < 2 || bytes <= 0) return {};
  const int channels = default_ring_channels(topo, group);
  Coflow out;
  double alpha = 0;
  for (auto& order : ring_orders(topo, group, channels)) {
    const auto it = std::find(order.begin(), order.end(), root);
    if (it == order.end()) return {};  // root not in the group
    std::rotate(order.begin(), it, order.end());
    for (int i = 0; i + 1 < n; ++i) {
      out.push_back({order[i], order[i + 1], bytes / channels});
      alpha = std::max(alpha, topo.route(order[i], order[i + 1]).latency.value());
    }
  }
  extra_latency = alpha * (n - 2);
  return out;
}

Coflow reduce_flows(const topology::Topology& topo, std::span<const int> group, int root, double bytes,
                    double& extra_latency) {
  Coflow out = broadcast_flows(topo, group, root, bytes, extra_latency);
  for (auto& t : out) std::swap(t.src, t.dst);
  return out;
}

}  // namespace hs::collective
