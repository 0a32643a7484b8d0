// Expert-load trace: per training iteration and MoE layer, how many token->expert assignments each
// expert received, optionally per source GPU and per micro-batch (format
// "hecate-sim/expert-load-trace" v1.0, v1.1 with the micro-batch axis; see traces/README.md).
//
// Invariants (checked by the reader, kept by every producer):
//   * per record, layer (and source, for per-source traces): sum over experts = tokens x top_k,
//     where tokens = tokens_per_source (per source) or sources x tokens_per_source (global);
//   * no expert receives more than `tokens` assignments (a token picks an expert at most once),
//     i.e. no more than 1/top_k of the assignments;
//   * with a micro-batch axis (micro_batches = M > 0): tokens_per_source is still the iteration's
//     (M micro-batches of tokens_per_source / M tokens each, so M divides it), every micro-batch
//     slice keeps the two rules above with tokens / M, and `counts` is the sum of the slices.
// Counts are assignments before any capacity drop. Stored as uint32, layer-major:
//   per-source: counts[(layer * sources + source) * experts + expert]
//   global:     counts[layer * experts + expert]
// `counts` always holds the iteration's counts, so every consumer that thinks in iterations (stats,
// re-binning, the strategies' load histories) reads it unchanged; `micro` holds the M slices,
// micro-batch-major (slice mb = micro[mb * record_size() ...], laid out as `counts`), and is empty
// when the trace has no micro-batch axis (then every micro-batch of an iteration is taken to route
// counts / grad_accum, as in traces before v1.1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hs::workload {

enum class TraceAxes { kLayerExpert, kLayerSourceExpert };

struct TraceRecord {
  int64_t iter = 0;
  std::vector<uint32_t> counts;  // the iteration (sum over micro-batches)
  std::vector<uint32_t> micro = {};  // micro_batches x record_size(); empty without the micro-batch axis
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
  int micro_batches = 0;           // micro-batches per iteration recorded separately; 0 = no such axis
  TraceAxes axes = TraceAxes::kLayerSourceExpert;
  std::string provenance_json = "{}";  // the "provenance" object, verbatim JSON
  std::vector<TraceRecord> records;

  bool per_source() const { return axes == TraceAxes::kLayerSourceExpert; }
  bool per_micro_batch() const { return micro_batches > 0; }
  // Counts of one iteration (or one micro-batch slice).
  size_t record_size() const {
    return static_cast<size_t>(moe_layers) * static_cast<size_t>(per_source() ? sources : 1) *
           static_cast<size_t>(experts);
  }
  // Global assignments of expert e in layer l (summed over sources).
  uint64_t global_count(const TraceRecord& r, int layer, int expert) const;
  // Total tokens routed per layer per iteration (over all sources).
  int64_t tokens_per_layer() const { return tokens_per_source * sources; }
  // Tokens a source routes per micro-batch (the iteration's without the micro-batch axis).
  int64_t tokens_per_source_micro_batch() const {
    return per_micro_batch() ? tokens_per_source / micro_batches : tokens_per_source;
  }
  // Micro-batch slice mb of a record (per_micro_batch() only).
  const uint32_t* micro_slice(const TraceRecord& r, int mb) const {
    return r.micro.data() + static_cast<size_t>(mb) * record_size();
  }
};

// Sets r.counts to the sum of r.micro's slices (producers call it after filling micro). Returns
// false, leaving counts unspecified, when a sum does not fit the uint32 counts.
bool sum_micro_batches(const Trace& t, TraceRecord& r);
// Drops the micro-batch axis: every record keeps its iteration counts only (what traces v1.0 hold).
void drop_micro_batches(Trace& t);

}  // namespace hs::workload
