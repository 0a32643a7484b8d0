// A GEMM stream beside communication, as a training step overlaps an expert's GEMMs with the next
// layer's SparseAllGather. The GEMM is the up projection [max(--tokens) x d_model] x [d_model x
// d_ffn], repeated; the communication, on a second stream, is --overlap-bytes moved by:
//   * nccl_all_reduce (with several ranks): ncclAllReduce of floats, checked before timing;
//   * copy_engine: a device-to-device cudaMemcpyAsync;
//   * copy_kernel: the same copy by an SM kernel (copy_segments), which competes for SMs.
// Each side runs alone, then both together; the repetition counts make the two alone about equally
// long (at least --iters GEMMs). Slowdown = time together / time alone, per side, medians over
// iterations of the slowest rank.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <fmt/format.h>

#include "check.hpp"
#if HS_VALIDATE_NCCL
#include "collective_ops.hpp"
#endif
#include "gemm.hpp"
#include "kernels.hpp"
#include "measure/measured_json.hpp"
#include "suites.hpp"
#include "timing.hpp"

namespace hs::validate {

namespace {

struct Side {
  cudaStream_t stream;
  std::function<void()> once;
  int reps = 1;
  void run() const {
    for (int i = 0; i < reps; ++i) once();
  }
};

// Per iteration, the time of each side with both launched together (slowest rank each).
std::pair<std::vector<double>, std::vector<double>> time_together(Context& c, const Side& a, const Side& b, int warmup, int iters) {
  cudaEvent_t ev[4];
  for (auto& e : ev) check(cudaEventCreate(&e), "cudaEventCreate");
  std::vector<double> ta, tb;
  for (int i = 0; i < warmup + iters; ++i) {
    c.boot.barrier();
    check(cudaEventRecord(ev[0], a.stream), "cudaEventRecord");
    check(cudaEventRecord(ev[2], b.stream), "cudaEventRecord");
    a.run();
    b.run();
    check(cudaEventRecord(ev[1], a.stream), "cudaEventRecord");
    check(cudaEventRecord(ev[3], b.stream), "cudaEventRecord");
    wait_event(ev[1], c.comm, "overlapped GEMMs");
    wait_event(ev[3], c.comm, "overlapped communication");
    float ma = 0, mb = 0;
    check(cudaEventElapsedTime(&ma, ev[0], ev[1]), "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&mb, ev[2], ev[3]), "cudaEventElapsedTime");
    if (i >= warmup) ta.push_back(ma * 1e-3), tb.push_back(mb * 1e-3);
  }
  for (auto& e : ev) check(cudaEventDestroy(e), "cudaEventDestroy");
  return {slowest_over_ranks(c.boot, ta), slowest_over_ranks(c.boot, tb)};
}

}  // namespace

void run_overlap(Context& c, const measure::ValidateOptions& o, Report& r) {
  const int me = c.rank(), n = c.ranks();
  cudaStream_t comm_stream = nullptr;
  check(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const long m = *std::max_element(o.tokens.begin(), o.tokens.end());
  DeviceBuffer a(static_cast<std::size_t>(m) * o.d_model * 2), w(static_cast<std::size_t>(o.d_model) * o.d_ffn * 2),
      out(static_cast<std::size_t>(m) * o.d_ffn * 2);
  fill_random_bf16(a.get(), static_cast<std::size_t>(m) * o.d_model, 21, c.stream);
  fill_random_bf16(w.get(), static_cast<std::size_t>(o.d_model) * o.d_ffn, 22, c.stream);
  Side gemm{c.stream, [&] { gemm_bf16(c.cublas, m, o.d_ffn, o.d_model, a.get(), w.get(), out.get()); }, 1};

  const measure::OpBuffers ar = measure::op_buffers(collective::NcclOp::kAllReduce, o.overlap_bytes, n);
  DeviceBuffer src(o.overlap_bytes), dst(o.overlap_bytes);
  fill_pattern_f32(src.get<float>(), ar.send_elems, o.seed, static_cast<std::uint64_t>(me), 0, c.stream);
  const std::vector<Segment> one{{0, 0, o.overlap_bytes}};
  DeviceBuffer seg(sizeof(Segment));
  check(cudaMemcpyAsync(seg.get(), one.data(), sizeof(Segment), cudaMemcpyHostToDevice, c.stream), "cudaMemcpyAsync H2D");
  check(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");

  std::vector<std::pair<const char*, std::function<void()>>> comms;
#if HS_VALIDATE_NCCL
  if (n > 1) {
    launch_collective(collective::NcclOp::kAllReduce, ar, src.get<float>(), dst.get<float>(), me, n, c.comm, comm_stream);
    std::string first;
    const long bad = check_collective(collective::NcclOp::kAllReduce, ar, dst.get<float>(), o.seed, me, n, c.comm, comm_stream, first);
    if (bad) std::fprintf(stderr, "hecate-validate: rank %d: %s\n", me, first.c_str());
    if (!c.boot.all_true(bad == 0)) throw Fatal("overlap: the all-reduce gave wrong results; nothing timed");
    comms.emplace_back("nccl_all_reduce", [&] {
      launch_collective(collective::NcclOp::kAllReduce, ar, src.get<float>(), dst.get<float>(), me, n, c.comm, comm_stream);
    });
  }
#else
  if (n > 1 && me == 0) std::printf("overlap: built without NCCL: no all-reduce row, copies only\n");
#endif
  comms.emplace_back("copy_engine", [&] {
    check(cudaMemcpyAsync(dst.get(), src.get(), o.overlap_bytes, cudaMemcpyDeviceToDevice, comm_stream), "cudaMemcpyAsync D2D");
  });
  comms.emplace_back("copy_kernel", [&] { copy_segments(src.get(), dst.get(), seg.get<Segment>(), 1, comm_stream); });

  // One GEMM alone sets the GEMM repetitions (at least --iters calls).
  const double t_gemm1 = measure::summarize(time_iterations(c.boot, c.comm, c.stream, o.warmup, o.iters, [&](int) { gemm.once(); })).median;
  if (me == 0)
    std::printf("\n# overlap: GEMM %ldx%ldx%ld beside %llu-byte transfers\n%-16s %8s %8s %12s %12s %12s %12s %9s %9s\n", m, o.d_ffn,
                o.d_model, static_cast<unsigned long long>(o.overlap_bytes), "communication", "gemms", "comms", "gemm us",
                "gemm+ us", "comm us", "comm+ us", "gemm x", "comm x");
  std::vector<measure::OverlapRow> rows;
  for (const auto& [name, once] : comms) {
    Side comm{comm_stream, once, 1};
    const double t_comm1 = measure::summarize(time_iterations(c.boot, c.comm, comm_stream, o.warmup, o.iters, [&](int) { once(); })).median;
    gemm.reps = o.iters;
    comm.reps = std::max(1, static_cast<int>(std::lround(gemm.reps * t_gemm1 / t_comm1)));
    const auto g_alone = measure::summarize(time_iterations(c.boot, c.comm, c.stream, 1, o.iters, [&](int) { gemm.run(); }));
    const auto c_alone = measure::summarize(time_iterations(c.boot, c.comm, comm_stream, 1, o.iters, [&](int) { comm.run(); }));
    const auto [tg, tc] = time_together(c, gemm, comm, 1, o.iters);
    const measure::OverlapRow row{name, o.overlap_bytes, gemm.reps, comm.reps, g_alone, measure::summarize(tg), c_alone,
                                  measure::summarize(tc)};
    if (me == 0)
      std::printf("%-16s %8d %8d %12.1f %12.1f %12.1f %12.1f %9.3f %9.3f\n", name, gemm.reps, comm.reps, g_alone.median * 1e6,
                  row.gemm_overlapped.median * 1e6, c_alone.median * 1e6, row.comm_overlapped.median * 1e6, row.gemm_slowdown(),
                  row.comm_slowdown());
    rows.push_back(row);
  }
  check(cudaStreamDestroy(comm_stream), "cudaStreamDestroy");
  r.add("overlap", measure::overlap_section(m, o.d_ffn, o.d_model, n, rows));
}

}  // namespace hs::validate
