// A calibration file (schema hecate-sim/calibration@1), written by `hecate-sim calibrate` and applied
// by `run`, `sweep`, `tune` and `validate` (`--calibration FILE`, or `calibration: FILE` in a
// topology): every cost it covers uses the fitted value, every other cost the preset's.
//
//   schema: hecate-sim/calibration@1
//   topology: dgx-h100-4node                 # what it was fitted on (informative)
//   sources:                                 # what it was fitted from, with content hashes
//     - {file: all_reduce_perf.log, fnv1a64: 0123456789abcdef, what: "nccl-tests all_reduce, 16 ranks, 2 nodes"}
//   links:                                   # per link class (topologies/README.md: nvlink, pcie, nic, fabric)
//     nic: {bandwidth_scale: 0.91, latency: 4.2us, points: 21, heldout_median_error: 0.04, heldout_max_error: 0.11}
//   gpu:
//     gemm: {eta_max: 0.74, t_half: 61}      # expert-GEMM efficiency curve (cost/compute_cost.hpp)
//     hbm_efficiency: 0.88                   # achievable fraction of HBM bandwidth (eta_mem)
//     kernel_launch: 4.1us                   # per kernel launch (ComputeParams::launch)
//     overlap_slowdown: {compute: 0.21, communication: 0.05}
//
// bandwidth_scale multiplies the class's effective bandwidth (line rate x efficiency); latency
// replaces the class's per-link latency. Unknown keys, bad values and units are errors (file:line).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cost/compute_cost.hpp"
#include "topology/topology_builder.hpp"

namespace hs::calib {

struct LinkClassCalibration {
  std::string link_class;
  double bandwidth_scale = 1.0;
  std::optional<double> latency_s;
  int points = 0;                       // measurements it was fitted on
  std::optional<double> heldout_median_error, heldout_max_error;
};

struct CalibrationSource {
  std::string file, fnv1a64, what;
};

struct Calibration {
  std::string topology;
  std::vector<CalibrationSource> sources;
  std::vector<LinkClassCalibration> links;
  std::optional<double> eta_max, t_half;  // GEMM curve (both or neither)
  std::optional<double> hbm_efficiency;
  std::optional<double> kernel_launch_s;
  std::optional<double> compute_slowdown, communication_slowdown;
};

std::string to_yaml(const Calibration& c);
Calibration parse_calibration(const std::string& text, const std::string& file);  // throws InputError
topology::TopologyAdjust topology_adjust(const Calibration& c);
void apply_compute(const Calibration& c, cost::ComputeParams& p);

}  // namespace hs::calib
