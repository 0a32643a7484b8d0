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
  if (topo_.endpoint_separable()) {
    scan_sums(m);
    return add_sums(transpose);
  }
  const int n = topo_.num_gpus();
  sends_.assign(n, 0);
  recvs_.assign(n, 0);
  double max_local = 0, max_net = 0;
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
  scan_alpha_ = alpha_, scan_max_local_ = max_local, scan_max_net_ = max_net;
  return add_sums(transpose);
}

// Loads are row and column sums per locality (Topology::endpoint_separable), read row by row: entry
// (r, c) is a transfer r -> c (the dispatch), or c -> r (the combine, which add_sums reads by
// swapping each GPU's sends and receives).
void AnalyticNetwork::scan_sums(std::span<const double> m) {
  const int n = topo_.num_gpus();
  sends_.assign(n, 0);
  recvs_.assign(n, 0);
  out_sums_.assign(static_cast<size_t>(n) * 4, 0.0);  // per GPU: [local, net] x [bytes, count]
  in_sums_.assign(static_cast<size_t>(n) * 4, 0.0);
  double alpha = 0, max_local = 0, max_net = 0;
  double* in = in_sums_.data();
  int* recvs = recvs_.data();
  if (row_max_latency_.empty()) {
    row_max_latency_.assign(n, 0.0);
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c)
        if (c != r) row_max_latency_[r] = std::max(row_max_latency_[r], topo_.route_latency(r, c).value());
  }
  for (int r = 0; r < n; ++r) {
    const int nr = topo_.node_of(r);
    const double* row = m.data() + static_cast<size_t>(r) * n;
    // This row's sends per locality, in registers: adding 0 (the other locality) changes no sum.
    double local_b = 0, local_c = 0, net_b = 0, net_c = 0;
    int sends = 0;
    for (int c = 0; c < n; ++c) {
      const double b = row[c];
      if (b <= 0 || r == c) continue;
      const bool net = topo_.node_of(c) != nr;
      const double bl = net ? 0.0 : b, bn = net ? b : 0.0;
      local_b += bl, local_c += net ? 0.0 : 1.0, net_b += bn, net_c += net ? 1.0 : 0.0;
      double* di = in + static_cast<size_t>(c) * 4 + (net ? 2 : 0);
      di[0] += b, di[1] += 1;
      ++sends, ++recvs[c];
      max_local = std::max(max_local, bl), max_net = std::max(max_net, bn);
    }
    // The largest latency among the row's pairs (symmetric latencies): with a peer in every other
    // GPU, the row's precomputed maximum; else over the pairs that carry bytes.
    if (sends == n - 1) alpha = std::max(alpha, row_max_latency_[r]);
    else
      for (int c = 0; c < n; ++c)
        if (row[c] > 0 && c != r) alpha = std::max(alpha, topo_.route_latency(r, c).value());
    double* so = out_sums_.data() + static_cast<size_t>(r) * 4;
    so[0] = local_b, so[1] = local_c, so[2] = net_b, so[3] = net_c;
    sends_[r] = sends;
  }
  scan_alpha_ = alpha, scan_max_local_ = max_local, scan_max_net_ = max_net;
}

double AnalyticNetwork::add_sums(bool transpose) {
  const int n = topo_.num_gpus();
  if (topo_.endpoint_separable()) {
    alpha_ = std::max(alpha_, scan_alpha_);
    // The combine sends what the dispatch receives and the other way round.
    const std::vector<double>& out_sums = transpose ? in_sums_ : out_sums_;
    const std::vector<double>& in_sums = transpose ? out_sums_ : in_sums_;
    double* load = load_.data();
    double* count = count_.data();
    for (int g = 0; g < n; ++g)
      for (int k = 0; k < 2; ++k) {
        const double* so = out_sums.data() + static_cast<size_t>(g) * 4 + k * 2;
        const double* si = in_sums.data() + static_cast<size_t>(g) * 4 + k * 2;
        if (so[1] > 0)
          for (const auto& h : topo_.egress_hops(g, k == 1)) load[h.link] += so[0] * h.fraction, count[h.link] += so[1] * h.fraction;
        if (si[1] > 0)
          for (const auto& h : topo_.ingress_hops(g, k == 1)) load[h.link] += si[0] * h.fraction, count[h.link] += si[1] * h.fraction;
      }
  }
  // A GPU's peers are the same counted either way round (ranks takes the larger of sends and receives).
  P2pGroupShape shape;
  for (int g = 0; g < n; ++g) shape.ranks = std::max({shape.ranks, sends_[g] + 1, recvs_[g] + 1});
  shape.multi_node = scan_max_net_ > 0;
  const P2pChannels p2p(topo_, shape.ranks, shape.multi_node);
  floor_ = std::max({floor_, scan_max_net_ > 0 ? scan_max_net_ / p2p.net_cap() : 0.0,
                     scan_max_local_ > 0 && p2p.local_cap() > 0 ? scan_max_local_ / p2p.local_cap() : 0.0});
  return alpha_ * (p2p.rounds() - 1);
}

AnalyticNetwork::PairTimes AnalyticNetwork::alltoallv_loads_both(std::span<const double> m, CoflowLoads& fwd,
                                                                 CoflowLoads& tr) {
  PairTimes r;
  if (!topo_.endpoint_separable()) {
    r.fwd = alltoallv_loads(m, false, fwd);
    r.link_fwd = last_bottleneck_;
    r.tr = alltoallv_loads(m, true, tr);
    r.link_tr = last_bottleneck_;
    return r;
  }
  scan_sums(m);
  for (const bool transpose : {false, true}) {
    CoflowLoads& out = transpose ? tr : fwd;
    const double extra = add_sums(transpose);
    const double t = finish(&out);
    out.latency += extra;
    (transpose ? r.tr : r.fwd) = t > 0 ? t + extra : 0.0;
    (transpose ? r.link_tr : r.link_fwd) = last_bottleneck_;
  }
  return r;
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
