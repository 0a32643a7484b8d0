// hecate-sim calibrate [MEASURED.json...] [--nccl-tests [OP[@RANKS]=]LOG...] [--holdout-logs LOG,...]
//                      --topology T -o CAL.yaml
//
// Fits the model to measurements and writes a calibration file (calib/calibration.hpp):
//   * link classes from nccl-tests logs and from the collectives suite of hecate-validate's
//     measured.json (calib/link_fit.hpp): bandwidth scale and per-link latency of the classes that
//     bound each operation and carry its latency, and NCCL's LL / LL128 latency and bandwidth
//     factors per tier, all logs at once; checked on every other size and on the logs
//     --holdout-logs names (never fitted), per size band;
//   * the GPU from hecate-validate's measured.json: expert-GEMM efficiency curve (held-out rows), the
//     memory-bound kernels' HBM efficiency and launch overhead (the materialize suite's pack /
//     permute kernels, calib/memory_fit.hpp; else the hbm_copy rate), and the overlap slowdowns
//     (the overlap suite, calib/overlap_fit.hpp).
// Prints what it fitted with the error before and after on data the fit never saw. Too little data
// is an input error (exit 2), not a bad fit.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <filesystem>
#include <memory>

#include "calib/calibration.hpp"
#include "calib/gemm_tiles_fit.hpp"
#include "calib/link_fit.hpp"
#include "calib/measured.hpp"
#include "calib/memory_fit.hpp"
#include "calib/nccl_tests_ranks.hpp"
#include "calib/overlap_fit.hpp"
#include "engine/interference.hpp"
#include "cli/command.hpp"
#include "app/presets.hpp"
#include "cli/progress_options.hpp"
#include "report/run_report.hpp"
#include "topology/topology_loader.hpp"
#include "util/atomic_file.hpp"
#include "util/output_path.hpp"
#include "util/progress.hpp"

namespace hs::cli {

namespace {

struct CalibrateOptions {
  std::vector<std::string> measured, nccl_tests, holdout_logs;
  std::string topology, out;
  bool quiet = false;
};

// A GPU parameter comes from one measurement: a second file setting it is an input error, not a
// silent overwrite.
void set_once(std::optional<double>& slot, double value, const std::string& file, const char* section) {
  if (slot)
    throw InputError({file, 0, 0}, section,
                     "a second measurement of the same GPU parameter: calibrate one GPU's kernels from one file");
  slot = value;
}

int run_calibrate(const CalibrateOptions& o) {
  if (o.measured.empty() && o.nccl_tests.empty())
    throw InputError({"calibrate", 0, 0}, "", "nothing to calibrate from: give measured.json files and/or --nccl-tests logs");
  check_output_path(o.out, "--out");  // before anything is read or fitted
  // Steps: each log read, each measured file read, the link fit, each measured file's GPU fit.
  Progress progress("calibrate", "steps", o.nccl_tests.size() + 2 * o.measured.size() + 1, progress_settings(o.quiet));
  size_t done = 0;
  const ResolvedInput topo_in = resolve_input(o.topology, "topologies");
  const topology::Topology topo = topology::load_topology(topo_in.text, topo_in.source);
  calib::Calibration cal;
  cal.topology = topo_in.source;
  cal.topology_hash = report::content_hash(topo_in.text);
  std::string report;

  // Link classes from nccl-tests.
  std::vector<calib::NcclMeasurement> logs;
  for (const auto& arg : o.nccl_tests) {
    std::string path = arg;
    std::optional<collective::NcclOp> op;
    int given_ranks = 0;  // OP@N=FILE: the rank count of an excerpt without '#  Rank' lines
    const auto eq = arg.find('=');
    if (eq != std::string::npos) {
      std::string spec = arg.substr(0, eq);
      const auto at = spec.find('@');
      if (at != std::string::npos && collective::parse_nccl_op(spec.substr(0, at))) {
        const std::string n = spec.substr(at + 1);
        size_t used = 0;
        try {
          given_ranks = std::stoi(n, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != n.size() || n.empty() || given_ranks < 2 || given_ranks > 1 << 24)
          throw InputError({"--nccl-tests", 0, 0}, arg, "expected OP@N=FILE with N the number of ranks (2 or more)");
        spec = spec.substr(0, at);
      }
      if (collective::parse_nccl_op(spec)) op = collective::parse_nccl_op(spec), path = arg.substr(eq + 1);
      else given_ranks = 0;
    }
    if (!op) op = collective::nccl_op_in_name(path);
    if (!op)
      throw InputError({path, 0, 0}, "--nccl-tests",
                       "which operation is this? name it as OP=FILE (all_reduce, all_gather, reduce_scatter, all_to_all, "
                       "broadcast, reduce, send_recv) or keep the binary's name in the file name (all_reduce_perf.log)");
    progress.update(done++, "reading " + path);
    const std::string text = read_file(path);
    logs.push_back({*op, calib::parse_nccl_tests_log(text, path)});
    for (const auto& h : o.holdout_logs)
      if (h == path || h == arg || h == std::filesystem::path(path).filename().string()) logs.back().held_out = true;
    calib::settle_ranks(logs.back().log, *op, given_ranks, "--nccl-tests " + arg,
                        fmt::format("--nccl-tests {}@N={}", collective::to_string(*op), path));
    for (const auto& n : logs.back().log.notes) fmt::print(stderr, "note: {}\n", n);
    cal.sources.push_back({path, report::content_hash(text),
                           fmt::format("nccl-tests {}, {} ranks on {} node(s), {} sizes", collective::to_string(*op),
                                       logs.back().log.ranks, logs.back().log.nodes, logs.back().log.rows.size())});
  }
  // hecate-validate's collectives suite: one log per operation, fitted with the nccl-tests logs.
  std::vector<calib::Measured> measured;
  for (const auto& path : o.measured) {
    progress.update(done++, "reading " + path);
    measured.push_back(calib::read_measured(path));
    if (!measured.back().collectives.empty() && measured.back().ranks < 2) {
      report += fmt::format("\ncollectives ({}): measured on one rank, which crosses no link; not fitted\n", path);
      continue;
    }
    for (auto& x : calib::nccl_measurements(measured.back())) {
      cal.sources.push_back({x.log.file, report::content_hash(read_file(path)),
                             fmt::format("hecate-validate {}, {} ranks on {} node(s), {} sizes", collective::to_string(x.op),
                                         x.log.ranks, x.log.nodes, x.log.rows.size())});
      logs.push_back(std::move(x));
    }
  }
  for (const auto& h : o.holdout_logs) {
    const bool named = std::any_of(o.nccl_tests.begin(), o.nccl_tests.end(), [&](const std::string& a) {
      const std::string p = a.find('=') == std::string::npos ? a : a.substr(a.find('=') + 1);
      return h == a || h == p || h == std::filesystem::path(p).filename().string();
    });
    if (!named)
      throw InputError({"--holdout-logs", 0, 0}, h, "names none of the --nccl-tests logs (give a log's path or file name)");
  }
  progress.update(done++, fmt::format("fitting link classes to {} log(s)", logs.size()));
  if (!logs.empty()) {
    calib::LinkFit fit = calib::fit_links(topo_in.text, topo_in.source, logs);
    if (!o.nccl_tests.empty())
      report += "\nnccl-tests logs: each size's measured time is the lower of its out-of-place and in-place times\n";
    cal.links = fit.classes;
    cal.protocols = fit.protocols;
    cal.net_step_latency_s = fit.net_step_latency_s;
    auto pct = [](double e) { return fmt::format("{:.1f}%", e * 100); };
    auto summary = [&](const calib::ErrorSummary& e) {
      return e.n == 0 ? std::string("-") : fmt::format("{} -> {} ({})", pct(e.median_before), pct(e.median_after), e.n);
    };
    for (const auto& ch : fit.checks) {
      report += fmt::format("\n{} ({}, {} ranks, {} node(s)){}: bandwidth of link class '{}', latency of '{}'\n"
                            "{:>12} {:>12} {:>12} {:>12} {:>8} {:>14} {:>14} {:>8}\n",
                            ch.file, collective::to_string(ch.op), ch.ranks, ch.nodes,
                            ch.held_out_log ? ", HELD OUT (not fitted)" : "", ch.link_class, ch.latency_class, "bytes",
                            "measured us", "before us", "after us", "after", "ran before", "ran after", "");
      for (const auto& p : ch.points)
        report += fmt::format("{:>12.0f} {:>12.2f} {:>12.2f} {:>12.2f} {:>7.1f}% {:>14} {:>14} {:>8}\n", p.bytes,
                              p.measured_s * 1e6, p.before_s * 1e6, p.after_s * 1e6,
                              (p.after_s - p.measured_s) / p.measured_s * 100, p.proto_before, p.proto_after,
                              p.held_out ? "held out" : "fitted");
      report += fmt::format("held-out |error|: median {} -> {}, max {} -> {} (before -> after)\n", pct(ch.held.median_before),
                            pct(ch.held.median_after), pct(ch.held.max_before), pct(ch.held.max_after));
    }
    report += fmt::format("\nheld out: every other size of the fitted logs (the 2nd, 4th, ...){}\n",
                          o.holdout_logs.empty() ? std::string()
                                                 : fmt::format(", and every size of {}", fmt::join(o.holdout_logs, ", ")));
    report += fmt::format("median |time error| on held-out sizes, before -> after (points); fitted on {} sizes, {} parameters\n",
                          fit.fitted_rows, fit.parameters);
    report += fmt::format("{:<44} {:>22} {:>22} {:>22} {:>22}\n", "log", "all", calib::kBands[0].name, calib::kBands[1].name,
                          calib::kBands[2].name);
    auto row = [&](const std::string& name, const calib::ErrorSummary& all, const calib::ErrorSummary* b) {
      return fmt::format("{:<44} {:>22} {:>22} {:>22} {:>22}\n", name, summary(all), summary(b[0]), summary(b[1]), summary(b[2]));
    };
    for (const auto& ch : fit.checks)
      report += row(std::filesystem::path(ch.file).filename().string() + (ch.held_out_log ? " (held out)" : ""), ch.held, ch.bands);
    report += row("all logs", fit.held, fit.bands);
    report += "\nlink classes\n";
    for (const auto& c : cal.links)
      report += fmt::format("  {:<8} bandwidth {}, latency {}, fitted on {} sizes\n", c.link_class,
                            c.bandwidth_fitted ? fmt::format("x {:.3f}", c.bandwidth_scale)
                                               : std::string("unchanged (no fitted size moves with it; Simple's bandwidth factor below instead)"),
                            c.latency_s ? fmt::format("{:.2f} us per link", *c.latency_s * 1e6) : std::string("unchanged"),
                            c.points);
    if (!cal.protocols.empty()) {
      report += "NCCL protocols (factors on NCCL's per-step latencies and on the protocol's bandwidth, relative to Simple)\n";
      for (const auto& p : cal.protocols)
        report += fmt::format("  {:<5} {:<6} latency x {:.3f}, bandwidth x {:.3f}\n", p.tier, p.proto, p.latency_scale,
                              p.bandwidth_scale);
    }
    if (cal.net_step_latency_s)
      report += fmt::format("NCCL's latency per network step (latencyInter; twice for Simple): {:.2f} us\n",
                            *cal.net_step_latency_s * 1e6);
  }

  // The GPU from hecate-validate.
  std::vector<calib::GemmSuite> gemm_suites;
  int gemm_files = 0;
  std::vector<double> hbm_copies;
  std::string hbm_copy_file;
  for (const calib::Measured& m : measured) {
    const std::string& path = m.file;
    progress.update(done++, "fitting the GPU to " + path);
    if (m.alltoallv) report += fmt::format("\nalltoallv ({}): compared with the model by validate; nothing to fit\n", path);
    if (m.sparse) report += fmt::format("\nsparse ({}): compared with the model by validate; nothing to fit\n", path);
    // The file as a source of the GPU part, once, naming what it gave.
    std::vector<std::string> gave;
    if (m.has_gemm()) gave.push_back(fmt::format("expert FFN d_model {} d_ffn {}", m.d_model, m.d_ffn));
    if (m.hbm_Bps > 0 || !m.memory_kernels.empty()) gave.push_back("memory-bound kernels");
    if (!m.overlap.empty()) gave.push_back("overlap");
    if (!gave.empty())
      cal.sources.push_back({path, report::content_hash(read_file(path)),
                             fmt::format("hecate-validate on {}: {}", m.device.empty() ? "?" : m.device, fmt::join(gave, ", "))});
    if (m.has_gemm()) {
      gemm_suites.push_back(calib::gemm_suite(m));
      if (auto g = calib::fit_gemm(m, topo.gpu_model().peak_flops.value())) {
        // The curve is one shape's: written to the file only when one shape was measured (the tile
        // model below prices the GEMMs either way).
        if (gemm_files++ == 0)
          cal.eta_max = g->fit.eta_max, cal.t_half = g->fit.t_half;
        else
          cal.eta_max.reset(), cal.t_half.reset();
        report += fmt::format("\nexpert GEMM curve ({}): eta_max {:.3f}, t_half {:.1f} from {} compute-bound rows of the {}-expert "
                              "suite; efficiency error on {} held-out rows {:.1f}% median ({:.1f}% with the defaults)\n",
                              path, g->fit.eta_max, g->fit.t_half, g->fit_rows, g->experts, g->held_rows,
                              g->held_median_error * 100, g->held_median_error_default * 100);
      } else {
        report += fmt::format("\nexpert GEMM ({}): not fitted, fewer than two compute-bound rows (tokens >= 256, multiples of 128)\n", path);
      }
    }
    const double hbm = topo.gpu_model().hbm_bandwidth.value();
    const cost::ComputeParams defaults;
    if (m.hbm_Bps > 0) {
      const double eta = std::min(1.0, m.hbm_Bps / hbm);
      report += fmt::format("HBM copy ({}): {:.0f} GB/s = {:.3f} of the topology's {:.0f} GB/s (was {:.2f}){}\n", path,
                            m.hbm_Bps / 1e9, eta, hbm / 1e9, defaults.eta_mem,
                            m.memory_kernels.empty() ? "" : "; the materialize kernels below set eta_mem instead");
      if (m.memory_kernels.empty()) {  // one GPU's copy rate: the mean over the files (set below)
        if (hbm_copies.empty()) hbm_copy_file = path;
        hbm_copies.push_back(eta);
      }
    }
    if (auto f = calib::fit_memory_kernels(m.memory_kernels, hbm, defaults.eta_mem, defaults.launch.value())) {
      set_once(cal.hbm_efficiency, f->eta_mem, path, "materialize");
      if (f->launch_s) cal.kernel_launch_s = f->launch_s;
      report += fmt::format("\nmemory-bound kernels ({}): eta_mem {:.3f} (was {:.2f}), launch {} from {} rows", path, f->eta_mem,
                            defaults.eta_mem,
                            f->launch_s ? fmt::format("{:.2f} us (was {:.1f})", *f->launch_s * 1e6, defaults.launch.value() * 1e6)
                                        : std::string("kept (one size measured)"),
                            f->fit_rows);
      if (f->held_rows > 0)
        report += fmt::format("; on {} held-out rows |error| median {:.1f}% (defaults {:.1f}%), max {:.1f}%", f->held_rows,
                              f->held_median_error * 100, f->held_median_error_default * 100, f->held_max_error * 100);
      report += "\n";
      for (const auto& r : m.memory_kernels)
        report += fmt::format("  {:<18} {:>14.0f} bytes {:>10.2f} us {:>8.0f} GB/s\n", r.kernel, r.bytes, r.seconds * 1e6,
                              2 * r.bytes / r.seconds / 1e9);
    }
    if (auto o = calib::fit_overlap(m.overlap, m.overlap_ranks, m.launch_nodes, topo.gpus_in_node(0))) {
      const int k = static_cast<int>(o->traffic), gemm = static_cast<int>(engine::KernelClass::kGemm);
      if (cal.interference.compute[gemm][k])
        throw InputError({path, 0, 0}, "overlap",
                         fmt::format("a second overlap measurement of {} traffic: calibrate one GPU's slowdowns of one "
                                     "traffic kind from one file",
                                     engine::traffic_key(k)));
      const engine::InterferenceOverride cells = o->cells();
      for (int c = 0; c < engine::kKernelClasses; ++c)
        if (cells.compute[c][k]) cal.interference.compute[c][k] = cells.compute[c][k];
      cal.interference.communication[k] = cells.communication[k];
      const engine::Interference& was = topo.gpu_model().interference;
      report += fmt::format("\noverlap ({}): from the {} row ({} traffic, {} ranks on {} nodes), GEMM beside {} traffic "
                            "{:.3f} (was {:.3f}), {} traffic beside compute {:.3f} (was {:.3f}); the other cells keep the "
                            "topology's\n",
                            path, o->from, engine::traffic_key(k), m.overlap_ranks,
                            m.launch_nodes > 0 ? fmt::format("{}", m.launch_nodes) : std::string("?"), engine::traffic_key(k),
                            o->compute_slowdown, was.compute[gemm][k], engine::traffic_key(k), o->communication_slowdown,
                            was.communication[k]);
      for (const auto& r : m.overlap)
        report += fmt::format("  {:<16} {:>12.0f} bytes  GEMM x{:.3f}  communication x{:.3f}\n", r.comm, r.comm_bytes,
                              r.gemm_slowdown(), r.comm_slowdown());
    }
  }
  if (!hbm_copies.empty()) {
    double sum = 0;
    for (double e : hbm_copies) sum += e;
    set_once(cal.hbm_efficiency, sum / static_cast<double>(hbm_copies.size()), hbm_copy_file, "hbm_copy");
    if (hbm_copies.size() > 1)
      report += fmt::format("HBM copy: eta_mem {:.3f}, the mean of {} files' copy rates\n", *cal.hbm_efficiency, hbm_copies.size());
  }
  if (!gemm_suites.empty()) {
    // The tile/wave model: one parameter set for every shape measured (calib/gemm_tiles_fit.hpp).
    const auto& gpu = topo.gpu_model();
    const int sms = gpu.sms > 0 ? gpu.sms : cost::kDefaultSms;
    const double eta_mem = cal.hbm_efficiency.value_or(cost::ComputeParams{}.eta_mem);
    if (auto t = calib::fit_gemm_tiles(gemm_suites, gpu, sms, eta_mem, cost::GemmTileParams{})) {
      cal.gemm_tiles = t->params;
      report += fmt::format("\nexpert GEMM tile/wave model ({} shape(s), {} SMs, tiles {}x{}, eta_mem {:.3f}): eta_tile {:.3f}, "
                            "k_fill {:.0f}, {:.1f} us per launch from {} rows (every other); on {} held-out rows |error| "
                            "median {:.1f}%\n",
                            gemm_suites.size(), sms, t->params.tile_m, t->params.tile_n, eta_mem, t->params.eta_tile,
                            t->params.k_fill, t->params.call.value() * 1e6, t->fit_rows, t->held_rows,
                            t->held_median_error * 100);
      for (const auto& f : t->files)
        report += fmt::format("  {}: held-out |error| median {:.1f}%, all rows {:.1f}%\n", f.file, f.held_median_error * 100,
                              f.median_error * 100);
    } else {
      report += "\nexpert GEMM tile/wave model: not fitted, fewer than three rows\n";
    }
  }
  if (cal.links.empty() && !cal.eta_max && !cal.gemm_tiles && !cal.hbm_efficiency && !cal.interference.any())
    throw InputError({"calibrate", 0, 0}, "", "the measurements gave nothing to fit (see the messages above)");
  progress.update(done, "done");
  progress.finish();
  write_file_atomically(o.out, calib::to_yaml(cal));
  fmt::print("calibration of {} written to {}\n{}", topo_in.source, o.out, report);
  return 0;
}

}  // namespace

void setup_calibrate(CLI::App& sub, int& exit_code) {
  auto o = std::make_shared<CalibrateOptions>();
  sub.add_option("MEASURED", o->measured, "measured.json files written by hecate-validate");
  sub.add_option("--nccl-tests", o->nccl_tests,
                 "nccl-tests output, as OP=FILE or a FILE whose name names the binary (all_reduce_perf.log); OP@N=FILE gives the "
                 "rank count of an excerpt without '#  Rank' lines; repeatable");
  sub.add_option("--topology", o->topology, "the topology to calibrate (file or preset)")->required();
  sub.add_option("-o,--out", o->out, "calibration file to write (YAML, atomically)")->required();
  sub.add_option("--holdout-logs", o->holdout_logs,
                 "logs (of --nccl-tests: path or file name) not fitted, only checked; comma-separated or repeatable")
      ->delimiter(',');
  add_quiet_flag(sub, o->quiet);
  sub.callback([o, &exit_code] { exit_code = run_calibrate(*o); });
}

}  // namespace hs::cli
