#include "strategy/policy/fssdp/overlap_degree.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

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

int hidden_overlap_degree(const std::vector<double>& load, const std::vector<int>& owner, const SpagSetting& s,
                          collective::AnalyticNetwork& net, double window, int guess) {
  const auto& topo = net.topology();
  std::vector<int> node_of;
  for (int g : s.gpus) node_of.push_back(topo.node_of(g));
  std::optional<collective::SparsePlanCache> own;
  if (!s.cache) {
    std::vector<int> world_node_of;
    for (int g = 0; g < topo.num_gpus(); ++g) world_node_of.push_back(topo.node_of(g));
    own.emplace(topo, std::move(world_node_of), s.algo, collective::chain_channels(topo));
  }
  collective::SparsePlanCache& plans = s.cache ? *s.cache : *own;
  auto fits = [&](int t) {
    if (t == 0) return true;
    const auto p = on_gpus(materialize(load, owner, node_of, t, s.slots), s.gpus);
    return plans.time(p, s.expert_bytes, false, net) * (1 + s.comm_slowdown) <= window;
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

int best_overlap_degree(int experts, const std::function<double(int, double)>& layer_time, int guess) {
  std::vector<double> seen(experts + 1, -1);  // -1: not tried (times are not negative)
  int best = -1;
  auto visit = [&](int t) {
    if (t < 0 || t > experts || seen[t] >= 0) return;
    seen[t] = layer_time(t, best < 0 ? std::numeric_limits<double>::infinity() : seen[best]);
    if (best < 0 || seen[t] < seen[best] || (seen[t] == seen[best] && t < best)) best = t;
  };
  // Rungs: 0..16 one by one, then the step doubles every 8 rungs (16, 18, ..., 32, 36, ..., 64,
  // 72, ...); E itself is a rung.
  std::vector<int> rungs{0};
  int step = 1, count = 0;
  for (int t = 1; t <= experts; t += step) {
    rungs.push_back(t);
    if (t >= 16 && count++ % 8 == 0) step *= 2;
  }
  rungs.push_back(experts);
  // The rung nearest the guess first: the least time over the rungs (ties to the smaller t) is the
  // same in any order, and an early good time prunes more of the others.
  if (guess >= 0)
    visit(*std::min_element(rungs.begin(), rungs.end(),
                            [&](int a, int b) { return std::abs(a - guess) < std::abs(b - guess); }));
  for (int t : rungs) visit(t);
  // Refine between the best rung's neighbours.
  int below = best, above = best;
  while (below > 0 && seen[below - 1] < 0) --below;
  while (above < experts && seen[above + 1] < 0) ++above;
  for (int t = below; t <= above; ++t) visit(t);
  return best;
}

}  // namespace hs::strategy
