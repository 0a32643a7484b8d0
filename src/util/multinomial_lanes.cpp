#include "util/multinomial_lanes.hpp"

#include <algorithm>

#include "util/poisson_split.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HS_MULTINOMIAL_LANES_AVX512 1
#endif

namespace hs {

namespace {

constexpr size_t kLanes = 8;
// Guide entries per table value (poisson_tables): fewer than the one-stream path's 8, since here
// every guide entry is also packed (pack_guide); the counts do not depend on it. (1,024
// categories, about 16 draws each, timed with an earlier form of the kernel: 2 or 4 per value
// fastest, 8 ~20% slower, 1 ~10%.)
constexpr size_t kGuidePerValue = 2;
// The lanes read a table through packed guide entries, one 64-bit gather per draw:
//     bits 0-53: t = min(at[guide[b]], 2^53), the threshold of the single step (v < 2^53, so
//                t <= v exactly when at[guide[b]] <= v);
//     bits 54-62: guide[b] - a0, the value the step starts from (tables of at most 512 values);
//     bit 63: `far`, set where the bucket's draws may need more steps (see pack_guide).
constexpr int kValueShift = 54;
constexpr uint64_t kThresholdBits = (uint64_t{1} << kValueShift) - 1, kValueBits = 511;
constexpr size_t kMaxValues = kValueBits + 1;

// Packs the guide buckets [0, g) of one table (entries absolute indices into `at`, its values
// at[a0, a0 + top] non-decreasing; the draws of bucket b the v with v >> shift == b) into
// packed[0, g). Bucket b is `far` where the one-stream inversion
//     i = guide[b];  i += at[i] <= v;  while (at[i] <= v) ++i;
// may enter its while loop. Its answer, the first i >= guide[b] with at[i] > v, is max(guide[b],
// p(v)) with p(v) the first i with at[i] > v (at non-decreasing), which does not decrease with v:
// over the bucket it is at most the answer for its largest v, vmax = ((b + 1) << shift) - 1. When
// that is at most guide[b] + 1 the single step already gives every v of the bucket its answer,
// and the lanes skip the loop. p(vmax) = a0 + #{i : at[i] <= vmax} = a0 + #{i : at[i] >> shift
// <= b}: a histogram of the values' buckets (`per_bucket`, scratch) summed up to b.
void pack_guide(const std::vector<uint64_t>& at, const uint32_t* guide, size_t g, int shift, size_t a0, size_t top,
                std::vector<uint32_t>& per_bucket, uint64_t* packed) {
  per_bucket.assign(g, 0);
  for (size_t i = a0; i <= a0 + top; ++i) {
    const uint64_t b = at[i] >> shift;
    if (b < g) ++per_bucket[b];
  }
  size_t p = a0;
  for (size_t b = 0; b < g; ++b) {
    p += per_bucket[b];
    const size_t i = guide[b];
    const uint64_t far = std::max(p, i) > i + 1 ? uint64_t{1} << 63 : 0;
    packed[b] = std::min<uint64_t>(at[i], uint64_t{1} << 53) | static_cast<uint64_t>(i - a0) << kValueShift | far;
  }
}

#ifdef HS_MULTINOMIAL_LANES_AVX512
// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), which it then reports
// as maybe used uninitialized where they are inlined (GCC bug 105593): a false alarm, silenced here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// One xoshiro256** step in every lane: the result of Rng::next_u64, rotl(s1 * 5, 7) * 9 with
// x * 5 = x + (x << 2) and x * 9 = x + (x << 3) (modulo 2^64, as the multiplications), and its
// state update.
__attribute__((target("avx512f,avx512vl"), always_inline)) inline __m512i
next_u64_lanes(__m512i& s0, __m512i& s1, __m512i& s2, __m512i& s3) {
  const __m512i s1x5 = _mm512_add_epi64(s1, _mm512_slli_epi64(s1, 2));
  const __m512i r = _mm512_rol_epi64(s1x5, 7);
  const __m512i x = _mm512_add_epi64(r, _mm512_slli_epi64(r, 3));
  const __m512i t = _mm512_slli_epi64(s1, 17);
  s2 = _mm512_xor_si512(s2, s0);
  s3 = _mm512_xor_si512(s3, s1);
  s1 = _mm512_xor_si512(s1, s2);
  s0 = _mm512_xor_si512(s0, s3);
  s2 = _mm512_xor_si512(s2, t);
  s3 = _mm512_rol_epi64(s3, 45);
  return x;
}

// Eight generators' states s[word][lane], m categories: lane k's count of category j, the answer
// of its inversion on packed guide entries packed[g0[k], ...) and values at[a0[k], ...) (above),
// into out[j * stride + k], and the counts' sum and maximum into sum[k], most[k] (for
// adjust_to_total). Per lane these are the operations of Rng::next_u64 and of the inversion in
// uniform_multinomial.
__attribute__((target("avx512f,avx512vl")))
void draw_avx512(uint64_t (&s)[4][kLanes], const uint64_t* at, const uint64_t* packed, const uint64_t (&g0)[kLanes],
                 const uint64_t (&a0)[kLanes], const uint64_t (&shift)[kLanes], size_t m, uint32_t* out,
                 size_t stride, uint64_t (&sum)[kLanes], uint64_t (&most)[kLanes]) {
  __m512i s0 = _mm512_loadu_si512(s[0]), s1 = _mm512_loadu_si512(s[1]);
  __m512i s2 = _mm512_loadu_si512(s[2]), s3 = _mm512_loadu_si512(s[3]);
  const __m512i guide_at = _mm512_loadu_si512(g0), at_at = _mm512_loadu_si512(a0);
  const __m512i shifts = _mm512_loadu_si512(shift), one = _mm512_set1_epi64(1);
  const __m512i threshold_bits = _mm512_set1_epi64(static_cast<long long>(kThresholdBits));
  const __m512i value_bits = _mm512_set1_epi64(static_cast<long long>(kValueBits));
  const __m512i far_bit = _mm512_set1_epi64(static_cast<long long>(uint64_t{1} << 63));
  __m512i total = _mm512_setzero_si512(), largest = _mm512_setzero_si512();
  for (size_t j = 0; j < m; ++j) {
    // v = next_u64() >> 11; i = guide[g0 + (v >> shift)]; i += at[i] <= v; while (at[i] <= v) ++i
    // (i relative to the table's first value here).
    const __m512i v = _mm512_srli_epi64(next_u64_lanes(s0, s1, s2, s3), 11);
    const __m512i e = _mm512_i64gather_epi64(_mm512_add_epi64(_mm512_srlv_epi64(v, shifts), guide_at), packed, 8);
    __mmask8 step = _mm512_cmple_epu64_mask(_mm512_and_si512(e, threshold_bits), v);
    __m512i i = _mm512_and_si512(_mm512_srli_epi64(e, kValueShift), value_bits);
    i = _mm512_mask_add_epi64(i, step, i, one);
    // The while loop, in the lanes whose bucket may need it and that stepped.
    for (step = _mm512_mask_test_epi64_mask(step, e, far_bit); step;) {
      const __m512i a = _mm512_mask_i64gather_epi64(v, step, _mm512_add_epi64(i, at_at), at, 8);
      step = _mm512_mask_cmple_epu64_mask(step, a, v);
      i = _mm512_mask_add_epi64(i, step, i, one);
    }
    total = _mm512_add_epi64(total, i);
    largest = _mm512_max_epu64(largest, i);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j * stride), _mm512_cvtepi64_epi32(i));
  }
  _mm512_storeu_si512(s[0], s0), _mm512_storeu_si512(s[1], s1);
  _mm512_storeu_si512(s[2], s2), _mm512_storeu_si512(s[3], s3);
  _mm512_storeu_si512(sum, total), _mm512_storeu_si512(most, largest);
}

#pragma GCC diagnostic pop

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
}
#endif

}  // namespace

void UniformMultinomialLanes::draw(std::span<Rng> rngs, std::span<const uint64_t> n, size_t m, uint32_t* out,
                                   size_t stride) {
  const size_t count = rngs.size();
  size_t k0 = 0;
  std::vector<size_t> alone;  // generators of a vector group that take the one-stream path
#ifdef HS_MULTINOMIAL_LANES_AVX512
  if (m >= 2 && has_avx512()) {
    for (; k0 + kLanes <= count; k0 += kLanes) {
      at_.clear(), guide_.clear();
      poisson_split::Table tables[kLanes];
      poisson_split::poisson_tables(n.subspan(k0, kLanes), m, kGuidePerValue, at_, guide_, cdf_, tables);
      uint64_t s[4][kLanes], g0[kLanes], a0[kLanes], shift[kLanes], sum[kLanes], most[kLanes];
      unsigned skip = 0;
      packed_.resize(guide_.size() + 1);
      for (size_t k = 0; k < kLanes; ++k) {
        for (int w = 0; w < 4; ++w) s[w][k] = rngs[k0 + k].s_[w];
        const poisson_split::Table& tb = tables[k];
        if (tb.shift < 0 || tb.top >= kMaxValues) {
          // No table (no draws, or the fallback to multinomial()) or one too long to pack: the lane
          // draws from the last packed entry, whose every v stops at once (threshold 2^53 > v, value
          // 0), and its results are replaced below.
          alone.push_back(k0 + k);
          skip |= 1u << k;
          g0[k] = guide_.size(), a0[k] = 0, shift[k] = 53;
          packed_[guide_.size()] = uint64_t{1} << 53;
          continue;
        }
        g0[k] = tb.g0, a0[k] = tb.a0, shift[k] = static_cast<uint64_t>(tb.shift);
        pack_guide(at_, guide_.data() + tb.g0, tb.g, tb.shift, tb.a0, tb.top, per_bucket_, packed_.data() + tb.g0);
      }
      draw_avx512(s, at_.data(), packed_.data(), g0, a0, shift, m, out + k0, stride, sum, most);
      for (size_t k = 0; k < kLanes; ++k) {
        if (skip & (1u << k)) continue;
        Rng& rng = rngs[k0 + k];
        for (int w = 0; w < 4; ++w) rng.s_[w] = s[w][k];
        poisson_split::adjust_to_total(rng, n[k0 + k], m, sum[k], most[k], out + k0 + k, stride);
      }
    }
  }
#endif
  for (size_t k = k0; k < count; ++k) alone.push_back(k);
  one_.resize(m);
  for (size_t k : alone) {
    rngs[k].uniform_multinomial(n[k], one_);
    for (size_t j = 0; j < m; ++j) out[j * stride + k] = static_cast<uint32_t>(one_[j]);
  }
}

}  // namespace hs
