// Fitting the tile/wave GEMM model (cost/gemm_tiles.hpp) to hecate-validate's expert-FFN GEMM
// suites: one parameter set (eta_tile, k_fill, call) per GPU, fitted to every shape given at once
// (not one curve per shape, as calib::fit_gemm's eta_max / t_half are).
//
// A row of a suite (E experts, t tokens each, `mats` matrices) is predicted as ComputeCost prices
// the bf16 forward GEMMs (ComputeCost::tiled_mlp): one launch per weight matrix, mats - 1 of
// [t x d_model] x [d_model x d_ffn] and one [t x d_ffn] x [d_ffn x d_model], each
//     call + max(waves(E ceil(t / tile_m) ceil(n / tile_n) tiles of inner length k),
//                E (k n + t (k + n)) x 2 B / (eta_mem x hbm_bw)).
// Fit: rows 0, 2, 4, ... of every suite (in file order) fit, rows 1, 3, 5, ... are held out; least
// squares of log(predicted / measured) over a grid (eta_tile 0.40-1.00 by 0.005, k_fill 0-1024 by 8,
// call 0-40 us by 0.5 us), with tile_m, tile_n, the GPU's SMs, peak, HBM bandwidth and eta_mem given.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "calib/measured.hpp"
#include "cost/gemm_tiles.hpp"
#include "topology/topology.hpp"

namespace hs::calib {

struct GemmTilesFileError {
  std::string file;
  double held_median_error = 0;  // |predicted - measured| / measured on its held-out rows
  double median_error = 0;       // on all its rows
};

struct GemmTilesCalibration {
  cost::GemmTileParams params;
  int fit_rows = 0, held_rows = 0;
  double held_median_error = 0;  // over every file's held-out rows
  std::vector<GemmTilesFileError> files;
};

// The suite a file's GEMM rows are fitted from: the batched one when the file has it (what a grouped
// MoE kernel runs), else the one-expert rows.
struct GemmSuite {
  std::string file;
  double d_model = 0, d_ffn = 0;
  int mats = 0, experts = 0;
  std::vector<GemmRow> rows;
};
GemmSuite gemm_suite(const Measured& m);

// Predicted seconds of one row (t tokens per expert) of `s` under `p` (bf16; see above).
double tiled_suite_seconds(const GemmSuite& s, double tokens, const topology::GpuModel& gpu, int sms, double eta_mem,
                           const cost::GemmTileParams& p);

// Needs at least three fitting rows over all suites; `tiles` gives tile_m, tile_n (the rest is fitted).
std::optional<GemmTilesCalibration> fit_gemm_tiles(std::span<const GemmSuite> suites, const topology::GpuModel& gpu, int sms,
                                                   double eta_mem, const cost::GemmTileParams& tiles);

}  // namespace hs::calib
