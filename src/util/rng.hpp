// Deterministic random numbers, identical on every platform and compiler.
//
// std::normal_distribution and friends are implementation-defined, so the same seed would give
// different traces with another standard library. We use SplitMix64 (seeding) and xoshiro256**
// (Blackman & Vigna) and write the few distributions we need ourselves.
#pragma once

#include <cstdint>
#include <span>

namespace hs {

class Rng {
 public:
  explicit Rng(uint64_t seed);
  // xoshiro256**; inline, since samplers draw millions per iteration.
  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal();                  // N(0, 1), Box-Muller (no cached second value: simpler state)
  uint64_t below(uint64_t n);       // uniform integer in [0, n), n > 0, unbiased
  // Binomial(n, p): exact inversion for small n*p, normal approximation with continuity correction
  // (clamped to [0, n]) when n*min(p,1-p) > 30 — accurate enough for load sampling.
  uint64_t binomial(uint64_t n, double p);
  // Splits n draws over categories with probabilities p (sum 1) by conditional binomials;
  // out[i] sums to n exactly.
  void multinomial(uint64_t n, std::span<const double> p, std::span<uint64_t> out);
  // The same with equal probabilities over out.size() categories, in about one uniform variate per
  // category: independent Poisson(n / categories) counts X_i (inversion on a guide table), then
  // the difference to n thrown in (or taken out) one draw at a time, uniformly. Exact: given their
  // sum s, Poisson counts are multinomial(s, equal); adding n - s uniform draws, or removing s - n
  // of the s draws at random, leaves multinomial(n, equal). Falls back to multinomial() when the
  // Poisson table would be longer than the categories (few categories, many draws each).
  void uniform_multinomial(uint64_t n, std::span<uint64_t> out);
  // An independent stream derived from this seed and a key (for per-layer / per-source streams).
  static Rng derive(uint64_t seed, uint64_t key);

 private:
  friend class UniformMultinomialLanes;  // steps several generators' states in vector lanes
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace hs
