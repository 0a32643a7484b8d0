#include "calib/memory_fit.hpp"

#include <algorithm>
#include <cmath>

namespace hs::calib {

std::optional<MemoryFit> fit_memory_kernels(std::span<const MemoryKernelRow> rows, double hbm_Bps, double default_eta,
                                            double default_launch) {
  if (rows.empty() || !(hbm_Bps > 0)) return std::nullopt;
  std::vector<const MemoryKernelRow*> fit, held;
  for (size_t i = 0; i < rows.size(); ++i) (rows.size() >= 4 && i % 2 == 1 ? held : fit).push_back(&rows[i]);
  MemoryFit f;
  f.fit_rows = static_cast<int>(fit.size());
  f.held_rows = static_cast<int>(held.size());
  double lo = INFINITY, hi = 0;
  for (const auto* r : fit) lo = std::min(lo, 2 * r->bytes), hi = std::max(hi, 2 * r->bytes);
  double launch = default_launch;
  double seconds_per_byte = 0;
  if (fit.size() >= 2 && hi >= 2 * lo) {
    // Least squares t = a x + b over (x = traffic, t = time).
    double sx = 0, st = 0, sxx = 0, sxt = 0;
    const double n = static_cast<double>(fit.size());
    for (const auto* r : fit) {
      const double x = 2 * r->bytes;
      sx += x, st += r->seconds, sxx += x * x, sxt += x * r->seconds;
    }
    double a = (n * sxt - sx * st) / (n * sxx - sx * sx);
    double b = (st - a * sx) / n;
    if (b < 0) b = 0, a = sxt / sxx;  // through the origin
    seconds_per_byte = a;
    launch = b;
    f.launch_s = b;
  } else {
    std::vector<double> per_byte;
    for (const auto* r : fit) per_byte.push_back(std::max(r->seconds - launch, r->seconds * 1e-3) / (2 * r->bytes));
    seconds_per_byte = upper_median(per_byte);
  }
  f.eta_mem = seconds_per_byte > 0 ? std::min(1.0, 1.0 / (seconds_per_byte * hbm_Bps)) : 1.0;
  std::vector<double> err, err_default;
  for (const auto* r : held) {
    const double pred = 2 * r->bytes / (f.eta_mem * hbm_Bps) + launch;
    const double pred_default = 2 * r->bytes / (default_eta * hbm_Bps) + default_launch;
    err.push_back(std::abs(pred - r->seconds) / r->seconds);
    err_default.push_back(std::abs(pred_default - r->seconds) / r->seconds);
  }
  f.held_median_error = upper_median(err);
  f.held_max_error = err.empty() ? 0 : *std::max_element(err.begin(), err.end());
  f.held_median_error_default = upper_median(err_default);
  return f;
}

}  // namespace hs::calib
