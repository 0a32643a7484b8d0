#include "strategy/deepep_dispatch.hpp"

#include <algorithm>
#include <cmath>

namespace hs::strategy {

DeepEpMatrix::DeepEpMatrix(const topology::Topology& topo)
    : topo_(topo), n_(topo.num_gpus()), local_(n_, 0), m_(static_cast<size_t>(n_) * n_, 0.0), used_(n_, 0) {
  for (int node = 0; node < topo.num_nodes(); ++node) {
    const auto gpus = topo.node_gpus(node);
    for (size_t i = 0; i < gpus.size(); ++i) local_[gpus[i]] = static_cast<int>(i);
  }
}

void DeepEpMatrix::reset() {
  for (int a = 0; a < n_; ++a)
    if (used_[a]) {
      std::fill_n(m_.begin() + static_cast<ptrdiff_t>(a) * n_, n_, 0.0);
      used_[a] = 0;
    }
  forwarded_ = false;
}

int DeepEpMatrix::rail_gpu(int src, int node) const {
  const auto gpus = topo_.node_gpus(node);
  return gpus[static_cast<size_t>(local_[src]) % gpus.size()];
}

void DeepEpMatrix::add_node(int src, int node, double bytes) {
  if (bytes <= 0) return;
  m_[static_cast<size_t>(src) * n_ + rail_gpu(src, node)] += bytes;
  used_[src] = 1;
}

void DeepEpMatrix::add_gpu(int src, int gpu, double bytes) {
  if (bytes <= 0 || gpu == src) return;
  const int node = topo_.node_of(gpu);
  const int from = node == topo_.node_of(src) ? src : rail_gpu(src, node);
  if (from == gpu) return;  // the rail GPU itself holds the experts: nothing to forward
  forwarded_ = forwarded_ || from != src;
  m_[static_cast<size_t>(from) * n_ + gpu] += bytes;
  used_[from] = 1;
}

collective::Coflow DeepEpMatrix::flows(bool combine, double& extra_latency) const {
  collective::Coflow out;
  double nvlink_latency = 0;
  for (int a = 0; a < n_; ++a)
    for (int b = 0; b < n_ && used_[a]; ++b) {
      const double v = m_[static_cast<size_t>(a) * n_ + b];
      if (v <= 0 || a == b) continue;
      out.push_back(combine ? collective::Transfer{b, a, v} : collective::Transfer{a, b, v});
      if (forwarded_ && topo_.node_of(a) == topo_.node_of(b))
        nvlink_latency = std::max(nvlink_latency, topo_.route_latency(a, b).value());
    }
  extra_latency = forwarded_ ? nvlink_latency : 0.0;
  return out;
}

double DeepEpMatrix::network_bytes() const {
  double sum = 0;
  for (int a = 0; a < n_; ++a)
    for (int b = 0; b < n_ && used_[a]; ++b)
      if (topo_.node_of(a) != topo_.node_of(b)) sum += m_[static_cast<size_t>(a) * n_ + b];
  return sum;
}

namespace {
// Distinct bytes among b assignment bytes over x experts, each drawn independently with
// probability b / (x B) by a token of B bytes' worth (see the header).
double distinct(double b, double B, int x) {
  if (b <= 0 || B <= 0) return 0;
  const double q = std::min(1.0, b / (x * B));
  return B * (1.0 - std::pow(1.0 - q, x));
}
// Distinct bytes that reach a set holding the fraction f of a source's assignments when each of
// its tokens (B bytes' worth) draws k experts without replacement from `experts`: a token misses
// the set with probability prod_{i<k} (1 - f experts / (experts - i)) (exactly C(E - x, k) / C(E, k)
// for x of E equally popular experts).
double reached(double f, double B, int k, int experts) {
  if (f <= 0 || B <= 0) return 0;
  double miss = 1;
  for (int i = 0; i < k && i < experts; ++i) miss *= std::max(0.0, 1.0 - f * experts / (experts - i));
  return B * (1.0 - miss);
}
}  // namespace

void estimate_deepep(std::span<const double> a, std::span<const int> experts_on, int top_k, int node_limit,
                     DeepEpMatrix& out, std::pair<int, int> active) {
  const int n = static_cast<int>(experts_on.size());
  const auto [lo, hi] = active.first < active.second ? active : std::pair<int, int>{0, n};
  const auto& topo = out.topology();
  std::vector<double> b_node(topo.num_nodes()), floor(topo.num_nodes());
  out.reset();
  for (int s = lo; s < hi; ++s) {
    const double* row = a.data() + static_cast<size_t>(s) * n;
    double total = 0;
    for (int g = lo; g < hi; ++g) total += row[g];
    if (total <= 0) continue;
    const double B = total / top_k;
    std::fill(b_node.begin(), b_node.end(), 0.0);
    std::fill(floor.begin(), floor.end(), 0.0);
    int x_total = 0;
    for (int g = lo; g < hi; ++g) {
      if (row[g] <= 0) continue;
      const int N = topo.node_of(g), x = std::max(1, experts_on[g]);
      b_node[N] += row[g];
      x_total += x;
      floor[N] = std::max(floor[N], row[g] / x);
    }
    for (int N = 0; N < topo.num_nodes(); ++N) {
      if (b_node[N] <= 0) continue;
      double D = std::min(b_node[N], reached(b_node[N] / total, B, top_k, x_total));
      if (node_limit > 0) D = std::min(D, b_node[N] * node_limit / top_k);
      D = std::max(D, floor[N]);
      if (N != topo.node_of(s)) out.add_node(s, N, D);
      for (int g : topo.node_gpus(N))
        if (row[g] > 0) out.add_gpu(s, g, distinct(row[g], D, std::max(1, experts_on[g])));
    }
  }
}

int deepep_node_limit(int route_groups, int max_nodes, int ep, int gpus_per_node) {
  if (max_nodes <= 0 || route_groups <= 0) return 0;
  const int group_nodes = (ep + gpus_per_node - 1) / gpus_per_node;  // nodes of an EP group
  const int nodes_per_route_group = std::max(1, (group_nodes + route_groups - 1) / route_groups);
  return max_nodes * nodes_per_route_group;
}

}  // namespace hs::strategy
