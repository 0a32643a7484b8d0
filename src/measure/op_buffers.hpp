// Buffers and CPU reference of the reference collectives (hecate-validate --suite collectives), in
// nccl-tests' conventions (collective/nccl_op.hpp): `size` is the per-rank buffer of all-reduce,
// broadcast, reduce and send/receive, the total gathered (scattered) buffer of all-gather
// (reduce-scatter), and the total each rank sends in all-to-all. Elements are floats, summed.
//
// What each rank ends with, for n ranks, count = elements per rank's block, v(r, i) the pattern of
// rank r (pattern.hpp), root 0, send/receive around the ring (rank r sends to r + 1, receives from
// r - 1):
//   all_reduce     out[i]             = sum_r v(r, i)                    i < count
//   all_gather     out[s*count + i]   = v(s, i)                          s < n, i < count
//   reduce_scatter out[i]             = sum_r v(r, me*count + i)         i < count
//   all_to_all     out[s*count + i]   = v(s, me*count + i)               s < n, i < count
//   broadcast      out[i]             = v(0, i)
//   reduce         out[i]             = sum_r v(r, i)  (root only)
//   send_recv      out[i]             = v(me - 1 mod n, i)
#pragma once

#include <cstddef>
#include <cstdint>

#include "collective/nccl_op.hpp"

namespace hs::measure {

struct OpBuffers {
  std::size_t count = 0;        // elements per block (what one NCCL call's count argument is)
  std::size_t send_elems = 0;   // elements of the send buffer
  std::size_t recv_elems = 0;   // elements of the receive buffer
  std::uint64_t size_bytes = 0; // nccl-tests' size for these buffers (requested size rounded down)
};

// The buffers of `op` for a requested `bytes` on `ranks` ranks, floats (4 bytes), rounded down to
// whole elements per block as nccl-tests does; count 0 when the size is too small for one element
// per block (the sweep skips it).
OpBuffers op_buffers(collective::NcclOp op, std::uint64_t bytes, int ranks);

// The value rank `me` of `ranks` must hold at output element `i` (see above). Reduce: only the root's
// output is defined; other ranks are not checked.
float expected_value(collective::NcclOp op, std::uint64_t seed, int me, int ranks, std::size_t count, std::size_t i);

// The distance between the output elements the check compares (1: every element): at most 2^26
// pattern evaluations per check (an element of a reduction costs one per rank), at least 1,024
// elements checked (or all of them). Evenly spaced samples still cover every rank's block.
std::size_t check_stride(collective::NcclOp op, std::size_t recv_elems, int ranks);

// Whether rank `me`'s output is checked (everyone but non-root ranks of reduce).
bool has_output(collective::NcclOp op, int me);

}  // namespace hs::measure
