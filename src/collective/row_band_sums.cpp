#include "collective/row_band_sums.hpp"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HS_ROW_BAND_AVX512 1
#endif

namespace hs::collective {

#ifdef HS_ROW_BAND_AVX512
bool row_band_sums_available() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
}

// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), which it then reports
// as maybe used uninitialized where they are inlined (GCC bug 105593): a false alarm, silenced here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f,avx512vl")))
void row_band_sums(const double* m, size_t n, int r0, int c0, int c1, double* in_b, int* in_c, int* recvs,
                   double (&sum)[8], int (&count)[8], double& most) {
  const __m512d zero = _mm512_setzero_pd();
  const double* rows = m + static_cast<size_t>(r0) * n;
  // The diagonal entry (r0 + i, r0 + i) of row i: in a block of columns [c, c + 8) it is lane
  // r0 + i - c when that lies in [0, 8).
  auto diagonal = [&](int c, int i) -> __mmask8 {
    const int lane = r0 + i - c;
    return lane >= 0 && lane < 8 ? static_cast<__mmask8>(1u << lane) : 0;
  };
  // Column sums, eight columns per register, the rows added in order.
  const __m256i one32 = _mm256_set1_epi32(1);
  for (int c = c0; c < c1; c += 8) {
    const __mmask8 in = c + 8 <= c1 ? 0xff : static_cast<__mmask8>((1u << (c1 - c)) - 1);
    __m512d col = _mm512_maskz_loadu_pd(in, in_b + c);
    __m256i ones = _mm256_setzero_si256();
    for (int i = 0; i < 8; ++i) {
      const __m512d b = _mm512_maskz_loadu_pd(in, rows + static_cast<size_t>(i) * n + c);
      const __mmask8 carries = _mm512_mask_cmp_pd_mask(in & ~diagonal(c, i), b, zero, _CMP_NLE_UQ);
      col = _mm512_add_pd(col, _mm512_maskz_mov_pd(carries, b));
      ones = _mm256_mask_add_epi32(ones, carries, ones, one32);
    }
    _mm512_mask_storeu_pd(in_b + c, in, col);
    _mm256_mask_storeu_epi32(in_c + c, in, _mm256_add_epi32(_mm256_maskz_loadu_epi32(in, in_c + c), ones));
    _mm256_mask_storeu_epi32(recvs + c, in, _mm256_add_epi32(_mm256_maskz_loadu_epi32(in, recvs + c), ones));
  }
  // Row sums, row i in lane i, a column at a time in order (one gather of the eight rows' entries).
  const __m512i row_at = _mm512_set_epi64(7 * static_cast<long long>(n), 6 * static_cast<long long>(n),
                                          5 * static_cast<long long>(n), 4 * static_cast<long long>(n),
                                          3 * static_cast<long long>(n), 2 * static_cast<long long>(n),
                                          static_cast<long long>(n), 0);
  __m512d s = _mm512_loadu_pd(sum), mx = _mm512_set1_pd(most);
  __m256i k = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(count));
  for (int c = c0; c < c1; ++c) {
    const __m512d b = _mm512_i64gather_pd(row_at, rows + c, 8);
    const int lane = c - r0;  // row `lane` meets its diagonal in this column
    const __mmask8 off = lane >= 0 && lane < 8 ? static_cast<__mmask8>(~(1u << lane)) : 0xff;
    const __mmask8 carries = _mm512_mask_cmp_pd_mask(off, b, zero, _CMP_NLE_UQ);
    const __m512d bb = _mm512_maskz_mov_pd(carries, b);
    s = _mm512_add_pd(s, bb);
    k = _mm256_mask_add_epi32(k, carries, k, one32);
    mx = _mm512_max_pd(bb, mx);  // bb > mx ? bb : mx, as std::max(mx, bb)
  }
  _mm512_storeu_pd(sum, s);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(count), k);
  double lanes[8];
  _mm512_storeu_pd(lanes, mx);
  for (const double x : lanes) most = std::max(most, x);  // in row order, as the scalar loop
}
#pragma GCC diagnostic pop
#else
bool row_band_sums_available() { return false; }
void row_band_sums(const double*, size_t, int, int, int, double*, int*, int*, double (&)[8], int (&)[8], double&) {}
#endif

}  // namespace hs::collective
