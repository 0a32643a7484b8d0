#include "network/drain_scan.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HS_DRAIN_SCAN_AVX512 1
#endif

namespace hs::network {

#ifdef HS_DRAIN_SCAN_AVX512
bool drain_scan_available() { return __builtin_cpu_supports("avx512f"); }

// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*() (GCC bug 105593): a
// false maybe-uninitialized alarm where they are inlined, silenced here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f")))
size_t drain_scan_avx512(const DrainScanArgs& a, size_t f, size_t n, double horizon, unsigned* mask) {
  const __m512d h = _mm512_set1_pd(horizon), dt = _mm512_set1_pd(a.dt);
  for (; f + 8 <= n; f += 8) {
    const __m256i ia = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.la + f));
    const __m256i ib = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.lb + f));
    __m512d left = _mm512_loadu_pd(a.left + f);
    const __m512d cap = a.cap ? _mm512_loadu_pd(a.cap + f) : _mm512_setzero_pd();
    if (a.integrate) {
      // std::min(x, y) is (y < x ? y : x): _mm512_min_pd(y, x), which gives its second operand
      // unless the first is lower.
      __m512d rp = _mm512_min_pd(_mm512_i32gather_pd(ib, a.prev, 8), _mm512_i32gather_pd(ia, a.prev, 8));
      if (a.cap) rp = _mm512_min_pd(rp, cap);  // std::min(cap, r)
      left = _mm512_sub_pd(left, _mm512_mul_pd(rp, dt));  // (no contraction: -ffp-contract=off)
      _mm512_storeu_pd(a.left + f, left);
    }
    __m512d r = _mm512_min_pd(_mm512_i32gather_pd(ib, a.level, 8), _mm512_i32gather_pd(ia, a.level, 8));
    if (a.cap) r = _mm512_min_pd(r, cap);
    const __mmask8 m = _mm512_cmp_pd_mask(left, _mm512_mul_pd(h, r), _CMP_LE_OQ);
    if (m) {
      *mask = m;
      return f;
    }
  }
  *mask = 0;
  return f;
}
#pragma GCC diagnostic pop
#else
bool drain_scan_available() { return false; }
size_t drain_scan_avx512(const DrainScanArgs&, size_t f, size_t, double, unsigned* mask) {
  *mask = 0;
  return f;
}
#endif

}  // namespace hs::network
