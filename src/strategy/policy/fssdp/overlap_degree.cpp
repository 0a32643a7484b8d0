#include "strategy/policy/fssdp/overlap_degree.hpp"

#include <algorithm>
#include <cmath>

#include "strategy/policy/fssdp/materialization.hpp"
#include "util/largest_fitting.hpp"

namespace hs::strategy {

const char* overlap_mode_name(OverlapMode m) {
  switch (m) {
    case OverlapMode::kHidden: return "hidden";
    case OverlapMode::kFormula: return "formula";
    case OverlapMode::kBest: return "best";
    case OverlapMode::kFixed: return "fixed";
  }
  return "?";
}

double sparse_collective_time(const collective::SparsePlacement& p, double chunk_bytes, const std::vector<int>& node_of,
                              collective::BroadcastAlgo algo, bool reduce, int channels, collective::AnalyticNetwork& net,
                              double comm_slowdown) {
  auto c = reduce ? collective::sparse_reduce_scatter(p, chunk_bytes, node_of, algo, channels)
                  : collective::sparse_allgather(p, chunk_bytes, node_of, algo, channels);
  if (c.empty()) return 0;
  const double extra = collective::sparse_finish(c, p, net.topology(), node_of, algo, reduce, channels);
  return (net.coflow_time(c) + extra) * (1 + comm_slowdown);
}

int hidden_overlap_degree(const std::vector<double>& load, const std::vector<int>& owner, const SpagSetting& s,
                          collective::AnalyticNetwork& net, double window, int guess) {
  const auto& topo = net.topology();
  std::vector<int> node_of, world_node_of;
  for (int g : s.gpus) node_of.push_back(topo.node_of(g));
  for (int g = 0; g < topo.num_gpus(); ++g) world_node_of.push_back(topo.node_of(g));
  const int channels = collective::chain_channels(topo);
  auto fits = [&](int t) {
    if (t == 0) return true;
    const auto p = on_gpus(materialize(load, owner, node_of, t, s.slots), s.gpus);
    if (s.cache) return s.cache->time(p, s.expert_bytes, false, net) * (1 + s.comm_slowdown) <= window;
    return sparse_collective_time(p, s.expert_bytes, world_node_of, s.algo, false, channels, net, s.comm_slowdown) <=
           window;
  };
  // The largest t in [0, E] that fits, assuming fits is monotone; fits(0) holds without a test.
  const int experts = static_cast<int>(load.size());
  return guess < 0 ? util::largest_fitting(experts, fits) : util::largest_fitting_from(experts, guess, fits);
}

double paper_bandwidth(const topology::Topology& t) {
  if (t.num_gpus() < 2) return 1.0;
  double intra = 0;
  if (t.gpus_in_node(0) > 1) intra = t.route_bandwidth(t.node_gpus(0)[0], t.node_gpus(0)[1]).value();
  if (t.num_nodes() < 2) return intra;
  double egress = 0;  // node 0's NIC links toward the fabric
  for (const auto& l : t.links()) {
    const auto& from = t.vertices()[l.from];
    const auto& to = t.vertices()[l.to];
    if (from.kind == topology::VertexKind::kNic && from.node == 0 && to.kind == topology::VertexKind::kSwitch &&
        to.node != 0)
      egress += l.bandwidth.value();
  }
  if (egress == 0) egress = t.route_bandwidth(t.node_gpus(0)[0], t.node_gpus(1)[0]).value() * t.gpus_in_node(0);
  const double per_gpu = egress / t.gpus_in_node(0);
  if (intra == 0 || intra > 2 * per_gpu) return per_gpu;
  return intra;
}

int formula_overlap_degree(double window, double bw, double expert_bytes, int experts) {
  if (expert_bytes <= 0) return experts;
  const double t = std::floor(window * bw / expert_bytes);
  return static_cast<int>(std::clamp(t, 0.0, static_cast<double>(experts)));
}

int best_overlap_degree(int experts, const std::function<double(int)>& layer_time) {
  std::vector<double> seen(experts + 1, -1);
  int best = 0;
  auto visit = [&](int t) {
    if (t < 0 || t > experts || seen[t] >= 0) return;
    seen[t] = layer_time(t);
    if (seen[t] < seen[best] || (seen[t] == seen[best] && t < best)) best = t;
  };
  visit(0);
  // Rungs: 0..16 one by one, then the step doubles every 8 rungs (16, 18, ..., 32, 36, ..., 64,
  // 72, ...); E itself is a rung.
  int step = 1, rungs = 0;
  for (int t = 1; t <= experts; t += step) {
    visit(t);
    if (t >= 16 && rungs++ % 8 == 0) step *= 2;
  }
  visit(experts);
  // Refine between the best rung's neighbours.
  int below = best, above = best;
  while (below > 0 && seen[below - 1] < 0) --below;
  while (above < experts && seen[above + 1] < 0) ++above;
  for (int t = below; t <= above; ++t) visit(t);
  return best;
}

}  // namespace hs::strategy
