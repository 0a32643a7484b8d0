#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "calib/nccl_tests_log.hpp"
#include "calib/nccl_tests_ranks.hpp"
#include "util/diagnostics.hpp"
#include "support/approx.hpp"

using hs::calib::parse_nccl_tests_log;
using hs::collective::NcclOp;

namespace {
// tests/fixtures/nccl-tests/ (HECATE_FIXTURES): one quirk of real posted logs per file (its README).
std::string fixture_text(const std::string& name) {
  const char* dir = std::getenv("HECATE_FIXTURES");
  REQUIRE(dir != nullptr);
  std::ifstream in(std::string(dir) + "/nccl-tests/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
hs::calib::NcclTestsLog fixture(const std::string& name) { return parse_nccl_tests_log(fixture_text(name), name); }

bool has_note(const hs::calib::NcclTestsLog& log, const std::string& part) {
  for (const auto& n : log.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

std::string error_of(const std::string& text) {
  try {
    parse_nccl_tests_log(text, "x.log");
  } catch (const hs::InputError& e) {
    return hs::to_string(e.diagnostics().front());
  }
  return std::string("no error");
}

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

// The same table under three launchers' prefixes: 4 ranks on gpu-a01/gpu-a02, rows 1M..8M, the
// stderr warning inside the table skipped with a note; the prefixes noted once.
TEST_CASE("nccl-tests output: launcher prefixes are stripped") {
  for (const char* name : {"tag-output.log", "ray-prefix.log", "srun-l.log"}) {
    CAPTURE(name);
    auto log = fixture(name);
    CHECK(log.ranks == 4);
    CHECK(log.ranks_listed);
    CHECK(log.nodes == 2);
    CHECK(log.threads == 1);
    REQUIRE(log.rows.size() == 4);
    CHECK(log.rows[0].bytes == 1048576);
    CHECK(log.rows[0].line == 12);
    CHECK(log.rows[2].line == 15);  // after the warning on line 14
    CHECK(log.rows[3].time_us == hs::test::approx(275.0));
    CHECK(log.rows[3].in_time_us == hs::test::approx(274.1));
    CHECK(log.devices[0] == "NVIDIA H100 80GB HBM3");
    CHECK(has_note(log, "launcher prefix stripped from 19 line(s) (first at line 1: '"));
    CHECK(has_note(log, "1 non-table line(s) skipped: not nccl-tests output (MPI or launcher messages?) (first at line 14: "));
  }
  CHECK(has_note(fixture("tag-output.log"), "line 1: '[1,0]<stdout>:'"));
  CHECK(has_note(fixture("ray-prefix.log"), "line 1: '(head, rank=0, pid=3808) [1,0]<stdout>:'"));
  CHECK(has_note(fixture("srun-l.log"), "line 1: ' 0:'"));
}

TEST_CASE("nccl-tests output: NCCL version, NCCL INFO, MPI warnings and blank lines are skipped with a note") {
  auto v = fixture("nccl-version.log");
  REQUIRE(v.rows.size() == 4);
  CHECK(v.rows[0].line == 16);
  CHECK(v.notes.size() == 3);  // version, INFO lines, the blank line 11 (the trailing one is not noted)
  CHECK(has_note(v, "nccl-version.log: 1 non-table line(s) skipped: an 'NCCL version' line (first at line 8: 'NCCL version 2.26.6+cuda12.8')"));
  CHECK(has_note(v, "2 non-table line(s) skipped: NCCL INFO/WARN lines (first at line 9:"));
  CHECK(has_note(v, "1 non-table line(s) skipped: blank lines (first at line 11)"));
  auto w = fixture("mpi-warning.log");
  REQUIRE(w.rows.size() == 4);
  CHECK(w.rows[2].line == 16);
  CHECK(has_note(w, "2 non-table line(s) skipped: not nccl-tests output (MPI or launcher messages?) (first at line 14: "
                    "'[gpu-a01:41190] 3 more processes have sent help message h...')"));
}

// alltoall_perf on 8 ranks: sizes below 8 x 16 B print as 0 (nccl-tests src/alltoall.cu rounds
// count / ranks down to 16 B). The 4 rows of 0 bytes are kept (one with a 0 time and N/A in-place),
// flagged, noted; the rows after them grow.
TEST_CASE("nccl-tests output: 0-byte alltoall rows are kept and flagged") {
  auto log = fixture("alltoall-zero-rows.log");
  REQUIRE(log.rows.size() == 8);
  CHECK(log.zero_byte_rows == 4);
  CHECK(log.rows[1].bytes == 0);
  CHECK(log.rows[1].best_time_us() == 0);
  CHECK_FALSE(log.rows[1].has_in_place);
  CHECK(log.rows[4].bytes == 512);
  CHECK(log.rows[4].count == 16);  // per peer: 512 = 16 x 4 B x 8 ranks
  CHECK(log.rows[4].redop == "none");
  CHECK(has_note(log, "4 row(s) of 0 bytes kept but left out of comparisons and fits"));
  // 4096 B: out-of-place 11.13 us, in-place 14.02 us (26% apart): the lower is the measurement.
  CHECK(log.rows[7].best_time_us() == hs::test::approx(11.13));
  CHECK(log.rows[7].places_disagree(0.2));
  CHECK_FALSE(log.rows[6].places_disagree(0.2));  // 11.08 vs 10.80
  CHECK(log.rows[6].best_time_us() == hs::test::approx(10.80));
  CHECK(hs::calib::ranks_from_counts(log, NcclOp::kAllToAll) == 8);
  // A 0-byte row after a positive one does not grow.
  std::string back = fixture_text("alltoall-zero-rows.log");
  back.insert(back.find("# Out of bounds"), "           0             0     float    none      -1     3.18    0.00    0.00      0     3.17    0.00    0.00      0\n");
  CHECK(error_of(back).find("x.log:24: error: size: sizes must grow") == 0);
  // Only 0-byte rows: nothing to time.
  std::string zeros = fixture_text("alltoall-zero-rows.log");
  zeros.erase(zeros.find("         512"), zeros.find("# Out of bounds") - zeros.find("         512"));
  CHECK(error_of(zeros).find("every row is of 0 bytes") != std::string::npos);
}

// 2020-2021 alltoall_perf: the header names redop, the rows leave it blank (11 tokens, 12 names);
// 2022-08 all_gather_perf: redop and root named, redop blank (12 tokens, 13 names). Both read with
// redop "" and the times where the header puts them.
TEST_CASE("nccl-tests output: a blank redop column is read from the header's positions") {
  auto a = fixture("blank-redop-2021.log");
  CHECK(a.ranks == 4);
  CHECK(a.nodes == 2);
  REQUIRE(a.rows.size() == 2);
  CHECK(a.rows[0].redop.empty());
  CHECK(a.rows[0].type == "float");
  CHECK(a.rows[0].count == 16777216);
  CHECK(a.rows[0].time_us == hs::test::approx(40012));
  CHECK(a.rows[0].busbw == hs::test::approx(5.03));
  CHECK(a.rows[1].in_time_us == hs::test::approx(80105));
  CHECK(hs::calib::ranks_from_counts(a, NcclOp::kAllToAll) == 4);  // 268435456 / (16777216 x 4 B)
  auto g = fixture("blank-redop-2022.log");
  REQUIRE(g.rows.size() == 3);
  CHECK(g.rows[2].redop.empty());
  CHECK(g.rows[2].time_us == hs::test::approx(55.71));
  CHECK(g.rows[2].in_time_us == hs::test::approx(54.80));
  CHECK(g.rows[2].in_busbw == hs::test::approx(57.40));
  CHECK(hs::calib::ranks_from_counts(g, NcclOp::kAllGather) == 4);  // 1048576 / (65536 x 4 B)
  // Two tokens short is no blank redop: the column count error.
  std::string two = fixture_text("blank-redop-2022.log");
  const std::string cut = "     float              -1    20.15";
  two.replace(two.find(cut), cut.size(), "     float    20.15");
  CHECK(error_of(two).find("x.log:12: error: expected 13 columns") == 0);
}

TEST_CASE("nccl-tests output: ranks from an excerpt, the command line and the rows' counts") {
  // No rank lines: ranks 0 until the caller gives them; all_gather's size / count says 16.
  auto none = fixture("no-rank-lines.log");
  CHECK(none.ranks == 0);
  CHECK(none.rows.size() == 6);
  CHECK(hs::calib::ranks_from_counts(none, NcclOp::kAllGather) == 16);
  {
    auto l = none;
    try {
      hs::calib::settle_ranks(l, NcclOp::kAllGather, 0, "--ranks", "--ranks N");
      FAIL("no error");
    } catch (const hs::InputError& e) {
      const auto m = hs::to_string(e.diagnostics().front());
      CHECK(m.find("no-rank-lines.log: error: Rank: the log names no ranks") == 0);
      CHECK(m.find("its rows' size / count say 16: give the number of GPUs it ran on with --ranks N") != std::string::npos);
    }
  }
  {
    auto l = none;
    hs::calib::settle_ranks(l, NcclOp::kAllGather, 16, "--ranks", "--ranks N");
    CHECK(l.ranks == 16);
    CHECK(l.nodes == 0);  // placed node by node
  }
  {
    auto l = none;  // 8 given, the rows say 16
    CHECK_THROWS_WITH_AS(hs::calib::settle_ranks(l, NcclOp::kAllGather, 8, "--ranks", "--ranks N"),
                         doctest::Contains("the rows say 16 ranks, --ranks 8"), hs::InputError);
  }
  {
    auto l = none;  // named as all_reduce: size is no count x 4 B
    CHECK_THROWS_WITH_AS(hs::calib::settle_ranks(l, NcclOp::kAllReduce, 16, "--ranks", "--ranks N"),
                         doctest::Contains("is the log of another op"), hs::InputError);
  }
  // Rank lines with a gap: 16 ranks (highest 15 + 1), nodes unknown, noted.
  auto ex = fixture("rank-excerpt.log");
  CHECK(ex.ranks == 16);
  CHECK_FALSE(ex.ranks_listed);
  CHECK(ex.nodes == 0);
  CHECK(has_note(ex, "rank lines for 4 of ranks 0..15 (an excerpt)"));
  // The "......" line is named for what it is: lines left out where the log was posted.
  CHECK(has_note(ex, "1 non-table line(s) skipped: '...' lines (lines left out where the log was posted) (first at line 6: '......')"));
  // The log's 4 ranks and --ranks 8 disagree.
  auto tag = fixture("tag-output.log");
  CHECK_THROWS_WITH_AS(hs::calib::settle_ranks(tag, NcclOp::kAllReduce, 8, "--ranks", "--ranks N"),
                       doctest::Contains("tag-output.log lists 4 ranks"), hs::InputError);
  hs::calib::settle_ranks(tag, NcclOp::kAllReduce, 4, "--ranks", "--ranks N");
  CHECK(tag.nodes == 2);  // kept: the log lists every rank
}

TEST_CASE("nccl-tests output: malformed table rows still fail with file:line") {
  std::string base = fixture_text("mpi-warning.log");
  // Non-numeric time (line 13).
  std::string bad = base;
  bad.replace(bad.find("120.1"), 5, "12x.1");
  CHECK(error_of(bad).find("x.log:13: error: time: expected a non-negative time in us, got '12x.1'") == 0);
  // N/A where a positive size needs a time (both places).
  std::string na = base;
  const std::string times = "    95.40   10.99   16.49      0    94.80   11.06   16.59";
  na.replace(na.find(times), times.size(), "      N/A     N/A     N/A      0      N/A     N/A     N/A");
  CHECK(error_of(na).find("x.log:12: error: time: a row with a positive size needs a time, got 'N/A'") == 0);
  // A negative size.
  std::string neg = base;
  neg.replace(neg.find("     4194304"), 12, "    -4194304");
  CHECK(error_of(neg).find("x.log:16: error: size: expected a non-negative size in bytes") == 0);
}
