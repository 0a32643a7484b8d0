// Per-iteration loads seen by strategies that plan ahead (FSSDP, SmartMoE): the global per-expert
// counts of an iteration, a sliding window of them, and its mean (the load prediction).
#pragma once

#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "strategy/policy/fssdp/materialization.hpp"
#include "strategy/layer_plan.hpp"
#include "strategy/strategy.hpp"
#include "workload/model_spec.hpp"

namespace hs::strategy {

// counts[layer][gpu][expert] (n sources) -> global[layer][expert].
std::vector<std::vector<double>> global_loads(std::span<const double> loads, int layers, int gpus, int experts);

// Layer l's counts[gpu][expert] (n x E, row-major) within counts[layer][gpu][expert].
inline std::span<const double> layer_counts(std::span<const double> loads, int layer, int gpus, int experts) {
  const size_t size = static_cast<size_t>(gpus) * experts;
  return loads.subspan(static_cast<size_t>(layer) * size, size);
}

// plan.micro for one layer: one entry per micro-batch of `counts` (none without them), each filled by
// route(that micro-batch's counts of the layer, entry) under the placement the caller decided for
// the iteration.
void route_micro_batches(const IterationCounts& counts, int layer, int gpus, int experts, LayerPlan& plan,
                         const std::function<void(std::span<const double>, LayerPlan&)>& route);

// Moves a dispatch's routing into a plan (expert_tokens, dispatch_bytes, received_tokens).
void take_dispatch(DispatchResult&& d, LayerPlan& p);

class LoadHistory {
 public:
  LoadHistory(int layers, int window) : window_(window), h_(layers) {}
  void push(const std::vector<std::vector<double>>& global);
  bool empty() const { return h_.empty() || h_[0].empty(); }
  // Mean over the window; `uniform` (1.0 each) before any history.
  std::vector<double> mean(int layer, int experts) const;

 private:
  int window_;
  std::vector<std::deque<std::vector<double>>> h_;
};

// Parameters a GPU owns when experts are spread evenly: dense + E/N experts of every MoE layer.
double balanced_owned_params(const workload::ModelSpec& m, int gpus);

}  // namespace hs::strategy
