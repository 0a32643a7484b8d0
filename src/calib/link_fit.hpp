// Link classes and NCCL protocols fitted to nccl-tests measurements (`hecate-sim calibrate
// --nccl-tests`), with the error checked on data the fit never saw.
//
// What is fitted is what the collective model uses (collective/nccl_tuning.hpp): an operation takes
// NCCL's latency (base + per-step hardware latencies, the steps inside a node scaled by the route
// latency between two GPUs of a node, those across nodes by the route latency between nodes) plus
// its bytes drained over the links at the protocol's bandwidth fraction. So, per fit:
//   * per link class that bounds a log's largest size: a bandwidth scale (the Simple protocol's
//     bandwidth, and under every protocol's fraction);
//   * per link class that carries most of a log's route latency (inside a node for one-node logs,
//     across nodes for multi-node ones): its per-link latency, as a factor on the preset's (what
//     moves intra_scale / net_scale, i.e. every protocol's per-step latency, and the route latency
//     the transfers add);
//   * per tier (intra: one-node communicators and steps inside a node; net: multi-node communicators
//     and network steps) and protocol LL and LL128: a factor on NCCL's per-step latencies and one on
//     the protocol's bandwidth fraction and caps, relative to Simple (topology::NcclProtoScale).
//     NCCL still picks the (algorithm, protocol) with its own figures; these time the choice.
//   * on multi-node logs, NCCL's latency per network step (latencyInter, twice for Simple;
//     topology::NcclConfig::net_step_latency), linear from 0 in units of the route latency between
//     nodes: unlike a class latency it does not move the route every transfer takes, which past
//     NCCL's LL latency times every algorithm at the route and leaves the protocol factors without
//     effect. It is kept where the fit with it ends at a lower cost than the fit without it (both
//     start at the preset).
// Every parameter is fitted as the log of its factor (positive by construction), all at once, by
// Levenberg-Marquardt on log(predicted / measured) over the fitted rows, with a weak prior
// (kPriorWeight x log factor per parameter) that keeps what the data cannot tell apart (e.g. the
// steps inside and across nodes of a single rank count) at the preset; parameters no fitted row
// depends on are left out.
//
// Held out: every other size of each fitted log (the 2nd, 4th, ... in the log's order), and every
// size of a log marked held_out (`calibrate --holdout-logs`). The check reports the median |time
// error| before and after on those, overall and per size band (kBands).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "calib/calibration.hpp"
#include "calib/measured.hpp"
#include "calib/nccl_tests_log.hpp"
#include "collective/nccl_op.hpp"

namespace hs::calib {

struct NcclMeasurement {
  collective::NcclOp op;
  NcclTestsLog log;
  bool held_out = false;  // not fitted: every size is a check
};

// Size bands the held-out error is reported in (issue 30): small (latency-bound), mid, large.
struct SizeBand {
  const char* name;
  double lo, hi;  // bytes, inclusive
};
inline constexpr SizeBand kBands[] = {{"<=64KB", 0, 65536.0}, {"1-64MB", 1048576.0, 67108864.0}, {">=256MB", 268435456.0, 1e300}};
inline constexpr int kNumBands = 3;
inline constexpr double kPriorWeight = 0.02;

// Median |relative error| of before and after over a set of points (0 and n = 0 when empty).
struct ErrorSummary {
  int n = 0;
  double median_before = 0, median_after = 0, max_before = 0, max_after = 0;
};

struct PointCheck {
  double bytes = 0, measured_s = 0, before_s = 0, after_s = 0;
  bool held_out = false;
  std::string proto_before, proto_after;  // the (algorithm, protocol) the model ran, "ring/LL"
};

struct LogCheck {
  std::string file, link_class, latency_class;
  collective::NcclOp op{};
  int ranks = 0, nodes = 0;
  bool held_out_log = false;
  std::vector<PointCheck> points;
  double held_median_before = 0, held_max_before = 0, held_median_after = 0, held_max_after = 0;
  ErrorSummary held, bands[kNumBands];  // over the held-out points
};

struct LinkFit {
  std::vector<LinkClassCalibration> classes;
  std::vector<ProtocolCalibration> protocols;
  std::optional<double> net_step_latency_s;  // NCCL's latency per network step, when fitted
  std::vector<LogCheck> checks;
  ErrorSummary held, bands[kNumBands];  // every log's held-out points together
  int fitted_rows = 0, parameters = 0, iterations = 0;
};

ErrorSummary summarize(const std::vector<const PointCheck*>& points);

// hecate-validate's collectives (measured.json) as nccl-tests logs: one per operation, in the file's
// row order, named "FILE (op)", with the file's ranks and nodes and the median time as the time.
std::vector<NcclMeasurement> nccl_measurements(const Measured& m);

// topo_text/topo_source: the topology to calibrate (rebuilt with trial adjustments). Throws InputError
// for a log that cannot be fitted (too few rows, ranks or nodes the topology cannot host) or when
// every log is held out.
LinkFit fit_links(const std::string& topo_text, const std::string& topo_source, const std::vector<NcclMeasurement>& logs);

// The ranks nccl-tests used, placed on the topology: `ranks` over `nodes` nodes, an equal share of
// each node's first GPUs; `nodes` 0 (not known): the first `ranks` GPUs, node by node. Throws InputError naming `file` when the topology cannot host them.
std::vector<int> nccl_group(const topology::Topology& topo, int ranks, int nodes, const std::string& file);

}  // namespace hs::calib
