#include <doctest/doctest.h>

#include <string>

#include "calib/nccl_tests_log.hpp"
#include "util/diagnostics.hpp"
#include "support/approx.hpp"

using hs::calib::parse_nccl_tests_log;

namespace {
// nccl-tests 2.13 output shape (all_reduce_perf -b 8 -e 128M -f 2 -g 1 under mpirun -np 4 on 2 hosts).
const char* kMultiNode = R"(# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  41200 on   gpu-a01 device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  41201 on   gpu-a01 device  1 [0x2a] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  39911 on   gpu-a02 device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  39912 on   gpu-a02 device  1 [0x2a] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    31.52    0.00    0.00      0    30.97    0.00    0.00      0
          16             4     float     sum      -1    31.10    0.00    0.00      0    31.02    0.00    0.00      0
     1048576        262144     float     sum      -1    95.40   10.99   16.49      0    94.80   11.06   16.59      0
   134217728      33554432     float     sum      -1   3640.1   36.87   55.31      0   3633.0   36.94   55.42      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 17.99
#
)";

// Older nccl-tests (2.0): no Group, no root column, an `error` column instead of #wrong.
const char* kOld = R"(# nThread 1 nGpus 8 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid   1001 on    dgx01 device  0 [0x07] Tesla V100-SXM2-32GB
#   Rank  1 Pid   1001 on    dgx01 device  1 [0x0a] Tesla V100-SXM2-32GB
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    12.40    0.00    0.00  0e+00    12.11    0.00    0.00  0e+00
        1024           256   float     sum    13.02    0.08    0.14  0e+00    12.90    0.08    0.14  0e+00
)";
}  // namespace

TEST_CASE("nccl-tests output: header, ranks, hosts, both column groups") {
  auto log = parse_nccl_tests_log(kMultiNode, "all_reduce_perf.log");
  CHECK(log.threads == 1);
  CHECK(log.gpus_per_thread == 1);
  CHECK(log.ranks == 4);
  CHECK(log.nodes == 2);  // gpu-a01, gpu-a02
  CHECK(log.devices[3] == "NVIDIA H100 80GB HBM3");
  REQUIRE(log.rows.size() == 4);
  CHECK(log.rows[0].bytes == 8);
  CHECK(log.rows[0].line == 12);
  CHECK(log.rows[3].bytes == 134217728);
  CHECK(log.rows[3].time_us == hs::test::approx(3640.1));
  CHECK(log.rows[3].busbw == hs::test::approx(55.31));
  CHECK(log.rows[3].has_in_place);
  CHECK(log.rows[3].in_time_us == hs::test::approx(3633.0));
  auto old = parse_nccl_tests_log(kOld, "old.log");
  CHECK(old.ranks == 2);
  CHECK(old.nodes == 1);
  REQUIRE(old.rows.size() == 2);
  CHECK(old.rows[1].time_us == hs::test::approx(13.02));
  CHECK(old.rows[1].in_time_us == hs::test::approx(12.90));
}

TEST_CASE("nccl-tests output: bad rows are errors naming file and line") {
  auto error_of = [](const std::string& text) {
    try {
      parse_nccl_tests_log(text, "x.log");
    } catch (const hs::InputError& e) {
      return hs::to_string(e.diagnostics().front());
    }
    return std::string("no error");
  };
  std::string base = kMultiNode;
  // A row with a column missing (line 13).
  std::string missing = base;
  missing.replace(missing.find("          16             4     float     sum      -1    31.10    0.00    0.00      0"),
                  83, "          16             4     float     sum      -1    31.10    0.00    0.00");
  CHECK(error_of(missing).find("x.log:13:") == 0);
  CHECK(error_of(missing).find("expected 13 columns") != std::string::npos);
  // A negative time.
  std::string neg = base;
  neg.replace(neg.find("31.52"), 5, "-1.00");
  CHECK(error_of(neg).find("x.log:12:") == 0);
  CHECK(error_of(neg).find("time") != std::string::npos);
  // Sizes out of order, no rows, a row before the header.
  std::string order = base;
  order.replace(order.find("          16             4"), 26, "           4             1");
  CHECK(error_of(order).find("sizes must grow") != std::string::npos);
  CHECK(error_of("# nThread 1 nGpus 1\n#\n").find("no result rows") != std::string::npos);
  CHECK(error_of("8 2 float sum -1 1 0 0 0\n").find("before the column header") != std::string::npos);
}
