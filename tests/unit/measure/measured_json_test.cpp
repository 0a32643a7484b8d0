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

TEST_CASE("derived figures of the other sections: bandwidth read + written, useful flops per second, slowdowns") {
  Summary t;
  t.n = 10;
  t.median = t.min = t.p25 = t.p75 = t.max = 1e-3;
  // 1 GB copied in 1 ms: 2e9 bytes moved -> 2e12 B/s.
  CHECK(hbm_copy_section(1000000000, t).find("\"bandwidth_Bps\": 2e+12}") != std::string::npos);
  // A GEMM row: 1e12 flops in 1 ms -> 1e15 flop/s; a memory row: 5e8 bytes in 1 ms -> 1e12 B/s.
  MaterializeRow g{.kernel = "grouped_gemm", .time = t, .d_model = 4, .d_ffn = 8, .tokens_per_expert = {3, 0, 5}, .flops = 1e12};
  MaterializeRow m{.kernel = "pack_shards", .time = t, .bytes = 500000000, .experts = 8};
  const std::string js = materialize_section({g, m});
  CHECK(js.find("\"tokens_per_expert\": [3, 0, 5]") != std::string::npos);
  CHECK(js.find("\"flops_per_s\": 1e+15}") != std::string::npos);
  CHECK(js.find("\"bandwidth_Bps\": 1e+12, \"experts\": 8}") != std::string::npos);
  // Overlap: GEMMs 2 ms alone, 3 ms beside the copy: 1.5x; the copy 1 ms alone, 1.25 ms beside: 1.25x.
  OverlapRow o;
  o.gemm_alone.median = 2e-3, o.gemm_overlapped.median = 3e-3, o.comm_alone.median = 1e-3, o.comm_overlapped.median = 1.25e-3;
  CHECK(o.gemm_slowdown() == approx(1.5));
  CHECK(o.comm_slowdown() == approx(1.25));
  const ExpertFfnRow row{256, {{256, 8, 4, t}, {256, 4, 8, t}}};
  CHECK(row.forward_s() == approx(2e-3));
}
