// Turns an expert-load trace into the per-iteration loads a strategy simulates (docs/model.md §2).
//
// For iteration i the provider returns counts[layer][source][expert] (double: token->expert
// assignments per iteration, and per micro-batch when the trace records them) for exactly the
// topology's GPUs as sources and the model's tokens:
//   * the trace must match the model's MoE layers, experts and top_k (else bad input);
//   * a trace with S != N sources is re-binned proportionally (source s covers [s/S, (s+1)/S) of
//     the GPUs' range), with a warning;
//   * a global ([layer, expert]) trace is split across sources multinomially (each assignment to a
//     source with equal probability, seeded by (seed, record, layer, expert): deterministic) or
//     evenly (`GlobalSplit::kEven`), with a warning;
//   * counts are scaled by model tokens per GPU-iteration / trace tokens per source when they differ
//     (warning);
//   * a trace shorter than the requested iterations is cycled (or the run stops, `cycle = false`);
//   * a trace with a micro-batch axis (M micro-batches per iteration) gives the model's grad_accum = G
//     micro-batches their own counts: with M == G micro-batch j routes the trace's micro-batch j;
//     otherwise the iteration's M recorded micro-batches are re-binned proportionally onto the G
//     (model micro-batch j covers [j/G, (j+1)/G) of the iteration, trace micro-batch i [i/M, (i+1)/M),
//     and j takes each i in proportion to their overlap: M = 4 -> G = 2 merges pairs, M = 4 -> G = 1
//     sums them all, M = 2 -> G = 4 halves each), with a warning naming both numbers. The same rule
//     with M = 1 is what a trace without the axis means, but such a trace keeps the iteration-only
//     path (no micro-batch vectors), so its results are unchanged. Per source, the re-binning and
//     scaling above apply to every micro-batch alike, so each model micro-batch routes exactly
//     micro_batch x seq_len x top_k assignments per GPU and the micro-batches sum to the iteration.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "util/diagnostics.hpp"
#include "util/multinomial_lanes.hpp"
#include "util/rng.hpp"
#include "workload/model_spec.hpp"
#include "workload/trace.hpp"

namespace hs::strategy {

enum class GlobalSplit { kMultinomial, kEven };

// Re-binning `from` equal parts onto `to` equal parts of the same whole (sources onto GPUs,
// recorded micro-batches onto the model's): part `dst` takes the fraction w of part `src`, their
// overlap; the w of one src sum to 1. Exact integer arithmetic in units of 1 / (from x to).
struct ProportionalBin { int src; int dst; double w; };
std::vector<ProportionalBin> proportional_bins(int from, int to);

// Scratch of the multinomial split of a global trace (IterationLoads::load_layer), the caller's, so
// that nothing is allocated per layer and threads can share one IterationLoads.
struct SplitScratch {
  std::vector<uint32_t> draws;  // a block of experts' splits, draws[gpu * block + expert in block]
  std::vector<Rng> rngs;        // the block's streams
  std::vector<uint64_t> n;      // the block's counts
  UniformMultinomialLanes lanes;
};

class IterationLoads {
 public:
  // Checks consistency (throws InputError naming `trace_file`); warnings go to `warnings`.
  IterationLoads(const workload::Trace& trace, const workload::ModelSpec& model, int gpus,
                 const std::string& trace_file, Diagnostics& warnings,
                 GlobalSplit split = GlobalSplit::kMultinomial, uint64_t seed = 1);
  int num_records() const { return static_cast<int>(trace_.records.size()); }
  // Model micro-batches with counts of their own: grad_accum when the trace has a micro-batch axis,
  // 0 when it has none (every micro-batch then routes the iteration's counts / grad_accum).
  int micro_batches() const { return trace_.per_micro_batch() ? model_micro_batches_ : 0; }
  // Loads of trace record r (use r = i % num_records() to cycle): the iteration's.
  void load(int record, std::vector<double>& out) const;
  // The iteration's loads and, with a micro-batch axis, micro_batches() vectors of the same layout,
  // one per model micro-batch, summing to `total` (else `micro` is left empty).
  void load(int record, std::vector<double>& total, std::vector<std::vector<double>>& micro) const;
  // Layer `layer` of record r's iteration loads, counts[gpu][expert] (layer_size() values into
  // out): exactly that layer of load(record, ...)'s (the split's seeds do not depend on which layers
  // are loaded), so a strategy can route one layer while its counts are in cache. Traces without a
  // micro-batch axis only (micro_batches() == 0). `scratch` is the caller's (kept between calls, no
  // allocation per layer), so one IterationLoads serves threads that each bring their own.
  void load_layer(int record, int layer, double* out, SplitScratch& scratch) const;
  size_t layer_size() const { return static_cast<size_t>(n_) * trace_.experts; }
  int gpus() const { return n_; }
  int experts() const { return trace_.experts; }
  int layers() const { return layers_; }  // the model's MoE layers (MTP included)
  int64_t trace_iter(int record) const { return trace_.records[record].iter; }
  size_t size() const { return static_cast<size_t>(layers_) * n_ * trace_.experts; }

 private:
  // Loads of one slice of counts (an iteration, or one recorded micro-batch: `slice` numbers it for
  // the multinomial split's seeds), re-binned to the GPUs and scaled.
  void load_slice(const uint32_t* counts, uint64_t slice, std::vector<double>& out) const;
  // Layer l of such a slice into out[0, layer_size()).
  void load_slice_layer(const uint32_t* counts, uint64_t slice, int l, double* out, SplitScratch& scratch) const;

  const workload::Trace& trace_;
  int n_;
  int layers_ = 0;  // the model's MoE layers: the trace's, and MTP layers it may lack
  int model_micro_batches_ = 1;
  double scale_ = 1.0;
  GlobalSplit split_;
  uint64_t seed_;
  std::vector<ProportionalBin> bins_;     // trace sources -> GPUs
  std::vector<ProportionalBin> mb_bins_;  // recorded micro-batches -> model micro-batches
};

}  // namespace hs::strategy
