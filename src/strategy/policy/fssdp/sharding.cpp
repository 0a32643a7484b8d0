#include "strategy/policy/fssdp/sharding.hpp"

#include <algorithm>
#include <numeric>

namespace hs::strategy {

std::vector<int> slot_capacity(int layers, int experts, int gpus) {
  const long long total = static_cast<long long>(layers) * experts;
  std::vector<int> cap(gpus, static_cast<int>(total / gpus));
  for (int g = 0; g < static_cast<int>(total % gpus); ++g) ++cap[g];
  return cap;
}

Owners homogeneous_owners(int layers, int experts, int gpus) {
  Owners o(layers, std::vector<int>(experts, 0));
  for (int l = 0; l < layers; ++l)
    for (int e = 0; e < experts; ++e)
      o[l][e] = experts % gpus == 0 ? e / (experts / gpus)
                                    : static_cast<int>((static_cast<long long>(l) * experts + e) % gpus);
  return o;
}

Owners heterogeneous_owners(const std::vector<std::vector<double>>& loads, const std::vector<int>& t,
                            const std::vector<int>& node_of, const Owners* current) {
  const int L = static_cast<int>(loads.size());
  const int E = L ? static_cast<int>(loads[0].size()) : 0;
  const int n = static_cast<int>(node_of.size());
  const int nodes = n ? *std::max_element(node_of.begin(), node_of.end()) + 1 : 0;
  std::vector<int> free_slots = slot_capacity(L, E, n);
  Owners owner(L, std::vector<int>(E, -1));
  std::vector<std::vector<int>> ranked(L);
  for (int l = 0; l < L; ++l) {
    ranked[l].resize(E);
    std::iota(ranked[l].begin(), ranked[l].end(), 0);
    std::stable_sort(ranked[l].begin(), ranked[l].end(), [&](int a, int b) { return loads[l][a] > loads[l][b]; });
  }
  std::vector<int> layer_order(L);
  std::iota(layer_order.begin(), layer_order.end(), 0);
  std::stable_sort(layer_order.begin(), layer_order.end(), [&](int a, int b) {
    return *std::max_element(loads[a].begin(), loads[a].end()) > *std::max_element(loads[b].begin(), loads[b].end());
  });
  int layers_left = L;
  std::vector<std::vector<double>> layer_gpu_load(L, std::vector<double>(n, 0.0));
  for (int l : layer_order) {
    std::vector<double>& gpu_load = layer_gpu_load[l];
    std::vector<double> node_load(nodes, 0.0);
    double keep_slack = 0;  // kKeepTolerance x the layer's mean load per GPU
    if (current) {
      for (double x : loads[l]) keep_slack += x;
      keep_slack *= kKeepTolerance / n;
    }
    const int tl = std::clamp(t[l], 0, E);
    // Per-layer quota from the slots a GPU has left, so that the layers placed last are not
    // crammed onto the few GPUs that still have room (the paper leaves this open).
    std::vector<int> quota(n), taken(n, 0);
    for (int g = 0; g < n; ++g) quota[g] = (free_slots[g] + layers_left - 1) / layers_left + 1;
    --layers_left;
    for (int i = tl; i < E; ++i) {
      const int e = ranked[l][i];
      auto eligible = [&](int g) { return free_slots[g] > 0 && taken[g] < quota[g]; };
      bool any = false;
      for (int g = 0; g < n; ++g) any = any || eligible(g);
      auto ok = [&](int g) { return any ? eligible(g) : free_slots[g] > 0; };
      std::vector<int> node_free(nodes, 0);
      for (int g = 0; g < n; ++g)
        if (ok(g)) node_free[node_of[g]] += free_slots[g];
      int bn = -1;
      for (int k = 0; k < nodes; ++k) {
        if (node_free[k] <= 0) continue;
        if (bn < 0 || node_load[k] < node_load[bn] || (node_load[k] == node_load[bn] && node_free[k] < node_free[bn])) bn = k;
      }
      int bg = -1;
      for (int g = 0; g < n; ++g) {
        if (node_of[g] != bn || !ok(g)) continue;
        if (bg < 0 || gpu_load[g] < gpu_load[bg] || (gpu_load[g] == gpu_load[bg] && free_slots[g] < free_slots[bg])) bg = g;
      }
      if (current) {
        const int g0 = (*current)[l][e];
        if (g0 != bg && ok(g0) && gpu_load[g0] <= gpu_load[bg] + keep_slack) {
          bg = g0;
          bn = node_of[g0];
        }
      }
      owner[l][e] = bg;
      --free_slots[bg];
      ++taken[bg];
      gpu_load[bg] += loads[l][e];
      node_load[bn] += loads[l][e];
    }
  }
  // Overlappable experts fill what is left, by load as well: they are replicated only while they stay
  // in the top-t of the prediction, and one that drops out is served by its owner alone.
  for (int l : layer_order) {
    const int tl = std::clamp(t[l], 0, E);
    std::vector<double>& gpu_load = layer_gpu_load[l];
    for (int i = 0; i < tl; ++i) {
      const int e = ranked[l][i];
      int bg = -1;
      for (int g = 0; g < n; ++g) {
        if (free_slots[g] <= 0) continue;
        if (bg < 0 || gpu_load[g] < gpu_load[bg] || (gpu_load[g] == gpu_load[bg] && free_slots[g] > free_slots[bg])) bg = g;
      }
      if (current) {
        const int g0 = (*current)[l][e];
        if (g0 != bg && free_slots[g0] > 0) bg = g0;
      }
      owner[l][e] = bg;
      --free_slots[bg];
      gpu_load[bg] += loads[l][e];
    }
  }
  return owner;
}

}  // namespace hs::strategy
