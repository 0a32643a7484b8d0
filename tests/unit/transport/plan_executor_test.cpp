#include <doctest/doctest.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "transport/plan_check.hpp"
#include "transport/plan_executor.hpp"
#include "transport/plan_file.hpp"
#include "transport/thread_transport.hpp"

using namespace hs::transport;

namespace {

constexpr size_t kFloats = 5;  // elements per chunk buffer in these tests

PlanLayer layer(Broadcast b, std::vector<int> owner, std::vector<std::vector<int>> replicas,
                std::vector<ChunkTransfer> spag, std::vector<ChunkTransfer> sprs, int gpus) {
  PlanLayer l;
  l.chunk_bytes = 4.0 * kFloats;
  l.broadcast = b;
  l.owner = std::move(owner);
  l.replicas = std::move(replicas);
  l.spag = std::move(spag);
  l.sprs = std::move(sprs);
  l.dispatch_bytes.assign(gpus, std::vector<double>(gpus, 0.0));
  return l;
}

// Chain, 4 GPUs: chunk 0 owned by GPU 0 with copies on 1, 2, 3 (chain 0 -> 1 -> 2 -> 3); chunk 1
// owned by GPU 3 with a copy on GPU 0 (3 -> 0); chunk 2 owned by GPU 2, no copy. spRS is listed as
// the simulator lists it, head of the chain first (1 -> 0, 2 -> 1, 3 -> 2), which is not the order it
// can run in.
PlanLayer chain_layer() {
  return layer(Broadcast::kChain, {0, 3, 2}, {{1, 2, 3}, {0}, {}}, {{0, 0, 1}, {0, 1, 2}, {0, 2, 3}, {1, 3, 0}},
               {{0, 1, 0}, {0, 2, 1}, {0, 3, 2}, {1, 0, 3}}, 4);
}

// Direct, 4 GPUs: chunk 0 owned by GPU 1, copies on 0, 2, 3 (1 sends each); chunk 1 owned by GPU 0 with
// a copy on GPU 1, so GPUs 0 and 1 send to each other in the same round.
PlanLayer direct_layer() {
  return layer(Broadcast::kDirect, {1, 0}, {{0, 2, 3}, {1}}, {{0, 1, 0}, {0, 1, 2}, {0, 1, 3}, {1, 0, 1}},
               {{0, 0, 1}, {0, 2, 1}, {0, 3, 1}, {1, 1, 0}}, 4);
}

float param(int chunk, size_t i) { return static_cast<float>(100 * (chunk + 1) + static_cast<int>(i)); }
float grad(int chunk, int rank, size_t i) { return static_cast<float>((chunk + 1) * 1000 + rank * 10 + static_cast<int>(i)); }

// Every rank's buffers after spAG then spRS: [rank][chunk].
struct Outcome {
  std::vector<ChunkBuffers> params, grads;
  std::vector<ExecStats> ag, rs;
};

Outcome execute(const PlanLayer& l, int gpus, ThreadFabric& fabric) {
  Outcome o;
  o.params.resize(gpus);
  o.grads.resize(gpus);
  o.ag.resize(gpus);
  o.rs.resize(gpus);
  run_on_threads(fabric, [&](Transport& t) {
    const int me = t.rank();
    ChunkBuffers p(l.chunks()), g(l.chunks());
    for (int c = 0; c < l.chunks(); ++c) {
      if (!holds(l, c, me)) continue;
      p[c].assign(kFloats, -1.0f);  // a replica's buffer starts as garbage
      g[c].resize(kFloats);
      for (size_t i = 0; i < kFloats; ++i) {
        if (l.owner[c] == me) p[c][i] = param(c, i);
        g[c][i] = grad(c, me, i);
      }
    }
    o.ag[me] = execute_spag(l, t, p);
    o.rs[me] = execute_sprs(l, t, g);
    o.params[me] = std::move(p);  // each thread writes its own slot
    o.grads[me] = std::move(g);
  });
  return o;
}

std::vector<std::tuple<int, int, size_t>> sorted_log(const ThreadFabric& f) {
  std::vector<std::tuple<int, int, size_t>> v;
  for (const auto& m : f.log()) v.emplace_back(m.src, m.dst, m.floats);
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::tuple<int, int, size_t>> expected_log(const PlanLayer& l) {
  std::vector<std::tuple<int, int, size_t>> v;
  for (const auto& t : l.spag) v.emplace_back(t.src, t.dst, kFloats);
  for (const auto& t : l.sprs) v.emplace_back(t.src, t.dst, kFloats);
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("rounds follow the dependencies of chains and direct broadcasts") {
  const PlanLayer c = chain_layer();
  // spAG: hop k of a chain in round k; 3 -> 0 (from its owner) in round 0 beside 0 -> 1.
  CHECK(spag_rounds(c) == std::vector<std::vector<int>>{{0, 3}, {1}, {2}});
  // spRS: 3 -> 2 first (nothing flows into GPU 3 for chunk 0), then 2 -> 1, then 1 -> 0; chunk 1's
  // 0 -> 3 has nothing flowing into GPU 0 for chunk 1: round 0.
  CHECK(sprs_rounds(c) == std::vector<std::vector<int>>{{2, 3}, {1}, {0}});
  const PlanLayer d = direct_layer();
  CHECK(spag_rounds(d) == std::vector<std::vector<int>>{{0, 1, 2, 3}});
  CHECK(sprs_rounds(d) == std::vector<std::vector<int>>{{0, 1, 2, 3}});
  // Two chains of one chunk from its owner (FSSDP's calibration copies after the forward spAG):
  // owner 0 -> 1 -> 2, then 0 -> 3: the second chain's first hop runs in round 0.
  const PlanLayer two = layer(Broadcast::kChain, {0}, {{1, 2, 3}}, {{0, 0, 1}, {0, 1, 2}, {0, 0, 3}},
                              {{0, 1, 0}, {0, 2, 1}, {0, 3, 0}}, 4);
  CHECK(spag_rounds(two) == std::vector<std::vector<int>>{{0, 2}, {1}});
  CHECK(sprs_rounds(two) == std::vector<std::vector<int>>{{1, 2}, {0}});
  // A transfer from a GPU that never gets the chunk cannot be scheduled.
  const PlanLayer bad = layer(Broadcast::kChain, {0}, {{1, 2}}, {{0, 1, 2}, {0, 0, 1}}, {}, 3);
  CHECK_THROWS_AS(spag_rounds(bad), std::invalid_argument);
}

TEST_CASE("chain spAG and spRS on threads: every holder gets the owner's chunk, every owner the sum") {
  const PlanLayer l = chain_layer();
  ThreadFabric fabric(4);
  const Outcome o = execute(l, 4, fabric);
  // Expected holdings: chunk 0 (owner 0) on GPUs 0-3 with param(0, i); chunk 1 (owner 3) on 3 and 0
  // with param(1, i); chunk 2 only on GPU 2.
  for (int g = 0; g < 4; ++g)
    for (size_t i = 0; i < kFloats; ++i) CHECK(o.params[g][0][i] == param(0, i));
  for (int g : {0, 3})
    for (size_t i = 0; i < kFloats; ++i) CHECK(o.params[g][1][i] == param(1, i));
  CHECK(o.params[1][1].empty());
  CHECK(o.params[2][2] == std::vector<float>{param(2, 0), param(2, 1), param(2, 2), param(2, 3), param(2, 4)});
  // Sums: GPU 0 ends with grad(0, r, i) summed over r = 0..3 (chain 3 -> 2 -> 1 -> 0), GPU 3 with
  // grad(1, 3, i) + grad(1, 0, i); GPU 2's partial sum of chunk 0 is its own plus GPU 3's.
  for (size_t i = 0; i < kFloats; ++i) {
    CHECK(o.grads[0][0][i] == grad(0, 0, i) + grad(0, 1, i) + grad(0, 2, i) + grad(0, 3, i));
    CHECK(o.grads[3][1][i] == grad(1, 3, i) + grad(1, 0, i));
    CHECK(o.grads[2][0][i] == grad(0, 2, i) + grad(0, 3, i));
    CHECK(o.grads[2][2][i] == grad(2, 2, i));  // no copies: untouched
  }
  // Exactly the plan's transfers went over the fabric, each once, all received.
  CHECK(sorted_log(fabric) == expected_log(l));
  CHECK(fabric.undelivered() == 0);
  // GPU 0: spAG sends 0 -> 1 and receives 3 -> 0; spRS receives 1 -> 0 and sends 0 -> 3.
  CHECK(o.ag[0].sent == 1);
  CHECK(o.ag[0].received == 1);
  CHECK(o.rs[0].sent == 1);
  CHECK(o.rs[0].received == 1);
  CHECK(o.ag[0].rounds == 3);  // every rank runs every round (an empty group where it has nothing)
}

TEST_CASE("direct spAG and spRS on threads, with two GPUs exchanging in one round") {
  const PlanLayer l = direct_layer();
  ThreadFabric fabric(4);
  const Outcome o = execute(l, 4, fabric);
  // Chunk 0 (owner 1) on every GPU; chunk 1 (owner 0) on 0 and 1.
  for (int g = 0; g < 4; ++g)
    for (size_t i = 0; i < kFloats; ++i) CHECK(o.params[g][0][i] == param(0, i));
  for (size_t i = 0; i < kFloats; ++i) {
    CHECK(o.params[1][1][i] == param(1, i));
    CHECK(o.grads[1][0][i] == grad(0, 0, i) + grad(0, 1, i) + grad(0, 2, i) + grad(0, 3, i));
    CHECK(o.grads[0][1][i] == grad(1, 0, i) + grad(1, 1, i));
  }
  CHECK(o.ag[1].sent == 3);  // the owner's uplink carries one copy per holder
  CHECK(o.rs[1].received == 3);
  CHECK(o.ag[1].rounds == 1);
  CHECK(sorted_log(fabric) == expected_log(l));
  CHECK(fabric.undelivered() == 0);
}

TEST_CASE("a chunk sent in two chains from its owner (calibration copies) reaches every holder") {
  // Owner 0 -> 1 -> 2 (forward spAG), then 0 -> 3 (calibration copy). spRS: 2 -> 1 -> 0 and 3 -> 0.
  const PlanLayer l = layer(Broadcast::kChain, {0}, {{1, 2, 3}}, {{0, 0, 1}, {0, 1, 2}, {0, 0, 3}},
                            {{0, 1, 0}, {0, 2, 1}, {0, 3, 0}}, 4);
  ThreadFabric fabric(4);
  const Outcome o = execute(l, 4, fabric);
  for (int g = 0; g < 4; ++g)
    for (size_t i = 0; i < kFloats; ++i) CHECK(o.params[g][0][i] == param(0, i));
  for (size_t i = 0; i < kFloats; ++i)
    CHECK(o.grads[0][0][i] == grad(0, 0, i) + grad(0, 1, i) + grad(0, 2, i) + grad(0, 3, i));
  CHECK(o.ag[0].sent == 2);
  CHECK(o.rs[0].received == 2);
  CHECK(sorted_log(fabric) == expected_log(l));
  CHECK(fabric.undelivered() == 0);
}

TEST_CASE("the plan checker passes a correct execution and catches a corrupted one") {
  Plan plan;
  plan.gpus = 4;
  plan.node_of = {0, 0, 1, 1};
  plan.layers = {chain_layer(), direct_layer()};
  plan.layers[1].layer = 1;
  plan.layers[0].chunk_bytes = plan.layers[1].chunk_bytes = 4096;
  std::vector<RankCheck> checks(4);
  {
    ThreadFabric fabric(4);
    run_on_threads(fabric, [&](Transport& t) { checks[t.rank()] = check_plan_on_rank(plan, t, 0.25); });  // 256 floats
  }
  // GPU 0 holds copies of chunk 1 in layer 0 and chunk 0 in layer 1 (2 copies) and owns chunk 0 of
  // layer 0 and chunk 1 of layer 1, both copied elsewhere (2 sums).
  for (const auto& c : checks) CHECK_MESSAGE(c.ok(), format_check(c));
  CHECK(checks[0].layers == 2);
  CHECK(checks[0].copies == 2);
  CHECK(checks[0].sums == 2);
  CHECK(format_check(checks[0]) == "rank 0: 2 layers, 2 copies received, 2 sums checked: ok");
  // GPU 2 owns chunk 2 of layer 0 (no copies): 0 sums; copies: chunk 0 in both layers.
  CHECK(checks[2].ok());
  CHECK(checks[2].copies == 2);
  CHECK(checks[2].sums == 0);
  CHECK(chunk_elements(4096, 0.25) == 256);
  CHECK(chunk_elements(4096, 1e-9) == 1);
  CHECK(chunk_elements(10, 1) == 3);  // 10 bytes round up to 3 floats

  // A transport that adds 1 to the first float of every message GPU 2 receives. Layer 0: GPU 2's
  // copy of chunk 0 is wrong and so is the one it forwards to GPU 3; GPU 3's partial sum reaches
  // GPU 2, is corrupted there and flows via GPU 1 into GPU 0's sum. Layer 1: GPU 2's copy is wrong;
  // it returns its own gradient, so GPU 1's sum is right. Expected: 0, 2, 3 fail; 1 passes.
  struct Corrupting final : Transport {
    Transport& inner;
    std::vector<std::span<float>> pending;
    explicit Corrupting(Transport& t) : inner(t) {}
    int rank() const override { return inner.rank(); }
    int size() const override { return inner.size(); }
    void group_start() override { inner.group_start(); }
    void send(int dst, std::span<const float> d) override { inner.send(dst, d); }
    void recv(int src, std::span<float> d) override {
      inner.recv(src, d);
      pending.push_back(d);
    }
    void group_end() override {
      inner.group_end();
      if (rank() == 2)
        for (auto d : pending) d[0] += 1;
      pending.clear();
    }
  };
  ThreadFabric fabric(4);
  run_on_threads(fabric, [&](Transport& t) {
    Corrupting c(t);
    checks[t.rank()] = check_plan_on_rank(plan, c, 0.25);
  });
  CHECK_FALSE(checks[2].ok());
  const float want = param_value(0, 0, 0);
  CHECK(checks[2].first_mismatch ==
        fmt::format("layer 0 chunk 0 element 0: parameter copied from owner 0: got {}, expected {}", want + 1, want));
  CHECK(checks[2].mismatches == 2);  // one element per corrupted copy (layers 0 and 1)
  CHECK(format_check(checks[2]).find("FAILED, 2 elements differ; first: ") != std::string::npos);
  CHECK_FALSE(checks[0].ok());
  CHECK(checks[0].mismatches == 1);
  CHECK(checks[0].first_mismatch.find("layer 0 chunk 0 element 0: gradient sum at the owner") == 0);
  CHECK(checks[1].ok());
  CHECK_FALSE(checks[3].ok());
}

TEST_CASE("thread transport: sizes must match, a missing send times out instead of hanging") {
  ThreadFabric fabric(2, std::chrono::milliseconds(200));
  CHECK_THROWS_WITH_AS(run_on_threads(fabric,
                                      [](Transport& t) {
                                        std::vector<float> buf(3, 1.0f);
                                        if (t.rank() == 0) t.send(1, std::span<const float>(buf.data(), 2));
                                        else t.recv(0, buf);
                                      }),
                       "rank 1: message from rank 0 has 2 floats, expected 3", std::runtime_error);
  ThreadFabric quiet(2, std::chrono::milliseconds(100));
  CHECK_THROWS_AS(run_on_threads(quiet,
                                 [](Transport& t) {
                                   std::vector<float> buf(1);
                                   if (t.rank() == 1) {
                                     t.group_start();
                                     t.recv(0, buf);
                                     t.group_end();
                                   }
                                 }),
                  std::runtime_error);
}
