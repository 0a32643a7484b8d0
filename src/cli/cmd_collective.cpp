// hecate-sim collective TOPOLOGY --op OP [-b MIN] [-e MAX] [-f FACTOR] [--ranks N|R,R,...] [--algo A]
//                       [--proto P] [--min-ctas N] [--max-ctas N] [--network analytic|flow] [--matrix FILE] [--compare NCCL_TESTS_LOG]
//                       [--calibration FILE] [--format table|json|csv]
//
// One collective on its own, as nccl-tests would run it, timed by the simulator (the decompositions
// of collective/nccl_op.hpp) on either network tier: size, count, time, algbw and busbw in
// nccl-tests' conventions. --matrix times one all-to-all-v of a byte matrix; --compare puts a real
// nccl-tests log beside the prediction (the same parser as `calibrate`; its notes on skipped lines go
// to stderr once), compared row by row on the lower of its out-of-place and in-place times.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "calib/calibration.hpp"
#include "calib/link_fit.hpp"
#include "calib/nccl_tests_log.hpp"
#include "calib/nccl_tests_ranks.hpp"
#include "cli/command.hpp"
#include "app/presets.hpp"
#include "cli/progress_options.hpp"
#include "collective/all_to_all.hpp"
#include "collective/byte_matrix.hpp"
#include "collective/nccl_op.hpp"
#include "engine/simulation.hpp"
#include "measure/size_sweep.hpp"
#include "network/coflow_drain.hpp"
#include "network/flow_network.hpp"
#include "report/run_report.hpp"
#include "topology/topology_loader.hpp"
#include "util/atomic_file.hpp"
#include "util/output_path.hpp"
#include "util/progress.hpp"
#include "util/text_escape.hpp"

namespace hs::cli {

namespace {

// The most sizes one sweep from -b to -e may have (each is a simulation; nccl-tests' -f 2 over 8 B
// to 8 GiB gives 31).
constexpr size_t kMaxSizes = 4096;

struct CollectiveOptions {
  std::string topology, op, min = "8", max = "128M", ranks, algo = "auto", proto = "auto", network = "analytic", matrix,
      compare, calibration, format = "table", out = "-";
  double factor = 2;
  bool quiet = false;
  int min_ctas = 0, max_ctas = 0;  // NCCL_MIN_CTAS / NCCL_MAX_CTAS (0: the topology's)
};

// nccl-tests sizes (8, 64K, 128M, 8G): the parser hecate-validate's -b/-e use (measure/size_sweep.hpp).
double parse_size(const std::string& s, const char* flag) {
  try {
    return static_cast<double>(measure::parse_size(s, flag));
  } catch (const std::invalid_argument& e) {
    throw InputError({flag, 0, 0}, s, e.what());
  }
}

std::vector<int> parse_ranks(const std::string& s, const topology::Topology& t) {
  std::vector<int> g;
  if (s.empty()) {
    for (int i = 0; i < t.num_gpus(); ++i) g.push_back(i);
    return g;
  }
  if (s.find(',') == std::string::npos) {
    int n = 0;
    try {
      size_t used = 0;
      n = std::stoi(s, &used);
      if (used != s.size()) throw std::invalid_argument("x");
    } catch (const std::exception&) {
      throw InputError({"--ranks", 0, 0}, s, "expected a count or a comma-separated list of GPU ranks");
    }
    if (n < 2 || n > t.num_gpus())
      throw InputError({"--ranks", 0, 0}, s, fmt::format("expected 2..{} ranks (the topology's GPUs)", t.num_gpus()));
    for (int i = 0; i < n; ++i) g.push_back(i);
    return g;
  }
  std::stringstream ss(s);
  std::string item;
  std::set<int> seen;
  while (std::getline(ss, item, ',')) {
    int r = -1;
    try {
      size_t used = 0;
      r = std::stoi(item, &used);
      if (used != item.size()) r = -1;
    } catch (const std::exception&) {
    }
    if (r < 0 || r >= t.num_gpus() || !seen.insert(r).second)
      throw InputError({"--ranks", 0, 0}, item, fmt::format("expected distinct GPU ranks in 0..{}", t.num_gpus() - 1));
    g.push_back(r);
  }
  if (g.size() < 2) throw InputError({"--ranks", 0, 0}, s, "expected at least 2 ranks");
  return g;
}

double flow_time(const topology::Topology& t, network::CoflowDrain& drain, collective::Coflow flows, double extra) {
  // Alone, solved link by link (network/coflow_drain.hpp) when every transfer crosses at most four
  // links that may bind; FlowNetwork otherwise (host-staged routes between cube-mesh nodes). One
  // drain serves every size of the command (its buffers are kept).
  if (auto d = drain.time(flows, extra)) return d->seconds;
  engine::TaskGraph g;
  auto id = g.add_task(g.add_resource("collective"), Seconds(0), 0, 1);
  network::FlowNetwork net(t, network::kDefaultFlowPrecision);
  net.assign(id, std::move(flows), extra);
  engine::Simulation sim(g);
  sim.add_model(&net);
  sim.run();
  return sim.makespan();
}

struct Line {
  double bytes = 0, seconds = 0;
  std::string algo, proto;
  double measured_s = 0;  // 0: none; else the lower of the log's out-of-place and in-place times
  double out_of_place_s = 0, in_place_s = 0;  // as the log gives them (0: N/A)
  bool places_disagree = false;               // by more than 20%
};

int run_collective(const CollectiveOptions& o) {
  check_output_path(o.out, "--out");  // before anything is loaded or timed
  const ResolvedInput topo_in = resolve_input(o.topology, "topologies");
  topology::TopologyAdjust adj;
  std::string cal_note;
  if (!o.calibration.empty()) {
    const calib::Calibration cal = calib::parse_calibration(read_file(o.calibration), o.calibration);
    // Fitted on another topology: applied all the same, with a one-line warning.
    const std::string mismatch = calib::topology_mismatch(cal, topo_in.source, report::content_hash(topo_in.text));
    if (!mismatch.empty()) fmt::print(stderr, "{}: warning: topology_fnv1a64: {}\n", o.calibration, mismatch);
    adj = calib::topology_adjust(cal);
    cal_note = " | calibration " + o.calibration;
  }
  topology::Topology topo = topology::load_topology(topo_in.text, topo_in.source, o.calibration.empty() ? nullptr : &adj);
  {
    // NCCL_MIN_CTAS / NCCL_MAX_CTAS over the topology's `nccl:` (collective/nccl_tuning.hpp).
    topology::NcclConfig nc = topo.nccl();
    if (o.min_ctas > 0) nc.min_ctas = o.min_ctas;
    if (o.max_ctas > 0) nc.max_ctas = o.max_ctas;
    if (nc.min_ctas > 0 && nc.max_ctas > 0 && nc.min_ctas > nc.max_ctas)
      throw InputError({o.min_ctas > 0 ? "--min-ctas" : "--max-ctas", 0, 0},
                       fmt::format("{}", o.min_ctas > 0 ? o.min_ctas : o.max_ctas),
                       fmt::format("NCCL_MIN_CTAS {} is above NCCL_MAX_CTAS {}", nc.min_ctas, nc.max_ctas));
    topo.set_nccl(nc);
  }
  collective::AnalyticNetwork net(topo);
  const bool flow = o.network == "flow";
  network::CoflowDrain drain(topo, network::kDefaultFlowPrecision);
  std::vector<Line> lines;
  std::string op_name, group_note;
  int ranks = 0;
  if (!o.matrix.empty()) {
    if (!o.op.empty() && o.op != "all_to_all_v")
      throw InputError({"--op", 0, 0}, o.op, "--matrix times an all_to_all_v: drop --op or say --op all_to_all_v");
    const auto m = collective::read_byte_matrix(o.matrix, topo.num_gpus());
    double extra = 0, total = 0;
    collective::Coflow c = collective::alltoallv_flows(topo, m, false, extra);
    for (const auto& t : c) total += t.bytes;
    op_name = "all_to_all_v";
    ranks = topo.num_gpus();
    group_note = fmt::format("matrix {} ({} pairs, {:.0f} bytes)", o.matrix, c.size(), total);
    Line l;
    l.bytes = total;
    l.algo = "p2p";
    l.proto = "Simple";
    l.seconds = flow ? flow_time(topo, drain, std::move(c), extra) : net.alltoallv_time(m);
    lines.push_back(l);
  } else {
    const auto op = collective::parse_nccl_op(o.op);
    if (!op)
      throw InputError({"--op", 0, 0}, o.op, "expected all_reduce, all_gather, reduce_scatter, all_to_all, all_to_all_v "
                                             "(with --matrix), broadcast, reduce or send_recv");
    const bool tuned = *op == collective::NcclOp::kAllReduce || *op == collective::NcclOp::kAllGather ||
                       *op == collective::NcclOp::kReduceScatter || *op == collective::NcclOp::kBroadcast ||
                       *op == collective::NcclOp::kReduce;
    if (o.algo != "auto" && !tuned)
      throw InputError({"--algo", 0, 0}, o.algo, "all_to_all and send_recv run point-to-point: no algorithm to choose");
    if (o.proto != "auto" && !tuned)
      throw InputError({"--proto", 0, 0}, o.proto, "all_to_all and send_recv run point-to-point: no protocol to choose");
    op_name = collective::to_string(*op);
    std::vector<int> group;
    std::vector<double> sizes;
    std::vector<calib::NcclTestsRow> measured;
    if (!o.compare.empty()) {
      auto log = calib::parse_nccl_tests_log(read_file(o.compare), o.compare);
      for (const auto& n : log.notes) fmt::print(stderr, "note: {}\n", n);
      // The ranks: the log's '#  Rank' lines, or --ranks for an excerpt without them (a count, or a
      // list placing them); both given, they must agree (calib/nccl_tests_ranks.hpp).
      std::vector<int> listed;
      if (!o.ranks.empty()) listed = parse_ranks(o.ranks, topo);
      calib::settle_ranks(log, *op, static_cast<int>(listed.size()), "--ranks", "--ranks N");
      group = o.ranks.find(',') != std::string::npos ? listed : calib::nccl_group(topo, log.ranks, log.nodes, o.compare);
      // 0-byte rows (alltoall_perf below ranks x 16 B) time nothing: not compared.
      for (const auto& r : log.rows)
        if (r.bytes > 0) sizes.push_back(r.bytes), measured.push_back(r);
      std::set<int> nodes;
      for (int g : group) nodes.insert(topo.node_of(g));
      group_note = fmt::format("the ranks of {} ({} on {} node(s){})", o.compare, group.size(), nodes.size(),
                               log.nodes > 0 ? "" : ", placed node by node");
    } else {
      group = parse_ranks(o.ranks, topo);
      const double lo = parse_size(o.min, "-b"), hi = parse_size(o.max, "-e");
      if (hi < lo) throw InputError({"-e", 0, 0}, o.max, "the largest size must be at least the smallest (-b)");
      if (!(o.factor > 1)) throw InputError({"-f", 0, 0}, fmt::format("{}", o.factor), "expected a factor above 1");
      for (double s = lo; s <= hi * (1 + 1e-12); s *= o.factor) {
        if (sizes.size() == kMaxSizes)
          throw InputError({"-f", 0, 0}, fmt::format("{}", o.factor), fmt::format("more than {} sizes from -b to -e", kMaxSizes));
        sizes.push_back(std::floor(s));
      }
      std::set<int> nodes;
      for (int g : group) nodes.insert(topo.node_of(g));
      group_note = fmt::format("{} ranks on {} node(s)", group.size(), nodes.size());
    }
    ranks = static_cast<int>(group.size());
    Progress progress("collective", "sizes", sizes.size(), progress_settings(o.quiet));
    for (size_t i = 0; i < sizes.size(); ++i) {
      progress.update(i, fmt::format("{} of {:.0f} bytes on {}", op_name, sizes[i], o.network));
      auto plan = collective::nccl_op_plan(net, *op, group, sizes[i], o.algo == "auto" ? "" : o.algo,
                                           o.proto == "auto" ? "" : o.proto);
      if (plan.flows.empty()) {
        if (o.algo == "auto" && o.proto != "auto")
          throw InputError({"--proto", 0, 0}, o.proto, fmt::format("no algorithm runs {} with {} on these ranks ({})",
                                                                   op_name, o.proto, group_note));
        throw InputError({"--algo", 0, 0}, o.algo,
                         fmt::format("{}{} cannot run {} on these ranks ({})", o.algo,
                                     o.proto == "auto" ? "" : " with " + o.proto, op_name, group_note));
      }
      Line l;
      l.bytes = sizes[i];
      l.algo = plan.algo;
      l.proto = plan.proto;
      l.seconds = flow ? flow_time(topo, drain, std::move(plan.flows), plan.extra_latency) : plan.analytic_s;
      if (!measured.empty()) {
        l.measured_s = measured[i].best_time_us() * 1e-6;
        l.out_of_place_s = measured[i].time_us * 1e-6;
        l.in_place_s = measured[i].has_in_place ? measured[i].in_time_us * 1e-6 : 0;
        l.places_disagree = measured[i].places_disagree(0.2);
      }
      lines.push_back(l);
    }
    progress.update(sizes.size(), "done");
    progress.finish();
  }
  // nccl-tests' count column (calib/nccl_tests_ranks.hpp): elements per rank for all_gather and
  // reduce_scatter (nccl-tests src/all_gather.cu, src/reduce_scatter.cu), per peer for alltoall
  // (src/alltoall.cu): size / 4 / ranks for floats; size / 4 for the others.
  const bool per_rank_count = op_name == "all_gather" || op_name == "reduce_scatter" || op_name == "all_to_all";
  const double count_div = 4.0 * (per_rank_count ? ranks : 1);
  const double factor = op_name == "all_to_all_v" ? static_cast<double>(ranks - 1) / ranks
                                                  : collective::bus_factor(*collective::parse_nccl_op(op_name), ranks);
  std::string out;
  auto it = std::back_inserter(out);
  if (o.format == "json") {
    fmt::format_to(it, "{{\"topology\": \"{}\", \"op\": \"{}\", \"ranks\": {}, \"network\": \"{}\", \"calibration\": {}, \"rows\": [\n",
                   json_escape(topo_in.source), op_name, ranks, o.network,
                   o.calibration.empty() ? std::string("null") : "\"" + json_escape(o.calibration) + "\"");
    for (size_t i = 0; i < lines.size(); ++i) {
      const auto& l = lines[i];
      fmt::format_to(it, "  {{\"bytes\": {:.0f}, \"algo\": \"{}\", \"proto\": \"{}\", \"time_us\": {:.6g}, \"algbw_GBps\": {:.6g}, \"busbw_GBps\": {:.6g}{}}}{}\n",
                     l.bytes, l.algo, l.proto, l.seconds * 1e6, l.bytes / l.seconds / 1e9, l.bytes / l.seconds / 1e9 * factor,
                     l.measured_s > 0 ? fmt::format(", \"measured_us\": {:.6g}, \"measured_out_of_place_us\": {:.6g}, "
                                                    "\"measured_in_place_us\": {:.6g}", l.measured_s * 1e6,
                                                    l.out_of_place_s * 1e6, l.in_place_s * 1e6)
                                     : "",
                     i + 1 < lines.size() ? "," : "");
    }
    fmt::format_to(it, "]}}\n");
  } else if (o.format == "csv") {
    fmt::format_to(it, "bytes,algo,time_us,algbw_GBps,busbw_GBps,measured_us,proto\n");
    for (const auto& l : lines)
      fmt::format_to(it, "{:.0f},{},{:.6g},{:.6g},{:.6g},{},{}\n", l.bytes, l.algo, l.seconds * 1e6, l.bytes / l.seconds / 1e9,
                     l.bytes / l.seconds / 1e9 * factor, l.measured_s > 0 ? fmt::format("{:.6g}", l.measured_s * 1e6) : "",
                     l.proto);
  } else {
    fmt::format_to(it, "# hecate-sim collective {} on {} | {} | network {}{}\n# busbw = algbw x {:.4f} (nccl-tests' factor for {})\n",
                   op_name, topo.name(), group_note, o.network, cal_note, factor, op_name);
    const bool cmp = !o.compare.empty();
    if (cmp)
      fmt::format_to(it, "# measured: the lower of the log's out-of-place and in-place times; '!' marks sizes where they "
                         "differ by more than 20%\n");
    // The protocol last (after the error where compared): the columns before it keep their places.
    fmt::format_to(it, "#{:>11} {:>13} {:>9} {:>10} {:>8} {:>8}{} {:<6}\n", "size(B)", "count(float)", "algo", "time(us)", "algbw",
                   "busbw", cmp ? fmt::format(" {:>12} {:>8} {:>8}", "measured(us)", "busbw", "error") : "", "proto");
    std::vector<double> errs;
    int disagree = 0;
    for (const auto& l : lines) {
      const double alg = l.bytes / l.seconds / 1e9;
      std::string extra;
      if (cmp) {
        const double err = (l.seconds - l.measured_s) / l.measured_s;
        errs.push_back(std::abs(err));
        extra = fmt::format(" {:>12.2f} {:>8.2f} {:>7.1f}%", l.measured_s * 1e6, l.bytes / l.measured_s / 1e9 * factor, err * 100);
      }
      extra += fmt::format(" {:<6}", l.proto);
      if (cmp) {
        if (l.places_disagree)
          ++disagree, extra += fmt::format("  ! out-of-place {:.2f} us, in-place {:.2f} us", l.out_of_place_s * 1e6, l.in_place_s * 1e6);
      }
      fmt::format_to(it, "{:>12.0f} {:>13.0f} {:>9} {:>10.2f} {:>8.2f} {:>8.2f}{}\n", l.bytes, std::floor(l.bytes / count_div), l.algo,
                     l.seconds * 1e6, alg, alg * factor, extra);
    }
    if (!errs.empty()) {
      std::sort(errs.begin(), errs.end());
      fmt::format_to(it, "# |error| against the measurement: median {:.1f}%, max {:.1f}%\n", errs[errs.size() / 2] * 100,
                     errs.back() * 100);
      if (disagree > 0)
        fmt::format_to(it, "# ! {} size(s) where out-of-place and in-place differ by more than 20% (the lower is compared)\n",
                       disagree);
    }
  }
  write_file_atomically(o.out, out);
  return 0;
}

}  // namespace

void setup_collective(CLI::App& sub, int& exit_code) {
  auto o = std::make_shared<CollectiveOptions>();
  sub.add_option("TOPOLOGY", o->topology, "topology YAML file or preset name")->required();
  sub.add_option("--op", o->op,
                 "all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | reduce | send_recv (all_to_all_v with --matrix)");
  sub.add_option("-b,--minbytes", o->min, "smallest size, as nccl-tests: 8, 64K, 128M (default 8)");
  sub.add_option("-e,--maxbytes", o->max, "largest size (default 128M)");
  sub.add_option("-f,--stepfactor", o->factor, "size multiplier between rows (default 2)");
  sub.add_option("--ranks", o->ranks,
                 "a count (the first N GPUs, node by node) or a list of GPU ranks (default: all); with --compare, the ranks "
                 "of a log without '#  Rank' lines (must agree with the log's where it has them)");
  sub.add_option("--algo", o->algo,
                 "NCCL algorithm, as NCCL_ALGO: ring | tree | nvls | nvlstree | pat | auto (NCCL's tuner's choice)")
      ->check(CLI::IsMember({"ring", "tree", "nvls", "nvlstree", "nvls_tree", "pat", "auto"}));
  sub.add_option("--proto", o->proto, "NCCL protocol, as NCCL_PROTO: LL | LL128 | Simple | auto (the tuner's choice)")
      ->check(CLI::IsMember({"LL", "LL128", "Simple", "auto"}, CLI::ignore_case));
  sub.add_option("--min-ctas", o->min_ctas, "NCCL_MIN_CTAS: at least this many channels (default: the topology's nccl:)")
      ->check(CLI::Range(1, 64));
  sub.add_option("--max-ctas", o->max_ctas, "NCCL_MAX_CTAS: at most this many channels (default: the topology's nccl:)")
      ->check(CLI::Range(1, 64));
  sub.add_option("--network", o->network, "analytic | flow")->check(CLI::IsMember({"analytic", "flow"}));
  sub.add_option("--matrix", o->matrix, "all_to_all_v byte matrix: `src dst bytes` lines (# comments) or JSON {\"pairs\": [[s, d, b], ...]}");
  sub.add_option("--compare", o->compare, "an nccl-tests output for this op: its ranks and sizes, measured beside predicted");
  sub.add_option("--calibration", o->calibration, "calibration file to apply to the topology's links");
  sub.add_option("--format", o->format, "table | json | csv")->check(CLI::IsMember({"table", "json", "csv"}));
  sub.add_option("--out", o->out, "write to FILE (atomically) instead of stdout");
  add_quiet_flag(sub, o->quiet);
  sub.callback([o, &exit_code] { exit_code = run_collective(*o); });
}

}  // namespace hs::cli
