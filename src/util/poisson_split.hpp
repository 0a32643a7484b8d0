// The two halves of Rng::uniform_multinomial, shared by its one-stream form (rng.cpp) and its
// lane-parallel form (multinomial_lanes.cpp), so that both make the same draws by construction:
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
// multinomial(n, equal) split with the generator `rng` (the one that drew them, continued):
//     for (; sum < n; ++sum) ++out[below(m)];
//     for (; sum > n; --sum) { do j = below(m); while (uniform() * most >= out[j]); --out[j]; }
// n - sum draws thrown in uniformly, or sum - n of the sum draws taken out uniformly (a category
// with probability out[j] / sum, by rejection against `most`, an upper bound while counts only
// fall); below(m) rejects x >= limit = 2^64 - 1 - (2^64 - 1) % m and returns x % m (x & (m - 1)
// for a power of two).
//
// Run here as a state machine that takes one generator output x per round, without a branch on
// the random outcomes (the accept / reject branches of the loops above mispredict about every
// other time): a lane is `choosing` (x < limit picks j = below's answer: an add counts it at once,
// a removal tests it in the next round) or `testing` j (u = (x >> 11) 2^-53, uniform()'s value;
// u * most < out[j] takes it out, else it chooses again). The same outputs feed the same decisions
// in the same order, so the counts and the generator's state are those of the loops above.
template <class Count>
void adjust_to_total(Rng& rng, uint64_t n, size_t m, uint64_t sum, uint64_t most, Count* out, size_t stride) {
  if (sum == n) return;
  const uint64_t limit = UINT64_MAX - UINT64_MAX % m;
  const bool pow2 = (m & (m - 1)) == 0, over = sum > n;
  const double most_d = static_cast<double>(most);
  uint64_t left = over ? sum - n : n - sum;
  bool testing = false;
  size_t chosen = 0;
  while (left > 0) {
    const uint64_t x = rng.next_u64();
    const bool picked = !testing && x < limit;
    const size_t j = testing ? chosen : pow2 ? x & (m - 1) : x % m;  // in [0, m) either way
    Count& c = out[j * stride];
    const Count now = c;
    const bool take = testing && static_cast<double>(x >> 11) * 0x1.0p-53 * most_d < static_cast<double>(now);
    const bool add = picked && !over;
    c = now + static_cast<Count>(add) - static_cast<Count>(take);  // unchanged unless add or take
    left -= static_cast<uint64_t>(add || take);
    chosen = j;
    testing = picked && over;
  }
}

}  // namespace hs::poisson_split
