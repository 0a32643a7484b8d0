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
        ++sends[a], ++recvs[b], ++s.transfers;
        if (topo.node_of(a) != topo.node_of(b)) s.multi_node = true;
      }
  for (int g = 0; g < n; ++g) s.ranks = std::max({s.ranks, sends[g] + 1, recvs[g] + 1});
  return s;
}

Coflow alltoallv_flows(const topology::Topology& topo, std::span<const double> m, bool transpose,
                       double& extra_latency) {
  const int n = topo.num_gpus();
  const auto un = static_cast<size_t>(n);
  const P2pGroupShape shape = p2p_group_shape(topo, m);
  const P2pChannels p2p(topo, shape.ranks, shape.multi_node);
  Coflow out;
  out.reserve(shape.transfers);
  // The largest route latency counts only with more than one scheduling batch (its table is one
  // read per pair, scattered).
  const bool batches = p2p.rounds() > 1;
  double alpha = 0, max_local = 0;
  const auto emit = [&](int s, int d, double b) {
    if (b <= 0 || s == d) return;
    out.push_back({s, d, b, p2p.cap(s, d)});
    if (topo.node_of(s) == topo.node_of(d)) max_local = std::max(max_local, b);
    if (batches) alpha = std::max(alpha, topo.route_latency(s, d).value());
  };
  if (!transpose) {
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) emit(s, d, m[static_cast<size_t>(s) * un + static_cast<size_t>(d)]);
  } else {
    // Column s of the matrix is source s's row of bytes. Read a band of kBand columns at a time
    // (each matrix row's band is one contiguous read) into a buffer, then emit in (s, d) order.
    constexpr int kBand = 64;
    std::vector<double> band(static_cast<size_t>(kBand) * un);
    for (int s0 = 0; s0 < n; s0 += kBand) {
      const int s1 = std::min(n, s0 + kBand);
      for (int d = 0; d < n; ++d) {
        const double* row = m.data() + static_cast<size_t>(d) * un;
        for (int s = s0; s < s1; ++s) band[static_cast<size_t>(s - s0) * un + static_cast<size_t>(d)] = row[s];
      }
      for (int s = s0; s < s1; ++s)
        for (int d = 0; d < n; ++d) emit(s, d, band[static_cast<size_t>(s - s0) * un + static_cast<size_t>(d)]);
    }
  }
  extra_latency = out.empty() ? 0.0 : alpha * (p2p.rounds() - 1) + p2p.launch_latency(max_local, shape.multi_node);
  return out;
}

}  // namespace hs::collective
