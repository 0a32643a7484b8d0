#include "measure/op_buffers.hpp"

#include "measure/pattern.hpp"

#include <algorithm>

namespace hs::measure {

using collective::NcclOp;

OpBuffers op_buffers(NcclOp op, std::uint64_t bytes, int ranks) {
  const std::uint64_t n = static_cast<std::uint64_t>(ranks);
  const std::uint64_t elems = bytes / sizeof(float);
  OpBuffers b;
  switch (op) {
    case NcclOp::kAllReduce:
    case NcclOp::kBroadcast:
    case NcclOp::kReduce:
    case NcclOp::kSendRecv:
      b.count = elems;
      b.send_elems = b.recv_elems = elems;
      b.size_bytes = elems * sizeof(float);
      break;
    case NcclOp::kAllGather:
      b.count = elems / n;
      b.send_elems = b.count;
      b.recv_elems = b.count * n;
      b.size_bytes = b.recv_elems * sizeof(float);
      break;
    case NcclOp::kReduceScatter:
      b.count = elems / n;
      b.send_elems = b.count * n;
      b.recv_elems = b.count;
      b.size_bytes = b.send_elems * sizeof(float);
      break;
    case NcclOp::kAllToAll:
      b.count = elems / n;
      b.send_elems = b.recv_elems = b.count * n;
      b.size_bytes = b.send_elems * sizeof(float);
      break;
  }
  if (b.count == 0) b = OpBuffers{};
  return b;
}

std::size_t check_stride(NcclOp op, std::size_t recv_elems, int ranks) {
  const bool reduces = op == NcclOp::kAllReduce || op == NcclOp::kReduce || op == NcclOp::kReduceScatter;
  const std::size_t cost = reduces ? static_cast<std::size_t>(ranks) : 1;
  const std::size_t samples = std::max<std::size_t>(1024, (std::size_t{1} << 26) / cost);
  return recv_elems <= samples ? 1 : (recv_elems + samples - 1) / samples;
}

bool has_output(NcclOp op, int me) { return op != NcclOp::kReduce || me == 0; }

float expected_value(NcclOp op, std::uint64_t seed, int me, int ranks, std::size_t count, std::size_t i) {
  const std::uint64_t m = static_cast<std::uint64_t>(me);
  auto sum = [&](std::uint64_t idx) {
    float s = 0;
    for (int r = 0; r < ranks; ++r) s += pattern_value(seed, static_cast<std::uint64_t>(r), idx);
    return s;
  };
  switch (op) {
    case NcclOp::kAllReduce:
    case NcclOp::kReduce: return sum(i);
    case NcclOp::kAllGather: return pattern_value(seed, i / count, i % count);
    case NcclOp::kReduceScatter: return sum(m * count + i);
    case NcclOp::kAllToAll: return pattern_value(seed, i / count, m * count + i % count);
    case NcclOp::kBroadcast: return pattern_value(seed, 0, i);
    case NcclOp::kSendRecv: return pattern_value(seed, static_cast<std::uint64_t>((me + ranks - 1) % ranks), i);
  }
  return 0;
}

}  // namespace hs::measure
