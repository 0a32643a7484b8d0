// `tune`: the best knobs of one strategy at one setting, found with far fewer evaluations than the
// grid of every knob's candidate values (KnobDomain::candidates).
//
// Coordinate descent from the strategy's defaults: for each knob in turn, every other value with the
// rest fixed (evaluated together, in parallel); the best feasible one that beats the current point
// by more than a relative 1e-9 becomes current. Rounds repeat until one changes nothing (a local
// optimum over single-knob moves) or the budget of evaluations is spent. A setting already
// evaluated is never run again. Order and tie-breaking are fixed, so the result is deterministic.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sweep/sweep_results.hpp"
#include "sweep/sweep_spec.hpp"

namespace hs::sweep {

using Setting = std::vector<std::pair<std::string, std::string>>;  // knob, value (registry order)

struct TuneAxis {
  std::string knob;
  std::vector<std::string> values;
};

struct TuneOutcome {
  Row start;               // the starting point (the defaults)
  Row best;                // best feasible point found (== start when nothing beats it)
  bool found = false;      // some feasible point was found
  std::vector<Row> trail;  // every evaluation, in the order run
  int rounds = 0;
  bool converged = false;  // the last round changed nothing (else the budget ran out)
  double grid_size = 0;    // points in the full grid of candidates, for comparison
};

// eval runs a batch of settings (in parallel if it likes) and returns their rows in order.
TuneOutcome coordinate_descent(const std::vector<TuneAxis>& axes, const Setting& start, Objective objective,
                               int budget, const std::function<std::vector<Row>(const std::vector<Setting>&)>& eval);

}  // namespace hs::sweep
