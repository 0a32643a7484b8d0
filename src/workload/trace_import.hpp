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

}  // namespace hs::workload
