// hecate-sim validate MEASURED.json --topology T --model M: compares the compute cost model with
// what hecate-validate measured on a GPU (validation/README.md), and fits the expert-GEMM efficiency
// curve to the measurements, checking the fit on rows it was not fitted on.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <simdjson.h>
#include <vector>

#include "cli/command.hpp"
#include "cli/presets.hpp"
#include "cost/compute_cost.hpp"
#include "cost/gemm_fit.hpp"
#include "topology/topology_loader.hpp"
#include "util/diagnostics.hpp"
#include "workload/model_spec.hpp"

namespace hs::cli {

namespace {

struct Options {
  std::string measured, topology, model;
};

struct Row {
  double tokens, seconds;
};

struct Measured {
  std::string device;
  long d_model = 0, d_ffn = 0;
  int mats = 0;
  std::vector<Row> rows;
  int batched_experts = 0;     // 0: no batched suite in the file
  std::vector<Row> batched;    // one strided-batched call per matrix over batched_experts experts
  double hbm_Bps = 0;
};

// Reads the fields `validate` uses; a missing or mistyped one is an input error naming it.
Measured read_measured(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.load(path).get(doc))
    throw InputError({path, 0, 0}, "", fmt::format("cannot read measured results: {}", simdjson::error_message(err)));
  auto fail = [&](const std::string& field, const std::string& what) { throw InputError({path, 0, 0}, field, what); };
  std::string_view schema;
  if (doc["schema"].get(schema) || schema != "hecate-sim/measured@1")
    fail("schema", "expected \"hecate-sim/measured@1\" (written by hecate-validate)");
  Measured m;
  std::string_view name;
  if (!doc["device"]["name"].get(name)) m.device = std::string(name);
  int64_t d = 0, f = 0, mats = 0;
  if (doc["expert_ffn"]["d_model"].get(d) || d <= 0) fail("expert_ffn.d_model", "expected a positive integer");
  if (doc["expert_ffn"]["d_ffn"].get(f) || f <= 0) fail("expert_ffn.d_ffn", "expected a positive integer");
  if (doc["expert_ffn"]["mats"].get(mats) || (mats != 2 && mats != 3)) fail("expert_ffn.mats", "expected 2 or 3");
  m.d_model = d, m.d_ffn = f, m.mats = static_cast<int>(mats);
  // rows: [{"tokens": T, "forward_s": S}, ...] under `section`.
  auto read_rows = [&](simdjson::dom::element section, const std::string& name, std::vector<Row>& out) {
    simdjson::dom::array rows;
    if (section["rows"].get(rows)) fail(name + ".rows", "expected a list of measured rows");
    size_t i = 0;
    for (auto r : rows) {
      int64_t t = 0;
      double s = 0;
      if (r["tokens"].get(t) || t <= 0) fail(fmt::format("{}.rows[{}].tokens", name, i), "expected a positive integer");
      if (r["forward_s"].get(s) || !(s > 0)) fail(fmt::format("{}.rows[{}].forward_s", name, i), "expected a positive time");
      out.push_back({static_cast<double>(t), s});
      ++i;
    }
    if (out.empty()) fail(name + ".rows", "expected at least one row");
  };
  simdjson::dom::element ffn;
  if (doc["expert_ffn"].get(ffn)) fail("expert_ffn", "expected the expert-FFN measurements");
  read_rows(ffn, "expert_ffn", m.rows);
  simdjson::dom::element b;
  if (!doc["expert_ffn_batched"].get(b)) {
    int64_t e = 0;
    if (b["experts"].get(e) || e <= 0) fail("expert_ffn_batched.experts", "expected a positive integer");
    m.batched_experts = static_cast<int>(e);
    read_rows(b, "expert_ffn_batched", m.batched);
  }
  double bw = 0;
  if (!doc["hbm_copy"]["bandwidth_Bps"].get(bw)) m.hbm_Bps = bw;
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int run(const Options& o) {
  const Measured meas = read_measured(o.measured);
  ResolvedInput topo_in = resolve_input(o.topology, "topologies");
  const topology::Topology topo = topology::load_topology(topo_in.text, topo_in.source);
  ResolvedInput model_in = resolve_input(o.model, "models");
  const workload::ModelSpec model = workload::load_model(model_in.text, model_in.source);
  if (model.d_model != meas.d_model || model.d_ffn != meas.d_ffn || model.n_mats() != meas.mats)
    throw InputError({o.measured, 0, 0}, "expert_ffn",
                     fmt::format("measured d_model {} d_ffn {} with {} matrices, but model {} has d_model {} d_ffn {} "
                                 "with {}: measure with hecate-validate --d-model {} --d-ffn {} --mats {}",
                                 meas.d_model, meas.d_ffn, meas.mats, model.name, model.d_model, model.d_ffn,
                                 model.n_mats(), model.d_model, model.d_ffn, model.n_mats()));
  const double peak = topo.gpu_model().peak_flops.value();
  const double flops_per_token = 2.0 * meas.d_model * meas.d_ffn * meas.mats;
  fmt::print("measured on {} ({}), compared with the cost model for {} on {} ({:.0f} TFLOP/s peak)\n",
             meas.device.empty() ? "unknown device" : meas.device, o.measured, model.name, topo.gpu_model().model,
             peak / 1e12);
  // Rows of one suite: `experts` == 1 for separate calls on one expert, E for one batched call per
  // weight matrix over E experts with t tokens each (what a grouped MoE kernel runs per layer).
  struct Suite {
    const char* what;
    int experts;
    const std::vector<Row>* rows;
  };
  std::vector<Suite> suites{{"one expert, one cuBLAS call per weight matrix (each with its own launch)", 1, &meas.rows}};
  if (meas.batched_experts > 0)
    suites.push_back({"experts in one strided-batched call per weight matrix (a grouped kernel)", meas.batched_experts,
                      &meas.batched});
  auto table = [&](const cost::ComputeParams& p, const Suite& s, const char* title) {
    cost::ComputeCost cc(topo.gpu_model(), model, p);
    fmt::print("\n{}: {} {}\n(model: eta_max {:.3f}, t_half {:.1f})\n{:>8} {:>12} {:>12} {:>9} {:>10} {:>9}\n", title,
               s.experts, s.what, p.eta_max, p.t_half, "tokens", "measured ms", "model ms", "error", "TFLOP/s", "eta");
    std::vector<double> errs;
    for (const auto& r : *s.rows) {
      const double t = r.tokens;
      const double pred = s.experts == 1 ? cc.expert_forward(std::span<const double>(&t, 1)).value()
                                         : cc.expert_forward_uniform(t, s.experts).value();
      const double err = (pred - r.seconds) / r.seconds;
      errs.push_back(std::abs(err));
      const double tf = flops_per_token * t * s.experts / r.seconds;
      fmt::print("{:>8.0f} {:>12.4f} {:>12.4f} {:>8.1f}% {:>10.1f} {:>9.3f}\n", t, r.seconds * 1e3, pred * 1e3, err * 100,
                 tf / 1e12, tf / peak);
    }
    fmt::print("median |error| {:.1f}%, max {:.1f}%\n", median(errs) * 100,
               *std::max_element(errs.begin(), errs.end()) * 100);
  };
  for (const auto& s : suites) table(cost::ComputeParams{}, s, "cost model defaults");
  // Fit on the grouped suite when there is one (what MoE kernels run), on compute-bound rows
  // (t >= 256, multiples of the 128-row tile, so padding adds nothing), every other one; check on the rest.
  const Suite& fs = suites.back();
  std::vector<cost::GemmPoint> fit_rows, check_rows;
  for (const auto& r : *fs.rows) {
    if (r.tokens < 256 || std::fmod(r.tokens, 128) != 0) continue;
    const cost::GemmPoint p{r.tokens, flops_per_token * r.tokens * fs.experts / r.seconds / peak};
    ((fit_rows.size() + check_rows.size()) % 2 == 0 ? fit_rows : check_rows).push_back(p);
  }
  const auto fit = cost::fit_gemm_efficiency(fit_rows);
  if (!fit) {
    fmt::print("\nno fit: fewer than two compute-bound rows (tokens >= 256, multiples of 128)\n");
  } else {
    std::vector<double> held, held_default;
    const cost::ComputeParams defaults;
    for (const auto& p : check_rows) {
      held.push_back(std::abs(cost::gemm_efficiency(*fit, p.tokens) - p.efficiency) / p.efficiency);
      held_default.push_back(
          std::abs(cost::gemm_efficiency({defaults.eta_max, defaults.t_half}, p.tokens) - p.efficiency) / p.efficiency);
    }
    fmt::print("\nfit on {} compute-bound rows of the {}-expert suite: eta_max {:.3f}, t_half {:.1f}; on the {} held-out "
               "rows the efficiency error is {:.1f}% median ({:.1f}% with the defaults)\n",
               fit_rows.size(), fs.experts, fit->eta_max, fit->t_half, check_rows.size(), median(held) * 100,
               median(held_default) * 100);
    cost::ComputeParams p;
    p.eta_max = fit->eta_max;
    p.t_half = fit->t_half;
    table(p, fs, "cost model with the fitted curve");
  }
  if (meas.hbm_Bps > 0) {
    const double spec = topo.gpu_model().hbm_bandwidth.value();
    fmt::print("\nHBM copy: {:.0f} GB/s (read + write) = {:.2f} of the topology's {:.0f} GB/s (cost model eta_mem "
               "default {:.2f})\n",
               meas.hbm_Bps / 1e9, meas.hbm_Bps / spec, spec / 1e9, cost::ComputeParams{}.eta_mem);
  }
  return 0;
}

}  // namespace

void setup_validate(CLI::App& sub, int& exit_code) {
  auto o = std::make_shared<Options>();
  sub.add_option("measured", o->measured, "measured.json written by hecate-validate")->required();
  sub.add_option("--topology", o->topology, "topology file or preset naming the GPU (its peak and HBM bandwidth)")
      ->required();
  sub.add_option("--model", o->model, "model file or preset whose expert FFN was measured")->required();
  sub.callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace hs::cli
