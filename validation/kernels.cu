#include "kernels.hpp"

#include <cuda_bf16.h>

#include "check.hpp"
#include "measure/pattern.hpp"

namespace hs::validate {

namespace {

constexpr int kThreads = 256;

int blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 4096 ? (b ? b : 1) : 4096);
}

__global__ void k_fill_f32(float* p, std::size_t n, std::uint64_t seed, std::uint64_t key, std::uint64_t first) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = measure::pattern_value(seed, key, first + i);
}

__global__ void k_fill_u8(std::uint8_t* p, std::size_t n, std::uint64_t seed, std::uint64_t key) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<std::uint8_t>(static_cast<int>(measure::pattern_value(seed, key, i)) & 0xff);
}

__global__ void k_fill_bf16(__nv_bfloat16* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    float v = static_cast<float>(z >> 40) / static_cast<float>(1ull << 23) - 1.0f;
    if (v == 0.0f) v = 0.5f;
    p[i] = __float2bfloat16(v);
  }
}

__global__ void k_add(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}

// Copies `bytes` from s to d: 16-byte words when both are 16-byte aligned, else bytes.
__device__ void copy_block(const char* s, char* d, std::uint64_t bytes) {
  const bool aligned = ((reinterpret_cast<std::uintptr_t>(s) | reinterpret_cast<std::uintptr_t>(d)) & 15) == 0;
  std::uint64_t done = 0;
  if (aligned) {
    const std::uint64_t words = bytes / 16;
    for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < words;
         i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
      reinterpret_cast<uint4*>(d)[i] = reinterpret_cast<const uint4*>(s)[i];
    done = words * 16;
  }
  for (std::uint64_t i = done + blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    d[i] = s[i];
}

// blockIdx.y: the segment.
__global__ void k_copy_segments(const char* src, char* dst, const Segment* segs) {
  const Segment g = segs[blockIdx.y];
  copy_block(src + g.src_off, dst + g.dst_off, g.bytes);
}

// blockIdx.y (strided): the row; threads of blockIdx.x copy its bytes.
__global__ void k_gather_rows(const char* src, char* dst, const std::int32_t* index, std::size_t rows, std::size_t row_bytes) {
  for (std::size_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const char* s = src + static_cast<std::size_t>(index[r]) * row_bytes;
    char* d = dst + r * row_bytes;
    if (((reinterpret_cast<std::uintptr_t>(s) | reinterpret_cast<std::uintptr_t>(d) | row_bytes) & 15) == 0) {
      for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < row_bytes / 16;
           i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        reinterpret_cast<uint4*>(d)[i] = reinterpret_cast<const uint4*>(s)[i];
    } else {
      for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < row_bytes;
           i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        d[i] = s[i];
    }
  }
}

}  // namespace

void fill_pattern_f32(float* p, std::size_t n, std::uint64_t seed, std::uint64_t key, std::uint64_t first, cudaStream_t s) {
  k_fill_f32<<<blocks_for(n), kThreads, 0, s>>>(p, n, seed, key, first);
  check(cudaGetLastError(), "fill_pattern_f32 launch");
}

void fill_pattern_u8(std::uint8_t* p, std::size_t n, std::uint64_t seed, std::uint64_t key, cudaStream_t s) {
  k_fill_u8<<<blocks_for(n), kThreads, 0, s>>>(p, n, seed, key);
  check(cudaGetLastError(), "fill_pattern_u8 launch");
}

void fill_random_bf16(void* p, std::size_t n, std::uint64_t seed, cudaStream_t s) {
  k_fill_bf16<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed);
  check(cudaGetLastError(), "fill_random_bf16 launch");
}

void add_f32(float* dst, const float* src, std::size_t n, cudaStream_t s) {
  k_add<<<blocks_for(n), kThreads, 0, s>>>(dst, src, n);
  check(cudaGetLastError(), "add_f32 launch");
}

void copy_segments(const void* src, void* dst, const Segment* segs, int nsegs, cudaStream_t s) {
  if (nsegs <= 0) return;
  if (nsegs > 65535) throw Fatal("copy_segments: more than 65,535 segments (one grid row each)");
  k_copy_segments<<<dim3(64, static_cast<unsigned>(nsegs)), kThreads, 0, s>>>(static_cast<const char*>(src),
                                                                              static_cast<char*>(dst), segs);
  check(cudaGetLastError(), "copy_segments launch");
}

void gather_rows(const void* src, void* dst, const std::int32_t* index, std::size_t rows, std::size_t row_bytes, cudaStream_t s) {
  if (rows == 0) return;
  const unsigned grid_y = static_cast<unsigned>(rows < 65535 ? rows : 65535);
  const unsigned grid_x = static_cast<unsigned>(row_bytes / 16 / kThreads + 1);
  k_gather_rows<<<dim3(grid_x, grid_y), kThreads, 0, s>>>(static_cast<const char*>(src), static_cast<char*>(dst), index, rows,
                                                          row_bytes);
  check(cudaGetLastError(), "gather_rows launch");
}

}  // namespace hs::validate
