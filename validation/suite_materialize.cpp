// The materialization kernels of a MoE layer on one GPU:
//   * pack / unpack: --experts expert shards of --hbm-bytes / experts bytes each, scattered in a pool
//     (a 4 KiB gap after each), copied into one contiguous buffer and back (copy_segments); both
//     checked byte for byte;
//   * permute / unpermute: max(--tokens) x experts tokens of d_model bf16 values routed to experts
//     by measure::route_tokens (skewed), grouped by expert and back (gather_rows); unpermute(permute)
//     checked to be the identity and permute checked row by row;
//   * grouped GEMM with unequal tokens per expert (the routing's counts): the up projection
//     [t_e x d_model] x [d_model x d_ffn] of every expert as one cublasGemmGroupedBatchedEx call
//     (CUDA 12.5+), as one cublasGemmEx per expert, and as one strided-batched call padded to the
//     largest expert; the grouped result checked against the per-expert calls.
// Bandwidths count bytes read plus written.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <fmt/format.h>
#include <library_types.h>

#include "check.hpp"
#include "gemm.hpp"
#include "kernels.hpp"
#include "measure/measured_json.hpp"
#include "measure/pattern.hpp"
#include "measure/permutation.hpp"
#include "suites.hpp"
#include "timing.hpp"

namespace hs::validate {

namespace {

constexpr std::size_t kBf16 = 2;

std::vector<std::uint8_t> to_host(const DeviceBuffer& b, std::size_t bytes, cudaStream_t s) {
  std::vector<std::uint8_t> h(bytes);
  check(cudaMemcpyAsync(h.data(), b.get(), bytes, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync D2H");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return h;
}

std::uint8_t pattern_byte(std::uint64_t seed, std::uint64_t key, std::uint64_t i) {
  return static_cast<std::uint8_t>(static_cast<int>(measure::pattern_value(seed, key, i)) & 0xff);
}

template <class T>
DeviceBuffer upload(const std::vector<T>& v, cudaStream_t s) {
  DeviceBuffer b(v.size() * sizeof(T));
  check(cudaMemcpyAsync(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, s), "cudaMemcpyAsync H2D");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return b;
}

float bf16_to_float(std::uint16_t x) {
  const std::uint32_t bits = static_cast<std::uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// A memory-bound kernel's row, printed on rank 0: `bytes` moved, read once and written once.
measure::MaterializeRow row(bool print, measure::MaterializeRow r) {
  if (print)
    std::printf("%-22s %14llu %10.2f %10.2f %10.0f\n", r.kernel.c_str(), static_cast<unsigned long long>(r.bytes), r.time.median * 1e6,
                r.time.max * 1e6, 2.0 * static_cast<double>(r.bytes) / r.time.median / 1e9);
  return r;
}

}  // namespace

void run_materialize(Context& c, const measure::ValidateOptions& o, Report& r) {
  const bool print = c.rank() == 0;
  std::vector<measure::MaterializeRow> rows;
  auto add = [&](measure::MaterializeRow x) { rows.push_back(std::move(x)); };
  auto timed = [&](const std::function<void()>& op) {
    return measure::summarize(time_iterations(c.boot, c.comm, c.stream, o.warmup, o.iters, [&](int) { op(); }));
  };
  if (print) std::printf("\n# materialize\n%-22s %14s %10s %10s %10s\n", "kernel", "bytes", "time us", "max us", "GB/s");

  // Pack / unpack.
  const int E = o.experts;
  const std::uint64_t shard = o.hbm_bytes / static_cast<std::uint64_t>(E) / 256 * 256, gap = 4096;
  if (shard == 0) throw Fatal("--hbm-bytes is too small for one 256-byte shard per expert");
  std::vector<Segment> pack_segs, unpack_segs;
  for (int e = 0; e < E; ++e) {
    const std::uint64_t pool_off = static_cast<std::uint64_t>(e) * (shard + gap), flat_off = static_cast<std::uint64_t>(e) * shard;
    pack_segs.push_back({pool_off, flat_off, shard});
    unpack_segs.push_back({flat_off, pool_off, shard});
  }
  const std::uint64_t pool_bytes = static_cast<std::uint64_t>(E) * (shard + gap), flat_bytes = shard * static_cast<std::uint64_t>(E);
  DeviceBuffer pool(pool_bytes), flat(flat_bytes), back(pool_bytes);
  DeviceBuffer d_pack = upload(pack_segs, c.stream), d_unpack = upload(unpack_segs, c.stream);
  fill_pattern_u8(pool.get<std::uint8_t>(), pool_bytes, o.seed, 1, c.stream);
  copy_segments(pool.get(), flat.get(), d_pack.get<Segment>(), E, c.stream);
  copy_segments(flat.get(), back.get(), d_unpack.get<Segment>(), E, c.stream);
  {
    const auto hf = to_host(flat, flat_bytes, c.stream), hb = to_host(back, pool_bytes, c.stream);
    for (int e = 0; e < E; ++e)
      for (std::uint64_t i = 0; i < shard; ++i) {
        const std::uint64_t at = static_cast<std::uint64_t>(e) * (shard + gap) + i;
        const std::uint8_t want = pattern_byte(o.seed, 1, at);
        if (hf[static_cast<std::uint64_t>(e) * shard + i] != want || hb[at] != want)
          throw Fatal(fmt::format("materialize: expert {} byte {} differs after {}", e, i,
                                  hf[static_cast<std::uint64_t>(e) * shard + i] != want ? "pack" : "unpack"));
      }
  }
  add(row(print, {.kernel = "pack_shards", .time = timed([&] {
            copy_segments(pool.get(), flat.get(), d_pack.get<Segment>(), E, c.stream);
                                  }), .bytes = flat_bytes, .experts = E}));
  add(row(print, {.kernel = "unpack_shards", .time = timed([&] {
            copy_segments(flat.get(), back.get(), d_unpack.get<Segment>(), E, c.stream);
                                  }), .bytes = flat_bytes, .experts = E}));

  // Permute / unpermute by expert id.
  const std::size_t tokens = static_cast<std::size_t>(*std::max_element(o.tokens.begin(), o.tokens.end())) * static_cast<std::size_t>(E);
  const std::size_t row_bytes = static_cast<std::size_t>(o.d_model) * kBf16;
  const measure::Permutation perm = measure::permute_by_expert(measure::route_tokens(tokens, E, o.seed), E);
  DeviceBuffer x(tokens * row_bytes), xp(tokens * row_bytes), xu(tokens * row_bytes);
  DeviceBuffer d_gather = upload(perm.gather, c.stream), d_inverse = upload(perm.inverse, c.stream);
  fill_pattern_u8(x.get<std::uint8_t>(), tokens * row_bytes, o.seed, 2, c.stream);
  gather_rows(x.get(), xp.get(), d_gather.get<std::int32_t>(), tokens, row_bytes, c.stream);
  gather_rows(xp.get(), xu.get(), d_inverse.get<std::int32_t>(), tokens, row_bytes, c.stream);
  {
    const auto hp = to_host(xp, tokens * row_bytes, c.stream), hu = to_host(xu, tokens * row_bytes, c.stream);
    for (std::size_t j = 0; j < tokens; ++j)
      for (std::size_t i = 0; i < row_bytes; ++i) {
        const std::size_t src = static_cast<std::size_t>(perm.gather[j]) * row_bytes + i;
        if (hp[j * row_bytes + i] != pattern_byte(o.seed, 2, src))
          throw Fatal(fmt::format("materialize: permuted row {} (token {}) byte {} differs", j, perm.gather[j], i));
        if (hu[j * row_bytes + i] != pattern_byte(o.seed, 2, j * row_bytes + i))
          throw Fatal(fmt::format("materialize: unpermuted token {} byte {} differs", j, i));
      }
  }
  add(row(print, {.kernel = "permute_tokens", .time = timed([&] {
            gather_rows(x.get(), xp.get(), d_gather.get<std::int32_t>(), tokens, row_bytes, c.stream);
                                  }),
                     .bytes = tokens * row_bytes, .tokens = tokens, .row_bytes = row_bytes}));
  add(row(print, {.kernel = "unpermute_tokens", .time = timed([&] {
            gather_rows(xp.get(), xu.get(), d_inverse.get<std::int32_t>(), tokens, row_bytes, c.stream);
                                  }),
                     .bytes = tokens * row_bytes, .tokens = tokens, .row_bytes = row_bytes}));

  // Grouped GEMM with the routing's unequal tokens per expert: up projection of each expert.
  const long k = o.d_model, n = o.d_ffn;
  std::vector<int> m_of;  // tokens of each expert that has any
  std::vector<std::int64_t> first;
  long largest = 0;
  for (int e = 0; e < E; ++e) {
    const long t = static_cast<long>(perm.offsets[e + 1] - perm.offsets[e]);
    largest = std::max(largest, t);
    if (t == 0) continue;
    m_of.push_back(static_cast<int>(t));
    first.push_back(perm.offsets[e]);
  }
  const int groups = static_cast<int>(m_of.size());
  DeviceBuffer a(tokens * static_cast<std::size_t>(k) * kBf16), w(static_cast<std::size_t>(groups) * k * n * kBf16);
  DeviceBuffer out_grouped(tokens * static_cast<std::size_t>(n) * kBf16), out_loop(tokens * static_cast<std::size_t>(n) * kBf16);
  fill_random_bf16(a.get(), tokens * static_cast<std::size_t>(k), 11, c.stream);
  fill_random_bf16(w.get(), static_cast<std::size_t>(groups) * k * n, 12, c.stream);
  // Column-major view (C^T = W^T A^T): cuBLAS m = n (d_ffn), n = t_e, k = d_model.
  std::vector<const void*> pa, pb;
  std::vector<void*> pc;
  for (int g = 0; g < groups; ++g) {
    pa.push_back(w.get<char>() + static_cast<std::size_t>(g) * k * n * kBf16);
    pb.push_back(a.get<char>() + static_cast<std::size_t>(first[g]) * k * kBf16);
    pc.push_back(out_grouped.get<char>() + static_cast<std::size_t>(first[g]) * n * kBf16);
  }
  DeviceBuffer d_pa = upload(pa, c.stream), d_pb = upload(pb, c.stream), d_pc = upload(pc, c.stream);
  const std::vector<cublasOperation_t> op_n(static_cast<std::size_t>(groups), CUBLAS_OP_N);
  const std::vector<int> mm(static_cast<std::size_t>(groups), static_cast<int>(n)), kk(static_cast<std::size_t>(groups), static_cast<int>(k));
  const std::vector<int> lda = mm, ldb = kk, ldc = mm, size1(static_cast<std::size_t>(groups), 1);
  const std::vector<float> alpha(static_cast<std::size_t>(groups), 1.0f), beta(static_cast<std::size_t>(groups), 0.0f);
  auto grouped = [&] {
    check(cublasGemmGroupedBatchedEx(c.cublas, op_n.data(), op_n.data(), mm.data(), m_of.data(), kk.data(), alpha.data(),
                                     d_pa.get<const void* const>(), CUDA_R_16BF, lda.data(), d_pb.get<const void* const>(),
                                     CUDA_R_16BF, ldb.data(), beta.data(), d_pc.get<void* const>(), CUDA_R_16BF, ldc.data(), groups,
                                     size1.data(), CUBLAS_COMPUTE_32F),
          "cublasGemmGroupedBatchedEx");
  };
  auto loop = [&] {
    for (int g = 0; g < groups; ++g)
      gemm_bf16(c.cublas, m_of[g], n, k, pb[g], pa[g], out_loop.get<char>() + static_cast<std::size_t>(first[g]) * n * kBf16);
  };
  grouped();
  loop();
  {
    const auto hg = to_host(out_grouped, tokens * static_cast<std::size_t>(n) * kBf16, c.stream);
    const auto hl = to_host(out_loop, tokens * static_cast<std::size_t>(n) * kBf16, c.stream);
    for (std::size_t i = 0; i < tokens * static_cast<std::size_t>(n); ++i) {
      std::uint16_t g, l;
      std::memcpy(&g, &hg[i * 2], 2);
      std::memcpy(&l, &hl[i * 2], 2);
      const float fg = bf16_to_float(g), fl = bf16_to_float(l);
      // Two fp32-accumulated sums of k products rounded to bf16: within a few bf16 ulps (2^-8).
      if (!(std::fabs(fg - fl) <= std::fabs(fl) / 64 + 1e-3f * std::sqrt(static_cast<float>(k))))
        throw Fatal(fmt::format("materialize: grouped GEMM element {} is {}, the per-expert GEMM gives {}", i, fg, fl));
    }
  }
  DeviceBuffer a_pad(static_cast<std::size_t>(E) * largest * k * kBf16), out_pad(static_cast<std::size_t>(E) * largest * n * kBf16);
  check(cudaMemsetAsync(a_pad.get(), 0, a_pad.bytes(), c.stream), "cudaMemsetAsync");
  const double flops = 2.0 * static_cast<double>(tokens) * k * n;
  // flops: the useful ones (the real tokens), also for the padded call.
  std::vector<long> counts;
  for (int e = 0; e < E; ++e) counts.push_back(static_cast<long>(perm.offsets[e + 1] - perm.offsets[e]));
  auto gemm_row = [&](const char* call, const measure::Summary& s) {
    if (print) std::printf("%-22s %14s %10.2f %10.2f %9.1fT\n", call, "", s.median * 1e6, s.max * 1e6, flops / s.median / 1e12);
    return measure::MaterializeRow{.kernel = call, .time = s, .d_model = k, .d_ffn = n, .tokens_per_expert = counts, .flops = flops};
  };
  add(gemm_row("grouped_gemm", timed(grouped)));
  add(gemm_row("gemm_per_expert", timed(loop)));
  add(gemm_row("gemm_padded_batched", timed([&] {
                 gemm_bf16_strided(c.cublas, largest, n, k, a_pad.get(), static_cast<long long>(largest) * k, w.get(),
                                   static_cast<long long>(k) * n, out_pad.get(), static_cast<long long>(largest) * n, groups);
               })));
  r.add("materialize", measure::materialize_section(rows));
}

}  // namespace hs::validate
