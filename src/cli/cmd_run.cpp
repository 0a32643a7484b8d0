// hecate-sim run TOPOLOGY TRACE [--model FILE] [--set k=v] [--strategy NAME[:K=V...],...]
//                [--layout tp=T,pp=P,ep=E,...] [--iterations N] [--seed S] [--format table|json|csv] [--out FILE]
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "app/presets.hpp"
#include "cli/progress_options.hpp"
#include "app/max_fit_batch.hpp"
#include "app/point_eval.hpp"
#include "cost/model_flops.hpp"
#include "app/scenario.hpp"
#include "cost/compute_cost.hpp"
#include "report/chrome_trace.hpp"
#include "report/html_report.hpp"
#include "report/run_notes.hpp"
#include "report/run_report.hpp"
#include "strategy/iteration_loads.hpp"
#include "strategy/layout_strategy.hpp"
#include "strategy/runner.hpp"
#include "topology/topology_loader.hpp"
#include "util/atomic_file.hpp"
#include "util/output_path.hpp"
#include "util/progress.hpp"
#include "workload/model_spec.hpp"
#include "layout/parallel_layout.hpp"
#include "workload/trace_io.hpp"

namespace hs::cli {

namespace {

struct RunOptions {
  double flow_precision = network::kDefaultFlowPrecision;
  std::string topology, trace, model, strategies, format = "table", out = "-", network = "analytic", timeline, split = "multinomial", html;
  std::vector<std::string> sets;
  std::string calibration, layout;
  std::string batch;                  // "max-fit" or empty
  std::vector<int> batch_candidates;  // --batch-candidates (default app::kDefaultCandidates)
  int iterations = 0;
  uint64_t seed = 1;
  bool quiet = false;
  bool split_given = false, seed_given = false;  // on the command line (for the notes)
};

std::vector<std::string> split_specs(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t c = s.find(',', start);
    std::string part = s.substr(start, c == std::string::npos ? std::string::npos : c - start);
    if (part.empty()) throw InputError({"--strategy", 0, 0}, s, "empty strategy name in the list");
    out.push_back(part);
    if (c == std::string::npos) break;
    start = c + 1;
  }
  return out;
}

// --batch max-fit: the paper's batch rule (app/max_fit_batch.hpp). Adds the chosen micro_batch to
// args.sets and returns the note that says how it was chosen; no candidate fitting is bad input.
std::string choose_max_fit_batch(const RunOptions& o, const std::vector<strategy::StrategySpec>& specs,
                                 app::ScenarioArgs& args) {
  app::MaxFitRequest req;
  req.args = args;
  req.specs = specs;
  req.layout = o.layout;
  req.flow = o.network == "flow";
  req.flow_precision = o.flow_precision;
  req.candidates = o.batch_candidates;
  const app::MaxFitResult fit = app::max_fit_batch(req);
  std::string tried;
  for (const auto& p : fit.probes) tried += fmt::format("{}{}", tried.empty() ? "" : ", ", p.micro_batch);
  if (!fit.micro_batch)
    throw InputError({"--batch", 0, 0}, "batch",
                     fmt::format("no candidate micro-batch ({}) fits every compared strategy; at {}: {}", tried,
                                 fit.probes.back().micro_batch, fit.probes.back().why));
  args.sets.push_back(fmt::format("micro_batch={}", *fit.micro_batch));
  std::string note = fmt::format(
      "note: --batch max-fit: micro_batch {}, the largest candidate at which every compared strategy (oracle and "
      "bound excepted) fits in GPU memory over {} probe iterations (tried {})",
      *fit.micro_batch, req.probe_iterations, tried);
  if (fit.probes.size() > 1) {
    const auto& above = fit.probes[fit.probes.size() - 2];
    note += fmt::format("; at {}: {}", above.micro_batch, above.why);
  }
  return note;
}

int run(const RunOptions& o) {
  // Outputs that cannot be written fail now, not after the simulation.
  check_output_path(o.out, "--out");
  check_output_path(o.timeline, "--timeline");
  check_output_path(o.html, "--report");
  std::vector<strategy::StrategySpec> specs;
  if (o.strategies.empty()) {
    for (const auto& info : strategy::registry()) specs.push_back(strategy::parse_strategy_spec(info.name));
  } else {
    for (const auto& s : split_specs(o.strategies)) specs.push_back(strategy::parse_strategy_spec(s));
  }
  if (!o.batch_candidates.empty() && o.batch.empty())
    throw InputError({"--batch-candidates", 0, 0}, "batch", "--batch-candidates needs --batch max-fit");
  app::ScenarioArgs args{o.topology, o.trace, o.model, o.sets, o.split, o.seed, o.calibration};
  std::string batch_note;
  if (o.batch == "max-fit") batch_note = choose_max_fit_batch(o, specs, args);
  auto sc = load_scenario(args);
  const topology::Topology& topo = *sc->topo;
  const workload::ModelSpec& model = *sc->model;
  const strategy::IterationLoads& loads = *sc->loads;
  const int iterations = o.iterations > 0 ? o.iterations : loads.num_records();
  strategy::Context ctx = sc->context(o.network == "flow", o.flow_precision);
  ctx.seed = o.seed;
  // A parallel layout is parsed and checked against the cluster and the model once, here.
  std::optional<workload::ParallelLayout> layout;
  if (!o.layout.empty()) {
    const SourceLocation where{"--layout", 0, 0};
    layout = workload::parse_parallel_layout(o.layout, where);
    workload::resolve_layout(*layout, topo.num_gpus(), topo.num_gpus() / topo.num_nodes(), model, where);
  }
  // Build every strategy first so a bad knob fails before any simulation runs. Without --strategy,
  // a strategy that cannot apply to this model and cluster (e.g. SmartMoE with one expert per GPU) is
  // skipped with a warning instead of failing the run.
  std::vector<std::unique_ptr<strategy::Strategy>> built;
  std::vector<strategy::StrategySpec> kept;
  std::vector<std::string> skipped;
  for (const auto& spec : specs) {
    try {
      built.push_back(layout ? strategy::make_strategy(spec, ctx, *layout) : strategy::make_strategy(spec, ctx));
      kept.push_back(spec);
    } catch (const InputError& e) {
      if (!o.strategies.empty()) throw;
      skipped.push_back(fmt::format("strategy {} skipped: {}", spec.full, e.diagnostics().front().message));
    }
  }
  specs = std::move(kept);

  report::RunReport rep;
  rep.topo = &topo;
  rep.interference = ctx.interference;
  rep.inputs.topology_file = sc->topo_in.source;
  rep.inputs.topology_hash = report::content_hash(sc->topo_in.text);
  rep.inputs.trace_file = o.trace;
  rep.inputs.trace_hash = report::content_hash(sc->trace_text);
  rep.inputs.model_name = model.name;
  rep.inputs.model_source = sc->model_in.source;
  if (!sc->calibration_file.empty()) {
    rep.inputs.calibration_file = sc->calibration_file;
    rep.inputs.calibration_hash = report::content_hash(sc->calibration_text);
  }
  rep.inputs.iterations = iterations;
  rep.inputs.seed = o.seed;
  rep.inputs.network = o.network == "flow" ? fmt::format("flow (precision {:g})", o.flow_precision) : o.network;
  rep.work.tokens = app::tokens_per_iteration(model, layout ? &*layout : nullptr, topo.num_gpus());
  rep.work.flops_per_token = cost::megatron_flops_per_token(model);
  rep.work.gpus = topo.num_gpus();
  for (const auto& w : skipped) {
    rep.inputs.warnings.push_back(w);
    fmt::print(stderr, "warning: {}\n", w);
  }
  for (const auto& w : sc->warnings.all()) {
    rep.inputs.warnings.push_back(to_string(w));
    fmt::print(stderr, "{}\n", to_string(w));
  }
  report::ChromeTrace chrome;
  Progress progress("run", "iterations", built.size() * static_cast<size_t>(iterations), progress_settings(o.quiet));
  for (size_t i = 0; i < built.size(); ++i) {
    if (!o.timeline.empty()) chrome.begin_strategy(specs[i].full);
    const size_t before = i * static_cast<size_t>(iterations);
    auto on_iteration = [&](int done, int n) {
      progress.update(before + static_cast<size_t>(done),
                      fmt::format("strategy {} ({} of {}), iteration {} of {}", specs[i].full, i + 1, built.size(), done, n));
    };
    rep.strategies.push_back(strategy::run_strategy(*built[i], specs[i].full, loads, iterations,
                                                    topo.gpu_model().memory.value(),
                                                    o.timeline.empty() ? nullptr : &chrome, on_iteration));
    built[i].reset();  // its iteration graph (kept across iterations) is not needed any more
    progress.step(fmt::format("strategy {} finished ({} of {})", specs[i].full, i + 1, built.size()));
  }
  progress.finish();
  // Notes on what silently decided the result: under the table, in the JSON's warnings, on stderr
  // when no table shows them.
  report::NoteInputs notes_in;
  notes_in.experts = model.experts;
  notes_in.trace_per_source = sc->trace->per_source();
  notes_in.split_given = o.split_given;
  notes_in.seed_given = o.seed_given;
  rep.notes = report::run_notes(rep, notes_in);
  if (!batch_note.empty()) rep.notes.insert(rep.notes.begin(), batch_note);
  if (o.format != "table")
    for (const auto& n : rep.notes) fmt::print(stderr, "{}\n", n);
  if (!o.timeline.empty()) write_file_atomically(o.timeline, chrome.json());
  if (!o.html.empty()) write_file_atomically(o.html, report::render_html(rep));

  std::string text = o.format == "json" ? report::render_json(rep)
                     : o.format == "csv" ? report::render_csv(rep)
                                         : report::render_table(rep);
  write_file_atomically(o.out, text);
  return 0;
}

}  // namespace

void setup_run(CLI::App& sub, int& exit_code) {
  auto o = std::make_shared<RunOptions>();
  sub.add_option("TOPOLOGY", o->topology, "topology YAML file or preset name (e.g. dgx-h100-4node)")->required();
  sub.add_option("TRACE", o->trace, "expert-load trace (.json or .json.gz)")->required();
  sub.add_option("--model", o->model, "model YAML file or preset name (default: the trace's model.preset)");
  sub.add_option("--set", o->sets, "override a model field, e.g. --set experts=32 (repeatable)");
  sub.add_option("--calibration", o->calibration,
                 "calibration file from `hecate-sim calibrate` (default: the one the topology names, if any)");
  std::string names, all;
  for (const auto& info : strategy::registry()) {
    all += all.empty() ? "" : ", ";
    all += info.name;
    names += fmt::format("\n    {:<9} {}", info.name, info.help);
    for (const auto& k : info.knobs)  // every knob with its default and domain, as checked
      names += fmt::format("\n        :{}={}  ({}) {}", k.name, k.value, k.domain.describe(), k.help);
  }
  sub.add_option("--strategy", o->strategies,
                 "comma-separated NAME[:KNOB=VALUE...] (default: every strategy):" + names);
  sub.add_option("--layout", o->layout,
                 "parallel layout [PRESET,]KEY=VALUE,...: tp, pp, dp (default: the GPUs left), ep, vpp, sp=on|off, "
                 "tp_span=node|any, dist_opt=on|off, recompute=none|selective|full, overlap_grad_reduce=on|off, "
                 "overlap_param_gather=on|off, bucket_size=N; ranks in Megatron-Core's "
                 "tp-cp-ep-dp-pp order (TP fastest); every strategy runs under a layout (" + all + "); without one a run is "
                 "tp=1,pp=1,ep=<the strategy's EP size>,dist_opt=off,overlap_grad_reduce=on; see docs/manual.md, Parallel "
                 "layouts (presets: deepseek-v3, mixtral-8x7b, gpt-oss-120b)");
  sub.add_option("--iterations", o->iterations, "iterations to simulate (default: the trace's records; cycles)")
      ->check(at_least(1));
  sub.add_option("--batch", o->batch,
                 "max-fit: the Hecate paper's batch rule: micro_batch = the largest candidate at which every compared "
                 "strategy (oracle and bound excepted) fits in GPU memory, probed over 3 iterations each; said in a note")
      ->check(CLI::IsMember({"max-fit"}));
  sub.add_option("--batch-candidates", o->batch_candidates,
                 "with --batch max-fit: the micro-batches to try, comma-separated (default 128,96,64,48,32,24,16,12,8,6,4,3,2,1)")
      ->delimiter(',')
      ->check(at_least(1));
  CLI::Option* seed = sub.add_option("--seed", o->seed, "random seed (default 1): splitting global-count traces over GPUs");
  CLI::Option* split =
      sub.add_option("--split", o->split, "how a global-count trace is split over GPUs: multinomial (seeded) | even")
          ->check(CLI::IsMember({"multinomial", "even"}));
  sub.add_option("--format", o->format, "table | json | csv")->check(CLI::IsMember({"table", "json", "csv"}));
  sub.add_option("--out", o->out, "write the result to FILE (atomically) instead of stdout");
  sub.add_option("--timeline", o->timeline,
                 "write the last iteration of every strategy as a Chrome trace (open in ui.perfetto.dev)");
  sub.add_option("--report", o->html, "write a self-contained HTML report with charts to FILE");
  sub.add_option("--network", o->network,
                 "network tier: analytic (default: coflows timed by their most loaded link; fast) | flow "
                 "(max-min fair flows shared by every concurrent collective: sees contention)")
      ->check(CLI::IsMember({"analytic", "flow"}));
  sub.add_option("--flow-precision", o->flow_precision,
                 "flow tier: merge flow completions projected within this fraction of their collective's "
                 "duration into one re-solve (0 = exact, one re-solve per completion; default 1e-3; errs slow "
                 "by about twice this)")
      ->check(in_range(0.0, 0.5));
  add_quiet_flag(sub, o->quiet);
  sub.callback([o, seed, split, &exit_code] {
    o->seed_given = seed->count() > 0;
    o->split_given = split->count() > 0;
    exit_code = run(*o);
  });
}

}  // namespace hs::cli
