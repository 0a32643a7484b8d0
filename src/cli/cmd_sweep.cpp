// hecate-sim sweep SWEEP.yaml [--out PREFIX] [--jobs N] [--shard K/N]
//
// Expands the sweep's points, skips those already in PREFIX.jsonl (resume), simulates the rest on N
// threads (inputs parsed once per topology x trace x model setting, shared read-only), appends
// each row to PREFIX.jsonl and PREFIX.csv in sweep order as it completes, and prints the best
// point per strategy, its gain over the strategy's defaults and the time-vs-memory Pareto front.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "cli/command.hpp"
#include "app/mpi_sweep.hpp"
#include "cli/option_checks.hpp"
#include "app/point_eval.hpp"
#include "app/sweep_batch.hpp"
#include "cli/progress_options.hpp"
#include "strategy/runner.hpp"
#include "sweep/parallel_map.hpp"
#include "sweep/sweep_html.hpp"
#include "sweep/sweep_points.hpp"
#include "sweep/sweep_results.hpp"
#include "sweep/sweep_spec.hpp"
#include "util/atomic_file.hpp"
#include "util/output_path.hpp"
#include "util/progress.hpp"

namespace hs::cli {

namespace {

struct SweepOptions {
  std::string file, out, shard;
  std::vector<std::string> merge;
  bool mpi = false;
  std::string report, heatmap_arg;
  std::pair<std::string, std::string> heatmap;
  int jobs = 0;
  bool quiet = false;
};

// The sweep's progress: points done, rate, ETA and the best point so far.
class SweepProgress {
 public:
  SweepProgress(size_t total, const sweep::SweepSpec& s, ProgressSettings settings)
      : progress_("sweep", "points", total, settings), spec_(s) {}
  void point(const sweep::Row& r) {
    ++done_;
    if (r.feasible && (!best_ || sweep::objective_value(r, spec_.objective) < sweep::objective_value(*best_, spec_.objective)))
      best_ = r;
    progress_.update(done_, best_ ? fmt::format("best {:.6g} {} {}", sweep::objective_display(*best_, spec_.objective),
                                                sweep::objective_unit(spec_.objective), best_->spec)
                                  : std::string("no feasible point yet"));
  }
  void finish() { progress_.finish(); }

 private:
  Progress progress_;
  const sweep::SweepSpec& spec_;
  size_t done_ = 0;
  std::optional<sweep::Row> best_;
};

std::pair<int, int> parse_shard(const std::string& text) {
  std::string t = text;
  if (t.empty()) {
    // Slurm numbers array tasks from --array's first index (often 0, sometimes 1).
    const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
    const char* n = std::getenv("SLURM_ARRAY_TASK_COUNT");
    const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
    if (!id || !n) return {0, 1};
    t = fmt::format("{}/{}", std::atoll(id) - (min ? std::atoll(min) : 0), n);
  }
  int k = -1, n = 0;
  char slash = 0;
  std::istringstream in(t);
  if (!(in >> k >> slash >> n) || slash != '/' || n < 1 || k < 0 || k >= n || !in.eof())
    throw InputError({"--shard", 0, 0}, t, "expected K/N with 0 <= K < N (e.g. 3/16)");
  return {k, n};
}

void write_all(const std::string& prefix, std::vector<sweep::Row> rows, const std::vector<std::string>& cols) {
  sweep::sort_rows(rows);
  std::string jsonl, csv = sweep::csv_header(cols);
  for (const auto& r : rows) {
    jsonl += sweep::to_json_line(r);
    csv += sweep::to_csv_line(r, cols);
  }
  write_file_atomically(prefix + ".jsonl", jsonl);
  write_file_atomically(prefix + ".csv", csv);
}

int coordinate(const SweepOptions& o, const sweep::SweepSpec& spec, const std::vector<sweep::SweepPoint>& points,
               const std::string& prefix, const std::vector<std::string>& cols, const ScenarioCache& cache,
               const Constraints& constraints, MpiSession* mpi);

int run_sweep(SweepOptions o) {
  // Every rank parses the sweep and loads its inputs, so bad input fails on all of them alike.
  std::unique_ptr<MpiSession> mpi;
  if (o.mpi) mpi = std::make_unique<MpiSession>();
  const bool worker = mpi && mpi->rank() > 0;
  const sweep::SweepSpec spec = sweep::parse_sweep(read_file(o.file), o.file);
  const auto [shard, shards] = parse_shard(o.shard);
  if (!o.heatmap_arg.empty()) {
    const auto comma = o.heatmap_arg.find(',');
    const auto cols = sweep::knob_columns(spec);
    auto known = [&](const std::string& k) { return std::find(cols.begin(), cols.end(), k) != cols.end(); };
    if (comma == std::string::npos || !known(o.heatmap_arg.substr(0, comma)) || !known(o.heatmap_arg.substr(comma + 1)))
      throw InputError({"--heatmap", 0, 0}, o.heatmap_arg,
                       fmt::format("expected two knobs the sweep varies, as KNOB,KNOB (it varies: {})", fmt::join(cols, ", ")));
    o.heatmap = {o.heatmap_arg.substr(0, comma), o.heatmap_arg.substr(comma + 1)};
  }
  std::string prefix = o.out;
  if (prefix.empty()) prefix = std::filesystem::path(o.file).stem().string();
  if (shards > 1) prefix += fmt::format(".shard{}-of-{}", shard, shards);
  // Outputs that cannot be written fail now, before any input is loaded or point simulated.
  if (!worker) {
    check_output_path(prefix + ".jsonl", "--out");
    check_output_path(prefix + ".csv", "--out");
    check_output_path(o.report, "--report");
  }
  // batch: max-fit is chosen on the whole grid, before a shard takes its points, so every shard and
  // rank agrees on each setting's micro_batch.
  std::vector<sweep::SweepPoint> grid = sweep::expand(spec);
  std::vector<std::string> batch_notes;
  if (spec.batch_max_fit) batch_notes = app::apply_max_fit_batch(grid, spec, ScenarioCache(std::filesystem::path(o.file).parent_path()));
  std::vector<sweep::SweepPoint> points;
  for (auto& p : grid)
    if (p.index % shards == shard) points.push_back(std::move(p));
  const auto cols = sweep::knob_columns(spec);
  ScenarioCache cache(std::filesystem::path(o.file).parent_path());
  const Constraints constraints{spec.must_fit, spec.peak_memory_cap};
  for (const auto& p : points) cache.load(p, spec.seed);
  check_layouts(points, cache);
  if (!worker) {
    for (const auto& w : cache.warnings()) fmt::print(stderr, "{}\n", w);
    for (const auto& n : batch_notes) fmt::print(stderr, "{}\n", n);
  }
  if (worker) {
    std::map<int, const sweep::SweepPoint*> by_index;
    for (const auto& p : points) by_index[p.index] = &p;
    mpi_work([&](int i) { return evaluate(*by_index.at(i), cache, constraints); });
    return 0;
  }
  try {
    return coordinate(o, spec, points, prefix, cols, cache, constraints, mpi.get());
  } catch (const InputError& e) {
    if (!mpi || mpi->size() == 1) throw;
    for (const auto& d : e.diagnostics()) fmt::print(stderr, "{}\n", to_string(d));
    mpi->abort(kExitBadInput);
  } catch (const std::exception& e) {
    if (!mpi || mpi->size() == 1) throw;
    fmt::print(stderr, "hecate-sim: error: {}\n", e.what());
    mpi->abort(1);
  }
}

// Rank 0 (or a local run): resume, run what is missing, summarize.
int coordinate(const SweepOptions& o, const sweep::SweepSpec& spec, const std::vector<sweep::SweepPoint>& points,
               const std::string& prefix, const std::vector<std::string>& cols, const ScenarioCache& cache,
               const Constraints& constraints, MpiSession* mpi) {
  const auto shard_n = parse_shard(o.shard);
  const int shard = shard_n.first, shards = shard_n.second;

  // Resume: keep every complete row already written; rows of points no longer in the sweep stay in
  // the files but out of the summary.
  // --merge: the rows of other runs of this sweep (shards of a job array) count as already written.
  int torn = 0;
  std::vector<sweep::Row> rows;
  std::set<std::string> have;
  std::vector<std::string> sources = o.merge;
  sources.insert(sources.begin(), prefix + ".jsonl");
  for (const auto& src : sources) {
    if (src != sources.front() && !std::filesystem::exists(src))
      throw InputError({src, 0, 0}, "--merge", "no such results file");
    for (auto& r : sweep::read_rows(src, &torn)) {
      if (!have.insert(r.key).second) continue;
      rows.push_back(std::move(r));
    }
    if (torn > 0) fmt::print(stderr, "sweep: {} incomplete line(s) in {} dropped (an interrupted write)\n", torn, src);
  }
  std::vector<sweep::SweepPoint> todo;
  for (const auto& p : points)
    if (!have.count(p.key)) todo.push_back(p);
  if (todo.size() < points.size())
    fmt::print(stderr, "sweep: resuming, {} of {} points already in {}.jsonl\n", points.size() - todo.size(), points.size(), prefix);
  write_all(prefix, rows, cols);


  const int jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::ofstream jsonl(prefix + ".jsonl", std::ios::app | std::ios::binary), csv(prefix + ".csv", std::ios::app | std::ios::binary);
  if (!jsonl || !csv) throw std::runtime_error(fmt::format("cannot append to {}.jsonl / {}.csv", prefix, prefix));
  auto append = [&](const sweep::Row& r) {
    jsonl << sweep::to_json_line(r) << std::flush;
    csv << sweep::to_csv_line(r, cols) << std::flush;
    if (!jsonl || !csv) throw std::runtime_error(fmt::format("writing {}.jsonl / {}.csv failed", prefix, prefix));
    rows.push_back(r);
  };
  SweepProgress progress(todo.size(), spec, progress_settings(o.quiet));
  if (mpi) {
    std::vector<int> indices;
    std::map<int, const sweep::SweepPoint*> by_index;
    for (const auto& p : todo) indices.push_back(p.index), by_index[p.index] = &p;
    mpi_coordinate(
        indices, [&](int i) { return evaluate(*by_index.at(i), cache, constraints); },
        [&](sweep::Row&& r) {
          append(r);
          progress.point(r);
        });
  } else {
    sweep::parallel_map_ordered<sweep::Row>(
        todo.size(), jobs, [&](size_t i) { return evaluate(todo[i], cache, constraints); },
        [&](size_t, sweep::Row&& r) {
          append(r);
          progress.point(r);
        });
  }

  // Each strategy's defaults at its best point's setting, for the gain the best knobs bring.
  std::set<std::string> point_keys;
  for (const auto& p : points) point_keys.insert(p.key);
  std::vector<sweep::Row> current;
  for (const auto& r : rows)
    if (point_keys.count(r.key)) current.push_back(r);
  sweep::Summary sum = sweep::summarize(current, spec);
  std::vector<sweep::SweepPoint> defaults;
  for (const auto& b : sum.best) {
    for (const auto& p : points)
      if (p.key == b.key) {
        sweep::SweepPoint d = sweep::defaults_of(p);
        if (!have.count(d.key) && std::none_of(defaults.begin(), defaults.end(), [&](const auto& x) { return x.key == d.key; }))
          defaults.push_back(d);
      }
  }
  {
    std::set<std::string> now;
    for (const auto& r : rows) now.insert(r.key);
    std::erase_if(defaults, [&](const sweep::SweepPoint& d) { return now.count(d.key) > 0; });
  }
  sweep::parallel_map_ordered<sweep::Row>(
      defaults.size(), jobs, [&](size_t i) { return evaluate(defaults[i], cache, constraints); },
      [&](size_t, sweep::Row&& r) { append(r); });
  progress.finish();
  jsonl.close();
  csv.close();
  // Defaults rows are kept for the best points only, so the files do not depend on which shard or
  // earlier run found which intermediate best.
  std::set<std::string> all_defaults, best_defaults;
  for (const auto& p : points) all_defaults.insert(sweep::defaults_of(p).key);
  for (const auto& b : sum.best)
    for (const auto& p : points)
      if (p.key == b.key) best_defaults.insert(sweep::defaults_of(p).key);
  std::erase_if(rows, [&](const sweep::Row& r) {
    return !point_keys.count(r.key) && all_defaults.count(r.key) && !best_defaults.count(r.key);
  });
  write_all(prefix, rows, cols);
  if (!o.report.empty()) {
    sweep::SweepReportInput in;
    in.spec = &spec;
    in.rows = current;
    sweep::sort_rows(in.rows);
    for (const auto& r : rows)
      if (r.knobs.empty() && r.status == "ok") in.defaults.push_back(r);
    in.summary = sum;
    in.heatmap = o.heatmap;
    write_file_atomically(o.report, sweep::render_sweep_html(in));
  }

  const char* unit = sweep::objective_unit(spec.objective);
  std::string out = fmt::format("sweep {}: {} points{}, objective {}, results in {}.jsonl and {}.csv\n\n", o.file,
                                points.size(), shards > 1 ? fmt::format(" (shard {}/{})", shard, shards) : "",
                                sweep::objective_name(spec.objective), prefix, prefix);
  int errors = 0, infeasible = 0;
  for (const auto& r : current) errors += r.status != "ok", infeasible += r.status == "ok" && !r.feasible;
  if (errors || infeasible) out += fmt::format("{} points could not run, {} broke a constraint\n\n", errors, infeasible);
  out += fmt::format("best point per strategy\n{:<56} {:>12} {:>9} {:>14}\n", "strategy", unit, "peak GiB", "vs defaults");
  for (const auto& b : sum.best) {
    std::string gain = "-";
    for (const auto& p : points)
      if (p.key == b.key) {
        const std::string dk = sweep::defaults_of(p).key;
        for (const auto& r : rows)
          if (r.key == dk && r.status == "ok") {
            const double vb = sweep::objective_display(b, spec.objective), vd = sweep::objective_display(r, spec.objective);
            gain = spec.objective == sweep::Objective::kTokensPerSecond ? fmt::format("{:.3f}x", vb / vd)
                                                                        : fmt::format("{:.3f}x", vd / vb);
          }
      }
    out += fmt::format("{:<56} {:>12.6g} {:>9.2f} {:>14}\n", b.spec, sweep::objective_display(b, spec.objective),
                       b.peak_memory_gib, gain);
    out += fmt::format("  at {} | {} | {}{}{}\n", b.topology, b.trace, b.network, b.model.empty() ? "" : " | " + b.model,
                       b.layout.empty() ? "" : " | layout " + b.layout);
  }
  out += fmt::format("\nPareto front (peak memory vs {}): no other point is better on both\n", sweep::objective_name(spec.objective));
  for (const auto& p : sum.pareto)
    out += fmt::format("{:>9.2f} GiB {:>12.6g} {}  {}{}\n", p.peak_memory_gib, sweep::objective_display(p, spec.objective), unit,
                       p.spec, p.layout.empty() ? "" : " (layout " + p.layout + ")");
  fmt::print("{}", out);
  return 0;
}

}  // namespace

void setup_sweep(CLI::App& sub, int& exit_code) {
  auto o = std::make_shared<SweepOptions>();
  sub.add_option("SWEEP", o->file, "sweep file (schema hecate-sim/sweep@1)")->required();
  sub.add_option("--out", o->out, "results go to PREFIX.jsonl and PREFIX.csv (default: the sweep file's name, here); "
                                  "points already there are skipped (resume)");
  sub.add_option("--jobs", o->jobs, "threads (default: every core); results are the same for any number")
      ->check(at_least(1));
  sub.add_option("--shard", o->shard, "run only points with index % N == K, into PREFIX.shardK-of-N.* "
                                      "(default: SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT when set)");
  sub.add_option("--merge", o->merge, "results files (PREFIX.shardK-of-N.jsonl) of other runs of this sweep to merge in: "
                                    "their points are not run again");
  sub.add_option("--report", o->report, "also write a self-contained HTML report (Pareto front, heat map, each knob's effect)");
  sub.add_option("--heatmap", o->heatmap_arg, "KNOB,KNOB: the report's heat map axes (default: the two knobs with the most values)");
  sub.add_flag("--mpi", o->mpi, "spread the points over MPI ranks (launch with mpirun -np N or srun): rank 0 "
                               "writes the files, the others simulate; same files as a local run");
  add_quiet_flag(sub, o->quiet);
  sub.callback([o, &exit_code] { exit_code = run_sweep(*o); });
}

}  // namespace hs::cli
