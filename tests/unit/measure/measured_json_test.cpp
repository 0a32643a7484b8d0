#include <doctest/doctest.h>

#include <string>

#include "measure/measured_json.hpp"
#include "support/approx.hpp"

using namespace hs::measure;
using hs::collective::NcclOp;
using hs::test::approx;

namespace {
CollectiveResult result(NcclOp op, std::uint64_t bytes, int ranks, double median) {
  Summary s;
  s.n = 20;
  s.median = s.min = s.p25 = s.p75 = s.max = median;
  return {op, op_buffers(op, bytes, ranks), s};
}
}  // namespace

TEST_CASE("algbw and busbw follow nccl-tests: size / time, times 2(n-1)/n, (n-1)/n or 1") {
  // 1 MiB in 100 us: algbw = 1048576 / 1e-4 = 1.048576e10 B/s.
  const auto ar = result(NcclOp::kAllReduce, 1 << 20, 8, 1e-4);
  CHECK(ar.algbw() == approx(1.048576e10));
  CHECK(ar.busbw(8) == approx(1.048576e10 * 14 / 8));  // 2(n-1)/n = 1.75
  const auto ag = result(NcclOp::kAllGather, 1 << 20, 8, 1e-4);
  CHECK(ag.busbw(8) == approx(1.048576e10 * 7 / 8));
  const auto a2a = result(NcclOp::kAllToAll, 1 << 20, 8, 1e-4);
  CHECK(a2a.busbw(8) == approx(1.048576e10 * 7 / 8));
  const auto bc = result(NcclOp::kBroadcast, 1 << 20, 8, 1e-4);
  CHECK(bc.busbw(8) == approx(1.048576e10));
  // 100 bytes on 3 ranks all-gather is 96 bytes of whole floats: algbw counts those.
  CHECK(result(NcclOp::kAllGather, 100, 3, 1e-6).algbw() == approx(96e6));
  // Below the timer's resolution: no bandwidth rather than infinity.
  CHECK(result(NcclOp::kAllReduce, 8, 2, 0).algbw() == 0);
}

TEST_CASE("the collectives section lists every row with its timing fields") {
  const std::string js = collectives_section(8, 2, {result(NcclOp::kAllReduce, 1 << 20, 8, 1e-4), result(NcclOp::kSendRecv, 64, 8, 5e-6)});
  CHECK(js.find("\"ranks\": 8, \"nodes\": 2") != std::string::npos);
  CHECK(js.find("{\"op\": \"all_reduce\", \"bytes\": 1048576, \"count\": 262144, \"median_s\": 0.0001,") != std::string::npos);
  CHECK(js.find("\"busbw_Bps\": 1.83501e+10}") != std::string::npos);  // 1.048576e10 x 1.75 to 6 digits
  CHECK(js.find("{\"op\": \"send_recv\", \"bytes\": 64, \"count\": 16,") != std::string::npos);
  CHECK(js.find("\"iters\": 20") != std::string::npos);
}
