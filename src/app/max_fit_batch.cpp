#include "app/max_fit_batch.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <memory>

#include "layout/parallel_layout.hpp"
#include "strategy/layout_strategy.hpp"
#include "strategy/runner.hpp"
#include "util/diagnostics.hpp"

namespace hs::app {

namespace {

bool reference(const strategy::StrategySpec& s) { return s.name == "oracle" || s.name == "bound"; }

// Every compared strategy run for the probe's iterations at `mb`; the first that does not fit says why.
MaxFitProbe probe(const MaxFitRequest& r, int mb) {
  ScenarioArgs a = r.args;
  a.sets.push_back(fmt::format("micro_batch={}", mb));
  MaxFitProbe p{mb, true, ""};
  std::unique_ptr<Scenario> sc;
  try {
    sc = load_scenario(a);
  } catch (const InputError& e) {  // e.g. tokens per GPU beyond what the trace or layout allows
    return {mb, false, fmt::format("the inputs refuse it: {}", e.diagnostics().front().message)};
  }
  strategy::Context ctx = sc->context(r.flow, r.flow_precision);
  ctx.seed = a.seed;
  std::optional<workload::ParallelLayout> layout;
  if (!r.layout.empty()) {
    const SourceLocation where{"--layout", 0, 0};
    try {
      layout = workload::parse_parallel_layout(r.layout, where);
      workload::resolve_layout(*layout, sc->topo->num_gpus(), sc->topo->num_gpus() / sc->topo->num_nodes(), *sc->model,
                               where);
    } catch (const InputError& e) {
      return {mb, false, fmt::format("the layout refuses it: {}", e.diagnostics().front().message)};
    }
  }
  const double memory = sc->topo->gpu_model().memory.value();
  for (const auto& spec : r.specs) {
    if (reference(spec)) continue;
    std::unique_ptr<strategy::Strategy> s;
    try {
      s = layout ? strategy::make_strategy(spec, ctx, *layout) : strategy::make_strategy(spec, ctx);
    } catch (const InputError& e) {
      return {mb, false, fmt::format("{} cannot run: {}", spec.full, e.diagnostics().front().message)};
    }
    const auto sum = strategy::run_strategy(*s, spec.full, *sc->loads, r.probe_iterations, memory, nullptr, {});
    if (!sum.fits_memory) {
      p.fits = false;
      p.why = fmt::format("{} needs {:.2f} GiB of {:.2f} GiB", spec.full, sum.peak_memory.total() / (1024.0 * 1024 * 1024),
                          memory / (1024.0 * 1024 * 1024));
      return p;
    }
  }
  return p;
}

}  // namespace

MaxFitResult max_fit_batch(const MaxFitRequest& r) {
  for (const auto& s : r.args.sets)
    if (s.rfind("micro_batch=", 0) == 0)
      throw InputError({"--batch", 0, 0}, "batch",
                       "--batch max-fit chooses micro_batch itself: drop --set " + s);
  std::vector<int> c = r.candidates.empty() ? kDefaultCandidates : r.candidates;
  for (int x : c)
    if (x < 1) throw InputError({"--batch", 0, 0}, "batch", fmt::format("a candidate micro-batch must be at least 1, got {}", x));
  std::sort(c.begin(), c.end(), std::greater<>());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  MaxFitResult out;
  for (int mb : c) {
    out.probes.push_back(probe(r, mb));
    if (out.probes.back().fits) {
      out.micro_batch = mb;
      break;
    }
  }
  return out;
}

}  // namespace hs::app
