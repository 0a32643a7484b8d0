// hecate-sim validate MEASURED.json... --topology T [--model M] [--calibration CAL]: compares the
// cost models with what hecate-validate measured (validation/README.md), per suite:
//   * gemm: the expert GEMMs (and fits the expert-GEMM efficiency curve, checking the fit on rows it
//     was not fitted on) and the HBM copy rate;
//   * materialize: the memory-bound kernels (pack / unpack, permute / unpermute) and the grouped
//     GEMM with unequal tokens per expert, against the compute cost model;
//   * overlap: the measured slowdowns against the topology's (and the calibration's);
//   * collectives: each operation against the analytic model on the same ranks;
//   * alltoallv: the dispatch and combine of the byte matrix against the all-to-all-v model;
//   * sparse: per layer of the plan, spAG and spRS against the model of the rounds the backend ran
//     and against what the simulator charges for them (pipelined chains), with Kendall's tau of the
//     layers' order; over several files, tau of the plans' (strategies') order.
// With --calibration every table adds the calibrated prediction beside the preset's.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <fmt/format.h>
#include <optional>
#include <vector>

#include "calib/calibration.hpp"
#include "calib/link_fit.hpp"
#include "calib/measured.hpp"
#include "calib/overlap_fit.hpp"
#include "calib/rank_agreement.hpp"
#include "cli/command.hpp"
#include "app/presets.hpp"
#include "collective/all_to_all.hpp"
#include "collective/analytic_network.hpp"
#include "collective/byte_matrix.hpp"
#include "collective/nccl_op.hpp"
#include "collective/p2p_channels.hpp"
#include "collective/sparse_plan.hpp"
#include "cost/compute_cost.hpp"
#include "cost/gemm_fit.hpp"
#include "engine/interference.hpp"
#include "topology/topology_loader.hpp"
#include "transport/plan_executor.hpp"
#include "transport/plan_file.hpp"
#include "util/atomic_file.hpp"
#include "util/diagnostics.hpp"
#include "workload/model_spec.hpp"

namespace hs::cli {

namespace {

struct Options {
  std::vector<std::string> measured;
  std::string topology, model, calibration;
};

using calib::upper_median;
double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }
std::string pct(double x) { return fmt::format("{:+.1f}%", x * 100); }

// The topology as given and, with --calibration, as calibrated; the compute parameters likewise.
struct Inputs {
  ResolvedInput topo_in;
  std::unique_ptr<topology::Topology> topo, cal_topo;
  std::optional<calib::Calibration> cal;
  std::string cal_file;
  std::optional<workload::ModelSpec> model;
  cost::ComputeParams params, cal_params;
  const workload::ModelSpec& model_or_default() const {
    static const workload::ModelSpec kNone{};
    return model ? *model : kNone;
  }
};

void gemm_tables(const calib::Measured& meas, const Inputs& in);
void memory_tables(const calib::Measured& meas, const Inputs& in);
void overlap_table(const calib::Measured& meas, const Inputs& in);
void collective_table(const calib::Measured& meas, const Inputs& in);
void alltoallv_table(const calib::Measured& meas, const Inputs& in);
// Measured and predicted totals (spAG + spRS over the layers) of the file's plan, for the strategies' order.
struct PlanTotals {
  std::string file, strategy;
  double measured = 0, predicted = 0;
};
std::optional<PlanTotals> sparse_table(const calib::Measured& meas, const Inputs& in);

int run(const Options& o) {
  Inputs in;
  in.topo_in = resolve_input(o.topology, "topologies");
  in.topo = std::make_unique<topology::Topology>(topology::load_topology(in.topo_in.text, in.topo_in.source));
  if (!o.model.empty()) {
    ResolvedInput model_in = resolve_input(o.model, "models");
    in.model = workload::load_model(model_in.text, model_in.source);
  }
  if (!o.calibration.empty()) {
    in.cal = calib::parse_calibration(read_file(o.calibration), o.calibration);
    in.cal_file = o.calibration;
    const topology::TopologyAdjust adj = calib::topology_adjust(*in.cal);
    in.cal_topo = std::make_unique<topology::Topology>(topology::load_topology(in.topo_in.text, in.topo_in.source, &adj));
    calib::apply_compute(*in.cal, in.cal_params);
  }
  std::vector<PlanTotals> plans;
  for (const auto& path : o.measured) {
    const calib::Measured meas = calib::read_measured(path);
    if (meas.has_gemm() && !in.model)
      throw InputError({path, 0, 0}, "expert_ffn", "the expert GEMMs are compared with a model's expert FFN: give --model");
    if (o.measured.size() > 1) fmt::print("{}== {}\n", &path == &o.measured.front() ? "" : "\n", path);
    fmt::print("measured on {} ({}), compared with the cost model of {}{}\n", meas.device.empty() ? "unknown device" : meas.device,
               path, in.topo->gpu_model().model, in.cal ? fmt::format(" (and with the calibration {})", in.cal_file) : "");
    if (meas.has_gemm()) gemm_tables(meas, in);
    if (meas.hbm_Bps > 0) {
      const double spec = in.topo->gpu_model().hbm_bandwidth.value();
      fmt::print("\nHBM copy: {:.0f} GB/s (read + write) = {:.2f} of the topology's {:.0f} GB/s (cost model eta_mem {:.2f}{})\n",
                 meas.hbm_Bps / 1e9, meas.hbm_Bps / spec, spec / 1e9, in.params.eta_mem,
                 in.cal ? fmt::format(", calibrated {:.2f}", in.cal_params.eta_mem) : "");
    }
    memory_tables(meas, in);
    if (!meas.overlap.empty()) overlap_table(meas, in);
    if (!meas.collectives.empty()) collective_table(meas, in);
    if (meas.alltoallv) alltoallv_table(meas, in);
    if (meas.sparse)
      if (auto t = sparse_table(meas, in)) plans.push_back(*t);
  }
  if (plans.size() >= 2) {
    std::vector<double> p, m;
    fmt::print("\nsparse plans (spAG + spRS over every layer)\n{:<12} {:>12} {:>12} {:>9}  {}\n", "strategy", "measured ms", "model ms",
               "error", "file");
    for (const auto& x : plans) {
      p.push_back(x.predicted), m.push_back(x.measured);
      fmt::print("{:<12} {:>12.3f} {:>12.3f} {:>9}  {}\n", x.strategy, x.measured * 1e3, x.predicted * 1e3,
                 pct((x.predicted - x.measured) / x.measured), x.file);
    }
    if (auto t = calib::kendall_tau(p, m, 0.01))
      fmt::print("order of the plans: Kendall tau {:.3f} ({} concordant, {} discordant pairs of {}; within 1% counts as a tie)\n",
                 t->tau, t->concordant, t->discordant, t->items * (t->items - 1) / 2);
  }
  return 0;
}

void gemm_tables(const calib::Measured& meas, const Inputs& in) {
  // The gemm suite runs bf16 GEMMs (validation/suite_gemm.cpp): an FP8 model is compared as bf16.
  workload::ModelSpec model = *in.model;
  if (model.precision.fp8()) {
    model.precision.compute = workload::ComputeDtype::kBf16;
    fmt::print("model {} computes in fp8; the suite measured bf16 GEMMs, so they are compared with its bf16 cost\n", model.name);
  }
  if (model.d_model != meas.d_model || model.d_ffn != meas.d_ffn || model.n_mats() != meas.mats)
    throw InputError({meas.file, 0, 0}, "expert_ffn",
                     fmt::format("measured d_model {} d_ffn {} with {} matrices, but model {} has d_model {} d_ffn {} "
                                 "with {}: measure with hecate-validate --d-model {} --d-ffn {} --mats {}",
                                 meas.d_model, meas.d_ffn, meas.mats, model.name, model.d_model, model.d_ffn,
                                 model.n_mats(), model.d_model, model.d_ffn, model.n_mats()));
  const topology::Topology& topo = *in.topo;
  const double peak = topo.gpu_model().peak_flops.value();
  const double flops_per_token = 2.0 * meas.d_model * meas.d_ffn * meas.mats;
  fmt::print("GPU peak {:.0f} TFLOP/s, model {}\n", peak / 1e12, model.name);
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
  auto table = [&](const cost::ComputeParams& p, const Suite& s, const std::string& title) {
    cost::ComputeCost cc(topo.gpu_model(), model, p);
    const std::string how =
        p.gemm_model == cost::GemmModel::kTiles
            ? fmt::format("tiles {}x{} on {} SMs, eta_tile {:.3f}, k_fill {:.0f}, {:.1f} us per launch", p.tiles.tile_m,
                          p.tiles.tile_n, topo.gpu_model().sms > 0 ? topo.gpu_model().sms : cost::kDefaultSms, p.tiles.eta_tile,
                          p.tiles.k_fill, p.tiles.call.value() * 1e6)
            : fmt::format("curve eta_max {:.3f}, t_half {:.1f}", p.eta_max, p.t_half);
    fmt::print("\n{}: {} {}\n(model: {})\n{:>8} {:>12} {:>12} {:>9} {:>10} {:>9}\n", title, s.experts, s.what, how, "tokens",
               "measured ms", "model ms", "error", "TFLOP/s", "eta");
    std::vector<double> errs;
    for (const auto& r : *s.rows) {
      const double t = r.tokens;
      // The GEMMs only: the suite times no activation kernel between them.
      const double act = cc.activation(t * s.experts, model.d_ffn, model.n_mats() == 3, false).value();
      const double pred = (s.experts == 1 ? cc.expert_forward(std::span<const double>(&t, 1)).value()
                                          : cc.expert_forward_uniform(t, s.experts).value()) - act;
      const double err = (pred - r.seconds) / r.seconds;
      errs.push_back(std::abs(err));
      const double tf = flops_per_token * t * s.experts / r.seconds;
      fmt::print("{:>8.0f} {:>12.4f} {:>12.4f} {:>8.1f}% {:>10.1f} {:>9.3f}\n", t, r.seconds * 1e3, pred * 1e3, err * 100,
                 tf / 1e12, tf / peak);
    }
    fmt::print("median |error| {:.1f}%, max {:.1f}%\n", upper_median(errs) * 100, max_of(errs) * 100);
  };
  for (const auto& s : suites) table(in.params, s, "cost model defaults");
  cost::ComputeParams curve;  // the efficiency curve with its defaults (the model before the tile model)
  curve.gemm_model = cost::GemmModel::kCurve;
  table(curve, suites.back(), "efficiency curve with its defaults");
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
    p.gemm_model = cost::GemmModel::kCurve;
    p.eta_max = fit->fit.eta_max;
    p.t_half = fit->fit.t_half;
    table(p, fs, "cost model with the fitted curve");
  }
  if (in.cal) table(in.cal_params, fs, fmt::format("cost model with the calibration {}", in.cal_file));
}

// The materialize suite: memory-bound kernels at eta_mem (ComputeCost::memory_copy) and the grouped
// GEMM over unequal tokens per expert (ComputeCost::grouped_gemm_forward: every expert's GEMM on the
// expert-GEMM curve, one launch); the per-expert and padded variants are shown against the same
// prediction (the model prices the grouped kernel).
void memory_tables(const calib::Measured& meas, const Inputs& in) {
  const auto& gpu = in.topo->gpu_model();
  const cost::ComputeCost cc(gpu, in.model_or_default(), in.params);
  std::optional<cost::ComputeCost> cal;
  if (in.cal) cal.emplace(in.cal_topo->gpu_model(), in.model_or_default(), in.cal_params);
  auto columns = [&](const char* first) {
    fmt::print("{:<20} {:>14} {:>12} {:>12} {:>9}", first, "", "measured us", "model us", "error");
    if (cal) fmt::print(" {:>12} {:>9}", "calibrated", "error");
    fmt::print("\n");
  };
  auto row = [&](double measured, double pred, std::optional<double> pred_cal, std::vector<double>& e, std::vector<double>& ec) {
    e.push_back(std::abs(pred - measured) / measured);
    fmt::print(" {:>12.2f} {:>12.2f} {:>9}", measured * 1e6, pred * 1e6, pct((pred - measured) / measured));
    if (pred_cal) {
      ec.push_back(std::abs(*pred_cal - measured) / measured);
      fmt::print(" {:>12.2f} {:>9}", *pred_cal * 1e6, pct((*pred_cal - measured) / measured));
    }
    fmt::print("\n");
  };
  auto summary = [&](const std::vector<double>& e, const std::vector<double>& ec) {
    fmt::print("median |error| {:.1f}%, max {:.1f}%", upper_median(e) * 100, max_of(e) * 100);
    if (!ec.empty()) fmt::print("; calibrated {:.1f}%, max {:.1f}%", upper_median(ec) * 100, max_of(ec) * 100);
    fmt::print("\n");
  };
  if (!meas.memory_kernels.empty()) {
    fmt::print("\nmemory-bound kernels (bytes read once and written once; model: 2 x bytes / (eta_mem {:.2f} x {:.0f} GB/s) + "
               "launch {:.1f} us)\n",
               in.params.eta_mem, gpu.hbm_bandwidth.value() / 1e9, in.params.launch.value() * 1e6);
    columns("kernel");
    std::vector<double> e, ec;
    for (const auto& r : meas.memory_kernels) {
      fmt::print("{:<20} {:>14.0f}", r.kernel, r.bytes);
      row(r.seconds, cc.memory_copy(Bytes(r.bytes)).value(),
          cal ? std::optional<double>(cal->memory_copy(Bytes(r.bytes)).value()) : std::nullopt, e, ec);
    }
    summary(e, ec);
  }
  if (!meas.grouped_gemms.empty()) {
    fmt::print("\nGEMMs with unequal tokens per expert (one [t_e x d_model] x [d_model x d_ffn] per expert; model: the "
               "grouped kernel on the expert-GEMM curve)\n");
    columns("kernel");
    std::vector<double> e, ec;
    for (const auto& r : meas.grouped_gemms) {
      double lo = INFINITY, hi = 0;
      for (double t : r.tokens_per_expert) lo = std::min(lo, t), hi = std::max(hi, t);
      fmt::print("{:<20} {:>14}", r.kernel, fmt::format("{}x t {:.0f}..{:.0f}", r.tokens_per_expert.size(), lo, hi));
      const auto pred = [&](const cost::ComputeCost& c) {
        return c.grouped_gemm_forward(r.tokens_per_expert, static_cast<double>(r.d_model), static_cast<double>(r.d_ffn)).value();
      };
      row(r.seconds, pred(cc), cal ? std::optional<double>(pred(*cal)) : std::nullopt, e, ec);
    }
    summary(e, ec);
  }
}

// The model's slowdowns (engine/interference.hpp) against the measured ones: the GEMM class beside
// the traffic kind the suite's row measured (calib/overlap_fit.hpp says which), and that traffic
// beside compute.
void overlap_table(const calib::Measured& meas, const Inputs& in) {
  const auto fit = calib::fit_overlap(meas.overlap, meas.overlap_ranks, meas.launch_nodes, in.topo->gpus_in_node(0));
  const engine::Traffic k = fit ? fit->traffic : engine::Traffic::kIntraNode;
  auto cells = [&](const topology::Topology& t) {
    const auto& i = t.gpu_model().interference;
    return std::pair{1 + i.compute_slowdown(engine::KernelClass::kGemm, k), 1 + i.communication_slowdown(k)};
  };
  const auto [mc, mm] = cells(*in.topo);
  std::string calibrated;
  if (in.cal) {
    const auto [cc, cm] = cells(*in.cal_topo);
    calibrated = fmt::format("; calibrated x{:.3f}, x{:.3f}", cc, cm);
  }
  fmt::print("\noverlap on {} rank(s), {} traffic: time together / time alone (model: GEMM x{:.3f}, communication "
             "x{:.3f}{})\n{:<16} {:>14} {:>10} {:>10}\n",
             meas.overlap_ranks, engine::traffic_key(static_cast<int>(k)), mc, mm, calibrated, "communication", "bytes",
             "GEMM x", "comm x");
  for (const auto& r : meas.overlap)
    fmt::print("{:<16} {:>14.0f} {:>10.3f} {:>10.3f}\n", r.comm, r.comm_bytes, r.gemm_slowdown(), r.comm_slowdown());
}

// The collectives suite against the analytic model of the same operation on the same ranks
// (collective/nccl_op.hpp; ranks placed as calibrate places nccl-tests' ranks).
void collective_table(const calib::Measured& meas, const Inputs& in) {
  if (meas.ranks < 2) {
    fmt::print("\ncollectives: measured on one rank; the model has no one-rank collective to compare with\n");
    return;
  }
  collective::AnalyticNetwork net(*in.topo);
  std::optional<collective::AnalyticNetwork> cal_net;
  if (in.cal) cal_net.emplace(*in.cal_topo);
  const auto group = calib::nccl_group(*in.topo, meas.ranks, meas.nodes, meas.file);
  fmt::print("\ncollectives on {} ranks over {} node(s)\n{:<15} {:>14} {:>12} {:>12} {:>9}", meas.ranks, meas.nodes, "op", "bytes",
             "measured us", "model us", "error");
  if (cal_net) fmt::print(" {:>12} {:>9}", "calibrated", "error");
  fmt::print("\n");
  std::map<collective::NcclOp, std::pair<std::vector<double>, std::vector<double>>> errs;
  for (const auto& r : meas.collectives) {
    const double pred = collective::nccl_op_time(net, r.op, group, r.bytes).seconds;
    const double err = (pred - r.seconds) / r.seconds;
    errs[r.op].first.push_back(std::abs(err));
    fmt::print("{:<15} {:>14.0f} {:>12.2f} {:>12.2f} {:>9}", collective::to_string(r.op), r.bytes, r.seconds * 1e6, pred * 1e6, pct(err));
    if (cal_net) {
      const double pc = collective::nccl_op_time(*cal_net, r.op, group, r.bytes).seconds;
      errs[r.op].second.push_back(std::abs(pc - r.seconds) / r.seconds);
      fmt::print(" {:>12.2f} {:>9}", pc * 1e6, pct((pc - r.seconds) / r.seconds));
    }
    fmt::print("\n");
  }
  for (const auto& [op, e] : errs) {
    fmt::print("{}: median |error| {:.1f}%, max {:.1f}% over {} sizes", collective::to_string(op), upper_median(e.first) * 100,
               max_of(e.first) * 100, e.first.size());
    if (!e.second.empty())
      fmt::print("; calibrated {:.1f}%, max {:.1f}% (the calibration was fitted on some of these sizes: `calibrate` reports "
                 "the held-out error)",
                 upper_median(e.second) * 100, max_of(e.second) * 100);
    fmt::print("\n");
  }
}

// A file the measurement names (the matrix, the plan), as written or beside the measured.json.
std::optional<std::string> named_file(const std::string& name, const std::string& measured) {
  namespace fs = std::filesystem;
  if (fs::exists(name)) return name;
  const fs::path beside = fs::path(measured).parent_path() / fs::path(name).filename();
  if (fs::exists(beside)) return beside.string();
  return std::nullopt;
}

// Ranks of a launch placed on the topology as nccl-tests' are (calib::nccl_group), from the provenance's
// ranks and nodes (one node when not given).
std::vector<int> launch_group(const calib::Measured& meas, const topology::Topology& topo, int ranks) {
  const int nodes = meas.launch_ranks == ranks && meas.launch_nodes > 0 ? meas.launch_nodes : 1;
  return calib::nccl_group(topo, ranks, nodes, meas.file);
}

void alltoallv_table(const calib::Measured& meas, const Inputs& in) {
  const auto& a = *meas.alltoallv;
  const auto path = named_file(a.matrix, meas.file);
  if (!path) {
    fmt::print("\nalltoallv: the byte matrix {} is not here (nor beside {}): not compared\n", a.matrix, meas.file);
    return;
  }
  const std::vector<double> small = collective::read_byte_matrix(*path, a.ranks);
  const std::vector<int> group = launch_group(meas, *in.topo, a.ranks);
  const int n = in.topo->num_gpus();
  std::vector<double> full(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < a.ranks; ++i)
    for (int j = 0; j < a.ranks; ++j) full[static_cast<size_t>(group[i]) * n + group[j]] = small[static_cast<size_t>(i) * a.ranks + j];
  collective::AnalyticNetwork net(*in.topo);
  std::optional<collective::AnalyticNetwork> cal_net;
  if (in.cal) cal_net.emplace(*in.cal_topo);
  fmt::print("\nalltoallv of {} on {} ranks (model: NCCL's grouped send/recv, collective/all_to_all.hpp)\n{:<10} {:>14} {:>12} {:>12} {:>9}",
             *path, a.ranks, "direction", "bytes", "measured us", "model us", "error");
  if (cal_net) fmt::print(" {:>12} {:>9}", "calibrated", "error");
  fmt::print("\n");
  for (const auto& r : a.rows) {
    const bool combine = r.direction == "combine";
    const double pred = net.alltoallv_time(full, combine);
    fmt::print("{:<10} {:>14.0f} {:>12.2f} {:>12.2f} {:>9}", r.direction, r.total_bytes, r.seconds * 1e6, pred * 1e6,
               pct((pred - r.seconds) / r.seconds));
    if (cal_net) {
      const double pc = cal_net->alltoallv_time(full, combine);
      fmt::print(" {:>12.2f} {:>9}", pc * 1e6, pct((pc - r.seconds) / r.seconds));
    }
    fmt::print("\n");
  }
}

// One layer's spAG or spRS as the backend ran it: rounds of grouped send/recv (transport/plan_executor.hpp),
// each round a coflow of whole chunks over the communicator's connections (P2pChannels caps).
double rounds_time(collective::AnalyticNetwork& net, const collective::P2pChannels& ch, const std::vector<transport::ChunkTransfer>& xs, const std::vector<std::vector<int>>& rounds,
                   const std::vector<int>& group, double chunk) {
  double t = 0;
  for (const auto& round : rounds) {
    collective::Coflow c;
    for (int i : round) {
      const int s = group[xs[i].src], d = group[xs[i].dst];
      c.push_back({s, d, chunk, ch.cap(s, d)});
    }
    t += net.coflow_time(c);
  }
  return t;
}

// What the simulator charges for the same layer (collective/sparse_plan.hpp): pipelined chains (or
// direct sends) over NCCL's channels.
double simulator_time(collective::AnalyticNetwork& net, const topology::Topology& topo, const transport::PlanLayer& l,
                      const std::vector<int>& group, double chunk, bool reduce) {
  collective::SparsePlacement p;
  for (int o : l.owner) p.owner.push_back(group[o]);
  for (const auto& r : l.replicas) {
    std::vector<int> g;
    for (int x : r) g.push_back(group[x]);
    std::sort(g.begin(), g.end());
    p.replicas.push_back(g);
  }
  std::vector<int> node_of(topo.num_gpus());
  for (int g = 0; g < topo.num_gpus(); ++g) node_of[g] = topo.node_of(g);
  const auto algo = l.broadcast == transport::Broadcast::kChain ? collective::BroadcastAlgo::kChain : collective::BroadcastAlgo::kDirect;
  const int channels = algo == collective::BroadcastAlgo::kChain ? collective::chain_channels(topo) : 1;
  collective::Coflow c = reduce ? collective::sparse_reduce_scatter(p, chunk, node_of, algo, channels)
                                : collective::sparse_allgather(p, chunk, node_of, algo, channels);
  if (c.empty()) return 0;
  const double extra = collective::sparse_finish(c, p, topo, node_of, algo, reduce, channels);
  collective::CoflowLoads loads;
  return net.loads(c, extra, loads);
}

std::optional<PlanTotals> sparse_table(const calib::Measured& meas, const Inputs& in) {
  const auto& sp = *meas.sparse;
  const auto path = named_file(sp.plan, meas.file);
  if (!path) {
    fmt::print("\nsparse: the plan {} is not here (nor beside {}): not compared\n", sp.plan, meas.file);
    return std::nullopt;
  }
  const transport::Plan plan = transport::read_plan(*path);
  if (plan.gpus != sp.ranks)
    throw InputError({meas.file, 0, 0}, "sparse.ranks", fmt::format("{} ran on {} ranks but the plan {} has {} GPUs", meas.file, sp.ranks, *path, plan.gpus));
  if (plan.gpus > in.topo->num_gpus())
    throw InputError({meas.file, 0, 0}, "sparse.ranks",
                     fmt::format("the plan {} has {} GPUs, more than the topology's {}", *path, plan.gpus, in.topo->num_gpus()));
  const std::vector<int> group = launch_group(meas, *in.topo, sp.ranks);
  collective::AnalyticNetwork net(*in.topo);
  const collective::P2pChannels ch(*in.topo, sp.ranks, plan.provenance.nodes > 1);
  std::optional<collective::AnalyticNetwork> cal_net;
  std::optional<collective::P2pChannels> cal_ch;
  if (in.cal) cal_net.emplace(*in.cal_topo), cal_ch.emplace(*in.cal_topo, sp.ranks, plan.provenance.nodes > 1);
  fmt::print("\nsparse collectives of {} ({}, chunks x {:g}) on {} ranks; model = the rounds the backend ran "
             "(grouped send/recv), simulator = what a run charges (pipelined chains)\n"
             "{:>5} {:>4} {:>12} {:>10} {:>10} {:>8} {:>10} {:>8}{}\n",
             *path, sp.strategy, sp.scale, sp.ranks, "layer", "op", "chunk bytes", "meas. us", "model us", "error", "sim. us", "error",
             cal_net ? fmt::format(" {:>10} {:>8}", "calibr. us", "error") : "");
  PlanTotals tot{meas.file, sp.strategy};
  std::vector<double> pm, mm, ps, e, ec;
  for (const auto& r : sp.rows) {
    const auto it = std::find_if(plan.layers.begin(), plan.layers.end(), [&](const transport::PlanLayer& l) { return l.layer == r.layer; });
    if (it == plan.layers.end())
      throw InputError({meas.file, 0, 0}, "sparse.rows", fmt::format("layer {} is not in the plan {}", r.layer, *path));
    const transport::PlanLayer& l = *it;
    for (const bool reduce : {false, true}) {
      const double measured = reduce ? r.sprs_s : r.spag_s;
      const auto& xs = reduce ? l.sprs : l.spag;
      const auto rounds = reduce ? transport::sprs_rounds(l) : transport::spag_rounds(l);
      const double model = rounds_time(net, ch, xs, rounds, group, r.chunk_bytes);
      const double sim = simulator_time(net, *in.topo, l, group, r.chunk_bytes, reduce);
      tot.measured += measured, tot.predicted += model;
      pm.push_back(model), mm.push_back(measured), ps.push_back(sim);
      e.push_back(std::abs(model - measured) / measured);
      fmt::print("{:>5} {:>4} {:>12.0f} {:>10.2f} {:>10.2f} {:>8} {:>10.2f} {:>8}", r.layer, reduce ? "spRS" : "spAG", r.chunk_bytes,
                 measured * 1e6, model * 1e6, pct((model - measured) / measured), sim * 1e6, pct((sim - measured) / measured));
      if (cal_net) {
        const double pc = rounds_time(*cal_net, *cal_ch, xs, rounds, group, r.chunk_bytes);
        ec.push_back(std::abs(pc - measured) / measured);
        fmt::print(" {:>10.2f} {:>8}", pc * 1e6, pct((pc - measured) / measured));
      }
      fmt::print("\n");
    }
  }
  fmt::print("model median |error| {:.1f}%, max {:.1f}%", upper_median(e) * 100, max_of(e) * 100);
  if (!ec.empty()) fmt::print("; calibrated {:.1f}%, max {:.1f}%", upper_median(ec) * 100, max_of(ec) * 100);
  fmt::print("\n");
  if (auto t = calib::kendall_tau(pm, mm, 0.01))
    fmt::print("order of the layers' collectives: Kendall tau {:.3f} with the model, ", t->tau);
  else
    fmt::print("order of the layers' collectives: fewer than two distinguishable times, no Kendall tau\n");
  if (auto t = calib::kendall_tau(ps, mm, 0.01)) fmt::print("{:.3f} with the simulator (within 1% counts as a tie)\n", t->tau);
  return tot;
}

}  // namespace

void setup_validate(CLI::App& sub, int& exit_code) {
  auto o = std::make_shared<Options>();
  sub.add_option("measured", o->measured, "measured.json files written by hecate-validate")->required();
  sub.add_option("--topology", o->topology, "topology file or preset the measurements ran on (its GPU, links and nodes)")
      ->required();
  sub.add_option("--model", o->model, "model file or preset whose expert FFN was measured (needed for the gemm suite)");
  sub.add_option("--calibration", o->calibration, "also compare with the cost model under this calibration file");
  sub.callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace hs::cli
