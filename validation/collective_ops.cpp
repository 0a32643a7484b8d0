#include "collective_ops.hpp"

#include <string>
#include <vector>
#include <fmt/format.h>

#include "check.hpp"

namespace hs::validate {

using collective::NcclOp;

void launch_collective(NcclOp op, const measure::OpBuffers& b, const float* send, float* recv, int rank, int ranks,
                       ncclComm_t comm, cudaStream_t s) {
  switch (op) {
    case NcclOp::kAllReduce:
      check(ncclAllReduce(send, recv, b.count, ncclFloat, ncclSum, comm, s), "ncclAllReduce");
      break;
    case NcclOp::kAllGather:
      check(ncclAllGather(send, recv, b.count, ncclFloat, comm, s), "ncclAllGather");
      break;
    case NcclOp::kReduceScatter:
      check(ncclReduceScatter(send, recv, b.count, ncclFloat, ncclSum, comm, s), "ncclReduceScatter");
      break;
    case NcclOp::kAllToAll:
      check(ncclGroupStart(), "ncclGroupStart");
      for (int p = 0; p < ranks; ++p) {
        check(ncclSend(send + static_cast<std::size_t>(p) * b.count, b.count, ncclFloat, p, comm, s), "ncclSend");
        check(ncclRecv(recv + static_cast<std::size_t>(p) * b.count, b.count, ncclFloat, p, comm, s), "ncclRecv");
      }
      check(ncclGroupEnd(), "ncclGroupEnd");
      break;
    case NcclOp::kBroadcast:
      check(ncclBroadcast(send, recv, b.count, ncclFloat, 0, comm, s), "ncclBroadcast");
      break;
    case NcclOp::kReduce:
      check(ncclReduce(send, recv, b.count, ncclFloat, ncclSum, 0, comm, s), "ncclReduce");
      break;
    case NcclOp::kSendRecv:
      check(ncclGroupStart(), "ncclGroupStart");
      check(ncclSend(send, b.count, ncclFloat, (rank + 1) % ranks, comm, s), "ncclSend");
      check(ncclRecv(recv, b.count, ncclFloat, (rank + ranks - 1) % ranks, comm, s), "ncclRecv");
      check(ncclGroupEnd(), "ncclGroupEnd");
      break;
  }
}

long check_collective(NcclOp op, const measure::OpBuffers& b, const float* recv, std::uint64_t seed, int rank, int ranks,
                      ncclComm_t comm, cudaStream_t s, std::string& first) {
  if (!measure::has_output(op, rank)) return 0;
  const std::size_t n = b.recv_elems;
  const std::size_t stride = measure::check_stride(op, n, ranks);
  const std::size_t samples = (n + stride - 1) / stride;
  std::vector<float> host(samples);
  // One element every `stride`: a 2-D copy of width one element.
  check(cudaMemcpy2DAsync(host.data(), sizeof(float), recv, stride * sizeof(float), sizeof(float), samples,
                          cudaMemcpyDeviceToHost, s),
        "cudaMemcpy2DAsync (result sample)");
  wait_stream(s, comm, "collective result");
  long bad = 0;
  for (std::size_t k = 0; k < samples; ++k) {
    const std::size_t i = k * stride;
    const float want = measure::expected_value(op, seed, rank, ranks, b.count, i);
    if (host[k] == want) continue;
    if (bad++ == 0)
      first = fmt::format("{} of {} bytes, rank {}, element {}: got {}, expected {}", collective::to_string(op), b.size_bytes,
                          rank, i, host[k], want);
  }
  return bad;
}

}  // namespace hs::validate
