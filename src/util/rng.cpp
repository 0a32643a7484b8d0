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
  // Downwards p[k-1] = p[k] * k / lambda and upwards p[k+1] = p[k] * lambda / (k+1): two chains of
  // dependent divisions, stepped together so that they overlap (the same operations on the same
  // values as one after the other).
  for (size_t down = mode, up = mode; down > 0 || up < top;) {
    if (down > 0) cdf[down - 1] = cdf[down] * static_cast<double>(down) / lambda, --down;
    if (up < top) cdf[up + 1] = cdf[up] * lambda / static_cast<double>(up + 1), ++up;
  }
  for (size_t k = 1; k <= top; ++k) cdf[k] += cdf[k - 1];
  const double total = cdf[top];
  for (auto& c : cdf) c /= total;
  cdf[top] = 2.0;  // every u < 1 stops here
  // A uniform variate is u = v / 2^53 with v = next_u64() >> 11 (uniform()), so cdf[k] <= u exactly
  // when at[k] = ceil(cdf[k] * 2^53) <= v (scaling by a power of two and ceil are exact): the
  // inversion below compares integers, without converting v. at[top] = 2^54 stops every v < 2^53.
  std::vector<uint64_t> at(top + 1);
  for (size_t k = 0; k <= top; ++k) at[k] = static_cast<uint64_t>(std::ceil(cdf[k] * 0x1.0p53));
  // Guide table: guide[j] = the first k with cdf[k] > j / G, so inversion starts at most a step
  // short of its answer (the answer, the first k with cdf[k] > u, does not depend on G). G is a
  // power of two, at least 8 entries per value, so that u * G and j / G are exact. Filled a value
  // at a time: k is the guide of the j in [end(k-1), end(k)) with end(k) = #{j : j / G < cdf[k]}
  // = min(G, ceil(cdf[k] * G)) (cdf non-decreasing, so these ranges tile [0, G)).
  size_t g = 1, log2g = 0;
  while (g < 8 * (top + 1)) g *= 2, ++log2g;
  std::vector<uint32_t> guide(g);
  for (size_t k = 0, j = 0; j < g; ++k) {
    const size_t end = std::min(g, static_cast<size_t>(std::ceil(cdf[k] * static_cast<double>(g))));
    if (end > j) std::fill(guide.begin() + static_cast<std::ptrdiff_t>(j), guide.begin() + static_cast<std::ptrdiff_t>(end),
                           static_cast<uint32_t>(k)), j = end;
  }
  const int shift = 53 - static_cast<int>(log2g);  // floor(u * G) = v >> (53 - log2 G)
  uint64_t sum = 0, most = 0;
  Rng local = *this;  // a local state: writes to `out` cannot alias it, so it stays in registers
  for (auto& x : out) {
    const uint64_t v = local.next_u64() >> 11;  // uniform() = v / 2^53
    size_t i = guide[v >> shift];
    i += at[i] <= v;  // the usual single step, without a branch to mispredict
    while (at[i] <= v) ++i;
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
