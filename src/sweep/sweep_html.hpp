// `sweep --report FILE.html`: one self-contained page (inline SVG, no scripts, no network): the
// best point per strategy with its gain over the defaults, the time-vs-memory scatter with the
// Pareto front, a heat map of the objective over two knobs, each knob's effect (best objective
// per value, per strategy), and the points in objective order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sweep/sweep_results.hpp"
#include "sweep/sweep_spec.hpp"

namespace hs::sweep {

struct SweepReportInput {
  const SweepSpec* spec = nullptr;
  std::vector<Row> rows;      // the sweep's points
  std::vector<Row> defaults;  // defaults rows (gain over defaults), any order
  Summary summary;
  std::pair<std::string, std::string> heatmap;  // two knobs; empty: one strategy's pair with the most value pairs
};

std::string render_sweep_html(const SweepReportInput& in);

}  // namespace hs::sweep
