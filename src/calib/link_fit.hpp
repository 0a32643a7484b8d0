// Link classes fitted to nccl-tests measurements (`hecate-sim calibrate --nccl-tests`).
//
// For each log, the simulator times the same operation on the same ranks (collective/nccl_op.hpp)
// and the link class whose link bounds the largest size is the one the log calibrates. Every fourth
// row (sizes 4, 8, 12, ... in the log's order) is held out; on the others:
//   * bandwidth: over the rows whose measured time is at least 3x the smallest (bandwidth-bound),
//     the least-squares slope of time against size, measured (b_m) and predicted (b_p); the class's
//     bandwidth is scaled by b_p / b_m;
//   * latency: the rows within 1.5x of the smallest time are latency-bound; the class's per-link
//     latency is set so the predicted time at those sizes matches the measured intercept (solved on
//     the model, which is linear in that latency), never below 0.
// Logs that calibrate the same class are combined (bandwidth scale: geometric mean, latency: mean,
// each weighted by the rows fitted) into a starting point, which a joint least-squares fit
// (Levenberg-Marquardt on log(predicted / measured) over every fitted row, every class's scale and
// latency at once) refines: an operation several classes shape informs each. Then every log is predicted again with the calibration, and the
// relative error on its held-out rows is reported before and after. The measured intercept holds
// NCCL's launch and protocol overheads as well as wire latency: the fitted latency is an effective
// per-hop latency, not a cable's. One straight line per class: mid-size messages, where NCCL changes
// protocol (LL, LL128, Simple), are where the held-out error shows it.
#pragma once

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
};

struct PointCheck {
  double bytes = 0, measured_s = 0, before_s = 0, after_s = 0;
  bool held_out = false;
};

struct LogCheck {
  std::string file, link_class;
  collective::NcclOp op{};
  int ranks = 0, nodes = 0;
  std::vector<PointCheck> points;
  double held_median_before = 0, held_max_before = 0, held_median_after = 0, held_max_after = 0;
};

struct LinkFit {
  std::vector<LinkClassCalibration> classes;
  std::vector<LogCheck> checks;
};

// hecate-validate's collectives (measured.json) as nccl-tests logs: one per operation, in the file's
// row order, named "FILE (op)", with the file's ranks and nodes and the median time as the time.
std::vector<NcclMeasurement> nccl_measurements(const Measured& m);

// topo_text/topo_source: the topology to calibrate (rebuilt with trial adjustments). Throws InputError
// for a log that cannot be fitted (too few rows, ranks or nodes the topology cannot host).
LinkFit fit_links(const std::string& topo_text, const std::string& topo_source, const std::vector<NcclMeasurement>& logs);

// The ranks nccl-tests used, placed on the topology: `ranks` over `nodes` nodes, an equal share of
// each node's first GPUs; `nodes` 0 (not known): the first `ranks` GPUs, node by node. Throws InputError naming `file` when the topology cannot host them.
std::vector<int> nccl_group(const topology::Topology& topo, int ranks, int nodes, const std::string& file);

}  // namespace hs::calib
