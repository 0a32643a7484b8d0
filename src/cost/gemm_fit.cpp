#include "cost/gemm_fit.hpp"

namespace hs::cost {

std::optional<GemmFit> fit_gemm_efficiency(std::span<const GemmPoint> points) {
  // Least squares of y = a + b x with x = 1 / t, y = 1 / eta.
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : points) {
    if (!(p.tokens > 0) || !(p.efficiency > 0)) continue;
    const double x = 1 / p.tokens, y = 1 / p.efficiency;
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double den = n * sxx - sx * sx;
  if (n < 2 || den <= 1e-300 * n * sxx) return std::nullopt;
  const double b = (n * sxy - sx * sy) / den, a = (sy - b * sx) / n;
  if (!(a > 0) || b < 0) return std::nullopt;  // no ceiling, or efficiency falling with size
  return GemmFit{1 / a, b / a};
}

}  // namespace hs::cost
