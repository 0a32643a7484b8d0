// One simulated setting's inputs, parsed and validated once: topology, trace, model (with --set
// overrides), the per-iteration loads and the compute cost. `run` builds one; `sweep` and `tune`
// build one per (topology, trace, model) combination and share it read-only between threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "calib/calibration.hpp"
#include "app/presets.hpp"
#include "cost/compute_cost.hpp"
#include "strategy/iteration_loads.hpp"
#include "strategy/strategy.hpp"
#include "topology/topology.hpp"
#include "util/diagnostics.hpp"
#include "workload/model_spec.hpp"
#include "workload/trace.hpp"

namespace hs::app {

struct ScenarioArgs {
  std::string topology, trace, model;  // model: file or preset; empty = the trace's model.preset
  std::vector<std::string> sets;       // model field overrides FIELD=VALUE
  std::string split = "multinomial";   // multinomial | even
  uint64_t seed = 1;
  std::string calibration;             // calibration file; empty = the one the topology names, if any
};

struct Scenario {
  ResolvedInput topo_in, model_in;
  std::string calibration_file, calibration_text;  // the calibration applied ("" if none)
  std::string trace_file, trace_text;
  std::unique_ptr<topology::Topology> topo;
  std::unique_ptr<workload::Trace> trace;
  std::unique_ptr<workload::ModelSpec> model;
  std::unique_ptr<strategy::IterationLoads> loads;
  std::unique_ptr<cost::ComputeCost> compute;
  Diagnostics warnings;
  // A strategy context over these inputs (interference from the topology's GPU).
  strategy::Context context(bool flow_network, double flow_precision) const;
};

// Throws InputError naming the file, line and field of any bad input.
std::unique_ptr<Scenario> load_scenario(const ScenarioArgs& a);

}  // namespace hs::app
