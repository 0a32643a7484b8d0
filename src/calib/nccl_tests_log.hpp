// The plain-text output of nccl-tests (all_reduce_perf, all_gather_perf, alltoall_perf, ...), which
// most cluster owners already have. Parsed, not scraped: the `# nThread ... nGpus ...` header, the
// `# Using devices` rank lines (ranks, hosts => nodes, device names), the column header
// (`size count type redop root time algbw busbw #wrong` twice: out-of-place, then in-place; older
// versions without `root`, or with `error` instead of `#wrong`) and one row per size. A row that
// does not match the header, a negative or non-numeric value, or a log without rows is an error
// naming the file and line. The op is not in the output: the caller names it (OP=FILE) or the file
// name does (all_reduce_perf.log).
#pragma once

#include <string>
#include <vector>

namespace hs::calib {

struct NcclTestsRow {
  int line = 0;
  double bytes = 0;      // nccl-tests "size"
  double count = 0;      // elements
  std::string type, redop;
  double time_us = 0, algbw = 0, busbw = 0;  // out-of-place
  bool has_in_place = false;
  double in_time_us = 0, in_algbw = 0, in_busbw = 0;
  long wrong = 0;        // #wrong (out-of-place + in-place), or 0 where the log has an error column
};

struct NcclTestsLog {
  std::string file;
  int ranks = 0;               // "# Using devices" lines (0 if the log has none)
  int nodes = 0;               // distinct host names among them
  std::vector<std::string> devices;  // device name per rank
  int threads = 0, gpus_per_thread = 0;  // from "# nThread T nGpus G"
  std::vector<NcclTestsRow> rows;
};

// Throws InputError (file:line, what was expected).
NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file);

}  // namespace hs::calib
