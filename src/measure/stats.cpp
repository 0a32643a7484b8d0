#include "measure/stats.hpp"

#include <algorithm>
#include <stdexcept>

namespace hs::measure {

namespace {
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}
}  // namespace

Summary summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(samples.begin(), samples.end());
  Summary s;
  s.n = static_cast<int>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile(samples, 0.5);
  s.p25 = quantile(samples, 0.25);
  s.p75 = quantile(samples, 0.75);
  return s;
}

std::vector<double> slowest_rank(const std::vector<std::vector<double>>& per_rank) {
  if (per_rank.empty()) return {};
  std::vector<double> out = per_rank.front();
  for (const auto& r : per_rank) {
    if (r.size() != out.size()) throw std::invalid_argument("slowest_rank: ranks timed different iteration counts");
    for (std::size_t i = 0; i < r.size(); ++i) out[i] = std::max(out[i], r[i]);
  }
  return out;
}

}  // namespace hs::measure
