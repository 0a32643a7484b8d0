#include "collective/analytic_network.hpp"

#include <algorithm>

namespace hs::collective {

AnalyticNetwork::AnalyticNetwork(const topology::Topology& topo) : topo_(topo), load_(topo.num_links(), 0.0) {}

void AnalyticNetwork::add(int src, int dst, double bytes) {
  if (src == dst || bytes <= 0) return;
  const auto r = topo_.route(src, dst);
  alpha_ = std::max(alpha_, r.latency.value());
  for (const auto& h : r.hops) {
    if (load_[h.link] == 0.0) touched_.push_back(h.link);
    load_[h.link] += bytes * h.fraction;
  }
}

double AnalyticNetwork::finish() {
  double worst = 0;
  last_bottleneck_ = -1;
  std::sort(touched_.begin(), touched_.end());  // deterministic tie-break: lowest link id
  for (auto l : touched_) {
    const double t = load_[l] / topo_.link(l).bandwidth.value();
    if (t > worst) {
      worst = t;
      last_bottleneck_ = l;
    }
    load_[l] = 0.0;
  }
  touched_.clear();
  const double total = worst > 0 ? alpha_ + worst : 0.0;
  alpha_ = 0;
  return total;
}

double AnalyticNetwork::coflow_time(std::span<const Transfer> transfers) {
  for (const auto& t : transfers) add(t.src, t.dst, t.bytes);
  return finish();
}

double AnalyticNetwork::alltoallv_time(std::span<const double> m, bool transpose) {
  const int n = topo_.num_gpus();
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const double b = transpose ? m[static_cast<size_t>(d) * n + s] : m[static_cast<size_t>(s) * n + d];
      if (b > 0) add(s, d, b);
    }
  return finish();
}

}  // namespace hs::collective
