// hecate-sim trace validate|gen|stats|import
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/presets.hpp"
#include "workload/model_spec.hpp"
#include "workload/trace_generator.hpp"
#include "util/diagnostics.hpp"
#include "workload/trace_io.hpp"

namespace hs::cli {

void setup_trace(CLI::App& sub, int& exit_code) {
  sub.require_subcommand(1);
  auto* validate = sub.add_subcommand("validate", "check a trace file against format v1 and its invariants");
  auto file = std::make_shared<std::string>();
  validate->add_option("FILE", *file, "trace (.json or .json.gz)")->required();
  validate->callback([file, &exit_code] {
    auto t = workload::read_trace(*file);
    fmt::print("{}: ok: {} records, {} MoE layers, {} experts, top-{}, {} sources x {} tokens{}\n", *file,
               t.records.size(), t.moe_layers, t.experts, t.top_k, t.sources, t.tokens_per_source,
               t.per_source() ? "" : " (global counts)");
    exit_code = 0;
  });

  struct GenOptions {
    std::string model, preset = "aux_loss", out;
    int sources = 0, iterations = 100;
    uint64_t seed = 1;
    std::vector<std::string> sets, model_sets;
  };
  auto g = std::make_shared<GenOptions>();
  auto* gen = sub.add_subcommand("gen", "generate a synthetic expert-load trace (log-normal popularity, AR(1) drift, bursts)");
  gen->add_option("--model", g->model, "model YAML file or preset name")->required();
  gen->add_option("--sources", g->sources, "token sources (GPUs)")->required()->check(CLI::Range(1, 1 << 20));
  gen->add_option("--iterations", g->iterations, "records to generate")->check(CLI::Range(1, 1 << 24));
  gen->add_option("--preset", g->preset, "uniform | aux_loss | aux_free | concentrated | collapsed");
  gen->add_option("--set", g->sets, "override a generator parameter, e.g. --set sigma=0.5 (repeatable)");
  gen->add_option("--model-set", g->model_sets, "override a model field, e.g. --model-set experts=32 (repeatable)");
  gen->add_option("--seed", g->seed, "random seed (default 1)");
  gen->add_option("-o,--out", g->out, "output file (.json or .json.gz), written atomically")->required();
  gen->callback([g, &exit_code] {
    auto params = workload::GeneratorParams::preset(g->preset);
    if (!params)
      throw InputError({"--preset", 0, 0}, g->preset,
                       fmt::format("unknown preset (presets: {})", fmt::join(workload::GeneratorParams::preset_names(), ", ")));
    for (const auto& kv : g->sets) {
      const auto eq = kv.find('=');
      double v = 0;
      bool ok = eq != std::string::npos;
      if (ok) {
        try {
          size_t used = 0;
          v = std::stod(kv.substr(eq + 1), &used);
          ok = used == kv.size() - eq - 1 && std::isfinite(v);
        } catch (const std::exception&) {
          ok = false;
        }
      }
      if (!ok) throw InputError({"--set", 0, 0}, kv, "expected NAME=NUMBER, e.g. sigma=0.5");
      if (!params->set(kv.substr(0, eq), v))
        throw InputError({"--set", 0, 0}, kv.substr(0, eq),
                         fmt::format("unknown generator parameter (parameters: {})",
                                     fmt::join(workload::GeneratorParams::names(), ", ")));
    }
    auto in = resolve_input(g->model, "models");
    auto model = workload::load_model(in.text, in.source, g->model_sets);
    const std::string preset_name = in.source.rfind("preset:", 0) == 0 ? in.source.substr(7) : model.name;
    auto t = workload::generate_trace(model, preset_name, g->sources, g->iterations, *params, g->preset, g->seed);
    workload::write_trace(t, g->out);
    fmt::print(stderr, "{}: {} records, {} MoE layers x {} sources x {} experts ({} preset, seed {})\n", g->out,
               t.records.size(), t.moe_layers, t.sources, t.experts, g->preset, g->seed);
    exit_code = 0;
  });
}

}  // namespace hs::cli
