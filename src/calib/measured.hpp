// What hecate-validate measured on one GPU (schema hecate-sim/measured@1, validation/README.md): the
// expert-FFN GEMM rows (one expert per call, and E experts in one batched call per weight matrix)
// and the HBM copy rate. Read once here for `validate` and `calibrate`; a missing or mistyped field
// is an input error naming it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cost/gemm_fit.hpp"

namespace hs::calib {

struct GemmRow {
  double tokens, seconds;
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
