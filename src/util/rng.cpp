#include "util/rng.hpp"

#include "util/poisson_split.hpp"

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
  // The inversion table (poisson_split.hpp).
  std::vector<uint64_t> at;
  std::vector<uint32_t> guide;
  std::vector<double> cdf;
  poisson_split::Table table;
  poisson_split::poisson_tables(std::span<const uint64_t>(&n, 1), m, 8, at, guide, cdf, std::span(&table, 1));
  if (table.shift < 0) {
    const std::vector<double> p(m, 1.0 / static_cast<double>(m));
    multinomial(n, p, out);
    return;
  }
  const int shift = table.shift;
  uint64_t sum = 0, most = 0;
  Rng local = *this;  // a local state: writes to `out` cannot alias it, so it stays in registers
  const uint64_t* at_k = at.data();
  const uint32_t* guide_j = guide.data();
  for (auto& x : out) {
    const uint64_t v = local.next_u64() >> 11;  // uniform() = v / 2^53
    size_t i = guide_j[v >> shift];
    i += at_k[i] <= v;  // the usual single step, without a branch to mispredict
    while (at_k[i] <= v) ++i;
    x = i;
    sum += i;
    most = std::max<uint64_t>(most, i);
  }
  poisson_split::adjust_to_total(local, n, m, sum, most, out.data(), 1);
  *this = local;
}

}  // namespace hs
