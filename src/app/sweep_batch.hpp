// A sweep's `batch: max-fit` (sweep/sweep_spec.hpp): the Hecate paper's batch rule per setting of
// the sweep. A setting is everything of a point but its strategy and knobs (topology, trace, model
// and its field axes, calibration, layout, network tier); its micro_batch is the largest candidate at
// which every point of the setting fits in its GPUs' memory (app::max_fit_batch with those points'
// strategy specs), chosen over the whole grid before a shard takes its points, so shards, resumed
// runs and MPI ranks agree. Each point then carries micro_batch=N among its model fields (and in its
// key). A setting where no candidate fits keeps the smallest candidate: its rows then say they do
// not fit.
#pragma once

#include <string>
#include <vector>

#include "app/point_eval.hpp"
#include "sweep/sweep_points.hpp"
#include "sweep/sweep_spec.hpp"

namespace hs::app {

// Sets micro_batch on every point of `points` (the whole expanded grid) and returns one line per
// setting saying what was chosen and why the next larger candidate was not. Paths resolve as the
// cache resolves them. Throws InputError when a setting's inputs are bad.
std::vector<std::string> apply_max_fit_batch(std::vector<sweep::SweepPoint>& points, const sweep::SweepSpec& spec,
                                             const ScenarioCache& paths);

}  // namespace hs::app
