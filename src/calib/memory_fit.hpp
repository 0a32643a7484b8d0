// The memory-bound kernels' rate (cost/compute_cost.hpp: bytes / (eta_mem x HBM bandwidth) + launch)
// fitted to the materialize suite of hecate-validate (pack / unpack of expert shards, token permute /
// unpermute: the kernels the model charges at eta_mem).
//
// Each row moves `bytes` read once and written once: traffic = 2 x bytes, predicted time
// 2 x bytes / (eta_mem x hbm) + launch. Rows alternate between fitted and held out (rows 0, 2, ...
// fitted; 1, 3, ... held out) when there are at least four, else every row is fitted and nothing is
// held out. On the fitted rows:
//   * traffic spanning at least 2x (largest / smallest): least squares time = a x traffic + b, with
//     eta_mem = 1 / (a x hbm) and launch = b (b < 0 is clamped to 0 and a refitted through the origin);
//   * otherwise one size: the launch is kept (the default's) and eta_mem is the median over rows of
//     traffic / ((time - launch) x hbm).
// eta_mem is capped at 1 (a kernel cannot beat the HBM's bandwidth; a faster row means the stated
// bandwidth is wrong, which the report shows as an efficiency of 1).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "calib/measured.hpp"

namespace hs::calib {

struct MemoryFit {
  double eta_mem = 0;
  std::optional<double> launch_s;  // fitted only when the sizes span 2x
  int fit_rows = 0, held_rows = 0;
  // |predicted - measured| / measured on the held-out rows, with the fit and with `defaults`.
  double held_median_error = 0, held_max_error = 0, held_median_error_default = 0;
};

// nullopt when there are no rows. `default_eta`, `default_launch`: the model's values before the fit.
std::optional<MemoryFit> fit_memory_kernels(std::span<const MemoryKernelRow> rows, double hbm_Bps, double default_eta,
                                            double default_launch);

}  // namespace hs::calib
