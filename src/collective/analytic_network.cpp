#include "collective/analytic_network.hpp"

#include <algorithm>

namespace hs::collective {

AnalyticNetwork::AnalyticNetwork(const topology::Topology& topo)
    : topo_(topo), load_(topo.num_links(), 0.0), count_(topo.num_links(), 0.0) {
  for (const auto& l : topo.links()) inv_bw_.push_back(1.0 / l.bandwidth.value());
}

void AnalyticNetwork::add(int src, int dst, double bytes, double cap) {
  if (src == dst || bytes <= 0) return;
  alpha_ = std::max(alpha_, topo_.route_latency(src, dst).value());
  if (cap > 0) floor_ = std::max(floor_, bytes / cap);
  double* load = load_.data();
  double* count = count_.data();
  // Links that can never bind carry no more than their capacity whenever the binding ones do, so
  // the most loaded link relative to its capacity is among these (Topology::binding_hops).
  for (const auto& h : topo_.binding_hops(src, dst)) {
    load[h.link] += bytes * h.fraction;
    count[h.link] += h.fraction;
  }
}

double AnalyticNetwork::finish(CoflowLoads* out) {
  if (out) {
    out->links.clear();
    out->latency = alpha_;
    out->floor = floor_;
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
  const double total = worst > 0 ? alpha_ + std::max(worst, floor_) : 0.0;
  alpha_ = 0;
  floor_ = 0;
  return total;
}

double AnalyticNetwork::coflow_time(std::span<const Transfer> transfers) {
  for (const auto& t : transfers) add(t.src, t.dst, t.bytes, t.rate_cap);
  return finish();
}

double AnalyticNetwork::loads(std::span<const Transfer> transfers, double extra_latency, CoflowLoads& out) {
  for (const auto& t : transfers) add(t.src, t.dst, t.bytes, t.rate_cap);
  const double t = finish(&out);
  out.latency += extra_latency;
  return t > 0 ? t + extra_latency : 0.0;
}

// The same transfers, caps and batch latency as collective::alltoallv_flows, in one pass without
// building them: a connection's cap is one of two values (local, network), so the slowest capped
// transfer is the largest local or network transfer at its cap.
double AnalyticNetwork::alltoallv_add(std::span<const double> m, bool transpose) {
  const int n = topo_.num_gpus();
  sends_.assign(n, 0);
  recvs_.assign(n, 0);
  double max_local = 0, max_net = 0;
  if (topo_.endpoint_separable()) {
    // Loads are row and column sums per locality (Topology::endpoint_separable), read row by row
    // whichever way the matrix is taken: entry (r, c) is a transfer r -> c, or c -> r transposed.
    sums_.assign(static_cast<size_t>(n) * 8, 0.0);  // per GPU: [out, in] x [local, net] x [bytes, count]
    double alpha = 0;
    for (int r = 0; r < n; ++r) {
      const int nr = topo_.node_of(r);
      const double* row = m.data() + static_cast<size_t>(r) * n;
      for (int c = 0; c < n; ++c) {
        const double b = row[c];
        if (b <= 0 || r == c) continue;
        const int src = transpose ? c : r, dst = transpose ? r : c;
        const size_t k = topo_.node_of(c) != nr ? 1 : 0;
        double* so = sums_.data() + static_cast<size_t>(src) * 8 + k * 2;
        double* di = sums_.data() + static_cast<size_t>(dst) * 8 + 4 + k * 2;
        so[0] += b, so[1] += 1, di[0] += b, di[1] += 1;
        ++sends_[src], ++recvs_[dst];
        alpha = std::max(alpha, topo_.route_latency(r, c).value());  // symmetric latencies
        if (k) max_net = std::max(max_net, b);
        else max_local = std::max(max_local, b);
      }
    }
    alpha_ = std::max(alpha_, alpha);
    double* load = load_.data();
    double* count = count_.data();
    for (int g = 0; g < n; ++g)
      for (int k = 0; k < 2; ++k) {
        const double* so = sums_.data() + static_cast<size_t>(g) * 8 + k * 2;
        if (so[1] > 0)
          for (const auto& h : topo_.egress_hops(g, k == 1)) load[h.link] += so[0] * h.fraction, count[h.link] += so[1] * h.fraction;
        if (so[5] > 0)
          for (const auto& h : topo_.ingress_hops(g, k == 1)) load[h.link] += so[4] * h.fraction, count[h.link] += so[5] * h.fraction;
      }
  } else {
    for (int s = 0; s < n; ++s) {
      const int ns = topo_.node_of(s);
      for (int d = 0; d < n; ++d) {
        const double b = transpose ? m[static_cast<size_t>(d) * n + s] : m[static_cast<size_t>(s) * n + d];
        if (b <= 0 || s == d) continue;
        add(s, d, b);
        ++sends_[s], ++recvs_[d];
        if (topo_.node_of(d) == ns) max_local = std::max(max_local, b);
        else max_net = std::max(max_net, b);
      }
    }
  }
  P2pGroupShape shape;
  for (int g = 0; g < n; ++g) shape.ranks = std::max({shape.ranks, sends_[g] + 1, recvs_[g] + 1});
  shape.multi_node = max_net > 0;
  const P2pChannels p2p(topo_, shape.ranks, shape.multi_node);
  floor_ = std::max({floor_, max_net > 0 ? max_net / p2p.net_cap() : 0.0,
                     max_local > 0 && p2p.local_cap() > 0 ? max_local / p2p.local_cap() : 0.0});
  return alpha_ * (p2p.rounds() - 1);
}

double AnalyticNetwork::alltoallv_loads(std::span<const double> m, bool transpose, CoflowLoads& out) {
  const double extra = alltoallv_add(m, transpose);
  const double t = finish(&out);
  out.latency += extra;
  return t > 0 ? t + extra : 0.0;
}

double AnalyticNetwork::alltoallv_time(std::span<const double> m, bool transpose) {
  const double extra = alltoallv_add(m, transpose);
  const double t = finish();
  return t > 0 ? t + extra : 0.0;
}

}  // namespace hs::collective
