// Simulation speed: wall (and process CPU) time of N iterations of a strategy on a preset topology and model, with
// distinct skewed loads every iteration (so nothing is re-used), median of several repetitions.
// Usage: iteration_bench [--trace TRACE] [--set FIELD=VALUE]... TOPOLOGY.yaml MODEL.yaml [iterations=1000]
//        [strategy=ep] [reps=5] [analytic|flow] [flow precision=1e-3]
// --trace takes the loads from an expert-load trace instead (as `run` does: a global-count trace is
// split over the GPUs multinomially, seed 1, inside the timed loop, since a run pays for it every
// iteration); --set overrides a model field (e.g. experts=1024).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

#include "cost/compute_cost.hpp"
#include "strategy/runner.hpp"
#include "strategy/strategy.hpp"
#include "topology/topology_loader.hpp"
#include "strategy/iteration_loads.hpp"
#include "util/rng.hpp"
#include "workload/model_spec.hpp"
#include "workload/trace_io.hpp"

using namespace hs;

int main(int argc_in, char** argv_in) {
  std::string trace_file;
  std::vector<std::string> sets;
  std::vector<char*> args{argv_in[0]};
  for (int i = 1; i < argc_in; ++i) {
    const std::string a = argv_in[i];
    if (a == "--trace" && i + 1 < argc_in) trace_file = argv_in[++i];
    else if (a == "--set" && i + 1 < argc_in) sets.push_back(argv_in[++i]);
    else args.push_back(argv_in[i]);
  }
  const int argc = static_cast<int>(args.size());
  char** argv = args.data();
  if (argc < 3) {
    fmt::print(stderr, "usage: {} TOPOLOGY.yaml MODEL.yaml [iterations] [strategy] [reps]\n", argv[0]);
    return 2;
  }
  const int iterations = argc > 3 ? std::stoi(argv[3]) : 1000;
  const std::string strat = argc > 4 ? argv[4] : "ep";
  const int reps = argc > 5 ? std::stoi(argv[5]) : 5;
  const bool flow = argc > 6 && std::string(argv[6]) == "flow";
  const double precision = argc > 7 ? std::stod(argv[7]) : network::kDefaultFlowPrecision;
  try {
    auto topo = topology::load_topology_file(argv[1]);
    auto model = workload::load_model_file(argv[2], sets);
    cost::resolve_attention(model, topo.gpu_model());
    const int n = topo.num_gpus(), E = model.experts, L = model.moe_layers();
    // Loads: log-normal popularity (sigma 1) with AR(1) drift, per-source shares equal; counts as
    // expected values (the simulator takes fractional counts).
    Rng rng(42);
    std::vector<double> logp(static_cast<size_t>(L) * E);
    for (auto& x : logp) x = rng.normal();
    std::vector<std::vector<double>> loads(trace_file.empty() ? iterations : 0);
    const double tokens = static_cast<double>(model.tokens_per_gpu_iteration()) * model.top_k;
    for (int it = 0; it < (trace_file.empty() ? iterations : 0); ++it) {
      for (auto& x : logp) x = 0.97 * x + 0.1 * rng.normal();
      auto& v = loads[it];
      v.assign(static_cast<size_t>(L) * n * E, 0.0);
      for (int l = 0; l < L; ++l) {
        double z = 0;
        for (int e = 0; e < E; ++e) z += std::exp(logp[static_cast<size_t>(l) * E + e]);
        for (int s = 0; s < n; ++s)
          for (int e = 0; e < E; ++e)
            v[(static_cast<size_t>(l) * n + s) * E + e] = tokens * std::exp(logp[static_cast<size_t>(l) * E + e]) / z;
      }
    }
    std::unique_ptr<workload::Trace> trace;
    std::unique_ptr<strategy::IterationLoads> from_trace;
    Diagnostics warnings;
    if (!trace_file.empty()) {
      trace = std::make_unique<workload::Trace>(workload::read_trace(trace_file));
      from_trace = std::make_unique<strategy::IterationLoads>(*trace, model, n, trace_file, warnings);
    }
    strategy::CountBuffers scratch;
    cost::ComputeCost cc(topo.gpu_model(), model);
    strategy::Context ctx{topo, model, cc, 1, flow, precision};
    ctx.interference = topo.gpu_model().interference;
    std::vector<double> walls, cpus;  // wall and process CPU seconds per run (CPU: unaffected by other load)
    double mean_iter = 0;
    for (int r = 0; r < reps; ++r) {
      auto s = strategy::make_strategy(strategy::parse_strategy_spec(strat), ctx);
      const std::clock_t c0 = std::clock();
      auto t0 = std::chrono::steady_clock::now();
      double sum = 0;
      for (int it = 0; it < iterations; ++it) {
        if (from_trace) {
          sum += s->simulate(strategy::iteration_counts(*from_trace, it % from_trace->num_records(), scratch)).time;
        } else {
          sum += s->simulate(loads[it]).time;
        }
      }
      auto t1 = std::chrono::steady_clock::now();
      walls.push_back(std::chrono::duration<double>(t1 - t0).count());
      cpus.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
      mean_iter = sum / iterations;
    }
    std::sort(walls.begin(), walls.end());
    std::sort(cpus.begin(), cpus.end());
    fmt::print("{} iterations of {} ({}{} on {} GPUs, {} tier{}): median {:.3f} s over {} runs (min {:.3f}, max {:.3f}); "
               "{:.1f} us per iteration ({:.1f} us CPU); simulated mean iteration {:.3f} ms\n",
               iterations, strat, model.name, model.experts != 0 ? fmt::format(", {} experts", model.experts) : "", n,
               flow ? fmt::format("flow (precision {:g})", precision) : "analytic",
               trace_file.empty() ? "" : ", loads split from a trace", walls[walls.size() / 2], reps, walls.front(), walls.back(),
               walls[walls.size() / 2] / iterations * 1e6, cpus[cpus.size() / 2] / iterations * 1e6, mean_iter * 1e3);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 2;
  }
  return 0;
}
