// The Hecate paper's batch rule (arXiv 2502.02581, §6 "Experimental setup": the largest batch with
// which none of the compared systems runs out of GPU memory) as `run --batch max-fit`: the largest
// micro-batch (sequences per GPU) among the candidates at which every compared strategy fits in
// its GPUs' memory. The balanced oracle and the lower bound are references, not systems: they are
// not asked to fit. Each candidate is probed by simulating a few iterations of every strategy
// (planners such as FSSDP's size their copies from what the first iterations leave free), so the
// answer is the memory model's, the same one `run` reports as peak GiB and "fits".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "app/scenario.hpp"
#include "strategy/strategy.hpp"

namespace hs::app {

struct MaxFitRequest {
  ScenarioArgs args;                           // the run's inputs; a micro_batch in args.sets is refused
  std::vector<strategy::StrategySpec> specs;   // the strategies compared
  std::string layout;                          // --layout, empty for the default
  bool flow = false;
  double flow_precision = 0;
  int probe_iterations = 3;
  std::vector<int> candidates;                 // tried largest first; empty = kDefaultCandidates
};

// The paper-eval script's ladder of sequences per GPU.
inline const std::vector<int> kDefaultCandidates{128, 96, 64, 48, 32, 24, 16, 12, 8, 6, 4, 3, 2, 1};

struct MaxFitProbe {
  int micro_batch = 0;
  bool fits = false;
  std::string why;  // when it does not fit: the first strategy that does not, its peak and the GPU's memory
};

struct MaxFitResult {
  std::optional<int> micro_batch;   // none when no candidate fits
  std::vector<MaxFitProbe> probes;  // in the order tried (largest first, stopping at the first fit)
};

// Throws InputError for a micro_batch given with --set, or bad candidates.
MaxFitResult max_fit_batch(const MaxFitRequest& r);

}  // namespace hs::app
