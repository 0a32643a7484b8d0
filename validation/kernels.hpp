// hecate-validate's own GPU kernels, launched on a stream (asynchronous; launch errors checked
// here). Declared without CUDA syntax so the suites compile as plain C++.
//   * fill_pattern_*: measure::pattern_value(seed, key, first + i) for each element (floats), or its
//     low byte (bytes): data that is never all-zero and that the CPU recomputes for the reference;
//   * fill_random_bf16: uniform in [-1, 1), never 0, for GEMM inputs;
//   * add_f32: dst[i] += src[i] (a reduce step);
//   * copy_segments: for each segment s, bytes [src_off, src_off + bytes) of src to dst_off of dst,
//     16 bytes per thread where aligned; packing expert shards into a contiguous buffer and unpacking
//     them are this kernel with the offsets swapped;
//   * gather_rows: dst row j = src row index[j] (row_bytes each): token permute, and unpermute with
//     the inverse index.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace hs::validate {

struct Segment {
  std::uint64_t src_off, dst_off, bytes;
};

void fill_pattern_f32(float* p, std::size_t n, std::uint64_t seed, std::uint64_t key, std::uint64_t first, cudaStream_t s);
void fill_pattern_u8(std::uint8_t* p, std::size_t n, std::uint64_t seed, std::uint64_t key, cudaStream_t s);
void fill_random_bf16(void* p, std::size_t n, std::uint64_t seed, cudaStream_t s);
void add_f32(float* dst, const float* src, std::size_t n, cudaStream_t s);
// `segs` in device memory.
void copy_segments(const void* src, void* dst, const Segment* segs, int nsegs, cudaStream_t s);
// `index` (device memory) has `rows` entries.
void gather_rows(const void* src, void* dst, const std::int32_t* index, std::size_t rows, std::size_t row_bytes, cudaStream_t s);

}  // namespace hs::validate
