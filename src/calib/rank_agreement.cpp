#include "calib/rank_agreement.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hs::calib {

namespace {
// -1, 0, +1: the order of a and b, 0 within a relative `tie`.
int order(double a, double b, double tie) {
  if (std::abs(a - b) <= tie * std::max(std::abs(a), std::abs(b))) return 0;
  return a < b ? -1 : 1;
}
}  // namespace

std::optional<RankAgreement> kendall_tau(std::span<const double> p, std::span<const double> m, double tie) {
  if (p.size() != m.size()) throw std::invalid_argument("kendall_tau: lists of different lengths");
  const size_t n = p.size();
  if (n < 2) return std::nullopt;
  long c = 0, d = 0, tp = 0, tm = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      const int a = order(p[i], p[j], tie), b = order(m[i], m[j], tie);
      if (a == 0) ++tp;
      if (b == 0) ++tm;
      if (a != 0 && b != 0) (a == b ? c : d) += 1;
    }
  const double n0 = static_cast<double>(n) * static_cast<double>(n - 1) / 2;
  const double denom = std::sqrt((n0 - static_cast<double>(tp)) * (n0 - static_cast<double>(tm)));
  if (!(denom > 0)) return std::nullopt;
  return RankAgreement{static_cast<double>(c - d) / denom, static_cast<int>(n), static_cast<int>(c), static_cast<int>(d)};
}

}  // namespace hs::calib
