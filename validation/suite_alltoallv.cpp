// All-to-all-v of a byte matrix (collective/byte_matrix.hpp: the files `hecate-sim collective
// --matrix` reads; ranks = the matrix's GPUs): the dispatch sends row r of the matrix from rank r,
// the combine its transpose (every token back where it came from). Grouped ncclSend / ncclRecv of
// bytes, as NCCL and MoE frameworks run it. The segment rank s sends rank d is filled with
// pattern bytes of key (s * ranks + d), and every received segment is checked byte for byte before
// anything is timed.
#include <cstdio>
#include <fmt/format.h>

#include "check.hpp"
#include "collective/byte_matrix.hpp"
#include "kernels.hpp"
#include "measure/measured_json.hpp"
#include "measure/pattern.hpp"
#include "suites.hpp"
#include "timing.hpp"

namespace hs::validate {

namespace {

struct Exchange {
  std::vector<std::uint64_t> send_bytes, send_off, recv_bytes, recv_off;  // [peer]
  std::uint64_t send_total = 0, recv_total = 0;
};

// Rank `me`'s side of an all-to-all-v where bytes(s, d) is what s sends d.
template <class F>
Exchange exchange(int me, int n, F bytes) {
  Exchange x;
  for (int p = 0; p < n; ++p) {
    x.send_off.push_back(x.send_total);
    x.send_bytes.push_back(bytes(me, p));
    x.send_total += x.send_bytes.back();
    x.recv_off.push_back(x.recv_total);
    x.recv_bytes.push_back(bytes(p, me));
    x.recv_total += x.recv_bytes.back();
  }
  return x;
}

void launch(const Exchange& x, const DeviceBuffer& send, DeviceBuffer& recv, int n, ncclComm_t comm, cudaStream_t s) {
  check(ncclGroupStart(), "ncclGroupStart");
  for (int p = 0; p < n; ++p) {
    if (x.send_bytes[p])
      check(ncclSend(send.get<char>() + x.send_off[p], x.send_bytes[p], ncclUint8, p, comm, s), "ncclSend");
    if (x.recv_bytes[p])
      check(ncclRecv(recv.get<char>() + x.recv_off[p], x.recv_bytes[p], ncclUint8, p, comm, s), "ncclRecv");
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
}

// Checks, times and describes one direction; `name` is dispatch or combine.
measure::AllToAllVRow run_direction(Context& c, const measure::ValidateOptions& o, const Exchange& x, const char* name) {
  const int me = c.rank(), n = c.ranks();
  DeviceBuffer send(x.send_total), recv(x.recv_total);
  for (int p = 0; p < n; ++p)
    if (x.send_bytes[p])
      fill_pattern_u8(send.get<std::uint8_t>() + x.send_off[p], x.send_bytes[p], o.seed,
                      static_cast<std::uint64_t>(me) * n + p, c.stream);
  launch(x, send, recv, n, c.comm, c.stream);
  std::vector<std::uint8_t> host(x.recv_total);
  check(cudaMemcpyAsync(host.data(), recv.get(), x.recv_total, cudaMemcpyDeviceToHost, c.stream), "cudaMemcpyAsync D2H");
  wait_stream(c.stream, c.comm, "alltoallv result");
  long bad = 0;
  for (int p = 0; p < n && !bad; ++p)
    for (std::uint64_t i = 0; i < x.recv_bytes[p]; ++i) {
      const auto want = static_cast<std::uint8_t>(
          static_cast<int>(measure::pattern_value(o.seed, static_cast<std::uint64_t>(p) * n + me, i)) & 0xff);
      if (host[x.recv_off[p] + i] != want) {
        std::fprintf(stderr, "hecate-validate: rank %d: %s byte %llu from rank %d differs\n", me, name,
                     static_cast<unsigned long long>(i), p);
        bad = 1;
        break;
      }
    }
  if (!c.boot.all_true(bad == 0)) throw Fatal(fmt::format("alltoallv {} delivered wrong bytes; nothing timed", name));
  const auto s = measure::summarize(
      time_iterations(c.boot, c.comm, c.stream, o.warmup, o.iters, [&](int) { launch(x, send, recv, n, c.comm, c.stream); }));
  const auto sends = c.boot.all_gather(std::vector<double>{static_cast<double>(x.send_total)});
  double total = 0, most = 0;
  for (double v : sends) total += v, most = std::max(most, v);
  if (me == 0)
    std::printf("%-9s %14.0f %14.0f %10.2f %10.2f %10.2f\n", name, total, most, s.median * 1e6, s.min * 1e6, s.max * 1e6);
  return {name, total, most, s};
}

}  // namespace

void run_alltoallv(Context& c, const measure::ValidateOptions& o, Report& r) {
  const int n = c.ranks(), me = c.rank();
  const std::vector<double> m = collective::read_byte_matrix(o.matrix, n);  // InputError: exit 2
  auto at = [&](int s, int d) { return static_cast<std::uint64_t>(m[static_cast<std::size_t>(s) * n + d]); };
  if (me == 0)
    std::printf("\n# alltoallv: %s on %d rank(s), grouped ncclSend/ncclRecv\n%-9s %14s %14s %10s %10s %10s\n", o.matrix.c_str(), n,
                "", "total bytes", "max rank B", "time us", "min us", "max us");
  std::vector<measure::AllToAllVRow> rows;
  rows.push_back(run_direction(c, o, exchange(me, n, at), "dispatch"));
  rows.push_back(run_direction(c, o, exchange(me, n, [&](int s, int d) { return at(d, s); }), "combine"));
  r.add("alltoallv", measure::alltoallv_section(o.matrix, n, rows));
}

}  // namespace hs::validate
