#include "app/point_eval.hpp"

#include <fmt/format.h>
#include <map>
#include <optional>

#include "strategy/layout_strategy.hpp"
#include "strategy/runner.hpp"
#include "layout/parallel_layout.hpp"

namespace hs::app {

std::string ScenarioCache::id(const sweep::SweepPoint& p) {
  return p.topology + "\n" + p.trace + "\n" + p.model_file + "\n" + p.model_sets() + "\n" + p.calibration;
}

std::string ScenarioCache::resolve(const std::string& path) const {
  const std::filesystem::path p(path);
  if (p.is_absolute() || base_.empty()) return path;
  const auto joined = base_ / p;
  return std::filesystem::exists(joined) ? joined.lexically_normal().string() : path;
}

void ScenarioCache::load(const sweep::SweepPoint& p, uint64_t seed, const std::string& split) {
  const std::string k = id(p);
  if (map_.count(k)) return;
  ScenarioArgs a;
  a.topology = resolve(p.topology);
  a.trace = resolve(p.trace);
  if (!p.model_file.empty()) a.model = resolve(p.model_file);
  if (!p.calibration.empty()) a.calibration = resolve(p.calibration);
  for (const auto& [f, v] : p.model) a.sets.push_back(f + "=" + v);
  a.seed = seed;
  a.split = split;
  auto sc = load_scenario(a);
  for (const auto& w : sc->warnings.all()) warnings_.insert(to_string(w));
  map_[k] = std::move(sc);
}

namespace {

// The point's layout, parsed and resolved against its topology and model (InputError at the
// layout's place in the sweep file when it does not fit).
workload::ParallelLayout point_layout(const sweep::SweepPoint& p, const Scenario& sc) {
  auto l = workload::parse_parallel_layout(p.layout, p.layout_at);
  workload::resolve_layout(l, sc.topo->num_gpus(), sc.topo->num_gpus() / sc.topo->num_nodes(), *sc.model, p.layout_at);
  return l;
}

}  // namespace

void check_layouts(const std::vector<sweep::SweepPoint>& points, const ScenarioCache& cache) {
  struct Seen {
    bool fits = false;
    std::vector<Diagnostic> first_failure;
  };
  std::map<std::string, Seen> seen;  // by the layout's place in the file and text
  std::vector<std::string> order;
  for (const auto& p : points) {
    if (p.layout.empty()) continue;
    const std::string k = fmt::format("{}:{}:{}\n{}", p.layout_at.file, p.layout_at.line, p.layout_at.column, p.layout);
    auto [it, inserted] = seen.try_emplace(k);
    if (inserted) order.push_back(k);
    if (it->second.fits) continue;
    try {
      (void)point_layout(p, cache.get(p));
      it->second.fits = true;
    } catch (const InputError& e) {
      if (it->second.first_failure.empty()) it->second.first_failure = e.diagnostics();
    }
  }
  std::vector<Diagnostic> all;
  for (const auto& k : order)
    if (!seen[k].fits) all.insert(all.end(), seen[k].first_failure.begin(), seen[k].first_failure.end());
  if (!all.empty()) throw InputError(all);
}

double tokens_per_iteration(const workload::ModelSpec& m, const workload::ParallelLayout* layout, int gpus) {
  return static_cast<double>(m.tokens_per_gpu_iteration()) * (layout ? layout->dp : gpus);
}

sweep::Row evaluate(const sweep::SweepPoint& p, const ScenarioCache& cache, const Constraints& c) {
  sweep::Row row = sweep::row_of(p);
  const Scenario& sc = cache.get(p);
  try {
    strategy::Context ctx = sc.context(p.network == "flow", network::kDefaultFlowPrecision);
    ctx.seed = p.seed;
    std::optional<workload::ParallelLayout> layout;
    if (!p.layout.empty()) layout = point_layout(p, sc);
    const auto spec = strategy::parse_strategy_spec(p.spec());
    auto s = layout ? strategy::make_strategy(spec, ctx, *layout) : strategy::make_strategy(spec, ctx);
    const int iterations = p.iterations > 0 ? p.iterations : sc.loads->num_records();
    auto sum = strategy::run_strategy(*s, p.spec(), *sc.loads, iterations, sc.topo->gpu_model().memory.value());
    row.mean_ms = sum.mean * 1e3;
    row.p50_ms = sum.p50 * 1e3;
    row.p99_ms = sum.p99 * 1e3;
    const double tokens = tokens_per_iteration(*sc.model, layout ? &*layout : nullptr, sc.topo->num_gpus());
    row.tokens_per_s = sum.mean > 0 ? tokens / sum.mean : 0;
    row.peak_memory_gib = sum.peak_memory.total() / (1024.0 * 1024 * 1024);
    row.dropped_fraction = sum.dropped_fraction();
    row.fits = sum.fits_memory;
    row.feasible = (row.fits || !c.must_fit) && (c.peak_memory_cap <= 0 || sum.peak_memory.total() <= c.peak_memory_cap);
  } catch (const InputError& e) {
    // A strategy that does not apply to this setting (e.g. SmartMoE with one expert per GPU): a row
    // that says so, not a failed sweep.
    row.status = "error";
    row.error = e.diagnostics().empty() ? e.what() : e.diagnostics().front().message;
  }
  return row;
}

}  // namespace hs::app
