// Expert-load trace: per training iteration and MoE layer, how many token->expert assignments each
// expert received, optionally per source GPU (format "hecate-sim/expert-load-trace" v1, see
// traces/README.md).
//
// Invariants (checked by the reader, kept by every producer):
//   * per record, layer (and source, for per-source traces): sum over experts = tokens x top_k,
//     where tokens = tokens_per_source (per source) or sources x tokens_per_source (global);
//   * no expert receives more than `tokens` assignments (a token picks an expert at most once),
//     i.e. no more than 1/top_k of the assignments.
// Counts are assignments before any capacity drop. Stored as uint32, layer-major:
//   per-source: counts[(layer * sources + source) * experts + expert]
//   global:     counts[layer * experts + expert]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hs::workload {

enum class TraceAxes { kLayerExpert, kLayerSourceExpert };

struct TraceRecord {
  int64_t iter = 0;
  std::vector<uint32_t> counts;
};

struct Trace {
  // "model" section: what the trace was recorded on.
  std::string model_preset;  // may be empty
  int moe_layers = 0;
  int experts = 0;
  int top_k = 0;
  // "workload" section.
  int sources = 0;                 // data-parallel token sources (GPUs) the counts come from
  int64_t tokens_per_source = 0;   // tokens each source routes per iteration, per layer
  TraceAxes axes = TraceAxes::kLayerSourceExpert;
  std::string provenance_json = "{}";  // the "provenance" object, verbatim JSON
  std::vector<TraceRecord> records;

  bool per_source() const { return axes == TraceAxes::kLayerSourceExpert; }
  size_t record_size() const {
    return static_cast<size_t>(moe_layers) * static_cast<size_t>(per_source() ? sources : 1) *
           static_cast<size_t>(experts);
  }
  // Global assignments of expert e in layer l (summed over sources).
  uint64_t global_count(const TraceRecord& r, int layer, int expert) const;
  // Total tokens routed per layer per iteration (over all sources).
  int64_t tokens_per_layer() const { return tokens_per_source * sources; }
};

}  // namespace hs::workload
