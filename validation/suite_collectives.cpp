// Reference collectives over a size sweep, as nccl-tests runs them: floats summed, root 0, out of
// place, every size checked against the CPU reference once before it is timed (measure/op_buffers.hpp
// states what every rank must hold). algbw = size / time, busbw = algbw x bus_factor (nccl-tests'
// factors, collective/nccl_op.hpp); the time is the slowest rank's, median over iterations.
#include <cstdio>
#include <fmt/format.h>

#include "check.hpp"
#include "collective_ops.hpp"
#include "kernels.hpp"
#include "measure/measured_json.hpp"
#include "measure/size_sweep.hpp"
#include "suites.hpp"
#include "timing.hpp"

namespace hs::validate {

void run_collectives(Context& c, const measure::ValidateOptions& o, Report& r) {
  const int n = c.ranks(), me = c.rank();
  const auto sizes = measure::size_sweep(o.min_bytes, o.max_bytes, o.step_factor);
  std::vector<measure::CollectiveResult> rows;
  for (const collective::NcclOp op : o.ops) {
    if (me == 0)
      std::printf("\n# %s on %d rank(s), float, sum, root 0\n%14s %12s %10s %10s %10s %10s %10s\n", collective::to_string(op), n,
                  "size", "count", "time us", "min us", "max us", "algbw GB/s", "busbw GB/s");
    for (const std::uint64_t want : sizes) {
      const measure::OpBuffers b = measure::op_buffers(op, want, n);
      if (b.count == 0) continue;  // too small for one float per rank's block
      DeviceBuffer send(b.send_elems * sizeof(float)), recv(b.recv_elems * sizeof(float));
      fill_pattern_f32(send.get<float>(), b.send_elems, o.seed, static_cast<std::uint64_t>(me), 0, c.stream);
      check(cudaMemsetAsync(recv.get(), 0xff, recv.bytes(), c.stream), "cudaMemsetAsync");  // NaN: an unwritten element shows
      launch_collective(op, b, send.get<float>(), recv.get<float>(), me, n, c.comm, c.stream);
      std::string first;
      const long bad = check_collective(op, b, recv.get<float>(), o.seed, me, n, c.comm, c.stream, first);
      if (bad) std::fprintf(stderr, "hecate-validate: rank %d: %ld wrong element(s); first: %s\n", me, bad, first.c_str());
      if (!c.boot.all_true(bad == 0))
        throw Fatal(fmt::format("{} of {} bytes gave wrong results (see the ranks' messages); nothing timed",
                                collective::to_string(op), b.size_bytes));
      const auto s = measure::summarize(time_iterations(c.boot, c.comm, c.stream, o.warmup, o.iters, [&](int) {
        launch_collective(op, b, send.get<float>(), recv.get<float>(), me, n, c.comm, c.stream);
      }));
      rows.push_back({op, b, s});
      if (me == 0)
        std::printf("%14llu %12zu %10.2f %10.2f %10.2f %10.2f %10.2f\n", static_cast<unsigned long long>(b.size_bytes), b.count,
                    s.median * 1e6, s.min * 1e6, s.max * 1e6, rows.back().algbw() / 1e9, rows.back().busbw(n) / 1e9);
    }
  }
  r.add("collectives", measure::collectives_section(n, c.provenance.nodes(), rows));
}

}  // namespace hs::validate
