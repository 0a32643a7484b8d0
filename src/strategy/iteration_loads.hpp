// Turns an expert-load trace into the per-iteration loads a strategy simulates (model.md §2).
//
// For iteration i the provider returns counts[layer][source][expert] (double: token->expert
// assignments per iteration) for exactly the topology's GPUs as sources and the model's tokens:
//   * the trace must match the model's MoE layers, experts and top_k (else bad input);
//   * a trace with S != N sources is re-binned proportionally (source s covers [s/S, (s+1)/S) of
//     the GPUs' range), with a warning;
//   * a global ([layer, expert]) trace is split across sources multinomially (each assignment to a
//     source with equal probability, seeded by (seed, record, layer, expert): deterministic) or
//     evenly (`GlobalSplit::kEven`), with a warning;
//   * counts are scaled by model tokens per GPU-iteration / trace tokens per source when they differ
//     (warning);
//   * a trace shorter than the requested iterations is cycled (or the run stops, `cycle = false`).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "util/diagnostics.hpp"
#include "workload/model_spec.hpp"
#include "workload/trace.hpp"

namespace hs::strategy {

enum class GlobalSplit { kMultinomial, kEven };

class IterationLoads {
 public:
  // Checks consistency (throws InputError naming `trace_file`); warnings go to `warnings`.
  IterationLoads(const workload::Trace& trace, const workload::ModelSpec& model, int gpus,
                 const std::string& trace_file, Diagnostics& warnings,
                 GlobalSplit split = GlobalSplit::kMultinomial, uint64_t seed = 1);
  int num_records() const { return static_cast<int>(trace_.records.size()); }
  // Loads of trace record r (use r = i % num_records() to cycle).
  void load(int record, std::vector<double>& out) const;
  int gpus() const { return n_; }
  int experts() const { return trace_.experts; }
  int layers() const { return trace_.moe_layers; }
  int64_t trace_iter(int record) const { return trace_.records[record].iter; }
  size_t size() const { return static_cast<size_t>(trace_.moe_layers) * n_ * trace_.experts; }

 private:
  const workload::Trace& trace_;
  int n_;
  double scale_ = 1.0;
  GlobalSplit split_;
  uint64_t seed_;
  // Re-binning weights: new source j takes weight w of old source s.
  struct Bin { int src; int dst; double w; };
  std::vector<Bin> bins_;
};

}  // namespace hs::strategy
