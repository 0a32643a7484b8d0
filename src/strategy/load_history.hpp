// Per-iteration loads seen by strategies that plan ahead (FSSDP, SmartMoE): the global per-expert
// counts of an iteration, a sliding window of them, and its mean (the load prediction).
#pragma once

#include <deque>
#include <vector>

#include "workload/model_spec.hpp"

namespace hs::strategy {

// counts[layer][gpu][expert] (n sources) -> global[layer][expert].
std::vector<std::vector<double>> global_loads(const std::vector<double>& loads, int layers, int gpus, int experts);

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
