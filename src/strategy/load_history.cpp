#include "strategy/load_history.hpp"

#include "cost/memory_model.hpp"

namespace hs::strategy {

std::vector<std::vector<double>> global_loads(const std::vector<double>& loads, int L, int n, int E) {
  std::vector<std::vector<double>> g(L, std::vector<double>(E, 0.0));
  for (int l = 0; l < L; ++l)
    for (int s = 0; s < n; ++s)
      for (int e = 0; e < E; ++e) g[l][e] += loads[(static_cast<size_t>(l) * n + s) * E + e];
  return g;
}

void LoadHistory::push(const std::vector<std::vector<double>>& global) {
  for (size_t l = 0; l < h_.size(); ++l) {
    h_[l].push_back(global[l]);
    while (static_cast<int>(h_[l].size()) > window_) h_[l].pop_front();
  }
}

std::vector<double> LoadHistory::mean(int layer, int experts) const {
  const auto& h = h_[layer];
  if (h.empty()) return std::vector<double>(experts, 1.0);
  std::vector<double> m(experts, 0.0);
  for (const auto& v : h)
    for (int e = 0; e < experts; ++e) m[e] += v[e] / static_cast<double>(h.size());
  return m;
}

double balanced_owned_params(const workload::ModelSpec& m, int gpus) {
  const auto p = cost::count_params(m);
  return p.dense + p.per_expert * m.moe_layers() * static_cast<double>(m.experts) / gpus;
}

}  // namespace hs::strategy
