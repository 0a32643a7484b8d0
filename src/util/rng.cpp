#include "util/rng.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hs {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
}

Rng Rng::derive(uint64_t seed, uint64_t key) {
  uint64_t x = seed ^ (key * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
  return Rng(splitmix64(x));
}

double Rng::normal() {
  double u1 = uniform();
  double u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

uint64_t Rng::below(uint64_t n) {
  // Lemire's nearly-divisionless method would be faster; rejection keeps it obviously unbiased.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next_u64(); while (x >= limit);
  return x % n;
}

uint64_t Rng::binomial(uint64_t n, double p) {
  if (n == 0 || p <= 0) return 0;
  if (p >= 1) return n;
  const bool flip = p > 0.5;
  const double q = flip ? 1 - p : p;
  uint64_t k;
  const double mean = static_cast<double>(n) * q;
  if (mean < 30) {
    // Inversion by sequential search on the pmf: exact.
    const double r = q / (1 - q);
    double pmf = std::pow(1 - q, static_cast<double>(n));
    double u = uniform();
    k = 0;
    while (u > pmf && k < n) {
      u -= pmf;
      pmf *= r * static_cast<double>(n - k) / static_cast<double>(k + 1);
      ++k;
    }
  } else {
    const double sd = std::sqrt(mean * (1 - q));
    double x = std::floor(mean + sd * normal() + 0.5);
    x = std::clamp(x, 0.0, static_cast<double>(n));
    k = static_cast<uint64_t>(x);
  }
  return flip ? n - k : k;
}

void Rng::multinomial(uint64_t n, std::span<const double> p, std::span<uint64_t> out) {
  double rest = 1.0;
  uint64_t left = n;
  for (size_t i = 0; i < p.size(); ++i) {
    if (i + 1 == p.size() || left == 0) {
      out[i] = (i + 1 == p.size()) ? left : 0;
      if (i + 1 != p.size()) continue;
      break;
    }
    double pi = rest > 0 ? std::clamp(p[i] / rest, 0.0, 1.0) : 0.0;
    out[i] = binomial(left, pi);
    left -= out[i];
    rest -= p[i];
  }
}

void Rng::uniform_multinomial(uint64_t n, std::span<uint64_t> out) {
  const size_t m = out.size();
  if (m == 0) return;
  if (m == 1 || n == 0) {
    std::fill(out.begin(), out.end(), 0);
    out[0] = n;
    return;
  }
  const double lambda = static_cast<double>(n) / static_cast<double>(m);
  // Poisson(lambda) probabilities up to lambda + 12 sd + 12 (the tail beyond is below the
  // resolution of a uniform variate), from the mode outwards so that nothing underflows.
  const auto top = static_cast<size_t>(lambda + 12 * std::sqrt(lambda) + 12);
  if (top > 2 * m + 64) {
    const std::vector<double> p(m, 1.0 / static_cast<double>(m));
    multinomial(n, p, out);
    return;
  }
  std::vector<double> cdf(top + 1);
  const auto mode = static_cast<size_t>(lambda);
  cdf[mode] = std::exp(-lambda + static_cast<double>(mode) * std::log(lambda) - std::lgamma(static_cast<double>(mode) + 1));
  for (size_t k = mode; k > 0; --k) cdf[k - 1] = cdf[k] * static_cast<double>(k) / lambda;
  for (size_t k = mode; k < top; ++k) cdf[k + 1] = cdf[k] * lambda / static_cast<double>(k + 1);
  for (size_t k = 1; k <= top; ++k) cdf[k] += cdf[k - 1];
  const double total = cdf[top];
  for (auto& c : cdf) c /= total;
  cdf[top] = 2.0;  // every u < 1 stops here
  // Guide table: guide[j] = the first k with cdf[k] > j / G, so inversion starts at most a step
  // short of its answer (the answer, the first k with cdf[k] > u, does not depend on G). G is a
  // power of two, at least 8 entries per value, so that u * G and j / G are exact.
  size_t g = 1;
  while (g < 8 * (top + 1)) g *= 2;
  const double inv_g = 1.0 / static_cast<double>(g);
  std::vector<uint32_t> guide(g);
  for (size_t j = 0, k = 0; j < g; ++k)
    for (; j < g && static_cast<double>(j) * inv_g < cdf[k]; ++j) guide[j] = static_cast<uint32_t>(k);
  uint64_t sum = 0, most = 0;
  Rng local = *this;  // a local state: writes to `out` cannot alias it, so it stays in registers
  for (auto& x : out) {
    const double u = local.uniform();
    size_t i = guide[static_cast<int64_t>(u * static_cast<double>(g))];
    i += cdf[i] <= u;  // the usual single step, without a branch to mispredict
    while (cdf[i] <= u) ++i;
    x = i;
    sum += i;
    most = std::max<uint64_t>(most, i);
  }
  // below(m) with its rejection limit computed once (and a mask for a power of two): the same draws.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % m;
  const bool pow2 = (m & (m - 1)) == 0;
  auto below_m = [&] {
    uint64_t x;
    do x = local.next_u64(); while (x >= limit);
    return pow2 ? x & (m - 1) : x % m;
  };
  for (; sum < n; ++sum) ++out[below_m()];
  for (; sum > n; --sum) {
    // A draw chosen uniformly among the `sum`: category j with probability out[j] / sum, by
    // rejection against the largest count (an upper bound while counts only fall).
    size_t j;
    do j = below_m(); while (local.uniform() * static_cast<double>(most) >= static_cast<double>(out[j]));
    --out[j];
  }
  *this = local;
}

}  // namespace hs
