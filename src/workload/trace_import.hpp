// Importers that turn other tools' expert-load logs into trace JSON v1 (v1.1 where the input keeps
// micro-batches apart).
//
// SmartMoE artifact (USENIX ATC'23, folder moe_trace/): one file per (iteration, rank) named
// table_iter{ITER}_rank{RANK}.log, one line per MoE layer: `LAYER:[[E counts] x micro-batches]`,
// counts written as floats with integral values. The importer keeps the micro-batches (the trace's
// micro_batch axis; a record is one iteration, its counts their sum), checks that every rank of every
// iteration is present, that every layer of every file has the same number of micro-batches, that
// every micro-batch sums to the same tokens x top_k, and that values are non-negative integers; it
// infers tokens_per_source = (micro-batches x micro-batch assignments) / top_k. `stride` keeps every
// k-th iteration found. Errors name file:line:col. (drop_micro_batches in trace.hpp sums them away,
// `trace import --sum-micro-batches`, for what earlier versions wrote.)
#pragma once

#include <string>

#include "workload/trace.hpp"

namespace hs::workload {

struct ImportOptions {
  // Experts per token. megatron reads it from the data; csv takes 0 as "from the data", which works
  // only when the counts allow one value (else an error asks for it); smartmoe needs it.
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
// expert exceeds the new tokens per source, and per-expert totals are conserved. With micro-batches
// every micro-batch is re-binned on its own (its tokens must split evenly). The provenance records the
// re-binning; callers say so on stderr.
void rebin_sources(Trace& t, int sources, const std::string& where);

// Adds "key": json to the trace's provenance object (a no-op when it is not an object).
void append_provenance(Trace& t, const std::string& key, const std::string& json);

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
//   micro_batch  optional: the micro-batch (forward call) of the step, 0-based; given on every line
//                or on none. With it the trace keeps micro-batches apart (axis micro_batch; every
//                step must have micro-batches 0..M-1), without it they are summed.
// Several lines for the same (step, [micro_batch,] layer, rank) add up. Steps are sorted; every
// (step, [micro_batch,] layer, rank) must route the same number of tokens. `experts` 0 = infer as max id + 1 (give
// it when the last experts may never be picked). Unknown keys and blank-free garbage are errors
// naming file:line:col.
Trace import_megatron(const std::string& path, const ImportOptions& opt, int experts = 0);

// Plain CSV with the header `iter,layer,source,expert,count`, or `iter,micro_batch,layer,source,expert,count`
// to keep micro-batches apart (0..M-1 for every iteration); missing rows are zero counts.
// The sum of each (iter, [micro_batch,] layer, source) must be the same for all (tokens x top_k), and
// no count may exceed the tokens. Errors name FILE:LINE:COLUMN and the field.
Trace import_csv(const std::string& path, const ImportOptions& opt, int experts = 0);

}  // namespace hs::workload
