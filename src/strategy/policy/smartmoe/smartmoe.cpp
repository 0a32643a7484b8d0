#include "strategy/policy/smartmoe/smartmoe.hpp"

#include <algorithm>
#include <deque>
#include <fmt/format.h>
#include <numeric>

#include "collective/sparse_plan.hpp"
#include "strategy/policy/fssdp/fssdp.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/load_history.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "strategy/layer_plan.hpp"
#include "strategy/policy/fssdp/sharding.hpp"

namespace hs::strategy {

std::vector<int> lpt_placement(const std::vector<double>& pred, int gpus, int slots, int rotate) {
  const int E = static_cast<int>(pred.size());
  std::vector<int> order(E), placement(E, 0);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return pred[a] > pred[b]; });
  std::vector<double> gpu_load(gpus, 0.0);
  std::vector<int> used(gpus, 0);
  for (int e : order) {
    int best = -1;
    // Ties go to GPUs in an order rotated by `rotate` (the layer), so one GPU does not collect every
    // layer's hottest expert (and its activations).
    for (int k = 0; k < gpus; ++k) {
      const int g = (k + rotate) % gpus;
      if (used[g] < slots && (best < 0 || gpu_load[g] < gpu_load[best])) best = g;
    }
    placement[e] = best;
    ++used[best];
    gpu_load[best] += pred[e];
  }
  return placement;
}

}  // namespace hs::strategy
