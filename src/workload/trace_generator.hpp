// Synthetic expert-load traces whose imbalance and drift look like real MoE training.
//
// Per layer l, expert e and iteration i the routing share is softmax over experts of
//     sigma_l * z_{l,e}            static log-normal popularity (z ~ N(0,1), drawn once)
//   + x_{l,e}(i)                   AR(1) drift in log space: x(i) = phi x(i-1) + sqrt(1-phi^2) sd eps
//   + b_{l,e}(i)                   rare bursts: +burst_size with probability burst_rate, decaying by
//                                  burst_decay per iteration
// capped at 1/top_k (a token picks an expert at most once; the excess is redistributed), then
// perturbed per source (log-normal noise of s.d. source_noise, fresh each iteration) and sampled
// multinomially per source so every source's counts sum exactly to tokens x top_k.
// Layers differ: sigma_l = sigma x U(1 - layer_spread, 1 + layer_spread), and the first and last
// layers are flatter (x edge_flatness). The first `transient` fraction of iterations drifts with
// transient_sd and phi_transient (early training's large, slower swings), then settles.
//
// Presets and the statistics they are chosen to match (the design notes' hardware.md, from the
// SmartMoE trace and released models):
//   uniform      : every expert equally popular (sampling noise only).
//   aux_loss     : training with an auxiliary balance loss (coef ~0.01): Gini ~0.1-0.25, expert
//                  max/mean ~1.5-2.6 at 64-256 experts -> sigma 0.3 (Gini of a log-normal is
//                  erf(sigma/2) ~ 0.17), phi 0.98, sd 0.1.
//   aux_free     : bias-based balancing: global max/mean ~1.05 but per-source imbalance larger ->
//                  sigma 0.05, sd 0.03, source_noise 0.3.
//   concentrated : a weak balance loss: sigma 0.8.
//   collapsed    : no balance loss (the SmartMoE trace): sigma 2, late expert max/mean ~14 of 16
//                  possible (32 experts, top-2), lag-10 share correlation ~0.999 -> phi 0.97 with
//                  stationary sd 0.1 late, sd 0.67 in the early transient, few bursts.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "workload/model_spec.hpp"
#include "workload/trace.hpp"

namespace hs::workload {

struct GeneratorParams {
  double sigma = 0.3;
  double layer_spread = 0.3;
  double edge_flatness = 0.6;
  double phi = 0.98;
  double sd = 0.1;
  double burst_rate = 0.002;
  double burst_size = 0.7;
  double burst_decay = 0.8;
  double transient = 0.03;
  double transient_sd = 0.3;
  double phi_transient = 0.9;
  double source_noise = 0.15;

  static std::optional<GeneratorParams> preset(const std::string& name);
  static std::vector<std::string> preset_names();
  // Sets a parameter by name; false if unknown (the caller reports it).
  bool set(const std::string& key, double value);
  static std::vector<std::string> names();
  std::string to_json() const;
};

// Streams records to `sink` one at a time (memory: one record); `header` receives every other field.
void generate_trace_stream(const ModelSpec& model, const std::string& model_preset, int sources, int iterations,
                           const GeneratorParams& params, const std::string& preset_name, uint64_t seed, Trace& header,
                           const std::function<void(const TraceRecord&)>& sink);
Trace generate_trace(const ModelSpec& model, const std::string& model_preset, int sources, int iterations,
                     const GeneratorParams& params, const std::string& preset_name, uint64_t seed);

}  // namespace hs::workload
