#include "strategy/layout_group_routing.hpp"

namespace hs::strategy {

void route_in_groups(std::span<const double> all, const workload::ParallelLayout& layout, int stage, int experts,
                     const std::vector<int>& node_of, std::span<const collective::SparsePlacement> placement,
                     DispatchRule rule, double token_bytes, double cap, LayerPlan& plan,
                     std::vector<std::vector<double>>* group_loads, DispatchMemo* memo) {
  const int n = static_cast<int>(node_of.size()), ep = layout.ep, E = experts;
  const int G = static_cast<int>(placement.size());
  plan.expert_tokens.assign(n, {});
  plan.dispatch_bytes.assign(static_cast<size_t>(n) * n, 0.0);
  plan.received_tokens.assign(n, 0.0);
  plan.routed_tokens = plan.dropped_tokens = 0;
  if (group_loads) group_loads->assign(G, std::vector<double>(E, 0.0));
  std::vector<double> counts;
  for (int k = 0; k < G; ++k) {
    counts.assign(static_cast<size_t>(ep) * E, 0.0);
    std::vector<int> gpus, nodes;
    for (int i = 0; i < ep; ++i) {
      gpus.push_back(stage * layout.stage_size() + k * ep + i);
      nodes.push_back(node_of[gpus.back()]);
      for (int e = 0; e < E; ++e) {
        const double v = all[static_cast<size_t>(gpus.back()) * E + e] / layout.tp;
        counts[static_cast<size_t>(i) * E + e] = v;
        if (group_loads) (*group_loads)[k][e] += v;
      }
    }
    DispatchResult d;
    if (memo) memo->dispatch(counts, ep, placement[k], nodes, rule, token_bytes, d, cap);
    else dispatch(counts, ep, placement[k], nodes, rule, token_bytes, d, cap);
    plan.routed_tokens += d.routed;
    plan.dropped_tokens += d.dropped;
    for (int i = 0; i < ep; ++i) {
      plan.expert_tokens[gpus[i]] = std::move(d.expert_tokens[i]);
      plan.received_tokens[gpus[i]] = d.received[i];
      for (int j = 0; j < ep; ++j)
        plan.dispatch_bytes[static_cast<size_t>(gpus[i]) * n + gpus[j]] = d.bytes[static_cast<size_t>(i) * ep + j];
    }
  }
}

}  // namespace hs::strategy
