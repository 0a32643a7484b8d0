// A calibration file (schema hecate-sim/calibration@1), written by `hecate-sim calibrate` and applied
// by `run`, `sweep`, `tune` and `validate` (`--calibration FILE`, or `calibration: FILE` in a
// topology): every cost it covers uses the fitted value, every other cost the preset's.
//
//   schema: hecate-sim/calibration@1
//   topology: dgx-h100-4node                 # what it was fitted on
//   topology_fnv1a64: 0123456789abcdef       # its content hash: applying the file to another topology warns
//   sources:                                 # what it was fitted from, with content hashes
//     - {file: all_reduce_perf.log, fnv1a64: 0123456789abcdef, what: "nccl-tests all_reduce, 16 ranks, 2 nodes"}
//   links:                                   # per link class (topologies/README.md: nvlink, pcie, nic, fabric)
//     nic: {bandwidth_scale: 0.91, latency: 4.2us, points: 21, heldout_median_error: 0.04, heldout_max_error: 0.11}
//   protocols:                               # NCCL protocols per tier, relative to Simple (collective/nccl_tuning.hpp)
//     intra: {LL: {latency_scale: 3.1, bandwidth_scale: 0.8}, LL128: {latency_scale: 1.4, bandwidth_scale: 0.9}}
//     net: {step_latency: 58us, LL: {latency_scale: 1.2, bandwidth_scale: 1}}
//   gpu:
//     gemm: {eta_max: 0.74, t_half: 61}      # expert-GEMM efficiency curve (cost/compute_cost.hpp)
//     gemm_tiles: {tile_m: 128, tile_n: 128, eta_tile: 0.79, k_fill: 288, call: 12us}  # tile/wave model
//                                            # (cost/gemm_tiles.hpp); present, it prices the GEMMs; absent,
//                                            # a `gemm` curve does (files written before the tile model)
//     hbm_efficiency: 0.88                   # achievable fraction of HBM bandwidth (eta_mem)
//     kernel_launch: 4.1us                   # per kernel launch (ComputeParams::launch)
//     overlap_slowdown: {compute: {gemm: {network: 0.21}}, communication: {network: 0.05}}
//
// overlap_slowdown has the topology's syntax (topology/overlap_slowdown.hpp): `calibrate` writes the
// cells it measured (a GEMM beside the overlap suite's traffic, inside a node or across nodes); a
// flat `{compute: X, communication: Y}` (older files) sets every cell, as it always did.
// bandwidth_scale multiplies the class's effective bandwidth (line rate x efficiency); latency
// replaces the class's per-link latency. A protocol's latency_scale multiplies NCCL's per-step
// latencies of that protocol in that tier (intra: steps inside a node; net: steps across nodes),
// bandwidth_scale its bandwidth fraction and caps (intra: one-node communicators; net: multi-node
// ones): topology::NcclProtoScale. net.step_latency is added to every network step's latency (NCCL's
// latencyInter, twice for Simple): topology::NcclConfig::net_step_latency. Unknown keys, bad values
// and units are errors (file:line).
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
  bool bandwidth_fitted = true;  // false: no fitted row depended on it (kept at 1; not in the file)
};

struct ProtocolCalibration {
  std::string tier;   // intra | net
  std::string proto;  // LL | LL128 | Simple
  double latency_scale = 1, bandwidth_scale = 1;
};

struct CalibrationSource {
  std::string file, fnv1a64, what;
};

struct Calibration {
  std::string topology;
  std::string topology_hash;  // report::content_hash of the topology's text ("" in older files)
  std::vector<CalibrationSource> sources;
  std::vector<LinkClassCalibration> links;
  std::vector<ProtocolCalibration> protocols;
  std::optional<double> net_step_latency_s;  // protocols.net.step_latency
  std::optional<double> eta_max, t_half;  // GEMM curve (both or neither)
  std::optional<cost::GemmTileParams> gemm_tiles;  // the tile/wave model's fit
  std::optional<double> hbm_efficiency;
  std::optional<double> kernel_launch_s;
  engine::InterferenceOverride interference;  // the overlap slowdowns' cells it sets
};

std::string to_yaml(const Calibration& c);
Calibration parse_calibration(const std::string& text, const std::string& file);  // throws InputError
topology::TopologyAdjust topology_adjust(const Calibration& c);
void apply_compute(const Calibration& c, cost::ComputeParams& p);
// The one-line warning for a calibration fitted on another topology than the one it is applied to
// (its recorded content hash differs from `topo_hash`); "" when it matches or the file records none.
std::string topology_mismatch(const Calibration& c, const std::string& topo_source, const std::string& topo_hash);

}  // namespace hs::calib
