// hecate-sim tune TOPOLOGY TRACE --strategy NAME[:KNOB=VALUE...] [--knobs K,K...] [--budget N]
//                [--jobs N] [--objective O] [--peak-memory SIZE] [--allow-oom] [--layout L] [--out PREFIX] ...
//
// Finds the strategy's best knobs at one setting by coordinate descent (sweep/tune.hpp) over every
// knob's candidate values as the registry declares them; knobs given on --strategy stay fixed.
// Prints the best setting, its gain over the defaults, the evaluations spent against the grid's
// size and the wall time; --out writes every evaluation as rows (JSONL + CSV, as sweep does).
#include <CLI/CLI.hpp>
#include <chrono>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "app/point_eval.hpp"
#include "cli/progress_options.hpp"
#include "strategy/strategy.hpp"
#include "sweep/parallel_map.hpp"
#include "sweep/tune.hpp"
#include "util/atomic_file.hpp"
#include "util/output_path.hpp"
#include "util/progress.hpp"
#include "util/units.hpp"

namespace hs::cli {

namespace {

struct TuneOptions {
  std::string calibration, layout;
  std::string topology, trace, model, strategy, knobs, objective = "mean_iteration_time", network = "analytic", out,
      peak_memory;
  std::vector<std::string> sets;
  int iterations = 0, budget = 0, jobs = 0;
  uint64_t seed = 1;
  bool allow_oom = false, quiet = false;
};

int run_tune(const TuneOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const strategy::StrategySpec fixed = strategy::parse_strategy_spec(o.strategy);
  const strategy::StrategyInfo* info = strategy::find_strategy(fixed.name);
  if (!info) throw InputError({"--strategy", 0, 0}, o.strategy, fmt::format("unknown strategy '{}'", fixed.name));
  for (const auto& [k, v] : fixed.knobs) {
    const strategy::Knob* kn = nullptr;
    for (const auto& x : info->knobs)
      if (x.name == k) kn = &x;
    if (!kn) throw InputError({"--strategy", 0, 0}, o.strategy, fmt::format("strategy '{}' has no knob '{}'", fixed.name, k));
    if (auto e = kn->domain.check(v)) throw InputError({"--strategy", 0, 0}, fixed.name + ":" + k, fmt::format("expected {}, got '{}'", *e, v));
  }
  std::set<std::string> only;
  if (!o.knobs.empty()) {
    size_t a = 0;
    while (a <= o.knobs.size()) {
      size_t b = o.knobs.find(',', a);
      std::string k = o.knobs.substr(a, b == std::string::npos ? std::string::npos : b - a);
      bool known = false;
      for (const auto& x : info->knobs) known = known || x.name == k;
      if (!known) throw InputError({"--knobs", 0, 0}, k, fmt::format("strategy '{}' has no knob '{}'", fixed.name, k));
      only.insert(k);
      if (b == std::string::npos) break;
      a = b + 1;
    }
  }
  // Axes: every knob with candidates, not fixed, and (with --knobs) named. The start: the defaults.
  std::vector<sweep::TuneAxis> axes;
  sweep::Setting start;
  for (const auto& k : info->knobs) {
    auto f = fixed.knobs.find(k.name);
    start.emplace_back(k.name, f != fixed.knobs.end() ? k.domain.canonical(f->second) : k.value);
    if (f != fixed.knobs.end() || (!only.empty() && !only.count(k.name))) continue;
    auto c = k.domain.candidates();
    if (c.size() > 1) axes.push_back({k.name, c});
  }
  if (axes.empty()) throw InputError({"--strategy", 0, 0}, o.strategy, "no knob left to tune");
  // Outputs that cannot be written fail now, before any input is loaded or setting evaluated.
  if (!o.out.empty()) {
    check_output_path(o.out + ".jsonl", "--out");
    check_output_path(o.out + ".csv", "--out");
  }

  sweep::SweepPoint base;
  base.topology = o.topology;
  base.trace = o.trace;
  base.model_file = o.model;
  base.calibration = o.calibration;
  base.layout = o.layout;
  base.layout_at = {"--layout", 0, 0};
  for (const auto& s : o.sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos) throw InputError({"--set", 0, 0}, s, "expected FIELD=VALUE");
    base.model.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  base.network = o.network;
  base.strategy = fixed.name;
  base.iterations = o.iterations;
  base.seed = o.seed;
  ScenarioCache cache("");
  cache.load(base, o.seed);
  check_layouts({base}, cache);  // a layout that does not fit the setting fails here, exit 2
  for (const auto& w : cache.warnings()) fmt::print(stderr, "{}\n", w);
  Constraints c{!o.allow_oom, 0};
  if (!o.peak_memory.empty()) {
    auto v = parse_quantity(o.peak_memory, Dimension::kBytes);
    if (!v || *v <= 0) throw InputError({"--peak-memory", 0, 0}, o.peak_memory, "expected a size such as 60GiB");
    c.peak_memory_cap = *v;
  }
  const sweep::Objective obj = o.objective == "p99_iteration_time" ? sweep::Objective::kP99Time
                               : o.objective == "tokens_per_second" ? sweep::Objective::kTokensPerSecond
                                                                    : sweep::Objective::kMeanTime;
  const int jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  int index = 0;
  Progress progress("tune", "evaluations", o.budget > 0 ? static_cast<size_t>(o.budget) : 0, progress_settings(o.quiet));
  std::optional<sweep::Row> best;
  auto best_note = [&] {
    return best ? fmt::format("best so far {:.6g} {} {}", sweep::objective_display(*best, obj), sweep::objective_unit(obj), best->spec)
                : std::string("no feasible setting yet");
  };
  auto eval = [&](const std::vector<sweep::Setting>& batch) {
    std::vector<sweep::SweepPoint> pts;
    for (const auto& s : batch) {
      sweep::SweepPoint p = base;
      p.knobs = s;
      p.index = index++;
      p.key = sweep::point_key(p.canonical());
      pts.push_back(std::move(p));
    }
    std::vector<sweep::Row> rows;
    sweep::parallel_map_ordered<sweep::Row>(
        pts.size(), jobs, [&](size_t i) { return evaluate(pts[i], cache, c); },
        [&](size_t, sweep::Row&& r) {
          if (r.feasible && (!best || sweep::objective_value(r, obj) < sweep::objective_value(*best, obj))) best = r;
          progress.update(static_cast<size_t>(r.index + 1), best_note());
          rows.push_back(std::move(r));
        });
    progress.step(fmt::format("{} evaluations, {}", index, best_note()));
    return rows;
  };
  sweep::TuneOutcome t = sweep::coordinate_descent(axes, start, obj, o.budget, eval);
  progress.finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!o.out.empty()) {
    std::vector<std::string> cols;
    for (const auto& k : info->knobs) cols.push_back(k.name);
    std::string jsonl, csv = sweep::csv_header(cols);
    for (const auto& r : t.trail) {
      jsonl += sweep::to_json_line(r);
      csv += sweep::to_csv_line(r, cols);
    }
    write_file_atomically(o.out + ".jsonl", jsonl);
    write_file_atomically(o.out + ".csv", csv);
  }
  const char* unit = sweep::objective_unit(obj);
  std::string s = fmt::format("tune {} on {} with {} ({}; objective {})\n", fixed.name, o.topology, o.trace,
                              o.network, sweep::objective_name(obj));
  if (!t.found) {
    s += "no feasible setting found\n";
  } else {
    const double vb = sweep::objective_display(t.best, obj), vd = sweep::objective_display(t.start, obj);
    std::string changed;
    for (size_t i = 0; i < t.best.knobs.size(); ++i)
      if (t.best.knobs[i].second != start[i].second)
        changed += fmt::format("{}{}={}", changed.empty() ? "" : ":", t.best.knobs[i].first, t.best.knobs[i].second);
    s += fmt::format("best        {}:{}\n", fixed.name, changed.empty() ? "(the defaults)" : changed);
    s += fmt::format("            {:.6g} {}, peak {:.2f} GiB\n", vb, unit, t.best.peak_memory_gib);
    if (t.start.status == "ok")
      s += fmt::format("defaults    {:.6g} {}, peak {:.2f} GiB{}; gain {:.3f}x\n", vd, unit, t.start.peak_memory_gib,
                       t.start.feasible ? "" : " (infeasible)",
                       obj == sweep::Objective::kTokensPerSecond ? vb / vd : vd / vb);
  }
  s += fmt::format("evaluations {} of a {:.0f}-point grid over {} knobs, {} round(s), {}\n", t.trail.size(), t.grid_size,
                   axes.size(), t.rounds, t.converged ? "converged (no single-knob move improves)" : "budget spent");
  s += fmt::format("wall time   {:.2f} s on {} job(s)\n", wall, jobs);
  fmt::print("{}", s);
  return 0;
}

}  // namespace

void setup_tune(CLI::App& sub, int& exit_code) {
  auto o = std::make_shared<TuneOptions>();
  sub.add_option("TOPOLOGY", o->topology, "topology YAML file or preset name")->required();
  sub.add_option("TRACE", o->trace, "expert-load trace (.json or .json.gz)")->required();
  sub.add_option("--strategy", o->strategy, "NAME[:KNOB=VALUE...]: the strategy to tune; knobs given here stay fixed")
      ->required();
  sub.add_option("--knobs", o->knobs, "comma-separated knobs to tune (default: every knob with candidate values)");
  sub.add_option("--budget", o->budget, "at most this many evaluations (default: until no single-knob move improves)")
      ->check(at_least(1));
  sub.add_option("--jobs", o->jobs, "threads (default: every core); the result is the same for any number")
      ->check(at_least(1));
  sub.add_option("--objective", o->objective, "mean_iteration_time | p99_iteration_time | tokens_per_second")
      ->check(CLI::IsMember({"mean_iteration_time", "p99_iteration_time", "tokens_per_second"}));
  sub.add_option("--peak-memory", o->peak_memory, "constraint: peak memory per GPU at most SIZE (e.g. 60GiB)");
  sub.add_flag("--allow-oom", o->allow_oom, "accept settings whose peak memory exceeds the GPU's");
  sub.add_option("--model", o->model, "model YAML file or preset name (default: the trace's model.preset)");
  sub.add_option("--set", o->sets, "override a model field, e.g. --set micro_batch=4 (repeatable)");
  sub.add_option("--calibration", o->calibration, "calibration file from `hecate-sim calibrate`");
  sub.add_option("--layout", o->layout, "parallel layout [PRESET,]KEY=VALUE,... as run takes it (docs/manual.md, Parallel layouts)");
  sub.add_option("--iterations", o->iterations, "iterations per evaluation (default: the trace's records)")
      ->check(at_least(1));
  sub.add_option("--seed", o->seed, "random seed (default 1)");
  sub.add_option("--network", o->network, "analytic | flow")->check(CLI::IsMember({"analytic", "flow"}));
  sub.add_option("--out", o->out, "write every evaluation to PREFIX.jsonl and PREFIX.csv");
  add_quiet_flag(sub, o->quiet);
  sub.callback([o, &exit_code] { exit_code = run_tune(*o); });
}

}  // namespace hs::cli
