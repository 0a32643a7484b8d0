#include <doctest/doctest.h>

#include <vector>

#include "cost/allocator_slack.hpp"
#include "cost/memory_model.hpp"

using namespace hs;
using namespace hs::cost;

namespace {
constexpr double MiB = 1024.0 * 1024;
}  // namespace

TEST_CASE("terms add up to the total; the largest is named") {
  MemoryBreakdown m;
  m.params = 1, m.grads = 2, m.optimizer = 3, m.activations = 4, m.copy_params = 50, m.copy_grads = 6;
  m.comm_buffers = 7, m.nccl = 8, m.reserve = 9;
  CHECK(m.total() == 90);
  CHECK(m.largest() == "copy params");
  double sum = 0;
  for (const auto& t : m.terms()) sum += t.bytes;
  CHECK(sum == m.total());
}

TEST_CASE("allocator slack: reserved = allocated / (1 - f), NCCL's buffers and the reserve outside it") {
  // Allocated through the caching allocator: 1 + 2 + 3 + 4 + 5 + 6 + 3 = 24 MiB; NCCL 8 MiB and the
  // runtime reserve 9 MiB are not. At f = 0.25 the allocator reserves 24 / 0.75 = 32 MiB: 8 MiB of
  // slack, added to the reserve (17 MiB); total 24 allocated + 8 slack + 8 NCCL + 9 reserve = 49 MiB.
  MemoryBreakdown m;
  m.params = 1 * MiB, m.grads = 2 * MiB, m.optimizer = 3 * MiB, m.activations = 4 * MiB, m.copy_params = 5 * MiB;
  m.copy_grads = 6 * MiB, m.comm_buffers = 3 * MiB, m.nccl = 8 * MiB, m.reserve = 9 * MiB;
  CHECK(allocator_allocated(m) == 24 * MiB);
  MemoryBreakdown none = m;
  add_allocator_slack(none, 0);
  CHECK(none.total() == m.total());  // f = 0 adds nothing
  add_allocator_slack(m, 0.25);
  CHECK(m.reserve == doctest::Approx(17 * MiB));
  CHECK(m.total() == doctest::Approx((24 + 8 + 8 + 9) * MiB));
  // Room on a 100 MiB GPU with these 17 MiB outside the allocator (NCCL 8 + reserve 9) and 24 MiB
  // allocated: (24 + C) / 0.75 <= 100 - 17 gives C <= 38.25 MiB; free bytes say 100 - 17 - 24 = 59,
  // less the cut 0.25 x 83 = 20.75.
  CHECK(allocator_slack_cut(100 * MiB, 17 * MiB, 0.25) == doctest::Approx(20.75 * MiB));
  CHECK(allocator_slack_cut(100 * MiB, 17 * MiB, 0) == 0);
}

TEST_CASE("copy buffers: gradient buffers live from backward until spRS drains them") {
  // One GPU holds 3, 1, 4, 2 copies of four MoE layers; 1 MiB of parameters and 1 MiB of gradient
  // buffer per copy. Instants in issue order (MiB, parameters + gradients):
  //   forward: copies accumulate, 3, 4, 8, 10;
  //   backward, one queue (spRS(l) drains before layer l-1's backward): layer 3: 10 + 2 = 12,
  //   layer 2: 8 + 4 = 12, layer 1: 4 + 1, layer 0: 3 + 3. Peak 12 at layer 3 (the first):
  //   10 MiB of copies, 2 MiB of gradient buffers.
  const std::vector<double> copies{3, 1, 4, 2};
  const CopyPeak one = copy_buffer_peak(copies, MiB, MiB, {false, false});
  CHECK(one.params == 10 * MiB);
  CHECK(one.grads == 2 * MiB);
  //   separate stream (spRS(l) may still drain during layer l-1's backward): layer 3: 10 + 2,
  //   layer 2: 8 + (4 + 2) = 14, layer 1: 4 + (1 + 4) = 9, layer 0: 3 + (3 + 1) = 7. Peak 14.
  const CopyPeak two = copy_buffer_peak(copies, MiB, MiB, {false, true});
  CHECK(two.params == 8 * MiB);
  CHECK(two.grads == 6 * MiB);
  // Gradient buffers in fp32 (4 B per parameter against 2): twice the bytes per copy. One queue:
  // layer 3: 10 + 2 x 2 = 14, layer 2: 8 + 4 x 2 = 16, layer 0: 3 + 3 x 2 = 9. Peak 16 at layer 2.
  const CopyPeak fp32 = copy_buffer_peak(copies, MiB, 2 * MiB, {false, false});
  CHECK(fp32.params == 8 * MiB);
  CHECK(fp32.grads == 8 * MiB);
}

TEST_CASE("re-materialization keeps the layer in use and the one being gathered") {
  // Same copies 3, 1, 4, 2. Parameters only (no gradient buffers): the largest adjacent pair,
  // layers 2 and 3: 4 + 2 = 6 MiB (one layer at a time would say 4).
  const std::vector<double> copies{3, 1, 4, 2};
  CHECK(copy_buffer_peak(copies, MiB, 0, {true, false}).params == 6 * MiB);
  // With gradient buffers, one queue: forward pairs 3+1, 1+4, 4+2, 2; backward layer 3: (2 + 4
  // being gathered) + 2 = 8, layer 2: (4 + 1) + 4 = 9, layer 1: (1 + 3) + 1 = 5, layer 0: 3 + 3 = 6.
  // Peak 9 at layer 2's backward: 5 MiB of copies, 4 MiB of gradient buffers.
  const CopyPeak rm = copy_buffer_peak(copies, MiB, MiB, {true, false});
  CHECK(rm.params == 5 * MiB);
  CHECK(rm.grads == 4 * MiB);
  // Without re-materialization the same copies peak at 12 MiB (previous case): 3 MiB saved.
  CHECK(copy_buffer_peak(copies, MiB, MiB, {false, false}).total() - rm.total() == 3 * MiB);
  // One layer: nothing to gather beside it.
  CHECK(copy_buffer_peak(std::vector<double>{5}, MiB, MiB, {true, false}).total() == 10 * MiB);
}

TEST_CASE("a split backward's W op may leave every layer's gradient buffers waiting for spRS") {
  // Same copies 3, 1, 4, 2, re-materialized. ZB-H1 / DualPipe: W runs through the layers without
  // an all-to-all to hold it behind spRS, so at layer l's backward layers l..3 hold gradient
  // buffers: layer 3: (2 + 4) + 2 = 8, layer 2: (4 + 1) + 6 = 11, layer 1: (1 + 3) + 7 = 11,
  // layer 0: 3 + 10 = 13. Peak 13 at layer 0: 3 MiB of copies, 10 of gradient buffers (a whole
  // backward, one queue: 9, previous case).
  const std::vector<double> copies{3, 1, 4, 2};
  const CopyPeak split = copy_buffer_peak(copies, MiB, MiB, {true, false, true});
  CHECK(split.params == 3 * MiB);
  CHECK(split.grads == 10 * MiB);
  // Without re-materialization (every lower layer's copies held): layer 3: 10 + 2 = 12, layer 2:
  // 8 + 6 = 14, layer 1: 4 + 7 = 11, layer 0: 3 + 10 = 13. Peak 14: 8 MiB of copies, 6 of gradients.
  const CopyPeak whole = copy_buffer_peak(copies, MiB, MiB, {false, false, true});
  CHECK(whole.params == 8 * MiB);
  CHECK(whole.grads == 6 * MiB);
  // Never below the whole backward's peak with the same queue.
  CHECK(whole.total() >= copy_buffer_peak(copies, MiB, MiB, {false, false}).total());
}

TEST_CASE("memory cap: water-filled per layer, a layer that wants more gets fewer") {
  // Two layers want 7 and 1 copies on this GPU; 2 MiB of parameters and 2 MiB of gradient buffer
  // per copy; 20 MiB for copies; no re-materialization, one queue. At level c layer 0 keeps
  // min(7, c), layer 1 its 1: backward of layer 1: (c + 1) + 1 copies, of layer 0: c + c. Both
  // within 10 copies (20 MiB): c + 2 <= 10 and 2c <= 10, so c = 5. Layer 0 is cut from 7 to 5,
  // layer 1 keeps its copy. (A uniform cap, 20 MiB / 2 layers / 4 MiB per copy, would give 2 each.)
  const std::vector<double> wanted{7, 1};
  CHECK(copy_cap_level(wanted, 20 * MiB, 2 * MiB, 2 * MiB, {false, false}, 8) == 5);
  // Check the level against the peak: 5 fits exactly, 6 does not.
  CHECK(copy_buffer_peak(std::vector<double>{5, 1}, 2 * MiB, 2 * MiB, {false, false}).total() == 20 * MiB);
  CHECK(copy_buffer_peak(std::vector<double>{6, 1}, 2 * MiB, 2 * MiB, {false, false}).total() > 20 * MiB);
  // Enough memory for everything: the maximum level (the cap does not bind). None: 0.
  CHECK(copy_cap_level(wanted, 1000 * MiB, 2 * MiB, 2 * MiB, {false, false}, 8) == 8);
  CHECK(copy_cap_level(wanted, -1, 2 * MiB, 2 * MiB, {false, false}, 8) == 0);
  // Re-materialization, one queue: forward c + 1; backward of layer 1: (1 + c being gathered) + 1,
  // of layer 0: c + c. With two layers the same bound: c = 5.
  CHECK(copy_cap_level(wanted, 20 * MiB, 2 * MiB, 2 * MiB, {true, false}, 8) == 5);
}

TEST_CASE("NCCL buffers per connection, rings and point-to-point as NCCL documents them") {
  // One connection: NCCL_BUFFSIZE 4 MiB (Simple) + LL 512 KiB + LL128 120 x 640 x 8 x 8 B.
  CHECK(kNcclConnectionBytes == 4194304.0 + 524288.0 + 4915200.0);
  CHECK(kNcclConnectionBytes == 9633792.0);
  // A GPU of a 4 x 8 GPU cluster in a communicator over all 32 with 8 channels, running rings and
  // all-to-alls: 8 ring connections, 7 peers in its node x 2 channels each, and the shared network
  // pool for its 24 remote peers, 2 directions x 8 channels x 16 steps x 128 KiB:
  //   8 x 9633792 + 14 x 9633792 + 2 x 8 x 16 x 131072 = 77070336 + 134873088 + 33554432.
  CHECK(nccl_buffer_bytes({8, true, true, 7, 24}) == 245497856.0);
  // All-to-all only, inside one node (1 channel): no rings, no pool.
  CHECK(nccl_buffer_bytes({1, false, true, 7, 0}) == 14 * 9633792.0);
  // 3 channels round up to 4 p2p channels for the pool: 2 x 4 x 16 x 131072 = 16 MiB.
  CHECK(nccl_buffer_bytes({3, false, true, 0, 5}) == 16 * MiB);
  // Rings only: one connection per channel.
  CHECK(nccl_buffer_bytes({2, true, false, 3, 4}) == 2 * 9633792.0);
}
