#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "collective/row_band_sums.hpp"
#include "util/rng.hpp"

using hs::collective::row_band_sums;

namespace {
// The scalar loop of AnalyticNetwork::scan_sums that row_band_sums must equal bit for bit: entry
// (r0 + i, c) carries when !(b <= 0) and c != r0 + i, bb = carries ? b : +0.0; row sums add bb in
// column order, column sums start from in_b[c] and add the rows in order, maxima start from `most`
// and are combined in row order.
void reference(const double* m, size_t n, int r0, int c0, int c1, double* in_b, int* in_c, int* recvs,
               double (&sum)[8], int (&count)[8], double& most) {
  double mx[8];
  for (int i = 0; i < 8; ++i) mx[i] = most;
  for (int c = c0; c < c1; ++c) {
    double col = in_b[c];
    int ones = 0;
    for (int i = 0; i < 8; ++i) {
      const double b = m[static_cast<size_t>(r0 + i) * n + c];
      const bool carries = !(b <= 0) && c != r0 + i;
      const double bb = carries ? b : 0.0;
      sum[i] += bb, count[i] += carries ? 1 : 0, mx[i] = std::max(mx[i], bb);
      col += bb, ones += carries ? 1 : 0;
    }
    in_b[c] = col, in_c[c] += ones, recvs[c] += ones;
  }
  for (int i = 0; i < 8; ++i) most = std::max(most, mx[i]);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
}  // namespace

TEST_CASE("row_band_sums equals the scalar loop bit for bit") {
  if (!hs::collective::row_band_sums_available()) return;  // nothing to compare on this CPU
  // Entries of mixed magnitudes (so that the order of additions shows in the last bits), zeros,
  // negative and -0.0 entries (no bytes); ranges with and without the band's diagonal, with lengths
  // that are and are not multiples of eight; running sums and column sums not starting at zero.
  hs::Rng rng(17);
  for (const size_t n : {24, 64, 77}) {
    std::vector<double> m(n * n);
    for (auto& x : m) {
      const uint64_t kind = rng.below(8);
      x = kind == 0 ? 0.0 : kind == 1 ? -0.0 : kind == 2 ? -rng.uniform() : rng.uniform() * (kind == 3 ? 1e12 : 1.0);
    }
    for (int r0 = 0; r0 + 8 <= static_cast<int>(n); r0 += 5)
      for (const auto& [c0, c1] : std::vector<std::pair<int, int>>{{0, static_cast<int>(n)}, {0, r0}, {r0, r0 + 8},
                                                                   {r0 + 3, static_cast<int>(n)}, {1, 2}, {5, 5}}) {
        if (c1 > static_cast<int>(n)) continue;
        std::vector<double> in_b(n), in_b2;
        std::vector<int> in_c(n), recvs(n), in_c2, recvs2;
        for (size_t c = 0; c < n; ++c) in_b[c] = rng.uniform() * 1e6, in_c[c] = static_cast<int>(c), recvs[c] = 2 * static_cast<int>(c);
        in_b2 = in_b, in_c2 = in_c, recvs2 = recvs;
        double sum[8], sum2[8], most = 0.5, most2 = 0.5;
        int count[8], count2[8];
        for (int i = 0; i < 8; ++i) sum[i] = sum2[i] = rng.uniform() * 1e9, count[i] = count2[i] = i;
        row_band_sums(m.data(), n, r0, c0, c1, in_b.data(), in_c.data(), recvs.data(), sum, count, most);
        reference(m.data(), n, r0, c0, c1, in_b2.data(), in_c2.data(), recvs2.data(), sum2, count2, most2);
        CAPTURE(n);
        CAPTURE(r0);
        CAPTURE(c0);
        CAPTURE(c1);
        bool same = same_bits(most, most2) && in_c == in_c2 && recvs == recvs2;
        for (int i = 0; i < 8; ++i) same = same && same_bits(sum[i], sum2[i]) && count[i] == count2[i];
        for (size_t c = 0; c < n; ++c) same = same && same_bits(in_b[c], in_b2[c]);
        CHECK(same);
      }
  }
}
