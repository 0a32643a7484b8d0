// Simulating one point of a sweep or tune: the inputs of every (topology, trace, model setting)
// loaded once (ScenarioCache, before any thread runs, then read-only), and evaluate(), which builds
// the point's strategy over them and turns its run into a result row. Shared by `sweep` and `tune`.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "app/scenario.hpp"
#include "layout/parallel_layout.hpp"
#include "sweep/sweep_points.hpp"
#include "sweep/sweep_results.hpp"
#include "sweep/sweep_spec.hpp"

namespace hs::app {

class ScenarioCache {
 public:
  explicit ScenarioCache(std::filesystem::path base) : base_(std::move(base)) {}
  // Relative paths are relative to `base` (the sweep file's folder); a name that is no file there
  // may be a preset or a path relative to the working directory.
  std::string resolve(const std::string& path) const;
  void load(const sweep::SweepPoint& p, uint64_t seed, const std::string& split = "multinomial");
  const Scenario& get(const sweep::SweepPoint& p) const { return *map_.at(id(p)); }
  const std::set<std::string>& warnings() const { return warnings_; }

 private:
  static std::string id(const sweep::SweepPoint& p);
  std::filesystem::path base_;
  std::map<std::string, std::unique_ptr<Scenario>> map_;
  std::set<std::string> warnings_;
};

// Constraints a row must meet to be feasible.
struct Constraints {
  bool must_fit = true;
  double peak_memory_cap = 0;  // bytes; 0: none
};

// A layout of the sweep that fits none of the (topology, model) settings it is combined with is an
// error at its place in the sweep file (InputError, every such layout reported); one that fits some
// of them gives rows with status "error" for the others.
void check_layouts(const std::vector<sweep::SweepPoint>& points, const ScenarioCache& cache);

// Runs the point (under its layout, if any); a strategy or layout that does not apply to the
// setting gives a row with status "error".
sweep::Row evaluate(const sweep::SweepPoint& p, const ScenarioCache& cache, const Constraints& c);

// Tokens trained per iteration over the cluster: every GPU's own without a layout; under one, each
// data-parallel replica's (its tp x pp GPUs share one stream of micro-batches). What a sweep row's
// tokens_per_s and run's throughput divide.
double tokens_per_iteration(const workload::ModelSpec& m, const workload::ParallelLayout* layout, int gpus);

}  // namespace hs::app
