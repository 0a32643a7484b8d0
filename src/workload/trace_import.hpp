// Importers that turn other tools' expert-load logs into trace JSON v1.
//
// SmartMoE artifact (USENIX ATC'23, folder moe_trace/): one file per (iteration, rank) named
// table_iter{ITER}_rank{RANK}.log, one line per MoE layer: `LAYER:[[E counts] x micro-batches]`,
// counts written as floats with integral values. The importer sums the micro-batches of each rank
// (a trace record is one iteration), checks that every rank of every iteration is present, that every
// micro-batch sums to the same tokens x top_k, and that values are non-negative integers; it infers
// tokens_per_source = (micro-batches x micro-batch assignments) / top_k. `stride` keeps every k-th
// iteration found. Errors name file:line:col.
#pragma once

#include <string>

#include "workload/trace.hpp"

namespace hs::workload {

struct ImportOptions {
  int top_k = 2;
  int stride = 1;
  std::string model_preset;  // written into the trace's model.preset (may be empty)
};

// Re-bins a per-source trace to `sources` sources, exactly (integer counts, every invariant kept):
//   * merging (S a multiple of N): new source j sums old sources [j*S/N, (j+1)*S/N);
//   * splitting (N a multiple of S, tokens_per_source divisible by N/S): old source s becomes N/S
//     sources; every expert's count is split as evenly as possible, the remainders dealt round-robin
//     across the parts with a pointer that carries over from expert to expert, so every part sums to
//     exactly tokens x top_k and no expert exceeds the new tokens per source.
// Other ratios are bad input (hecate-sim run re-bins proportionally, in fractions, at simulation time).
// The provenance records the re-binning.
void rebin_sources(Trace& t, int sources, const std::string& where);

Trace import_smartmoe(const std::string& folder, const ImportOptions& opt);

// Megatron-Core router trace, JSON Lines: one object per (step, layer, rank) —
//   {"step": 12, "layer": 3, "rank": 0, "top_indices": [[5, 17], [2, 5], ...]}
// where top_indices lists, per token, the experts it was routed to (top_k each). Counts are summed
// per (step, layer, rank); steps become records (sorted), layers 0..L-1 and ranks 0..R-1 must all be
// present for every kept step. `experts` 0 = infer as max expert id + 1 (say it explicitly when
// the hottest experts may be unused). Unknown keys are errors.
Trace import_megatron(const std::string& path, const ImportOptions& opt, int experts = 0);

// Plain CSV with the header `iter,layer,source,expert,count`; missing rows are zero counts.
// The sum of each (iter, layer, source) must be the same for all (tokens x top_k).
Trace import_csv(const std::string& path, const ImportOptions& opt, int experts = 0);

}  // namespace hs::workload
