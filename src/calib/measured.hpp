// What hecate-validate measured (schema hecate-sim/measured@1, validation/README.md): per suite, a
// section of the file, each optional but at least one present:
//   * expert_ffn / expert_ffn_batched / hbm_copy (suite gemm): the expert-FFN GEMM rows (one expert
//     per call, and E experts in one batched call per weight matrix) and the HBM copy rate;
//   * collectives: per operation and size, nccl-tests' size, the median time over iterations of the
//     slowest rank, algbw and busbw, on `ranks` ranks over `nodes` nodes;
//   * alltoallv, sparse, materialize, overlap: rows kept as their count (listed by calibrate and
//     validate; no model parameter is fitted to them yet).
// Read once here for `validate` and `calibrate`; a missing or mistyped field is an input error
// naming it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collective/nccl_op.hpp"
#include "cost/gemm_fit.hpp"

namespace hs::calib {

struct GemmRow {
  double tokens, seconds;
};

struct CollectiveRow {
  collective::NcclOp op{};
  double bytes = 0;    // nccl-tests' size
  double seconds = 0;  // median over iterations
  double algbw = 0, busbw = 0;  // bytes per second
};

struct Measured {
  std::string file;
  std::string device;
  long d_model = 0, d_ffn = 0;
  int mats = 0;
  std::vector<GemmRow> rows;      // one expert, one cuBLAS call per weight matrix
  int batched_experts = 0;        // 0: no batched suite in the file
  std::vector<GemmRow> batched;   // one strided-batched call per matrix over batched_experts experts
  double hbm_Bps = 0;             // device-to-device copy, bytes read + written per second
  int ranks = 0, nodes = 0;       // the collectives' ranks and nodes (0: no collectives section)
  std::vector<CollectiveRow> collectives;
  std::vector<std::pair<std::string, int>> other_sections;  // name, rows (alltoallv, sparse, ...)
  bool has_gemm() const { return mats > 0; }
};

Measured read_measured(const std::string& path);

// The expert-GEMM efficiency curve fitted on the compute-bound rows (tokens >= 256, multiples of the
// 128-row tile) of the grouped suite when there is one, every other row; checked on the others.
struct GemmCalibration {
  cost::GemmFit fit;
  int fit_rows = 0, held_rows = 0;
  double held_median_error = 0, held_median_error_default = 0;  // relative efficiency error
  int experts = 1;                                              // the suite it was fitted on
};
// nullopt when fewer than two compute-bound rows exist. `peak` = the GPU's dense peak FLOP/s.
std::optional<GemmCalibration> fit_gemm(const Measured& m, double peak);

}  // namespace hs::calib
