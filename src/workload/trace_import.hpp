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

// Re-bins a per-source trace to `sources` sources, proportionally and exactly. The old sources'
// tokens are laid end to end and cut into `sources` equal runs (new tokens_per_source = old sources x
// old tokens / new sources, which must be an integer, else bad input): merging 16 -> 8 adds pairs,
// splitting 16 -> 32 halves each source, 16 -> 12 gives each new source 1 1/3 old ones. Where a cut
// falls inside an old source, its counts are split in proportion to the tokens on each side with
// deterministic largest-remainder rounding, so every new source sums to exactly tokens x top_k, no
// expert exceeds the new tokens per source, and per-expert totals are conserved. The provenance
// records the re-binning; callers say so on stderr.
void rebin_sources(Trace& t, int sources, const std::string& where);

Trace import_smartmoe(const std::string& folder, const ImportOptions& opt);

// Megatron-Core router trace, JSON Lines (the schema this importer accepts; Megatron-Core's router
// can dump its top-k routing map, and a few lines of Python turn a dump into this): one object per
// line and (step, layer, rank):
//   {"step": 12, "layer": 3, "rank": 0, "top_indices": [[5, 17], [2, 5], ...]}
//   step         non-negative integer, the training iteration (becomes the record's iter)
//   layer        MoE layer index, 0-based (layers 0..L-1 must all appear for every step)
//   rank         data-parallel rank that routed these tokens, 0-based (becomes the source)
//   top_indices  one list per token of the distinct expert ids it was routed to, all of the same
//                length top_k (which sets the trace's top_k; --top-k is ignored)
// Several lines for the same (step, layer, rank) add up (micro-batches). Steps are sorted; every
// (step, layer, rank) must route the same number of tokens. `experts` 0 = infer as max id + 1 (give
// it when the last experts may never be picked). Unknown keys and blank-free garbage are errors
// naming file:line:col.
Trace import_megatron(const std::string& path, const ImportOptions& opt, int experts = 0);

// Plain CSV with the header `iter,layer,source,expert,count`; missing rows are zero counts.
// The sum of each (iter, layer, source) must be the same for all (tokens x top_k).
Trace import_csv(const std::string& path, const ImportOptions& opt, int experts = 0);

}  // namespace hs::workload
