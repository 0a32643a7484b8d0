// Rng::uniform_multinomial for many generators at once, one split per generator (the global
// trace's split: every expert's tokens over the GPUs, each expert with its own stream).
//
// The draw loop is a few dozen integer operations per category (a xoshiro256** step, a guide-table
// lookup, one compare) with no dependency between generators, so on a CPU with AVX-512 eight
// generators are stepped in the eight 64-bit lanes of one register: each lane does exactly the
// integer operations of next_u64 and of the table inversion for its own generator (x * 5 and x * 9
// as shifts and adds modulo 2^64, rotations as rotations), reading its own table through gathers.
// So every count, and every generator's state afterwards, is the one that
// rngs[k].uniform_multinomial(n[k], ...) gives; the adjustment to the exact total
// (poisson_split::adjust_to_total) then runs per generator, as there. Without AVX-512, or for the
// generators left over from groups of eight, uniform_multinomial itself runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "util/rng.hpp"

namespace hs {

class UniformMultinomialLanes {
 public:
  // Splits n[k] (< 2^32) equally over m categories with rngs[k], for every k: category j's count
  // of split k into out[j * stride + k]; rngs[k] advanced as by uniform_multinomial.
  void draw(std::span<Rng> rngs, std::span<const uint64_t> n, size_t m, uint32_t* out, size_t stride);

 private:
  // Scratch, kept between calls: the lanes' inversion tables back to back (their guides also
  // packed for the lanes), and one split.
  std::vector<uint64_t> at_, packed_;
  std::vector<uint32_t> guide_, per_bucket_;
  std::vector<double> cdf_;
  std::vector<uint64_t> one_;
};

}  // namespace hs
