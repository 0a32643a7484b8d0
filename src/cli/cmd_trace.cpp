// hecate-sim trace validate|gen|stats|import
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "cli/command.hpp"
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
}

}  // namespace hs::cli
