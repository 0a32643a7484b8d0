// The data the collective suites send: element i of rank r's buffer is an integer in [-64, 64],
// never 0, from a hash of (seed, rank, i). Generated on the GPU and recomputed on the CPU for the
// reference, with the same function (plain arithmetic: compiled by nvcc for the device and by the
// host compiler for checks and tests). Sums over up to 2^18 ranks stay below 2^24, so every reduction
// is exact in float whatever NCCL's order of additions: results are compared bit for bit.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define HS_HOST_DEVICE __host__ __device__
#else
#define HS_HOST_DEVICE
#endif

namespace hs::measure {

HS_HOST_DEVICE inline float pattern_value(std::uint64_t seed, std::uint64_t rank, std::uint64_t i) {
  std::uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ULL ^ (rank + 1) * 0xBF58476D1CE4E5B9ULL ^ seed * 0x94D049BB133111EBULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  const int v = static_cast<int>(z % 128) - 64;  // [-64, 63]
  return static_cast<float>(v >= 0 ? v + 1 : v);  // [-64, 64] without 0
}

}  // namespace hs::measure
