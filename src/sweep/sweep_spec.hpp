// A sweep file (schema hecate-sim/sweep@1): the axes of a parameter study over strategies and their
// knobs, model fields, topologies, traces and the network tier, with an objective, constraints and a
// search (cartesian grid or seeded random sample of it). Parsed and validated once: every knob name
// and value against the strategy registry's declaration (KnobDomain), every error located
// (file:line:col, field, what was expected), all of them reported together (exit 2).
//
//   schema: hecate-sim/sweep@1
//   topologies: [aws-p3dn-v100-2node, my-cluster.yaml]   # files (relative to the sweep file) or presets
//   traces: [traces/gpt-moe-s-aux_loss.json.gz]
//   models: [gpt-moe-s]                                   # optional: default the trace's model.preset
//   strategies:                                           # a strategy with {} runs its defaults
//     ep: {}
//     fssdp: {overlap_degree: [auto, 2, 4], rematerialize: [false, true]}
//   model: {micro_batch: [4, 8]}                          # optional: model fields (as --set)
//   network: [analytic]                                   # optional: analytic | flow
//   calibrations: [none, cal/cluster.yaml]                # optional: calibration files (none: uncalibrated)
//   layout: [none, "tp=2,pp=2,ep=4", deepseek-v3]         # optional: parallel layouts, as run --layout
//                                                         # (none: no layout); one value or an axis
//   iterations: 50                                        # optional: default the trace's records
//   seed: 1                                               # optional: the run seed
//   objective: mean_iteration_time                        # | p99_iteration_time | tokens_per_second
//   constraints: {fits_memory: true, peak_memory: 60GiB}  # optional
//   search: grid                                          # or {random: {samples: 20, seed: 1}}
//   batch: max-fit                                        # optional: the Hecate paper's batch rule
//   batch_candidates: [64, 32, 16, 8]                     # optional, with batch: max-fit
//
// batch: max-fit sets each setting's micro_batch (app/sweep_batch.hpp) to the largest candidate at
// which every point of the setting (all its strategies and knob values) fits in memory, as
// `run --batch max-fit` does for the strategies it compares; `model: {micro_batch: ...}` is then
// refused (the rule chooses it).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "util/diagnostics.hpp"

namespace hs::sweep {

// The most points a sweep's grid may have (all of them are expanded in memory before any runs).
inline constexpr int kMaxSweepPoints = 1'000'000;

struct AxisValue {
  std::string text;
  SourceLocation at;
};

struct Axis {
  std::string name;  // knob or model field
  std::vector<AxisValue> values;
};

struct StrategyAxes {
  std::string name;
  SourceLocation at;
  std::vector<Axis> knobs;  // in the file's order
};

enum class Objective { kMeanTime, kP99Time, kTokensPerSecond };
const char* objective_name(Objective o);

struct SweepSpec {
  std::string file;
  std::vector<AxisValue> topologies, traces, networks;
  std::vector<AxisValue> models;  // model files or presets; one empty value = the trace's own
  std::vector<AxisValue> calibrations;  // calibration files; "" (written `none`) = none beyond the topology's own
  // Parallel layouts (layout/parallel_layout.hpp), each parsed here (syntax, presets; errors at the
  // value's file:line:col); "" (written `none`, or no `layout:`) = no layout. Resolved against each
  // point's topology and model when the scenarios are loaded (resolve_sweep_layouts in the CLI).
  std::vector<AxisValue> layouts;
  std::vector<StrategyAxes> strategies;
  std::vector<Axis> model;  // model field axes
  int iterations = 0;       // 0: the trace's records
  uint64_t seed = 1;
  Objective objective = Objective::kMeanTime;
  bool must_fit = true;     // constraint: peak memory within the GPU's memory
  double peak_memory_cap = 0;  // bytes; 0: none
  bool random = false;
  int samples = 0;
  uint64_t search_seed = 1;
  bool batch_max_fit = false;        // batch: max-fit
  std::vector<int> batch_candidates; // batch_candidates (empty: app::kDefaultCandidates)
  SourceLocation batch_at;           // where `batch` is written
};

// Throws InputError with every problem found.
SweepSpec parse_sweep(const std::string& text, const std::string& file);

}  // namespace hs::sweep
