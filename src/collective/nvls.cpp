#include "collective/nvls.hpp"

#include <algorithm>

namespace hs::collective {

bool nvls_applicable(const topology::Topology& topo, std::span<const int> group) {
  if (!topo.nvls() || group.size() < 2) return false;
  const int node = topo.node_of(group[0]);
  return std::all_of(group.begin(), group.end(), [&](int g) { return topo.node_of(g) == node; });
}

Coflow nvls_all_reduce_flows(const topology::Topology& topo, std::span<const int> group, double bytes,
                             double& extra_latency) {
  extra_latency = 0;
  if (!nvls_applicable(topo, group) || bytes <= 0) return {};
  const int n = static_cast<int>(group.size());
  const double per_port = bytes * (n + 1) / n;
  Coflow out;
  double alpha = 0;
  for (int i = 0; i < n; ++i) {
    const int a = group[i], b = group[(i + 1) % n];
    out.push_back({a, b, per_port});
    alpha = std::max(alpha, topo.route(a, b).latency.value());
  }
  extra_latency = alpha;
  return out;
}

}  // namespace hs::collective
