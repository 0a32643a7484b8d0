#include "util/poisson_split.hpp"

#include <cmath>

namespace hs::poisson_split {

void poisson_tables(std::span<const uint64_t> n, size_t m, size_t per_value, std::vector<uint64_t>& at,
                    std::vector<uint32_t>& guide, std::vector<double>& cdf, std::span<Table> out) {
  const size_t count = n.size();
  // Per table: lambda, the last value `top`, the mode, and where its probabilities start in `cdf`.
  // Poisson(lambda) probabilities up to lambda + 12 sd + 12 (the tail beyond is below the
  // resolution of a uniform variate), from the mode outwards so that nothing underflows.
  cdf.clear();
  size_t steps = 0;
  for (size_t t = 0; t < count; ++t) {
    Table& tb = out[t];
    tb = Table{};
    if (n[t] == 0) continue;
    tb.lambda = static_cast<double>(n[t]) / static_cast<double>(m);
    tb.top = static_cast<size_t>(tb.lambda + 12 * std::sqrt(tb.lambda) + 12);
    if (tb.top > 2 * m + 64) continue;
    tb.shift = 0;  // a table (its shift is set below)
    tb.mode = static_cast<size_t>(tb.lambda);
    tb.c0 = cdf.size();
    cdf.resize(cdf.size() + tb.top + 1);
    cdf[tb.c0 + tb.mode] = std::exp(-tb.lambda + static_cast<double>(tb.mode) * std::log(tb.lambda) -
                                    std::lgamma(static_cast<double>(tb.mode) + 1));
    steps = std::max({steps, tb.mode, tb.top - tb.mode});
  }
  // Downwards p[k-1] = p[k] * k / lambda and upwards p[k+1] = p[k] * lambda / (k+1): two chains of
  // dependent divisions per table, all stepped together so that they overlap (the same operations
  // on the same values as one table, one chain after the other).
  for (size_t s = 0; s < steps; ++s)
    for (size_t t = 0; t < count; ++t) {
      const Table& tb = out[t];
      if (tb.shift < 0) continue;
      double* p = cdf.data() + tb.c0;
      const double lambda = tb.lambda;
      if (s < tb.mode) {
        const size_t down = tb.mode - s;
        p[down - 1] = p[down] * static_cast<double>(down) / lambda;
      }
      if (s < tb.top - tb.mode) {
        const size_t up = tb.mode + s;
        p[up + 1] = p[up] * lambda / static_cast<double>(up + 1);
      }
    }
  // Cumulative sums, k = 1..top in order per table (the tables' chains of additions again
  // stepped together).
  size_t longest = 0;
  for (size_t t = 0; t < count; ++t)
    if (out[t].shift >= 0) longest = std::max(longest, out[t].top);
  for (size_t k = 1; k <= longest; ++k)
    for (size_t t = 0; t < count; ++t)
      if (out[t].shift >= 0 && k <= out[t].top) cdf[out[t].c0 + k] += cdf[out[t].c0 + k - 1];
  for (size_t t = 0; t < count; ++t) {
    Table& tb = out[t];
    if (tb.shift < 0) continue;
    const size_t top = tb.top;
    double* p = cdf.data() + tb.c0;
    const double total = p[top];
    for (size_t k = 0; k <= top; ++k) p[k] /= total;
    p[top] = 2.0;  // every u < 1 stops here
    // A uniform variate is u = v / 2^53 with v = next_u64() >> 11 (uniform()), so cdf[k] <= u exactly
    // when at[k] = ceil(cdf[k] * 2^53) <= v (scaling by a power of two and ceil are exact): the
    // inversion compares integers, without converting v. at[top] = 2^54 stops every v < 2^53.
    const size_t a0 = at.size();
    tb.a0 = a0;
    at.resize(a0 + top + 1);
    for (size_t k = 0; k <= top; ++k) at[a0 + k] = static_cast<uint64_t>(std::ceil(p[k] * 0x1.0p53));
    // Guide table: guide[j] = the first k with cdf[k] > j / G, so inversion starts at most a step
    // short of its answer (the answer, the first k with cdf[k] > u, does not depend on G). G is a
    // power of two, at least per_value entries per value, so that u * G and j / G are exact. Filled
    // a value at a time: k is the guide of the j in [end(k-1), end(k)) with end(k) = #{j : j / G <
    // cdf[k]} = min(G, ceil(cdf[k] * G)) (cdf non-decreasing, so these ranges tile [0, G)).
    size_t g = 1, log2g = 0;
    while (g < per_value * (top + 1)) g *= 2, ++log2g;
    tb.g0 = guide.size();
    tb.g = g;
    guide.resize(tb.g0 + g);
    uint32_t* gd = guide.data() + tb.g0;
    for (size_t k = 0, j = 0; j < g; ++k) {
      const size_t end = std::min(g, static_cast<size_t>(std::ceil(p[k] * static_cast<double>(g))));
      if (end > j) std::fill(gd + j, gd + end, static_cast<uint32_t>(a0 + k)), j = end;
    }
    tb.shift = 53 - static_cast<int>(log2g);  // floor(u * G) = v >> (53 - log2 G)
  }
}

}  // namespace hs::poisson_split
