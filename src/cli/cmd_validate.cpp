// hecate-sim validate MEASURED.json --topology T --model M: compares the cost models with what
// hecate-validate measured (validation/README.md): the expert GEMMs (and fits the expert-GEMM
// efficiency curve, checking the fit on rows it was not fitted on), the HBM copy rate, and the
// collectives suite against the analytic model of each operation on the same ranks.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <fmt/format.h>
#include <simdjson.h>
#include <vector>

#include "cli/command.hpp"
#include "calib/calibration.hpp"
#include "calib/link_fit.hpp"
#include "collective/analytic_network.hpp"
#include "collective/nccl_op.hpp"
#include "calib/measured.hpp"
#include "cli/presets.hpp"
#include "cost/compute_cost.hpp"
#include "cost/gemm_fit.hpp"
#include "topology/topology_loader.hpp"
#include "util/atomic_file.hpp"
#include "util/diagnostics.hpp"
#include "workload/model_spec.hpp"

namespace hs::cli {

namespace {

struct Options {
  std::string measured, topology, model, calibration;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

void gemm_tables(const Options& o, const calib::Measured& meas, const topology::Topology& topo, const workload::ModelSpec& model);
void collective_table(const calib::Measured& meas, const topology::Topology& topo);

int run(const Options& o) {
  const calib::Measured meas = calib::read_measured(o.measured);
  ResolvedInput topo_in = resolve_input(o.topology, "topologies");
  const topology::Topology topo = topology::load_topology(topo_in.text, topo_in.source);
  ResolvedInput model_in = resolve_input(o.model, "models");
  const workload::ModelSpec model = workload::load_model(model_in.text, model_in.source);
  fmt::print("measured on {} ({}), compared with the cost model for {} on {}\n", meas.device.empty() ? "unknown device" : meas.device,
             o.measured, model.name, topo.gpu_model().model);
  if (meas.has_gemm()) gemm_tables(o, meas, topo, model);
  if (meas.hbm_Bps > 0) {
    const double spec = topo.gpu_model().hbm_bandwidth.value();
    fmt::print("\nHBM copy: {:.0f} GB/s (read + write) = {:.2f} of the topology's {:.0f} GB/s (cost model eta_mem "
               "default {:.2f})\n",
               meas.hbm_Bps / 1e9, meas.hbm_Bps / spec, spec / 1e9, cost::ComputeParams{}.eta_mem);
  }
  if (!meas.collectives.empty()) collective_table(meas, topo);
  for (const auto& [section, rows] : meas.other_sections)
    fmt::print("\n{}: {} rows measured (not compared with the model yet)\n", section, rows);
  return 0;
}

void gemm_tables(const Options& o, const calib::Measured& meas, const topology::Topology& topo, const workload::ModelSpec& model) {
  if (model.d_model != meas.d_model || model.d_ffn != meas.d_ffn || model.n_mats() != meas.mats)
    throw InputError({o.measured, 0, 0}, "expert_ffn",
                     fmt::format("measured d_model {} d_ffn {} with {} matrices, but model {} has d_model {} d_ffn {} "
                                 "with {}: measure with hecate-validate --d-model {} --d-ffn {} --mats {}",
                                 meas.d_model, meas.d_ffn, meas.mats, model.name, model.d_model, model.d_ffn,
                                 model.n_mats(), model.d_model, model.d_ffn, model.n_mats()));
  const double peak = topo.gpu_model().peak_flops.value();
  const double flops_per_token = 2.0 * meas.d_model * meas.d_ffn * meas.mats;
  fmt::print("GPU peak {:.0f} TFLOP/s\n", peak / 1e12);
  // Rows of one suite: `experts` == 1 for separate calls on one expert, E for one batched call per
  // weight matrix over E experts with t tokens each (what a grouped MoE kernel runs per layer).
  struct Suite {
    const char* what;
    int experts;
    const std::vector<calib::GemmRow>* rows;
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
  const auto fit = calib::fit_gemm(meas, peak);
  if (!fit) {
    fmt::print("\nno fit: fewer than two compute-bound rows (tokens >= 256, multiples of 128)\n");
  } else {
    fmt::print("\nfit on {} compute-bound rows of the {}-expert suite: eta_max {:.3f}, t_half {:.1f}; on the {} held-out "
               "rows the efficiency error is {:.1f}% median ({:.1f}% with the defaults)\n",
               fit->fit_rows, fit->experts, fit->fit.eta_max, fit->fit.t_half, fit->held_rows,
               fit->held_median_error * 100, fit->held_median_error_default * 100);
    cost::ComputeParams p;
    p.eta_max = fit->fit.eta_max;
    p.t_half = fit->fit.t_half;
    table(p, fs, "cost model with the fitted curve");
  }
  if (!o.calibration.empty()) {
    const calib::Calibration cal = calib::parse_calibration(read_file(o.calibration), o.calibration);
    cost::ComputeParams p;
    calib::apply_compute(cal, p);
    table(p, fs, fmt::format("cost model with the calibration {}", o.calibration).c_str());
  }
}

// The collectives suite against the analytic model of the same operation on the same ranks
// (collective/nccl_op.hpp; ranks placed as calibrate places nccl-tests' ranks).
void collective_table(const calib::Measured& meas, const topology::Topology& topo) {
  if (meas.ranks < 2) {
    fmt::print("\ncollectives: measured on one rank; the model has no one-rank collective to compare with\n");
    return;
  }
  collective::AnalyticNetwork net(topo);
  const auto group = calib::nccl_group(topo, meas.ranks, meas.nodes, meas.file);
  fmt::print("\ncollectives on {} ranks over {} node(s)\n{:<15} {:>14} {:>12} {:>12} {:>9}\n", meas.ranks, meas.nodes, "op", "bytes",
             "measured us", "model us", "error");
  std::map<collective::NcclOp, std::vector<double>> errs;
  for (const auto& r : meas.collectives) {
    const double pred = collective::nccl_op_time(net, r.op, group, r.bytes).seconds;
    const double err = (pred - r.seconds) / r.seconds;
    errs[r.op].push_back(std::abs(err));
    fmt::print("{:<15} {:>14.0f} {:>12.2f} {:>12.2f} {:>8.1f}%\n", collective::to_string(r.op), r.bytes, r.seconds * 1e6, pred * 1e6,
               err * 100);
  }
  for (const auto& [op, e] : errs)
    fmt::print("{}: median |error| {:.1f}%, max {:.1f}% over {} sizes\n", collective::to_string(op), median(e) * 100,
               *std::max_element(e.begin(), e.end()) * 100, e.size());
}

}  // namespace

void setup_validate(CLI::App& sub, int& exit_code) {
  auto o = std::make_shared<Options>();
  sub.add_option("measured", o->measured, "measured.json written by hecate-validate")->required();
  sub.add_option("--topology", o->topology, "topology file or preset naming the GPU (its peak and HBM bandwidth)")
      ->required();
  sub.add_option("--model", o->model, "model file or preset whose expert FFN was measured")->required();
  sub.add_option("--calibration", o->calibration, "also compare with the cost model under this calibration file");
  sub.callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace hs::cli
