// --self-test: the GPU's results against CPU references on small inputs (the `gpu` suite of meson
// test): a bf16 GEMM, a device-to-device copy byte for byte, the pack (copy_segments) and permute
// (gather_rows) kernels, and every collective on the run's NCCL communicator (one rank on one GPU).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "check.hpp"
#if HS_VALIDATE_NCCL
#include "collective_ops.hpp"
#endif
#include "gemm.hpp"
#include "kernels.hpp"
#include "suites.hpp"
#include "timing.hpp"

namespace hs::validate {

namespace {

std::uint16_t to_bf16(float f) {  // round to nearest even (no NaN inputs here)
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  b += 0x7fff + ((b >> 16) & 1);
  return static_cast<std::uint16_t>(b >> 16);
}

float from_bf16(std::uint16_t h) {
  const std::uint32_t b = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

template <class T>
void put(DeviceBuffer& d, const std::vector<T>& h, cudaStream_t s) {
  check(cudaMemcpyAsync(d.get(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice, s), "cudaMemcpyAsync H2D");
}

template <class T>
std::vector<T> get(const DeviceBuffer& d, std::size_t n, cudaStream_t s) {
  std::vector<T> h(n);
  check(cudaMemcpyAsync(h.data(), d.get(), n * sizeof(T), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync D2H");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return h;
}

bool gemm_ok(Context& c, std::mt19937_64& rng) {
  const long m = 96, n = 160, k = 256;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::uint16_t> ha(m * k), hb(k * n);
  for (auto& x : ha) x = to_bf16(u(rng));
  for (auto& x : hb) x = to_bf16(u(rng));
  DeviceBuffer a(ha.size() * 2), b(hb.size() * 2), out(static_cast<std::size_t>(m) * n * 2);
  put(a, ha, c.stream);
  put(b, hb, c.stream);
  gemm_bf16(c.cublas, m, n, k, a.get(), b.get(), out.get());
  const auto hc = get<std::uint16_t>(out, static_cast<std::size_t>(m) * n, c.stream);
  double worst = 0;
  for (long i = 0; i < m; ++i)
    for (long j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (long p = 0; p < k; ++p) {
        const double x = static_cast<double>(from_bf16(ha[i * k + p])) * from_bf16(hb[p * n + j]);
        ref += x;
        mag += std::fabs(x);
      }
      // bf16 output: relative rounding 2^-8 of the result, plus fp32 accumulation noise.
      worst = std::max(worst, std::fabs(from_bf16(hc[i * n + j]) - ref) / (std::fabs(ref) / 128 + mag * 1e-5 + 1e-6));
    }
  std::printf("self-test: GEMM %ldx%ldx%ld worst error %.3f of tolerance (%s)\n", m, n, k, worst, worst <= 1.0 ? "ok" : "FAIL");
  return worst <= 1.0;
}

bool copies_ok(Context& c, std::mt19937_64& rng) {
  const std::size_t bytes = 1 << 24;
  std::vector<std::uint8_t> src(bytes);
  for (auto& x : src) x = static_cast<std::uint8_t>(rng());
  DeviceBuffer d0(bytes), d1(bytes), d2(bytes);
  put(d0, src, c.stream);
  check(cudaMemcpyAsync(d1.get(), d0.get(), bytes, cudaMemcpyDeviceToDevice, c.stream), "cudaMemcpyAsync D2D");
  const bool copy = get<std::uint8_t>(d1, bytes, c.stream) == src;
  // Pack three segments (one unaligned) and permute 1000 rows of 48 bytes by a reversal.
  const std::vector<Segment> segs{{4096, 0, 1000}, {100, 1000, 333}, {65536, 1333, 4096}};
  DeviceBuffer dseg(segs.size() * sizeof(Segment));
  put(dseg, segs, c.stream);
  copy_segments(d0.get(), d2.get(), dseg.get<Segment>(), 3, c.stream);
  const auto packed = get<std::uint8_t>(d2, 1333 + 4096, c.stream);
  bool pack = true;
  for (const auto& g : segs) pack = pack && std::memcmp(packed.data() + g.dst_off, src.data() + g.src_off, g.bytes) == 0;
  std::vector<std::int32_t> index(1000);
  for (int j = 0; j < 1000; ++j) index[j] = 999 - j;
  DeviceBuffer didx(index.size() * 4);
  put(didx, index, c.stream);
  gather_rows(d0.get(), d2.get(), didx.get<std::int32_t>(), 1000, 48, c.stream);
  const auto rows = get<std::uint8_t>(d2, 48000, c.stream);
  bool permute = true;
  for (int j = 0; j < 1000; ++j) permute = permute && std::memcmp(rows.data() + j * 48, src.data() + (999 - j) * 48, 48) == 0;
  std::printf("self-test: D2D copy of %zu bytes %s; pack %s; permute %s\n", bytes, copy ? "identical" : "DIFFERS",
              pack ? "ok" : "FAIL", permute ? "ok" : "FAIL");
  return copy && pack && permute;
}

#if HS_VALIDATE_NCCL
bool collectives_ok(Context& c) {
  bool ok = true;
  for (int i = 0; i < 7; ++i) {
    const auto op = static_cast<collective::NcclOp>(i);
    const measure::OpBuffers b = measure::op_buffers(op, 1 << 20, c.ranks());
    DeviceBuffer send(b.send_elems * 4), recv(b.recv_elems * 4);
    fill_pattern_f32(send.get<float>(), b.send_elems, 5, static_cast<std::uint64_t>(c.rank()), 0, c.stream);
    launch_collective(op, b, send.get<float>(), recv.get<float>(), c.rank(), c.ranks(), c.comm, c.stream);
    std::string first;
    const long bad = check_collective(op, b, recv.get<float>(), 5, c.rank(), c.ranks(), c.comm, c.stream, first);
    std::printf("self-test: NCCL %s on %d rank(s): %s%s\n", collective::to_string(op), c.ranks(), bad ? "FAIL " : "ok",
                first.c_str());
    ok = ok && bad == 0;
  }
  return ok;
}
#endif

}  // namespace

bool self_test(Context& c) {
  std::mt19937_64 rng(3);
  const bool g = gemm_ok(c, rng);
  const bool k = copies_ok(c, rng);
#if HS_VALIDATE_NCCL
  const bool n = collectives_ok(c);
#else
  std::printf("self-test: built without NCCL: no collective checked\n");
  const bool n = true;
#endif
  return g && k && n;
}

}  // namespace hs::validate
