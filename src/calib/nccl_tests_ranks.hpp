// How many ranks an nccl-tests log ran on: its `#  Rank` lines, the command line (`collective
// --ranks N`, `calibrate --nccl-tests OP@N=FILE`) for excerpts without them, and the rows' size and
// count, which for the ops whose size covers every rank say the rank count themselves.
//
// nccl-tests prints per row size = max(send bytes, receive bytes) and count = the count passed to
// NCCL (src/common.cu: setupArgs, then writeBenchmarkLinePreamble(max(sendBytes, expectedBytes),
// nbytes / wordSize(type), ...)), with the per-op counts of each test's GetCollByteCount:
//   all_reduce, broadcast, reduce, sendrecv: size = count x element bytes;
//   all_gather (src/all_gather.cu): count = elements each rank contributes, size = the gathered
//     output = count x element x ranks;
//   reduce_scatter (src/reduce_scatter.cu): count = elements each rank receives, size = its input =
//     count x element x ranks;
//   alltoall (src/alltoall.cu): count = elements to each peer, size = what each rank sends =
//     count x element x ranks.
// (nccl-tests rounds count / ranks down to 16 bytes since 2.14, so small alltoall sizes print 0.)
// collective/nccl_op.hpp's `size` is the same quantity for every op.
#pragma once

#include <string>

#include "calib/nccl_tests_log.hpp"
#include "collective/nccl_op.hpp"

namespace hs::calib {

// Bytes per element of an nccl-tests type name (int8 ... double, half, bfloat16, f8e4m3, ...); 0
// when unknown.
double nccl_type_bytes(const std::string& type);

// The rank count the rows imply for all_gather, reduce_scatter and all_to_all (size / (count x
// element bytes)); 0 for the other ops or when no row has a known type and a positive count. Throws
// InputError at the first row that disagrees with the others or with the op's convention (for
// all_reduce etc. size must be count x element bytes: an all_gather log named all_reduce fails here).
int ranks_from_counts(const NcclTestsLog& log, collective::NcclOp op);

// Settles log.ranks from the log's rank lines and `given` (0: none; `given_what` names where it came
// from, "--ranks"; `how` says how to give it, for the error when neither does), checked against the
// rows' counts and nThread x nGpus. Where the log does not list every rank, log.nodes is 0 (the
// ranks fill the topology's nodes in order, calib/link_fit.hpp nccl_group). Throws InputError when
// nothing gives the ranks or two sources disagree.
void settle_ranks(NcclTestsLog& log, collective::NcclOp op, int given, const std::string& given_what, const std::string& how);

}  // namespace hs::calib
