// hecate-sim trace validate|gen|stats|import
#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "app/presets.hpp"
#include "util/diagnostics.hpp"
#include "util/output_path.hpp"
#include "workload/model_spec.hpp"
#include "workload/trace_generator.hpp"
#include "workload/trace_import.hpp"
#include "workload/trace_io.hpp"
#include "workload/trace_stats.hpp"

namespace hs::cli {

namespace {

// --model: a path; else models/<M>.yaml relative to the current directory (so an edited preset in
// a checkout wins); else the preset compiled into the binary.
ResolvedInput resolve_model(const std::string& arg) {
  std::error_code ec;
  if (!std::filesystem::exists(arg, ec)) {
    const std::string local = "models/" + arg + ".yaml";
    if (std::filesystem::is_regular_file(local, ec)) return resolve_input(local, "models");
  }
  return resolve_input(arg, "models");
}

}  // namespace

void setup_trace(CLI::App& sub, int& exit_code) {
  sub.require_subcommand(1);
  auto* validate = sub.add_subcommand("validate", "check a trace file against format v1 and its invariants");
  auto file = std::make_shared<std::string>();
  validate->add_option("FILE", *file, "trace (.json or .json.gz)")->required();
  validate->callback([file, &exit_code] {
    auto t = workload::read_trace(*file);
    fmt::print("{}: ok: {} records, {} MoE layers, {} experts, top-{}, {} sources x {} tokens{}{}\n", *file,
               t.records.size(), t.moe_layers, t.experts, t.top_k, t.sources, t.tokens_per_source,
               t.per_micro_batch() ? fmt::format(" in {} micro-batches", t.micro_batches) : "",
               t.per_source() ? "" : " (global counts)");
    exit_code = 0;
  });

  struct GenOptions {
    std::string model, preset = "aux_loss", out;
    int sources = 0, iterations = 100, max_nodes = 0;
    bool global = false;
    uint64_t seed = 1;
    std::vector<std::string> params, sets;
  };
  auto g = std::make_shared<GenOptions>();
  auto* gen = sub.add_subcommand("gen", "generate a synthetic expert-load trace (log-normal popularity, AR(1) drift, bursts)");
  gen->add_option("--model", g->model, "model YAML file, or M for models/M.yaml or the bundled preset M")->required();
  gen->add_option("--sources", g->sources, "token sources (GPUs)")->required()->check(in_range(1, 1 << 20));
  gen->add_option("--iterations", g->iterations, "records to generate")->check(in_range(1, 1 << 24));
  gen->add_option("--preset", g->preset, "uniform | aux_loss | aux_free | concentrated | collapsed");
  gen->add_option("--param", g->params, "override a generator parameter, e.g. --param sigma=0.5 (repeatable)");
  gen->add_option("--set", g->sets, "override a model field, e.g. --set experts=32 (repeatable; as in run, sweep and tune)");
  gen->add_option("--max-nodes", g->max_nodes,
                  "node-limited routing: every token's experts in at most M of the model's route_groups (the same "
                  "as --set max_nodes=M; tokens are routed one by one)")
      ->check(in_range(1, 1 << 20));
  gen->add_option("--seed", g->seed, "random seed (default 1)");
  gen->add_flag("--global", g->global, "write global counts (axes [layer, expert], summed over sources): smaller files");
  gen->add_option("-o,--out", g->out, "output file (.json or .json.gz), written atomically")->required();
  gen->callback([g, &exit_code] {
    check_output_path(g->out, "--out");  // before anything is generated
    auto params = workload::GeneratorParams::preset(g->preset);
    if (!params)
      throw InputError({"--preset", 0, 0}, g->preset,
                       fmt::format("unknown preset (presets: {})", fmt::join(workload::GeneratorParams::preset_names(), ", ")));
    for (const auto& kv : g->params) {
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
      if (!ok) throw InputError({"--param", 0, 0}, kv, "expected NAME=NUMBER, e.g. sigma=0.5");
      if (!params->set(kv.substr(0, eq), v))
        throw InputError({"--param", 0, 0}, kv.substr(0, eq),
                         fmt::format("unknown generator parameter (parameters: {})",
                                     fmt::join(workload::GeneratorParams::names(), ", ")));
    }
    if (const std::string bad = params->check(); !bad.empty())
      throw InputError({"--param", 0, 0}, bad.substr(0, bad.find(':')), bad.substr(bad.find(':') + 2));
    auto in = resolve_model(g->model);
    if (g->max_nodes > 0) g->sets.push_back(fmt::format("max_nodes={}", g->max_nodes));
    auto model = workload::load_model(in.text, in.source, g->sets);
    // model.preset in the trace is what `run` resolves when no --model is given: the preset name
    // when the file is (a copy of) a bundled preset, else the path as given.
    std::string preset_name = in.source.rfind("preset:", 0) == 0 ? in.source.substr(7) : in.source;
    if (in.source.rfind("preset:", 0) != 0) {
      const std::string stem = std::filesystem::path(in.source).stem().string();
      for (const auto& p : embedded_presets())
        if (std::string(p.kind) == "models" && stem == p.name) preset_name = stem;
    }
    // Streamed: memory holds one record, whatever the trace's length. --global sums the sources of
    // each record (axes [layer, expert]) for compact bundled traces of large models.
    workload::Trace t, header;
    std::unique_ptr<workload::TraceWriter> w;
    workload::TraceRecord global;
    size_t n = 0;
    workload::generate_trace_stream(model, preset_name, g->sources, g->iterations, *params, g->preset, g->seed, t,
                                    [&](const workload::TraceRecord& r) {
                                      if (!w) {
                                        header = t;
                                        if (g->global) header.axes = workload::TraceAxes::kLayerExpert;
                                        w = std::make_unique<workload::TraceWriter>(g->out, header);
                                      }
                                      if (!g->global) return w->write(r), void(++n);
                                      const size_t L = t.moe_layers, S = t.sources, E = t.experts;
                                      global.iter = r.iter;
                                      global.counts.assign(L * E, 0);
                                      for (size_t l = 0; l < L; ++l)
                                        for (size_t s = 0; s < S; ++s)
                                          for (size_t e = 0; e < E; ++e) global.counts[l * E + e] += r.counts[(l * S + s) * E + e];
                                      w->write(global);
                                      ++n;
                                    });
    w->close();
    fmt::print(stderr, "{}: {} records, {} MoE layers x {} sources x {} experts{} ({} preset, seed {})\n", g->out, n,
               t.moe_layers, t.sources, t.experts, g->global ? ", global counts" : "", g->preset, g->seed);
    exit_code = 0;
  });

  struct ImportCli {
    std::string format, src, out, preset;
    int top_k = 0, stride = 1, experts = 0, sources = 0;  // top_k 0: not given
    bool sum_micro_batches = false;
  };
  auto im = std::make_shared<ImportCli>();
  auto* imp = sub.add_subcommand("import", "convert another tool's expert-load logs to trace JSON v1");
  imp->add_option("FORMAT", im->format, "smartmoe | megatron | csv")
      ->required()
      ->check(CLI::IsMember({"smartmoe", "megatron", "csv"}));
  imp->add_option("SRC", im->src,
                  "smartmoe: the moe_trace/ folder; megatron: router-trace JSONL; csv: iter,layer,source,expert,count")
      ->required();
  imp->add_option("--experts", im->experts, "expert count (megatron, csv; default: largest id + 1)")->check(in_range(1, 1 << 20));
  imp->add_option("-o,--out", im->out, "output trace (.json or .json.gz), written atomically")->required();
  imp->add_option("--top-k", im->top_k,
                  "experts per token of the recorded model (smartmoe: default 2; megatron: read from the data; csv: "
                  "required unless the counts allow one value only)")->check(in_range(1, 1024));
  imp->add_option("--stride", im->stride, "keep every k-th iteration found (default 1)")->check(in_range(1, 1 << 30));
  imp->add_option("--model-preset", im->preset, "model preset name to record in the trace");
  imp->add_option("--sources", im->sources, "re-bin to this many sources, proportionally (sources x tokens must divide evenly)")
      ->check(in_range(1, 1 << 20));
  imp->add_flag("--sum-micro-batches", im->sum_micro_batches,
                "sum each iteration's micro-batches (a v1.0 trace without the micro_batch axis, as earlier versions wrote)");
  imp->callback([im, &exit_code] {
    check_output_path(im->out, "--out");  // before anything is read
    workload::ImportOptions opt{im->top_k > 0 || im->format != "smartmoe" ? im->top_k : 2, im->stride, im->preset};
    auto t = im->format == "smartmoe"   ? workload::import_smartmoe(im->src, opt)
             : im->format == "megatron" ? workload::import_megatron(im->src, opt, im->experts)
                                        : workload::import_csv(im->src, opt, im->experts);
    if (im->sources > 0 && im->sources != t.sources) {
      const int from = t.sources;
      workload::rebin_sources(t, im->sources, im->src);
      fmt::print(stderr, "re-binned {} sources to {} ({} tokens per source)\n", from, t.sources, t.tokens_per_source);
    }
    if (im->sum_micro_batches && t.per_micro_batch()) {
      workload::append_provenance(t, "micro_batches_summed", "true");
      workload::drop_micro_batches(t);
    }
    workload::write_trace(t, im->out);
    fmt::print(stderr, "{}: {} records (iterations {}..{}, stride {}), {} MoE layers, {} experts, top-{}, {} sources x {} tokens{}\n",
               im->out, t.records.size(), t.records.front().iter, t.records.back().iter, im->stride, t.moe_layers,
               t.experts, t.top_k, t.sources, t.tokens_per_source,
               t.per_micro_batch() ? fmt::format(" in {} micro-batches", t.micro_batches) : "");
    exit_code = 0;
  });

  struct StatsCli {
    std::string file, format = "table";
    int ep_size = 0;
  };
  auto st = std::make_shared<StatsCli>();
  auto* stats = sub.add_subcommand("stats", "imbalance and stability statistics of a trace, per layer and overall");
  stats->add_option("FILE", st->file, "trace")->required();
  stats->add_option("--ep-size", st->ep_size, "GPUs for the GPU-level max/mean (default: the trace's sources)")
      ->check(in_range(1, 1 << 20));
  stats->add_option("--format", st->format, "table | json")->check(CLI::IsMember({"table", "json"}));
  stats->callback([st, &exit_code] {
    auto t = workload::read_trace(st->file);
    const int ep = st->ep_size > 0 ? st->ep_size : t.sources;
    if (ep > t.experts)
      fmt::print(stderr, "note: EP size {} exceeds the {} experts; GPU-level statistics use EP {}\n", ep, t.experts, t.experts);
    const auto s = workload::trace_stats(t, ep);
    fmt::print("{}", st->format == "json" ? workload::stats_json(t, s, st->file) : workload::stats_table(t, s, st->file));
    exit_code = 0;
  });
}

}  // namespace hs::cli
