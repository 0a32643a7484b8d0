#include "collective/all_to_all.hpp"

#include <algorithm>
#include <vector>

namespace hs::collective {

P2pGroupShape p2p_group_shape(const topology::Topology& topo, std::span<const double> m) {
  const int n = topo.num_gpus();
  std::vector<int> sends(n, 0), recvs(n, 0);
  P2pGroupShape s;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b && m[static_cast<size_t>(a) * n + b] > 0) {
        ++sends[a], ++recvs[b];
        if (topo.node_of(a) != topo.node_of(b)) s.multi_node = true;
      }
  for (int g = 0; g < n; ++g) s.ranks = std::max({s.ranks, sends[g] + 1, recvs[g] + 1});
  return s;
}

Coflow alltoallv_flows(const topology::Topology& topo, std::span<const double> m, bool transpose,
                       double& extra_latency) {
  const int n = topo.num_gpus();
  const P2pGroupShape shape = p2p_group_shape(topo, m);
  const P2pChannels p2p(topo, shape.ranks, shape.multi_node);
  Coflow out;
  double alpha = 0;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const double b = transpose ? m[static_cast<size_t>(d) * n + s] : m[static_cast<size_t>(s) * n + d];
      if (b <= 0 || s == d) continue;
      out.push_back({s, d, b, p2p.cap(s, d)});
      alpha = std::max(alpha, topo.route_latency(s, d).value());
    }
  extra_latency = alpha * (p2p.rounds() - 1);
  return out;
}

}  // namespace hs::collective
