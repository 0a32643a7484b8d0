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
// With node-limited routing (the model's route_groups / max_nodes, workload/node_limited_routing.hpp)
// the per-source shares are not sampled multinomially: every token draws affinities ps_e / Exp(1) and
// the router keeps its top_k experts inside its max_nodes best groups, so no token's experts span
// more than max_nodes groups; the counts are the sums over tokens (cost: tokens x experts draws per
// source and layer) and the provenance records "routing".
// Layers differ: sigma_l = sigma x U(1 - layer_spread, 1 + layer_spread), and the first and last
// layers are flatter (x edge_flatness). The first `transient` fraction of iterations drifts with
// transient_sd and phi_transient (early training's large, slower swings), then settles.
//
// Presets, where their numbers come from (the design notes' hardware.md, second half: the public
// SmartMoE training trace and released models), and the bands tests/unit/workload/generator_test.cpp
// holds them to (`trace stats` quantities, late window unless said otherwise):
//   uniform      : every expert equally popular, sampling noise only. Gini < 0.03.
//   aux_loss     : an auxiliary balance loss (coef ~0.01): released models show Gini ~0.1-0.25, expert
//                  max/mean ~1.5-2.6 at 64-256 experts -> sigma 0.3 (a log-normal's Gini is
//                  erf(sigma/2) ~ 0.17), phi 0.98, sd 0.1 ("AR(1) phi ~0.97-0.99, s.d. ~0.1").
//                  Band at 64 experts: Gini 0.12-0.2, max/mean 1.5-2.6, lag-1 > 0.9.
//   aux_free     : bias-based (auxiliary-loss-free) balancing: global max/mean ~1.05 but per-micro-batch
//                  imbalance larger -> sigma 0.02, phi 0.9, sd 0.02, source_noise 0.1. Band at 64
//                  experts: global max/mean < 1.15, each source's own max/mean at least 0.15 above it.
//   concentrated : a weak balance loss, between aux_loss and collapse (no published reference; an
//                  interpolation): sigma 0.8. Band at 64 experts: Gini 0.3-0.45, max/mean 4-7.
//   collapsed    : no balance loss, like the SmartMoE trace: late expert max/mean ~14 of a possible 16
//                  (32 experts, top-2), GPU (EP16) ~7.6, lag-10 share correlation ~0.999, log-share
//                  AR(1) phi ~0.97 with s.d. ~0.1 late and ~0.67 in the early transient, ranks close
//                  to the global distribution -> sigma 2.6 (the cap at 1/top_k bounds the top expert),
//                  phi 0.97, sd 0.1, transient_sd 0.67, source_noise 0.05. Band at 32 experts, top-2:
//                  late max/mean > 10, lag-10 correlation > 0.99, source TV < 0.05.
// `trace stats` on the imported SmartMoE trace and on `gen --model smartmoe-gpt --sources 16
// --iterations 501 --preset collapsed` agree within ~10% on max/mean, GPU max/mean, lag-10 and TV.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "workload/model_spec.hpp"
#include "workload/trace.hpp"

namespace hs::workload {

// Defaults are the aux_loss preset. Log-space quantities are natural-log units of routing share.
struct GeneratorParams {
  double sigma = 0.3;           // s.d. of the static log-popularity
  double layer_spread = 0.3;    // per-layer sigma factor drawn from U(1 - spread, 1 + spread)
  double edge_flatness = 0.6;   // extra sigma factor of the first and last MoE layer
  double phi = 0.98;            // AR(1) coefficient per iteration of the log-space drift
  double sd = 0.1;              // stationary s.d. of the drift
  double burst_rate = 0.002;    // probability per expert and iteration that a burst starts
  double burst_size = 0.7;      // log-share added by a burst
  double burst_decay = 0.8;     // a burst's remaining fraction after each iteration
  double transient = 0.03;      // fraction of the iterations that form the early transient
  double transient_sd = 0.3;    // drift s.d. during the transient
  double phi_transient = 0.9;   // drift AR(1) coefficient during the transient
  double source_noise = 0.15;   // s.d. of per-source, per-iteration log-share noise

  static std::optional<GeneratorParams> preset(const std::string& name);
  static std::vector<std::string> preset_names();
  // Sets a parameter by name; false if unknown (the caller reports it).
  bool set(const std::string& key, double value);
  static std::vector<std::string> names();
  // Empty if every parameter is in its range, else "NAME: what was expected" for the first that is not.
  std::string check() const;
  std::string to_json() const;
};

// Streams records to `sink` one at a time (memory: one record); `header` receives every other field.
void generate_trace_stream(const ModelSpec& model, const std::string& model_preset, int sources, int iterations,
                           const GeneratorParams& params, const std::string& preset_name, uint64_t seed, Trace& header,
                           const std::function<void(const TraceRecord&)>& sink);
Trace generate_trace(const ModelSpec& model, const std::string& model_preset, int sources, int iterations,
                     const GeneratorParams& params, const std::string& preset_name, uint64_t seed);

}  // namespace hs::workload
