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
