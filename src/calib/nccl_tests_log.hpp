// The plain-text output of nccl-tests (all_reduce_perf, all_gather_perf, alltoall_perf, ...), which
// most cluster owners already have, as it is posted: parsed, not scraped, but tolerant of what real
// logs carry around the table.
//
// Read: the `# nThread ... nGpus ...` header, the `# Using devices` rank lines (ranks, hosts =>
// nodes, device names), the column header and one row per size. Columns are found by name in the
// header line, not by a fixed count: `size count type redop root time algbw busbw #wrong` twice
// (out-of-place, then in-place), or older forms without `root`, with `error` instead of `#wrong`,
// `cputime` instead of `time`, per-iteration columns (`i_min` ...) or a trailing `timestamp` (two
// tokens). nccl-tests of 2020-2022 printed an empty redop for all_gather / alltoall under a header
// that names `redop` (src/alltoall.cu passed "" as the op name until "none" in 2022-09): a row one
// token short whose redop position holds a number is read with the redop blank.
//
// Tolerated and noted (NcclTestsLog::notes, one per kind):
//   * launcher prefixes on any line, stripped before parsing: Open MPI's --tag-output
//     (`[1,0]<stdout>:`), Ray's `(head, rank=0, pid=3808) ` before it, srun -l's ` 0: `;
//   * non-table lines (`NCCL version 2.26.6+cuda12.8`, `NCCL INFO` lines, MPI warnings, banners,
//     blank lines inside the log): skipped. A line is a table row when its first two tokens are
//     numbers; everything else that is not a `#` line is a non-table line;
//   * rows of 0 bytes (alltoall_perf below ranks x 16 B prints size 0; time and bandwidth 0 or N/A):
//     kept, flagged by bytes == 0, for callers to leave out of comparisons and fits;
//   * rank lines with gaps (an excerpt: `#  Rank 0 ...`, `......`, `#  Rank 63 ...`): ranks is the
//     highest rank + 1 and nodes is unknown (0).
// Errors (InputError naming file:line and the field): a table row that does not match the header
// (column count), a negative or non-numeric value, a row with no positive time, sizes that do not
// grow, a log without rows. The op is not in the output: the caller names it (OP=FILE) or the file
// name does (all_reduce_perf.log). The ranks may be missing too: see calib/nccl_tests_ranks.hpp.
#pragma once

#include <string>
#include <vector>

namespace hs::calib {

struct NcclTestsRow {
  int line = 0;
  double bytes = 0;      // nccl-tests "size"
  double count = 0;      // elements, as nccl-tests prints them (calib/nccl_tests_ranks.hpp)
  std::string type, redop;  // redop "" where the log left it blank
  double time_us = 0, algbw = 0, busbw = 0;  // out-of-place (0 where N/A)
  bool has_in_place = false;
  double in_time_us = 0, in_algbw = 0, in_busbw = 0;
  long wrong = 0;        // #wrong (out-of-place + in-place), or 0 where the log has an error column

  // The time a comparison or a fit uses: the lower positive of the out-of-place and in-place times
  // (both are the same operation on the same sizes; the slower is the noisier); 0 if neither.
  double best_time_us() const;
  // Both times present and the higher more than `tolerance` (relative) above the lower.
  bool places_disagree(double tolerance = 0.2) const;
};

struct NcclTestsLog {
  std::string file;
  int ranks = 0;               // highest "#  Rank R" + 1 (0 if the log has no rank lines)
  bool ranks_listed = false;   // every rank 0..ranks-1 has its line (false: none, or an excerpt)
  int nodes = 0;               // distinct host names among the rank lines (0 unless ranks_listed)
  std::vector<std::string> devices;  // device name per rank line, in order
  int threads = 0, gpus_per_thread = 0;  // from "# nThread T nGpus G"
  std::vector<NcclTestsRow> rows;        // every row, 0-byte rows included
  int zero_byte_rows = 0;
  // What was skipped or stripped, one line per kind, "FILE: ..." (the caller prints them once).
  std::vector<std::string> notes;
};

// Throws InputError (file:line, what was expected).
NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file);

}  // namespace hs::calib
