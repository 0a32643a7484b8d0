#include <doctest/doctest.h>

#include <set>

#include "measure/op_buffers.hpp"
#include "measure/pattern.hpp"

using namespace hs::measure;
using hs::collective::NcclOp;

TEST_CASE("buffer sizes follow nccl-tests' size convention") {
  // 4 ranks, 1 MiB requested: 262144 floats.
  auto b = op_buffers(NcclOp::kAllReduce, 1 << 20, 4);
  CHECK(b.count == 262144);  // the per-rank buffer
  CHECK(b.send_elems == 262144);
  CHECK(b.recv_elems == 262144);
  CHECK(b.size_bytes == 1 << 20);
  b = op_buffers(NcclOp::kAllGather, 1 << 20, 4);  // size = the gathered buffer: 65536 per rank
  CHECK(b.count == 65536);
  CHECK(b.send_elems == 65536);
  CHECK(b.recv_elems == 262144);
  b = op_buffers(NcclOp::kReduceScatter, 1 << 20, 4);  // size = the scattered (input) buffer
  CHECK(b.send_elems == 262144);
  CHECK(b.recv_elems == 65536);
  b = op_buffers(NcclOp::kAllToAll, 1 << 20, 4);  // size = what each rank sends: 4 blocks of 65536
  CHECK(b.count == 65536);
  CHECK(b.send_elems == 262144);
  CHECK(b.recv_elems == 262144);
}

TEST_CASE("sizes round down to whole floats per block; too small is skipped") {
  // 100 bytes on 3 ranks all-gather: 25 floats -> 8 per rank -> 24 floats = 96 bytes.
  const auto b = op_buffers(NcclOp::kAllGather, 100, 3);
  CHECK(b.count == 8);
  CHECK(b.size_bytes == 96);
  // 8 bytes = 2 floats cannot give 4 ranks one each.
  CHECK(op_buffers(NcclOp::kAllToAll, 8, 4).count == 0);
  CHECK(op_buffers(NcclOp::kAllToAll, 8, 4).size_bytes == 0);
  CHECK(op_buffers(NcclOp::kSendRecv, 8, 4).count == 2);
}

TEST_CASE("the pattern is a non-zero integer in [-64, 64] and depends on seed, rank and index") {
  std::set<float> seen;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    const float v = pattern_value(1, 3, i);
    CHECK(v != 0);
    CHECK(v >= -64);
    CHECK(v <= 64);
    CHECK(v == static_cast<float>(static_cast<int>(v)));
    seen.insert(v);
  }
  CHECK(seen.size() == 128);  // every value of the range occurs in 10,000 draws
  int differ_rank = 0, differ_seed = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    differ_rank += pattern_value(1, 3, i) != pattern_value(1, 4, i);
    differ_seed += pattern_value(1, 3, i) != pattern_value(2, 3, i);
  }
  CHECK(differ_rank > 900);  // 127/128 expected to differ
  CHECK(differ_seed > 900);
}

TEST_CASE("the CPU reference of each collective, worked by hand on 3 ranks") {
  const int n = 3;
  const std::size_t count = 5;
  auto v = [](int r, std::size_t i) { return pattern_value(7, static_cast<std::uint64_t>(r), i); };
  for (int me = 0; me < n; ++me) {
    for (std::size_t i = 0; i < count; ++i) {
      // all-reduce: the sum of every rank's element i.
      CHECK(expected_value(NcclOp::kAllReduce, 7, me, n, count, i) == v(0, i) + v(1, i) + v(2, i));
      // reduce-scatter: rank me gets the sum of block me.
      CHECK(expected_value(NcclOp::kReduceScatter, 7, me, n, count, i) ==
            v(0, me * count + i) + v(1, me * count + i) + v(2, me * count + i));
      CHECK(expected_value(NcclOp::kBroadcast, 7, me, n, count, i) == v(0, i));
      // send/receive around the ring: from rank me - 1.
      CHECK(expected_value(NcclOp::kSendRecv, 7, me, n, count, i) == v((me + 2) % 3, i));
      for (int s = 0; s < n; ++s) {
        // all-gather: block s is rank s's buffer; all-to-all: block s is rank s's block for me.
        CHECK(expected_value(NcclOp::kAllGather, 7, me, n, count, s * count + i) == v(s, i));
        CHECK(expected_value(NcclOp::kAllToAll, 7, me, n, count, s * count + i) == v(s, me * count + i));
      }
    }
    CHECK(has_output(NcclOp::kReduce, me) == (me == 0));
    CHECK(has_output(NcclOp::kAllReduce, me));
  }
}

TEST_CASE("the check's sampling: every element while the CPU reference costs at most 2^26 evaluations") {
  // All-gather costs 1 per element: 2^26 elements are all checked, 2^27 every second one.
  CHECK(check_stride(NcclOp::kAllGather, std::size_t{1} << 26, 64) == 1);
  CHECK(check_stride(NcclOp::kAllGather, std::size_t{1} << 27, 64) == 2);
  // All-reduce on 64 ranks costs 64 per element: 2^20 samples; 2^28 elements -> every 256th.
  CHECK(check_stride(NcclOp::kAllReduce, std::size_t{1} << 20, 64) == 1);
  CHECK(check_stride(NcclOp::kAllReduce, std::size_t{1} << 28, 64) == 256);
  // However many ranks, at least 1,024 elements: 2^17 ranks would allow 512.
  CHECK(check_stride(NcclOp::kReduceScatter, 4096, 1 << 17) == 4);
}
