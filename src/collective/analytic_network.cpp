#include "collective/analytic_network.hpp"

#include <algorithm>

namespace hs::collective {

AnalyticNetwork::AnalyticNetwork(const topology::Topology& topo)
    : topo_(topo), load_(topo.num_links(), 0.0), count_(topo.num_links(), 0.0) {
  for (const auto& l : topo.links()) inv_bw_.push_back(1.0 / l.bandwidth.value());
}

void AnalyticNetwork::add(int src, int dst, double bytes) {
  if (src == dst || bytes <= 0) return;
  const auto r = topo_.route(src, dst);
  alpha_ = std::max(alpha_, r.latency.value());
  double* load = load_.data();
  double* count = count_.data();
  for (const auto& h : r.hops) {
    load[h.link] += bytes * h.fraction;
    count[h.link] += h.fraction;
  }
}

double AnalyticNetwork::finish(CoflowLoads* out) {
  if (out) {
    out->links.clear();
    out->latency = alpha_;
  }
  // A dense sweep over all links: cheaper than tracking touched links for the all-to-alls that
  // dominate, and the lowest link id wins ties deterministically.
  double worst = 0;
  last_bottleneck_ = -1;
  const int nl = static_cast<int>(load_.size());
  for (int l = 0; l < nl; ++l) {
    if (load_[l] == 0.0) continue;
    if (out) out->links.push_back({l, load_[l], count_[l]});
    count_[l] = 0.0;
    const double t = load_[l] * inv_bw_[l];
    if (t > worst) {
      worst = t;
      last_bottleneck_ = l;
    }
    load_[l] = 0.0;
  }
  const double total = worst > 0 ? alpha_ + worst : 0.0;
  alpha_ = 0;
  return total;
}

double AnalyticNetwork::coflow_time(std::span<const Transfer> transfers) {
  for (const auto& t : transfers) add(t.src, t.dst, t.bytes);
  return finish();
}

double AnalyticNetwork::loads(std::span<const Transfer> transfers, double extra_latency, CoflowLoads& out) {
  for (const auto& t : transfers) add(t.src, t.dst, t.bytes);
  const double t = finish(&out);
  out.latency += extra_latency;
  return t > 0 ? t + extra_latency : 0.0;
}

double AnalyticNetwork::alltoallv_loads(std::span<const double> m, bool transpose, CoflowLoads& out) {
  const int n = topo_.num_gpus();
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const double b = transpose ? m[static_cast<size_t>(d) * n + s] : m[static_cast<size_t>(s) * n + d];
      if (b > 0) add(s, d, b);
    }
  return finish(&out);
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
