// One NCCL collective as nccl-tests runs it (floats, sum, root 0), on device buffers sized by
// measure::op_buffers; all-to-all as grouped ncclSend / ncclRecv (one block per peer), send/receive
// around the ring (rank r sends to r + 1, receives from r - 1).
#pragma once

#include <nccl.h>

#include "collective/nccl_op.hpp"
#include "measure/op_buffers.hpp"

namespace hs::validate {

void launch_collective(collective::NcclOp op, const measure::OpBuffers& b, const float* send, float* recv, int rank, int ranks,
                       ncclComm_t comm, cudaStream_t s);

// Copies evenly spaced elements of the device buffer `recv` (measure::check_stride: all of them for
// small buffers) and compares them with measure::expected_value; returns the mismatches and describes the
// first in `first`.
long check_collective(collective::NcclOp op, const measure::OpBuffers& b, const float* recv, std::uint64_t seed, int rank,
                      int ranks, ncclComm_t comm, cudaStream_t s, std::string& first);

}  // namespace hs::validate
