#include "cli/point_eval.hpp"

#include "strategy/runner.hpp"

namespace hs::cli {

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

sweep::Row evaluate(const sweep::SweepPoint& p, const ScenarioCache& cache, const Constraints& c) {
  sweep::Row row = sweep::row_of(p);
  const Scenario& sc = cache.get(p);
  try {
    strategy::Context ctx = sc.context(p.network == "flow", network::kDefaultFlowPrecision);
    ctx.seed = p.seed;
    auto s = strategy::make_strategy(strategy::parse_strategy_spec(p.spec()), ctx);
    const int iterations = p.iterations > 0 ? p.iterations : sc.loads->num_records();
    auto sum = strategy::run_strategy(*s, p.spec(), *sc.loads, iterations, sc.topo->gpu_model().memory.value());
    row.mean_ms = sum.mean * 1e3;
    row.p50_ms = sum.p50 * 1e3;
    row.p99_ms = sum.p99 * 1e3;
    const double tokens = static_cast<double>(sc.model->tokens_per_gpu_iteration()) * sc.topo->num_gpus();
    row.tokens_per_s = sum.mean > 0 ? tokens / sum.mean : 0;
    row.peak_memory_gib = sum.peak_memory.total() / (1024.0 * 1024 * 1024);
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

}  // namespace hs::cli
