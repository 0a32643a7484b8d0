#include "collective/analytic_network.hpp"

#include <algorithm>

#include "collective/row_band_sums.hpp"

namespace hs::collective {

AnalyticNetwork::AnalyticNetwork(const topology::Topology& topo)
    : topo_(topo), load_(topo.num_links(), 0.0), count_(topo.num_links(), 0.0), band8_(row_band_sums_available()) {
  for (const auto& l : topo.links()) inv_bw_.push_back(1.0 / l.bandwidth.value());
  for (int g = 0; g < topo.num_gpus(); ++g) gpu_node_.push_back(topo.node_of(g));
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

// The same transfers, caps and extra latency as collective::alltoallv_flows, in one pass without
// building them: a connection's cap is one of two values (local, network), so the slowest capped
// transfer is the largest local or network transfer at its cap.
double AnalyticNetwork::alltoallv_add(std::span<const double> m, bool transpose, std::pair<int, int> block) {
  if (topo_.endpoint_separable()) {
    scan_sums(m);
    return add_sums(transpose);
  }
  const int n = topo_.num_gpus();
  const auto nn = static_cast<size_t>(n);
  // Only the block's rows and columns can carry bytes: the pairs outside it are skipped as their
  // zero entries would be (a source's row is read on its own, whatever band it falls in).
  const auto [lo, hi] = block.first < block.second ? block : std::pair<int, int>{0, n};
  sends_.assign(n, 0);
  recvs_.assign(n, 0);
  double max_local = 0, max_net = 0;
  double* load = load_.data();
  double* count = count_.data();
  // Transfers s -> d in (s, d) order. Transposed, s -> d is entry (d, s): a column read down would
  // miss the cache at every entry (4,096 GPUs: 16.8M misses per all-to-all), so the columns of a
  // band of sources are copied first, reading rows (kBand entries of each), then read in order.
  constexpr int kBand = 64;
  for (int s0 = lo; s0 < hi; s0 += kBand) {
    const int s1 = std::min(hi, s0 + kBand);
    if (transpose) {
      band_.resize(static_cast<size_t>(s1 - s0) * nn);
      for (auto d = static_cast<size_t>(lo); d < static_cast<size_t>(hi); ++d)
        for (int s = s0; s < s1; ++s) band_[static_cast<size_t>(s - s0) * nn + d] = m[d * nn + static_cast<size_t>(s)];
    }
    for (int s = s0; s < s1; ++s) {
      const int ns = topo_.node_of(s);
      const double* row = transpose ? band_.data() + static_cast<size_t>(s - s0) * nn : m.data() + static_cast<size_t>(s) * nn;
      if (topo_.factored_routes()) {
        for (int d = lo; d < hi; ++d) {
          const double b = row[d];
          if (b <= 0 || s == d) continue;
          add(s, d, b);
          ++sends_[s], ++recvs_[d];
          if (topo_.node_of(d) == ns) max_local = std::max(max_local, b);
          else max_net = std::max(max_net, b);
        }
        continue;
      }
      // add() on the stored routes, read row by row through raw pointers (which no store below can
      // change), with the link of each pair's first binding hop (the source's way out, the same for
      // many of its pairs) held in registers while it stays the same: every link's load and count
      // take the same additions in the same order as through memory (a hop onto the held link adds
      // to the held sums), only without a store and a reload between two.
      const uint32_t* off = topo_.binding_offsets(s);
      const topology::RouteHop* all_hops = topo_.binding_hop_data();
      const float* latency = topo_.latency_row(s);
      const int* node = gpu_node_.data();
      int* recvs = recvs_.data();
      int sends = 0, hot = -1;
      double hot_load = 0, hot_count = 0;
      double alpha = alpha_;
      for (int d = lo; d < hi; ++d) {
        const double b = row[d];
        if (b <= 0 || s == d) continue;
        alpha = std::max(alpha, static_cast<double>(latency[d]));
        const topology::RouteHop* h = all_hops + off[d];
        const topology::RouteHop* h_end = all_hops + off[d + 1];
        if (h != h_end && h->link != hot) {
          if (hot >= 0) load[hot] = hot_load, count[hot] = hot_count;
          hot = h->link, hot_load = load[hot], hot_count = count[hot];
        }
        for (; h != h_end; ++h) {
          if (h->link == hot) {
            hot_load += b * h->fraction, hot_count += h->fraction;
          } else {
            load[h->link] += b * h->fraction, count[h->link] += h->fraction;
          }
        }
        ++sends, ++recvs[d];
        if (node[d] == ns) max_local = std::max(max_local, b);
        else max_net = std::max(max_net, b);
      }
      if (hot >= 0) load[hot] = hot_load, count[hot] = hot_count;
      sends_[s] += sends;
      alpha_ = alpha;
    }
  }
  scan_alpha_ = alpha_, scan_max_local_ = max_local, scan_max_net_ = max_net;
  return add_sums(transpose);
}

// Loads are row and column sums per locality (Topology::endpoint_separable), read row by row: entry
// (r, c) is a transfer r -> c (the dispatch), or c -> r (the combine, which add_sums reads by
// swapping each GPU's sends and receives).
//
// Each sum adds its entries in column order (row sums) or row order (column sums), entries without
// bytes contributing +0.0, which changes no sum: the loop over a row has no branch, and a row whose
// node is a range of consecutive GPUs is read as the ranges before, inside (less the diagonal) and
// after it, each of one locality. Counts are integers. So every sum, count and maximum is the one
// of a plain loop over the pairs that carry bytes.
void AnalyticNetwork::scan_sums(std::span<const double> m) {
  const int n = topo_.num_gpus();
  const size_t nn = static_cast<size_t>(n);
  sends_.assign(n, 0);
  recvs_.assign(n, 0);
  out_bytes_.assign(2 * nn, 0.0);
  out_count_.assign(2 * nn, 0);
  in_bytes_.assign(2 * nn, 0.0);
  in_count_.assign(2 * nn, 0);
  if (row_max_latency_.empty()) {
    row_max_latency_.assign(n, 0.0);
    node_lo_.assign(n, -1);
    node_hi_.assign(n, -1);
    for (int r = 0; r < n; ++r) {
      int lo = -1, hi = -1, members = 0;
      for (int c = 0; c < n; ++c) {
        if (c != r) row_max_latency_[r] = std::max(row_max_latency_[r], topo_.route_latency(r, c).value());
        if (topo_.node_of(c) != topo_.node_of(r)) continue;
        if (lo < 0) lo = c;
        hi = c + 1;
        ++members;
      }
      if (members == hi - lo) node_lo_[r] = lo, node_hi_[r] = hi;
      max_latency_ = std::max(max_latency_, row_max_latency_[r]);
    }
  }
  double alpha = 0, max_local = 0, max_net = 0;
  int* recvs = recvs_.data();
  // Columns [c0, c1) of `row`, all of locality `net`, into the row's sums and the columns' sums.
  auto run = [&](const double* row, int c0, int c1, int net, double& sum, int& count, double& most) {
    double* in_b = in_bytes_.data() + static_cast<size_t>(net) * nn;
    int* in_c = in_count_.data() + static_cast<size_t>(net) * nn;
    double s = sum, mx = most;
    int k = count;
    for (int c = c0; c < c1; ++c) {
      const double b = row[c];
      const bool carries = !(b <= 0);
      const double bb = carries ? b : 0.0;
      const int one = carries ? 1 : 0;
      s += bb, k += one, mx = std::max(mx, bb);
      in_b[c] += bb, in_c[c] += one, recvs[c] += one;
    }
    sum = s, count = k, most = mx;
  };
  // kRows consecutive rows of one node (the same range [lo, hi), compact topologies) read together:
  // each row keeps its own sums, counts and maximum in the same column order as alone (its diagonal
  // entry, which the single-row loop skips, adds +0.0 and counts 0: no sum or count changes), and
  // column c takes rows r, r + 1, ... in row order as before. The rows' dependency chains (a row
  // sum adds one entry after another) then overlap instead of running one after the other; the
  // maxima are combined at the end (a maximum does not depend on the order).
  constexpr int kRows = 4;
  auto run_rows = [&](const double* const* rows, int r0, int c0, int c1, int net, double* sum, int* count,
                      double& most) {
    double* in_b = in_bytes_.data() + static_cast<size_t>(net) * nn;
    int* in_c = in_count_.data() + static_cast<size_t>(net) * nn;
    double s[kRows], mx[kRows];
    int k[kRows];
    for (int i = 0; i < kRows; ++i) s[i] = sum[i], k[i] = count[i], mx[i] = most;
    for (int c = c0; c < c1; ++c) {
      double col = in_b[c];
      int ones = 0;
      for (int i = 0; i < kRows; ++i) {
        const double b = rows[i][c];
        const bool carries = !(b <= 0) && c != r0 + i;
        const double bb = carries ? b : 0.0;
        const int one = carries ? 1 : 0;
        s[i] += bb, k[i] += one, mx[i] = std::max(mx[i], bb);
        col += bb, ones += one;
      }
      in_b[c] = col, in_c[c] += ones, recvs[c] += ones;
    }
    for (int i = 0; i < kRows; ++i) sum[i] = s[i], count[i] = k[i], most = std::max(most, mx[i]);
  };
  // The largest latency among the pairs of row r that carry bytes (symmetric latencies): a row can
  // raise it only when its largest latency is above it; with a peer in every other GPU that largest
  // latency is the row's, else the row's pairs are read.
  auto row_alpha = [&](int r, const double* row, int sends) {
    if (alpha < max_latency_ && row_max_latency_[r] > alpha) {
      if (sends == n - 1) alpha = row_max_latency_[r];
      else
        for (int c = 0; c < n; ++c)
          if (row[c] > 0 && c != r) alpha = std::max(alpha, topo_.route_latency(r, c).value());
    }
  };
  for (int r = 0; r < n;) {
    const int lo = node_lo_[r], hi = node_hi_[r];
    // Eight rows of one node at a time in vector lanes (row_band_sums.hpp): the same sums, counts
    // and maxima as run_rows, in the same order.
    if (band8_ && lo >= 0 && r + 8 <= hi &&
        std::all_of(node_lo_.begin() + r, node_lo_.begin() + r + 8, [&](int x) { return x == lo; })) {
      double local_b[8] = {}, net_b[8] = {};
      int local_c[8] = {}, net_c[8] = {};
      row_band_sums(m.data(), nn, r, 0, lo, in_bytes_.data() + nn, in_count_.data() + nn, recvs, net_b, net_c, max_net);
      row_band_sums(m.data(), nn, r, lo, hi, in_bytes_.data(), in_count_.data(), recvs, local_b, local_c, max_local);
      row_band_sums(m.data(), nn, r, hi, n, in_bytes_.data() + nn, in_count_.data() + nn, recvs, net_b, net_c, max_net);
      for (int i = 0; i < 8; ++i) {
        const int sends = local_c[i] + net_c[i];
        row_alpha(r + i, m.data() + static_cast<size_t>(r + i) * n, sends);
        out_bytes_[r + i] = local_b[i], out_count_[r + i] = local_c[i];
        out_bytes_[nn + r + i] = net_b[i], out_count_[nn + r + i] = net_c[i];
        sends_[r + i] = sends;
      }
      r += 8;
      continue;
    }
    if (lo >= 0 && r + kRows <= hi && std::all_of(node_lo_.begin() + r, node_lo_.begin() + r + kRows,
                                                  [&](int x) { return x == lo; })) {
      const double* rows[kRows];
      double local_b[kRows] = {}, net_b[kRows] = {};
      int local_c[kRows] = {}, net_c[kRows] = {};
      for (int i = 0; i < kRows; ++i) rows[i] = m.data() + static_cast<size_t>(r + i) * n;
      run_rows(rows, r, 0, lo, 1, net_b, net_c, max_net);
      run_rows(rows, r, lo, hi, 0, local_b, local_c, max_local);
      run_rows(rows, r, hi, n, 1, net_b, net_c, max_net);
      for (int i = 0; i < kRows; ++i) {
        const int sends = local_c[i] + net_c[i];
        row_alpha(r + i, rows[i], sends);
        out_bytes_[r + i] = local_b[i], out_count_[r + i] = local_c[i];
        out_bytes_[nn + r + i] = net_b[i], out_count_[nn + r + i] = net_c[i];
        sends_[r + i] = sends;
      }
      r += kRows;
      continue;
    }
    const double* row = m.data() + static_cast<size_t>(r) * n;
    double local_b = 0, net_b = 0;
    int local_c = 0, net_c = 0;
    if (lo >= 0) {
      run(row, 0, lo, 1, net_b, net_c, max_net);
      run(row, lo, r, 0, local_b, local_c, max_local);
      run(row, r + 1, hi, 0, local_b, local_c, max_local);
      run(row, hi, n, 1, net_b, net_c, max_net);
    } else {
      const int nr = topo_.node_of(r);
      for (int c = 0; c < n; ++c)
        if (c != r) {
          const int net = topo_.node_of(c) != nr ? 1 : 0;
          run(row, c, c + 1, net, net ? net_b : local_b, net ? net_c : local_c, net ? max_net : max_local);
        }
    }
    const int sends = local_c + net_c;
    row_alpha(r, row, sends);
    out_bytes_[r] = local_b, out_count_[r] = local_c;
    out_bytes_[nn + r] = net_b, out_count_[nn + r] = net_c;
    sends_[r] = sends;
    ++r;
  }
  scan_alpha_ = alpha, scan_max_local_ = max_local, scan_max_net_ = max_net;
}

double AnalyticNetwork::add_sums(bool transpose) {
  const int n = topo_.num_gpus();
  const size_t nn = static_cast<size_t>(n);
  if (topo_.endpoint_separable()) {
    alpha_ = std::max(alpha_, scan_alpha_);
    // The combine sends what the dispatch receives and the other way round.
    const std::vector<double>& out_b = transpose ? in_bytes_ : out_bytes_;
    const std::vector<double>& in_b = transpose ? out_bytes_ : in_bytes_;
    const std::vector<int>& out_c = transpose ? in_count_ : out_count_;
    const std::vector<int>& in_c = transpose ? out_count_ : in_count_;
    double* load = load_.data();
    double* count = count_.data();
    for (int g = 0; g < n; ++g)
      for (int k = 0; k < 2; ++k) {
        const size_t i = static_cast<size_t>(k) * nn + g;
        if (out_c[i] > 0) {
          const double b = out_b[i], c = out_c[i];
          for (const auto& h : topo_.egress_hops(g, k == 1)) load[h.link] += b * h.fraction, count[h.link] += c * h.fraction;
        }
        if (in_c[i] > 0) {
          const double b = in_b[i], c = in_c[i];
          for (const auto& h : topo_.ingress_hops(g, k == 1)) load[h.link] += b * h.fraction, count[h.link] += c * h.fraction;
        }
      }
  }
  // A GPU's peers are the same counted either way round (ranks takes the larger of sends and receives).
  P2pGroupShape shape;
  for (int g = 0; g < n; ++g) shape.ranks = std::max({shape.ranks, sends_[g] + 1, recvs_[g] + 1});
  shape.multi_node = scan_max_net_ > 0;
  const P2pChannels p2p(topo_, shape.ranks, shape.multi_node);
  floor_ = std::max({floor_, scan_max_net_ > 0 ? scan_max_net_ / p2p.net_cap() : 0.0,
                     scan_max_local_ > 0 && p2p.local_cap() > 0 ? scan_max_local_ / p2p.local_cap() : 0.0});
  if (scan_max_local_ <= 0 && scan_max_net_ <= 0) return 0.0;
  return alpha_ * (p2p.rounds() - 1) + p2p.launch_latency(scan_max_local_, scan_max_net_ > 0);
}

AnalyticNetwork::PairTimes AnalyticNetwork::alltoallv_loads_both(std::span<const double> m, CoflowLoads& fwd,
                                                                 CoflowLoads& tr, std::pair<int, int> block) {
  PairTimes r;
  if (!topo_.endpoint_separable()) {
    r.fwd = alltoallv_loads(m, false, fwd, block);
    r.link_fwd = last_bottleneck_;
    r.tr = alltoallv_loads(m, true, tr, block);
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

double AnalyticNetwork::alltoallv_loads(std::span<const double> m, bool transpose, CoflowLoads& out,
                                        std::pair<int, int> block) {
  const double extra = alltoallv_add(m, transpose, block);
  const double t = finish(&out);
  out.latency += extra;
  return t > 0 ? t + extra : 0.0;
}

double AnalyticNetwork::alltoallv_time(std::span<const double> m, bool transpose, std::pair<int, int> block) {
  const double extra = alltoallv_add(m, transpose, block);
  const double t = finish();
  return t > 0 ? t + extra : 0.0;
}

}  // namespace hs::collective
