// The two halves of Rng::uniform_multinomial, shared by its one-stream form (rng.cpp) and its
// lane-parallel form (rng_lanes.cpp), so that both make the same draws by construction:
//   * the inversion table of Poisson(lambda = n / m) (poisson_tables), and
//   * the adjustment of m Poisson counts summing to `sum` into a multinomial(n, equal) split
//     (adjust_to_total).
// See rng.hpp for why the result is an exact multinomial. Internal to util.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "util/rng.hpp"

namespace hs::poisson_split {

// The inversion table of Poisson(n / m), for uniform_multinomial's m draws. Appended to `at` and
// `guide` by poisson_tables, which fills in where: a draw v = next_u64() >> 11 (the uniform
// u = v / 2^53) inverts as
//     i = guide[g0 + (v >> shift)];  i += at[i] <= v;  while (at[i] <= v) ++i;  count = i - a0
// (guide entries are absolute indices into `at`; a table alone has a0 = 0). The answer is the first
// i with at[i] > v, at[a0 + k] = ceil(cdf(k) 2^53) non-decreasing in k and at[a0 + top] = 2^54.
struct Table {
  int shift = -1;         // -1: no table (n = 0, or one longer than the categories warrant:
                          // top > 2m + 64, where uniform_multinomial falls back to multinomial())
  size_t a0 = 0, g0 = 0;  // where its values start in `at` and its guide in `guide`
  size_t g = 0;           // guide entries, a power of two
  size_t top = 0;         // its last value (at[a0 + top] = 2^54)
  double lambda = 0;      // scratch of poisson_tables
  size_t mode = 0, c0 = 0;
};

// Tables for every n[t] (< 2^32) with the same m >= 2 categories into out[t], in order. The guide
// has at least `per_value` entries per value (a power of two): more entries, fewer steps past the
// guide's start; the answer does not depend on it. The tables' recurrences are stepped together,
// so that their chains of dependent divisions overlap; each table's values are the same as built
// alone. `cdf`: scratch.
void poisson_tables(std::span<const uint64_t> n, size_t m, size_t per_value, std::vector<uint64_t>& at,
                    std::vector<uint32_t>& guide, std::vector<double>& cdf, std::span<Table> out);

// Turns m Poisson counts out[j * stride] (j < m) summing to `sum`, the largest `most`, into a
// multinomial(n, equal) split with the generator `rng` (the one that drew them, continued): n - sum
// draws thrown in uniformly, or sum - n of the sum draws taken out uniformly (a category with
// probability out[j] / sum, by rejection against `most`, an upper bound while counts only fall).
template <class Count>
void adjust_to_total(Rng& rng, uint64_t n, size_t m, uint64_t sum, uint64_t most, Count* out, size_t stride) {
  // below(m) with its rejection limit computed once (and a mask for a power of two): the same draws.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % m;
  const bool pow2 = (m & (m - 1)) == 0;
  auto below_m = [&] {
    uint64_t x;
    do x = rng.next_u64(); while (x >= limit);
    return pow2 ? x & (m - 1) : x % m;
  };
  for (; sum < n; ++sum) ++out[below_m() * stride];
  for (; sum > n; --sum) {
    size_t j;
    do j = below_m(); while (rng.uniform() * static_cast<double>(most) >= static_cast<double>(out[j * stride]));
    --out[j * stride];
  }
}

}  // namespace hs::poisson_split
