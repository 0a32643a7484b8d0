// One-line notes on what silently decided a run's result, computed in one place from the finished
// RunReport and the few inputs it does not hold: FSSDP that made no copies, a strategy whose result
// equals another's, FSSDP slower than EP and why (the phases it exposes), uncalibrated defaults, and --split / --seed that cannot act on the trace. Each note is printed under the table and goes into the
// JSON's `warnings` (RunInputs::warnings), in a fixed order, so outputs stay deterministic.
#pragma once

#include <string>
#include <vector>

#include "report/run_report.hpp"

namespace hs::report {

// What the notes need beyond the RunReport.
struct NoteInputs {
  int experts = 0;                        // the model's experts per MoE layer
  bool trace_per_source = false;          // the trace holds per-source counts (nothing to split)
  bool split_given = false, seed_given = false;  // --split / --seed on the command line
};

// The notes, in order: per strategy (in the report's order) FSSDP without copies, then strategies
// equal to an earlier one, then those over memory in some iterations only, then each FSSDP slower
// than EP (the first `ep` of the report) with the breakdown components it spends more and less on,
// then uncalibrated defaults, --split / --seed.
std::vector<std::string> run_notes(const RunReport& r, const NoteInputs& in);

// Whether two strategies' results are the same: iteration times (mean, p50, p99) and every
// breakdown component within 1e-9 of the mean iteration.
bool same_result(const strategy::RunSummary& a, const strategy::RunSummary& b);

}  // namespace hs::report
