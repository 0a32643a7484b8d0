// Runs a strategy over a number of iterations of a trace and summarizes the results.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "strategy/iteration_loads.hpp"
#include "strategy/strategy.hpp"

namespace hs::strategy {

struct RunSummary {
  std::string name;                 // full strategy spec
  std::vector<double> times;        // per iteration, seconds
  double mean = 0, p50 = 0, p99 = 0;
  std::array<double, kNumComponents> breakdown{};  // mean per iteration, seconds
  double hidden_comm = 0;           // mean per iteration: collective time overlapped with compute
  cost::MemoryBreakdown peak_memory;                // of the worst iteration's worst GPU
  int peak_memory_gpu = -1;
  int peak_memory_iteration = -1;   // 0-based: the iteration peak_memory is of
  int iterations_over_memory = 0;   // iterations whose worst GPU exceeds the GPU's memory
  bool fits_memory = true;
  // FSSDP without re-materialization: the worst iteration's memory with re-materialization's copy
  // lifetimes (IterationResult::memory_rematerialized); unset otherwise.
  std::optional<cost::MemoryBreakdown> peak_memory_rematerialized;
  int bottleneck_gpu = -1;          // most frequent per-iteration bottleneck GPU
  topology::LinkId bottleneck_link = -1;
  int simulated_iterations = 0;     // distinct simulations (repeated records are re-used when stateless)
  std::vector<ResolvedSetting> resolved;  // what automatic knobs became (as of the last iteration)
  // Token dropping (strategy/capacity.hpp): per MoE layer, assignments routed and dropped, mean per
  // iteration; empty when the model is dropless.
  std::vector<double> routed_tokens, dropped_tokens;
  double dropped_fraction() const;  // dropped / routed over all layers (0 when nothing is routed)
};

// Percentile by linear interpolation between closest ranks (numpy's default), q in [0, 1].
double percentile(std::vector<double> v, double q);

// The caller's buffers behind iteration_counts (kept across iterations so that nothing is allocated
// per iteration).
struct CountBuffers {
  std::vector<double> layer, total;
  std::vector<std::vector<double>> micro;
  SplitScratch scratch;  // IterationLoads::load_layer's
};

// Trace record r's loads as a strategy reads them: without a micro-batch axis, produced a layer at a
// time when the strategy asks for it (IterationLoads::load_layer); with one, loaded whole (its
// micro-batch vectors too). Valid while `loads` and `buf` are.
IterationCounts iteration_counts(const IterationLoads& loads, int record, CountBuffers& buf);

// Called after each iteration with the iterations done so far and the total (progress reports; it
// must not change what is simulated).
using IterationProgress = std::function<void(int done, int iterations)>;

// With a timeline sink, the last iteration is simulated afresh and reported to it.
RunSummary run_strategy(Strategy& s, const std::string& name, const IterationLoads& loads, int iterations,
                        double gpu_memory_bytes, TimelineSink* timeline = nullptr,
                        const IterationProgress& progress = {});

}  // namespace hs::strategy
