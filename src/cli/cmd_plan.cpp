// hecate-sim plan TOPOLOGY TRACE --strategy SPEC --iteration K -o plan.json [--model M] [--set F=V]
//                 [--seed S]
//
// Runs a strategy over iterations 0..K of a trace (the trace cycles, as in `run`) and writes what it
// planned for iteration K (transport/plan_file.hpp, `hecate-sim/plan@1`): per MoE layer the owner of
// every expert, its materialized copies, the spAG and spRS transfers in the simulator's order and
// the dispatch byte matrix. hecate-plan-check and the GPU backend execute exactly this. Only
// strategies that materialize copies plan sparse collectives (fssdp); others are bad input (exit 2).
// The plan is read back and checked (as hecate-plan-check will) before it is written: a plan the
// checker would refuse is a bug here, not a file.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <stdexcept>

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "app/scenario.hpp"
#include "report/run_report.hpp"
#include "transport/plan_file.hpp"
#include "util/atomic_file.hpp"
#include "util/output_path.hpp"
#include "util/hecate_version.hpp"

namespace hs::cli {

namespace {

struct PlanOptions {
  std::string topology, trace, model, strategy, out;
  std::vector<std::string> sets;
  int iteration = 0;
  uint64_t seed = 1;
};

// The snapshot as plan-file data; layers are numbered as the strategy lists them (MoE layers, from 0).
transport::Plan to_plan(const strategy::PlanSnapshot& snap, int gpus, const std::vector<int>& node_of) {
  transport::Plan plan;
  plan.gpus = gpus;
  plan.node_of = node_of;
  for (size_t l = 0; l < snap.layers.size(); ++l) {
    const strategy::LayerPlanSnapshot& s = snap.layers[l];
    transport::PlanLayer p;
    p.layer = static_cast<int>(l);
    p.chunk_bytes = s.chunk_bytes;
    p.broadcast = s.broadcast == collective::BroadcastAlgo::kDirect ? transport::Broadcast::kDirect
                                                                    : transport::Broadcast::kChain;
    p.owner = s.owner;
    p.replicas = s.replicas;
    for (const auto& t : s.spag) p.spag.push_back({t.chunk, t.src, t.dst});
    for (const auto& t : s.sprs) p.sprs.push_back({t.chunk, t.src, t.dst});
    p.dispatch_bytes.assign(gpus, std::vector<double>(gpus, 0.0));
    for (int a = 0; a < gpus; ++a)
      for (int b = 0; b < gpus; ++b) p.dispatch_bytes[a][b] = s.dispatch_bytes[static_cast<size_t>(a) * gpus + b];
    plan.layers.push_back(std::move(p));
  }
  return plan;
}

int run(const PlanOptions& o) {
  if (o.strategy.find(',') != std::string::npos)
    throw InputError({"--strategy", 0, 0}, o.strategy, "plan takes one strategy, not a list");
  check_output_path(o.out, "--out");  // before anything is loaded or simulated
  auto sc = load_scenario({o.topology, o.trace, o.model, o.sets, "multinomial", o.seed, ""});
  for (const auto& w : sc->warnings.all()) fmt::print(stderr, "{}\n", to_string(w));
  const topology::Topology& topo = *sc->topo;
  const strategy::StrategySpec spec = strategy::parse_strategy_spec(o.strategy);
  strategy::Context ctx = sc->context(false, network::kDefaultFlowPrecision);
  ctx.seed = o.seed;
  auto s = strategy::make_strategy(spec, ctx);
  std::vector<double> buf;
  std::vector<std::vector<double>> micro;
  const int records = sc->loads->num_records();
  for (int i = 0; i <= o.iteration; ++i) {
    sc->loads->load(i % records, buf, micro);
    s->simulate(strategy::IterationCounts{buf, micro});
    if (i == 0 && s->last_plan() == nullptr)
      throw InputError({"--strategy", 0, 0}, o.strategy,
                       fmt::format("strategy '{}' plans no sparse collectives, so there is no plan to write: only "
                                   "strategies that materialize expert copies do (fssdp)",
                                   spec.name));
  }
  const strategy::PlanSnapshot& snap = *s->last_plan();
  if (snap.iteration != o.iteration)
    throw std::logic_error(fmt::format("strategy planned iteration {}, expected {}", snap.iteration, o.iteration));
  std::vector<int> node_of;
  for (int g = 0; g < topo.num_gpus(); ++g) node_of.push_back(topo.node_of(g));
  transport::Plan plan = to_plan(snap, topo.num_gpus(), node_of);
  auto& p = plan.provenance;
  p.tool = std::string("hecate-sim ") + HECATE_VERSION;
  p.topology_file = sc->topo_in.source;
  p.topology_hash = report::content_hash(sc->topo_in.text);
  p.trace_file = o.trace;
  p.trace_hash = report::content_hash(sc->trace_text);
  p.model = sc->model->name;
  p.model_source = sc->model_in.source;
  p.sets = o.sets;
  p.strategy = spec.full;
  p.iteration = o.iteration;
  p.trace_record = o.iteration % records;
  p.seed = o.seed;
  p.gpus = topo.num_gpus();
  p.nodes = topo.num_nodes();
  const std::string text = transport::render_plan(plan);
  try {
    (void)transport::parse_plan(text, o.out);
  } catch (const InputError& e) {
    throw std::logic_error(fmt::format("the plan of {} fails its own checks: {}", spec.full,
                                       to_string(e.diagnostics().front())));
  }
  write_file_atomically(o.out, text);
  return 0;
}

}  // namespace

void setup_plan(CLI::App& sub, int& exit_code) {
  auto o = std::make_shared<PlanOptions>();
  sub.add_option("TOPOLOGY", o->topology, "topology YAML file or preset name (e.g. dgx-h100-1node)")->required();
  sub.add_option("TRACE", o->trace, "expert-load trace (.json or .json.gz)")->required();
  sub.add_option("--strategy", o->strategy, "one strategy that plans sparse collectives, NAME[:KNOB=VALUE...] (fssdp)")
      ->required();
  sub.add_option("--iteration", o->iteration, "the iteration whose plan is written (0-based; iterations 0..K run)")
      ->required()
      ->check(in_range(0, 1 << 24));
  sub.add_option("-o,--out", o->out, "plan file to write (atomically; - for stdout)")->required();
  sub.add_option("--model", o->model, "model YAML file or preset name (default: the trace's model.preset)");
  sub.add_option("--set", o->sets, "override a model field, e.g. --set experts=32 (repeatable)");
  sub.add_option("--seed", o->seed, "random seed (default 1): splitting global-count traces over GPUs");
  sub.callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace hs::cli
