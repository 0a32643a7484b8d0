#include "strategy/capacity.hpp"

#include <algorithm>
#include <cmath>

namespace hs::strategy {

double expert_capacity(double factor, double tokens, int top_k, int experts) {
  return std::ceil(factor * tokens * top_k / experts);
}

TokenCapacity token_capacity(const workload::ModelSpec& model, int tp) {
  TokenCapacity c;
  c.grad_accum = model.grad_accum;
  if (model.capacity_factor)
    c.micro_batch = expert_capacity(*model.capacity_factor, static_cast<double>(model.tokens_per_micro_batch()) / tp,
                                    model.top_k, model.experts);
  return c;
}

CapacityTally cut_to_capacity(std::span<double> counts, int experts, double cap, std::span<const int> instances) {
  CapacityTally t;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double c = counts[i];
    const int e = static_cast<int>(i % static_cast<size_t>(experts));
    const double keep = std::min(c, instances.empty() ? cap : cap * instances[e]);
    t.routed += c;
    t.dropped += c - keep;
    counts[i] = keep;
  }
  return t;
}

}  // namespace hs::strategy
