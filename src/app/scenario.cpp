#include "app/scenario.hpp"

#include <filesystem>

#include "report/run_report.hpp"
#include "topology/topology_loader.hpp"
#include "util/atomic_file.hpp"
#include "workload/trace_io.hpp"

namespace hs::app {

std::unique_ptr<Scenario> load_scenario(const ScenarioArgs& a) {
  auto s = std::make_unique<Scenario>();
  s->topo_in = resolve_input(a.topology, "topologies");
  s->topo = std::make_unique<topology::Topology>(topology::load_topology(s->topo_in.text, s->topo_in.source));
  // A calibration: --calibration, else the one the topology names (relative to the topology file).
  std::string cal = a.calibration;
  if (cal.empty() && !s->topo->calibration_file.empty()) {
    cal = s->topo->calibration_file;
    const std::filesystem::path tp(s->topo_in.source);
    if (std::filesystem::path(cal).is_relative() && s->topo_in.source.rfind("preset:", 0) != 0)
      cal = (tp.parent_path() / cal).lexically_normal().string();
  }
  calib::Calibration calibration;
  if (!cal.empty()) {
    s->calibration_file = cal;
    s->calibration_text = read_file(cal);
    calibration = calib::parse_calibration(s->calibration_text, cal);
    // Fitted on another topology: applied all the same, with a warning (stderr and the report's
    // inputs.warnings).
    const std::string mismatch =
        calib::topology_mismatch(calibration, s->topo_in.source, report::content_hash(s->topo_in.text));
    if (!mismatch.empty()) s->warnings.warning({cal, 0, 0}, "topology_fnv1a64", mismatch);
    const topology::TopologyAdjust adj = calib::topology_adjust(calibration);
    s->topo = std::make_unique<topology::Topology>(topology::load_topology(s->topo_in.text, s->topo_in.source, &adj));
  }
  s->trace_file = a.trace;
  s->trace_text = read_file(a.trace);
  s->trace = std::make_unique<workload::Trace>(workload::parse_trace(s->trace_text, a.trace));
  const std::string model_arg = a.model.empty() ? s->trace->model_preset : a.model;
  if (model_arg.empty())
    throw InputError({a.trace, 0, 0}, "model.preset", "the trace names no model preset: pass --model FILE or a preset name");
  s->model_in = resolve_input(model_arg, "models");
  s->model = std::make_unique<workload::ModelSpec>(workload::load_model(s->model_in.text, s->model_in.source, a.sets));
  cost::resolve_attention(*s->model, s->topo->gpu_model());
  cost::check_precision(*s->model, s->topo->gpu_model(), s->model_in.source, s->topo_in.source);
  s->loads = std::make_unique<strategy::IterationLoads>(
      *s->trace, *s->model, s->topo->num_gpus(), a.trace, s->warnings,
      a.split == "even" ? strategy::GlobalSplit::kEven : strategy::GlobalSplit::kMultinomial, a.seed);
  cost::ComputeParams params;
  calib::apply_compute(calibration, params);
  s->compute = std::make_unique<cost::ComputeCost>(s->topo->gpu_model(), *s->model, params);
  return s;
}

strategy::Context Scenario::context(bool flow_network, double flow_precision) const {
  strategy::Context ctx{*topo, *model, *compute, 1, flow_network, flow_precision};
  ctx.interference = topo->gpu_model().interference;  // both tiers slow communication beside compute
  return ctx;
}

}  // namespace hs::app
