// The single-GPU suite: the expert-FFN GEMMs the compute cost model predicts (bf16 inputs, fp32
// accumulation, over a grid of tokens per expert), once as separate calls for one expert and once as
// one strided-batched call per weight matrix over --experts experts with equal token counts (what a
// grouped MoE kernel does: one launch per layer), and the HBM copy rate. Weights rotate over enough
// buffers to defeat the L2 cache; inputs are random and never zero.
#include <algorithm>
#include <cstdio>
#include <fmt/format.h>

#include "check.hpp"
#include "gemm.hpp"
#include "kernels.hpp"
#include "measure/measured_json.hpp"
#include "suites.hpp"
#include "timing.hpp"

namespace hs::validate {

namespace {

constexpr std::size_t kBf16 = 2;

DeviceBuffer random_bf16(Context& c, std::size_t n, std::uint64_t seed) {
  DeviceBuffer b(n * kBf16);
  fill_random_bf16(b.get(), n, seed, c.stream);
  return b;
}

// How many weight buffers of `wbytes` exceed twice the L2 cache (at most 8).
int rotation(std::size_t wbytes, std::size_t l2) { return static_cast<int>(std::min<std::size_t>(8, 2 * l2 / wbytes + 1)); }

// C = A x W for the suite's iterations, rotating over weight buffers.
measure::GemmTime time_gemm(Context& c, const measure::ValidateOptions& o, long m, long n, long k) {
  const int nbuf = rotation(static_cast<std::size_t>(k) * n * kBf16, static_cast<std::size_t>(c.prop.l2CacheSize));
  std::vector<DeviceBuffer> w;
  for (int i = 0; i < nbuf; ++i) w.push_back(random_bf16(c, static_cast<std::size_t>(k) * n, 100 + i));
  DeviceBuffer a = random_bf16(c, static_cast<std::size_t>(m) * k, 7);
  DeviceBuffer out(static_cast<std::size_t>(m) * n * kBf16);
  const auto t = time_iterations(c.boot, c.comm, c.stream, o.warmup, o.iters,
                                 [&](int i) { gemm_bf16(c.cublas, m, n, k, a.get(), w[i % nbuf].get(), out.get()); });
  return {m, n, k, measure::summarize(t)};
}

// E GEMMs C_e = A_e x W_e in one strided-batched call, rotating weights.
measure::Summary time_batched(Context& c, const measure::ValidateOptions& o, long m, long n, long k) {
  const std::size_t wn = static_cast<std::size_t>(k) * n * o.experts;
  const int nbuf = rotation(wn * kBf16, static_cast<std::size_t>(c.prop.l2CacheSize));
  std::vector<DeviceBuffer> w;
  for (int i = 0; i < nbuf; ++i) w.push_back(random_bf16(c, wn, 200 + i));
  DeviceBuffer a = random_bf16(c, static_cast<std::size_t>(m) * k * o.experts, 9);
  DeviceBuffer out(static_cast<std::size_t>(m) * n * o.experts * kBf16);
  const auto t = time_iterations(c.boot, c.comm, c.stream, o.warmup, o.iters, [&](int i) {
    gemm_bf16_strided(c.cublas, m, n, k, a.get(), static_cast<long long>(m) * k, w[i % nbuf].get(),
                      static_cast<long long>(k) * n, out.get(), static_cast<long long>(m) * n, o.experts);
  });
  return measure::summarize(t);
}

}  // namespace

void run_gemm(Context& c, const measure::ValidateOptions& o, Report& r) {
  const bool print = c.rank() == 0;
  std::vector<measure::ExpertFfnRow> rows;
  if (print) std::printf("%8s %12s %12s %12s %10s\n", "tokens", "up ms", "down ms", "ffn fwd ms", "TFLOP/s");
  for (long t : o.tokens) {
    measure::ExpertFfnRow row{t, {}};
    // Up projection(s) [t x d_model] x [d_model x d_ffn] (two for SwiGLU: gate and up), then down.
    for (int i = 0; i + 1 < o.mats; ++i) row.gemms.push_back(time_gemm(c, o, t, o.d_ffn, o.d_model));
    row.gemms.push_back(time_gemm(c, o, t, o.d_model, o.d_ffn));
    const double total = row.forward_s(), flops = 2.0 * t * o.d_model * o.d_ffn * o.mats;
    if (print)
      std::printf("%8ld %12.4f %12.4f %12.4f %10.1f\n", t, row.gemms.front().time.median * 1e3, row.gemms.back().time.median * 1e3,
                  total * 1e3, flops / total / 1e12);
    rows.push_back(row);
  }
  r.add("expert_ffn", measure::expert_ffn_section(o.d_model, o.d_ffn, o.mats, rows));
  std::vector<std::pair<long, double>> batched;
  if (print)
    std::printf("%8s %12s %10s   (%d experts, one strided-batched call per matrix)\n", "tokens", "layer ms", "TFLOP/s", o.experts);
  for (long t : o.tokens) {
    double total = 0;
    for (int i = 0; i + 1 < o.mats; ++i) total += time_batched(c, o, t, o.d_ffn, o.d_model).median;
    total += time_batched(c, o, t, o.d_model, o.d_ffn).median;
    const double flops = 2.0 * t * o.d_model * o.d_ffn * o.mats * o.experts;
    if (print) std::printf("%8ld %12.4f %10.1f\n", t, total * 1e3, flops / total / 1e12);
    batched.emplace_back(t, total);
  }
  r.add("expert_ffn_batched", measure::expert_ffn_batched_section(o.experts, batched));

  // HBM: a device-to-device copy, bytes read plus written.
  const std::size_t n = o.hbm_bytes;
  DeviceBuffer src(n), dst(n);
  check(cudaMemsetAsync(src.get(), 0x5a, n, c.stream), "cudaMemsetAsync");
  const auto s = measure::summarize(time_iterations(c.boot, c.comm, c.stream, 1, o.iters, [&](int) {
    check(cudaMemcpyAsync(dst.get(), src.get(), n, cudaMemcpyDeviceToDevice, c.stream), "cudaMemcpyAsync D2D");
  }));
  if (print)
    std::printf("HBM device-to-device copy: %.2f GB in %.3f ms = %.0f GB/s (read + write)\n", static_cast<double>(n) / 1e9,
                s.median * 1e3, 2.0 * static_cast<double>(n) / s.median / 1e9);
  r.add("device", measure::device_section(c.provenance.gpus.at(static_cast<std::size_t>(c.rank()))));
  r.add("hbm_copy", measure::hbm_copy_section(n, s));
}

}  // namespace hs::validate
