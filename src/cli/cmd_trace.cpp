// hecate-sim trace validate|gen|stats|import
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/presets.hpp"
#include "workload/model_spec.hpp"
#include "workload/trace_generator.hpp"
#include "workload/trace_import.hpp"
#include "workload/trace_stats.hpp"
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
    // Streamed: memory holds one record, whatever the trace's length.
    workload::Trace t;
    std::unique_ptr<workload::TraceWriter> w;
    size_t n = 0;
    workload::generate_trace_stream(model, preset_name, g->sources, g->iterations, *params, g->preset, g->seed, t,
                                    [&](const workload::TraceRecord& r) {
                                      if (!w) w = std::make_unique<workload::TraceWriter>(g->out, t);
                                      w->write(r);
                                      ++n;
                                    });
    w->close();

    fmt::print(stderr, "{}: {} records, {} MoE layers x {} sources x {} experts ({} preset, seed {})\n", g->out,
               n, t.moe_layers, t.sources, t.experts, g->preset, g->seed);
    exit_code = 0;
  });

  struct ImportCli {
    std::string format, src, out, preset;
    int top_k = 2, stride = 1, experts = 0, sources = 0;
  };
  auto im = std::make_shared<ImportCli>();
  auto* imp = sub.add_subcommand("import", "convert another tool's expert-load logs to trace JSON v1");
  imp->add_option("FORMAT", im->format, "smartmoe | megatron | csv")
      ->required()
      ->check(CLI::IsMember({"smartmoe", "megatron", "csv"}));
  imp->add_option("SRC", im->src,
                  "smartmoe: the moe_trace/ folder; megatron: router-trace JSONL; csv: iter,layer,source,expert,count")
      ->required();
  imp->add_option("--experts", im->experts, "expert count (megatron, csv; default: largest id + 1)")->check(CLI::Range(1, 1 << 20));
  imp->add_option("-o,--out", im->out, "output trace (.json or .json.gz), written atomically")->required();
  imp->add_option("--top-k", im->top_k, "experts per token of the recorded model (default 2)")->check(CLI::Range(1, 1024));
  imp->add_option("--stride", im->stride, "keep every k-th iteration found (default 1)")->check(CLI::Range(1, 1 << 30));
  imp->add_option("--model-preset", im->preset, "model preset name to record in the trace");
  imp->add_option("--sources", im->sources, "re-bin to this many sources (a divisor or multiple of the recorded ranks)")
      ->check(CLI::Range(1, 1 << 20));
  imp->callback([im, &exit_code] {
    workload::ImportOptions opt{im->top_k, im->stride, im->preset};
    auto t = im->format == "smartmoe"   ? workload::import_smartmoe(im->src, opt)
             : im->format == "megatron" ? workload::import_megatron(im->src, opt, im->experts)
                                        : workload::import_csv(im->src, opt, im->experts);
    if (im->sources > 0 && im->sources != t.sources) {
      const int from = t.sources;
      workload::rebin_sources(t, im->sources, im->src);
      fmt::print(stderr, "re-binned {} sources to {} ({} tokens per source)\n", from, t.sources, t.tokens_per_source);
    }
    workload::write_trace(t, im->out);
    fmt::print(stderr, "{}: {} records (iterations {}..{}, stride {}), {} MoE layers, {} experts, {} sources x {} tokens\n",
               im->out, t.records.size(), t.records.front().iter, t.records.back().iter, im->stride, t.moe_layers,
               t.experts, t.sources, t.tokens_per_source);
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
      ->check(CLI::Range(1, 1 << 20));
  stats->add_option("--format", st->format, "table | json")->check(CLI::IsMember({"table", "json"}));
  stats->callback([st, &exit_code] {
    auto t = workload::read_trace(st->file);
    const int ep = st->ep_size > 0 ? st->ep_size : t.sources;
    auto ws = workload::trace_stats(t, ep);
    auto num = [](double x) { return std::isnan(x) ? std::string("null") : fmt::format("{:.6g}", x); };
    auto row = [&](const workload::LoadStats& s) {
      return fmt::format("{:>8.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>8.3f} {:>8.4f} {:>8.4f} {:>8.3f} {:>8.4f}", s.max_mean, s.cv,
                         s.gini, s.top1_share, s.gpu_max_mean, s.lag1, s.lag10, s.ar1_log, s.source_tv);
    };
    std::string o;
    if (st->format == "json") {
      auto js = [&](const workload::LoadStats& s) {
        return fmt::format("{{\"expert_max_mean\": {}, \"cv\": {}, \"gini\": {}, \"top1_share\": {}, \"gpu_max_mean\": {}, "
                           "\"lag1_corr\": {}, \"lag10_corr\": {}, \"ar1_log_share\": {}, \"source_tv\": {}}}",
                           num(s.max_mean), num(s.cv), num(s.gini), num(s.top1_share), num(s.gpu_max_mean), num(s.lag1),
                           num(s.lag10), num(s.ar1_log), num(s.source_tv));
      };
      o = fmt::format("{{\"file\": \"{}\", \"records\": {}, \"ep_size\": {}, \"windows\": [", st->file, t.records.size(), ep);
      for (size_t w = 0; w < ws.size(); ++w) {
        o += fmt::format("{}\n  {{\"window\": \"{}\", \"records\": [{}, {}], \"overall\": {}, \"layers\": [", w ? "," : "",
                         ws[w].window, ws[w].first, ws[w].last, js(ws[w].overall));
        for (size_t l = 0; l < ws[w].layers.size(); ++l) o += fmt::format("{}\n    {}", l ? "," : "", js(ws[w].layers[l]));
        o += "]}";
      }
      o += "\n]}\n";
    } else {
      o = fmt::format("{}: {} records (iter {}..{}), {} MoE layers, {} experts, top-{}, {} sources; GPU level: EP {}\n",
                      st->file, t.records.size(), t.records.front().iter, t.records.back().iter, t.moe_layers, t.experts,
                      t.top_k, t.sources, ep);
      const char* head = "max/mean      CV    Gini    top1  GPU m/m    lag-1   lag-10  AR1(log) src-TV";
      o += fmt::format("  {:<22} {}\n", "window [records)", head);
      for (const auto& w : ws) o += fmt::format("  {:<22} {}\n", fmt::format("{} [{}, {})", w.window, w.first, w.last), row(w.overall));
      o += fmt::format("\nper layer (all records)\n  {:<6} {}\n", "layer", "max/mean      CV    Gini    top1  GPU m/m    lag-1   lag-10  AR1(log) src-TV");
      for (size_t l = 0; l < ws[0].layers.size(); ++l) o += fmt::format("  {:<6} {}\n", l, row(ws[0].layers[l]));
    }
    fmt::print("{}", o);
    exit_code = 0;
  });
}

}  // namespace hs::cli
