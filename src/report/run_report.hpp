// The result of `hecate-sim run`: inputs with provenance, and one summary per strategy, rendered as
// a table (people), JSON (programs; schema documented in README.md) or CSV (spreadsheets).
// Rendering is deterministic: fixed key order and number formats, so the same inputs and seed give
// byte-identical output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/interference.hpp"
#include "strategy/runner.hpp"
#include "topology/topology.hpp"
#include "util/diagnostics.hpp"

namespace hs::report {

struct RunInputs {
  std::string topology_file, topology_hash;
  std::string trace_file, trace_hash;
  std::string model_name, model_source;
  int iterations = 0;
  uint64_t seed = 0;
  std::string network = "analytic";
  std::string calibration_file, calibration_hash;  // empty: none applied
  std::vector<std::string> warnings;
};

// The work of one iteration, for throughput: tokens trained over the whole cluster and the model
// FLOPs per token as Megatron-LM counts them (cost/model_flops.hpp). tokens 0: not known, no
// throughput reported.
struct IterationWork {
  double tokens = 0;
  double flops_per_token = 0;
  int gpus = 0;
};

// Per GPU: tokens / (mean iteration time x GPUs), model TFLOPS = that x flops_per_token / 1e12, and
// GPU-hours per 10^12 tokens = GPUs x mean / tokens x 1e12 / 3600 (the unit DeepSeek-V3's report
// gives its cost in: 180K H800 GPU-hours per trillion tokens).
struct Throughput {
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double gpu_hours_per_trillion_tokens = 0;
};
Throughput throughput(const IterationWork& w, double mean_iteration_s);

struct RunReport {
  RunInputs inputs;
  IterationWork work;
  const topology::Topology* topo = nullptr;
  std::vector<strategy::RunSummary> strategies;
  // The interference every strategy ran with (the topology's `gpu.overlap_slowdown` over its
  // defaults, a calibration's cells over those, the flow tier's cut): the table's resolved settings
  // and the JSON's top-level `resolved`. Unset: not printed.
  std::optional<engine::Interference> interference;
  // One-line notes on what silently decided the result (report/run_notes.hpp): under the table, and
  // after inputs.warnings in the JSON's `warnings` and the HTML report's.
  std::vector<std::string> notes;
};

// For a strategy that exceeds `capacity` bytes: "NAME: does not fit in 80 GiB (peak 93.12 GiB,
// largest term: copy params)", and for FSSDP without re-materialization whether it would fit with
// it ("; fits with rematerialize=on (peak 61.20 GiB)"). Empty when the strategy fits.
std::string memory_verdict(const strategy::RunSummary& s, double capacity);

std::string render_table(const RunReport& r);
std::string render_json(const RunReport& r);
std::string render_csv(const RunReport& r);

// 64-bit FNV-1a of a file's bytes, as 16 hex digits (provenance stamp).
std::string content_hash(const std::string& bytes);

}  // namespace hs::report
