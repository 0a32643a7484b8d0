#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "network/drain_scan.hpp"
#include "util/rng.hpp"

using namespace hs;

// The coflow drain's rate pass, eight flows at a time (network/drain_scan.hpp), against the scalar
// pass written out: for each flow f,
//     rate(f, lv) = std::min(lv[la[f]], lv[lb[f]]), then std::min(cap[f], r) with caps;
//     left[f] -= rate(f, prev) * dt   (integrate);
//     f is a candidate when left[f] <= horizon * rate(f, level).
// The kernel must write the same bytes left and stop at the first block of eight holding a
// candidate, with exactly the block's candidates in its mask; the blocks before hold none.
TEST_CASE("drain_scan_avx512: the scalar rate pass's bytes and candidates, block by block") {
  if (!network::drain_scan_available()) return;  // (no AVX-512 here: the drain runs the scalar pass)
  const double inf = std::numeric_limits<double>::infinity();
  Rng rng(11);
  const int links = 40;  // slot `links` is `none`: level infinite (a finished flow's links)
  for (const bool caps : {false, true}) {
    for (const bool integrate : {false, true}) {
      const size_t n = 203;  // whole blocks and a tail the caller finishes
      std::vector<int32_t> la(n), lb(n);
      std::vector<double> cap(n), left(n), prev(links + 1), level(links + 1);
      for (int l = 0; l < links; ++l) prev[l] = 1 + 9 * rng.uniform(), level[l] = 1 + 9 * rng.uniform();
      prev[links] = level[links] = inf;
      for (size_t f = 0; f < n; ++f) {
        la[f] = static_cast<int32_t>(rng.uniform() * links), lb[f] = static_cast<int32_t>(rng.uniform() * links);
        cap[f] = rng.uniform() < 0.3 ? 0.5 + 5 * rng.uniform() : inf;
        left[f] = 1e3 * rng.uniform();
        if (f % 17 == 5) la[f] = lb[f] = links, left[f] = std::numeric_limits<double>::quiet_NaN();  // finished
      }
      const double dt = 0.37, horizon = 30;
      std::vector<double> want = left;
      std::vector<char> cand(n, 0);
      const auto rate = [&](size_t f, const std::vector<double>& lv) {
        const double r = std::min(lv[static_cast<size_t>(la[f])], lv[static_cast<size_t>(lb[f])]);
        return caps ? std::min(cap[f], r) : r;
      };
      for (size_t f = 0; f < n; ++f) {
        if (integrate) want[f] -= rate(f, prev) * dt;
        cand[f] = want[f] <= horizon * rate(f, level);
      }
      const network::DrainScanArgs a{la.data(), lb.data(), caps ? cap.data() : nullptr, left.data(),
                                     prev.data(), level.data(), dt, integrate};
      size_t f = 0, blocks_with = 0;
      for (;;) {
        unsigned m = 0;
        const size_t b = network::drain_scan_avx512(a, f, n, horizon, &m);
        for (size_t g = f; g < b; ++g) CHECK(!cand[g]);  // skipped blocks hold no candidate
        if (m == 0) {
          CHECK(b == n - n % 8);
          break;
        }
        ++blocks_with;
        for (size_t j = 0; j < 8; ++j) CHECK(((m >> j) & 1) == static_cast<unsigned>(cand[b + j]));
        f = b + 8;
      }
      CHECK(blocks_with > 0);
      for (size_t g = 0; g < n - n % 8; ++g)  // the same bytes (NaN stays NaN)
        CHECK(std::memcmp(&left[g], &want[g], sizeof(double)) == 0);
    }
  }
}
