#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/multinomial_lanes.hpp"
#include "util/rng.hpp"
#include "support/approx.hpp"

TEST_CASE("rng is deterministic for a seed and differs across seeds") {
  hs::Rng a(7), b(7), c(8);
  for (int i = 0; i < 100; ++i) {
    auto x = a.next_u64();
    CHECK(x == b.next_u64());
    (void)c;
  }
  hs::Rng d(7), e(8);
  CHECK(d.next_u64() != e.next_u64());
}

TEST_CASE("multinomial draws sum exactly to n and follow the probabilities") {
  hs::Rng r(1);
  std::vector<double> p{0.5, 0.25, 0.125, 0.125};
  std::vector<uint64_t> out(4);
  std::vector<double> acc(4, 0);
  for (int i = 0; i < 200; ++i) {
    r.multinomial(8192, p, out);
    uint64_t s = 0;
    for (int k = 0; k < 4; ++k) s += out[k], acc[k] += out[k];
    CHECK(s == 8192);
  }
  // Means: n * p_k; over 200 draws the relative error of the mean is well under 1%.
  for (int k = 0; k < 4; ++k) CHECK(acc[k] / 200 == doctest::Approx(8192 * p[k]).epsilon(0.01));
}

TEST_CASE("uniform stays in [0, 1) and normal has mean 0, sd 1") {
  hs::Rng r(3);
  double s = 0, s2 = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    double u = r.uniform();
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
    double z = r.normal();
    s += z;
    s2 += z * z;
  }
  CHECK(s / n == doctest::Approx(0.0).epsilon(0.03));
  CHECK(s2 / n == doctest::Approx(1.0).epsilon(0.05));
}

TEST_CASE("uniform_multinomial sums exactly to n with multinomial means and variances") {
  // Equal probabilities 1/m: each count has mean n/m and variance n (1/m)(1 - 1/m). Checked for a
  // sparse split (0.25 per category), a moderate one (8) and one that falls back to multinomial().
  for (auto [n, m] : std::vector<std::pair<uint64_t, size_t>>{{256, 1024}, {8192, 1024}, {100000, 4}}) {
    hs::Rng r(11);
    std::vector<uint64_t> out(m);
    double s1 = 0, s2 = 0;
    const int reps = 400;
    for (int i = 0; i < reps; ++i) {
      r.uniform_multinomial(n, out);
      uint64_t s = 0;
      for (auto x : out) s += x, s1 += static_cast<double>(x), s2 += static_cast<double>(x) * static_cast<double>(x);
      CHECK(s == n);
    }
    const double cells = static_cast<double>(reps) * static_cast<double>(m);
    const double mean = s1 / cells, var = s2 / cells - mean * mean;
    const double p = 1.0 / static_cast<double>(m);
    CHECK(mean == hs::test::approx(static_cast<double>(n) * p));
    CHECK(var == doctest::Approx(static_cast<double>(n) * p * (1 - p)).epsilon(0.1));
  }
  hs::Rng a(5), b(5);
  std::vector<uint64_t> x(64), y(64);
  a.uniform_multinomial(1000, x);
  b.uniform_multinomial(1000, y);
  CHECK(x == y);
}

namespace {
// uniform_multinomial as first written (main before the split into poisson_split.hpp and the
// lanes), kept here as the reference the faster paths must equal draw for draw: Poisson(n / m)
// counts by inversion on a guide table, then n - sum draws thrown in or sum - n taken out with
// plain rejection loops. Returns false where that code fell back to multinomial() (not compared).
bool reference_uniform_multinomial(hs::Rng& rng, uint64_t n, std::vector<uint64_t>& out) {
  const size_t m = out.size();
  if (m == 1 || n == 0) {
    std::fill(out.begin(), out.end(), 0);
    out[0] = n;
    return true;
  }
  const double lambda = static_cast<double>(n) / static_cast<double>(m);
  const auto top = static_cast<size_t>(lambda + 12 * std::sqrt(lambda) + 12);
  if (top > 2 * m + 64) return false;
  std::vector<double> cdf(top + 1);
  const auto mode = static_cast<size_t>(lambda);
  cdf[mode] = std::exp(-lambda + static_cast<double>(mode) * std::log(lambda) - std::lgamma(static_cast<double>(mode) + 1));
  for (size_t k = mode; k > 0; --k) cdf[k - 1] = cdf[k] * static_cast<double>(k) / lambda;
  for (size_t k = mode; k < top; ++k) cdf[k + 1] = cdf[k] * lambda / static_cast<double>(k + 1);
  for (size_t k = 1; k <= top; ++k) cdf[k] += cdf[k - 1];
  const double total = cdf[top];
  for (auto& c : cdf) c /= total;
  cdf[top] = 2.0;
  uint64_t sum = 0, most = 0;
  for (auto& x : out) {
    const double u = rng.uniform();
    size_t i = 0;
    while (cdf[i] <= u) ++i;  // the first k with cdf[k] > u (a guide table only starts it later)
    x = i;
    sum += i;
    most = std::max<uint64_t>(most, i);
  }
  for (; sum < n; ++sum) ++out[rng.below(m)];
  for (; sum > n; --sum) {
    size_t j;
    do j = rng.below(m); while (rng.uniform() * static_cast<double>(most) >= static_cast<double>(out[j]));
    --out[j];
  }
  return true;
}
}  // namespace

TEST_CASE("uniform_multinomial makes the reference's draws") {
  // Rng::uniform_multinomial (tables from poisson_split, the adjustment as a branch-free state
  // machine) against the plain reference above: the same counts, and the generator left in the
  // same state, for sparse, dense and power-of-two or other category numbers.
  int compared = 0;
  for (const size_t m : {2, 3, 7, 64, 96, 1000, 1024})
    for (const uint64_t n : {1, 5, 100, 1000, 16384, 70001})
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        hs::Rng a = hs::Rng::derive(seed, n * 31 + m), b = a;
        std::vector<uint64_t> x(m), y(m);
        if (!reference_uniform_multinomial(b, n, y)) continue;
        a.uniform_multinomial(n, x);
        CHECK_MESSAGE(x == y, "m=" << m << " n=" << n << " seed=" << seed);
        CHECK(a.next_u64() == b.next_u64());
        ++compared;
      }
  CHECK(compared > 100);
}

TEST_CASE("UniformMultinomialLanes makes uniform_multinomial's draws, generator by generator") {
  // Split k with n[k] draws over m categories from generator k must be exactly
  // Rng(k's seed).uniform_multinomial(n[k], ...): the same counts in column k of the output, and the
  // generator left in the same state (its next outputs equal). Covered: 1 to 19 generators (groups
  // of eight in vector lanes where the CPU has AVX-512, the rest one at a time), n from 0 (no draws)
  // through sparse (n/m < 1) and dense splits to ones that fall back to multinomial() (few
  // categories, many draws), m a power of two (the adjustment to the total in lanes too) or not,
  // and output strides wider than the generators.
  hs::UniformMultinomialLanes lanes;
  for (const size_t m : {2, 3, 7, 8, 64, 96, 128, 1000, 1024}) {
    for (const size_t count : {1, 8, 9, 16, 19}) {
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        std::vector<hs::Rng> rngs, ref;
        std::vector<uint64_t> n;
        for (size_t k = 0; k < count; ++k) {
          rngs.push_back(hs::Rng::derive(seed, k));
          ref.push_back(hs::Rng::derive(seed, k));
          // Mostly dense (about 16 per category), with a sparse, an empty and a huge split mixed in.
          const uint64_t base = (k % 5 == 1) ? m / 4 : (k % 7 == 3) ? 0 : (k % 11 == 6) ? 1000000 : 16 * m;
          n.push_back(base + (seed * 7919 * (k + 1)) % (m + 13));
        }
        const size_t stride = count + 3;
        std::vector<uint32_t> out(m * stride, 0xdeadbeef);
        lanes.draw(rngs, n, m, out.data(), stride);
        std::vector<uint64_t> want(m);
        for (size_t k = 0; k < count; ++k) {
          ref[k].uniform_multinomial(n[k], want);
          bool same = true;
          for (size_t j = 0; j < m; ++j) same = same && out[j * stride + k] == want[j];
          CHECK_MESSAGE(same, "m=" << m << " count=" << count << " seed=" << seed << " k=" << k << " n=" << n[k]);
          CHECK(rngs[k].next_u64() == ref[k].next_u64());
        }
        for (size_t j = 0; j < m; ++j)  // the columns past the generators are left alone
          for (size_t k = count; k < stride; ++k) CHECK(out[j * stride + k] == 0xdeadbeef);
      }
    }
  }
}
