#include <doctest/doctest.h>

#include <cmath>

#include "cost/layout_memory.hpp"
#include "support/test_platforms.hpp"
#include "support/approx.hpp"
#include "util/rng.hpp"

using namespace hs;

namespace {
const SourceLocation kSrc{"--layout", 0, 0};
workload::ParallelLayout layout(const std::string& text, int n, const workload::ModelSpec& m) {
  auto l = workload::parse_parallel_layout(text, kSrc);
  workload::resolve_layout(l, n, 8, m, kSrc);
  return l;
}
}  // namespace

TEST_CASE("layout memory: the distributed optimizer shards master weights and Adam moments over (expert-)DP") {
  // 16 MoE blocks, d 512, 16 plain experts of d_ffn 1024 (2 x 512 x 1024 = 1,048,576 params each).
  auto m = test::small_moe_model("m16", 16, 2, 1024, 1, 16);
  auto l = layout("tp=2,pp=2,ep=4", 16, m);  // dp 4, edp = 2 x 4 / 4 = 2
  const auto p = cost::stage_params(m, l, 0);
  // Stage 0: blocks 0..7, 16/4 = 4 experts each: 32 x 1,048,576.
  CHECK(p.experts == hs::test::approx(32.0 * 1048576));
  // Dense per block: (4 d^2 + 4 d) / 2 + 4 d (norms) + d E (router) = 525,312 + 2,048 + 8,192;
  // stage 0 adds the vocab-parallel word embeddings 50,257 x 512 / 2 and 1,024 x 512 positions.
  const double dense = 8 * (525312.0 + 2048 + 8192) + 50257.0 * 512 / 2 + 1024.0 * 512;
  CHECK(p.dense == hs::test::approx(dense));
  const auto mem = cost::layout_memory(m, l, 0, 0, 0);
  CHECK(mem.params == hs::test::approx(2 * (dense + 32.0 * 1048576)));
  CHECK(mem.grads == hs::test::approx(2 * (dense + 32.0 * 1048576)));
  // fp32 master (4 B) + Adam moments (8 B): 12 B per parameter, dense / dp 4, experts / edp 2.
  CHECK(mem.optimizer == hs::test::approx(12 * (dense / 4 + 32.0 * 1048576 / 2)));
  auto off = layout("tp=2,pp=2,ep=4,dist_opt=off", 16, m);
  CHECK(cost::layout_memory(m, off, 0, 0, 0).optimizer == hs::test::approx(12 * (dense + 32.0 * 1048576)));
}

TEST_CASE("layout memory: every parameter lives on exactly one GPU of a TP x EP tile (plus the tied embedding copy)") {
  auto m = test::small_moe_model("m16", 16, 2, 1024, 1, 16);
  auto l = layout("tp=2,pp=4,ep=2", 16, m);
  // Summed over stages, dense x tp (norms and router replicated) and experts x ep recover the model.
  double dense = 0, experts = 0;
  for (int s = 0; s < l.pp; ++s) {
    const auto p = cost::stage_params(m, l, s);
    const auto [a, b] = l.stage_blocks(s, m.layers);
    dense += p.dense * l.tp - (b - a) * (4.0 * 512 + 512.0 * 16) * (l.tp - 1);  // replicated norms + gate
    experts += p.experts * l.ep;
  }
  const auto all = cost::count_params(m);
  CHECK(experts == hs::test::approx(all.per_expert * 16 * 16));
  CHECK(dense == hs::test::approx(all.dense + 50257.0 * 512 + 1024.0 * 512 * (l.tp - 1)));
}

TEST_CASE("layout memory: 1F1B keeps pp - s micro-batches on stage s; recomputation shrinks them") {
  auto m = test::small_moe_model("m16", 16, 2, 1024, 1, 16);
  m.grad_accum = 8;
  auto l = layout("pp=4,ep=4", 16, m);
  CHECK(cost::in_flight_micro_batches(l, 0, 8) == 4);
  CHECK(cost::in_flight_micro_batches(l, 3, 8) == 1);
  CHECK(cost::in_flight_micro_batches(l, 0, 2) == 2);
  // Stage 1 (blocks 4..7, no logits): four blocks of 15 sbh (bf16 = 2 B per element: 15 sbh x 1)
  // plus the permuted copies, 1,024 tokens x top-2 x 512 x 2 B each.
  const double sbh = 1024.0 * 512;
  CHECK(cost::stage_activation_bytes(m, l, 1, 0) == hs::test::approx(4 * (15 * sbh + 1024.0 * 2 * 512 * 2)));
  auto full = layout("pp=4,ep=4,recompute=full", 16, m);
  CHECK(cost::stage_activation_bytes(m, full, 1, 0) ==
        hs::test::approx(4 * 2 * sbh + 15 * sbh + 1024.0 * 2 * 512 * 2));
  // Sequence parallelism splits everything by tp.
  auto tp2 = layout("tp=2,pp=4,ep=4", 16, m);
  CHECK(cost::stage_activation_bytes(m, tp2, 1, 0) == hs::test::approx(cost::stage_activation_bytes(m, l, 1, 0) / 2));
}

TEST_CASE("layout memory: a stage's kept terms (StageMemory) give every GPU's breakdown a fresh call gives") {
  // Strategies keep cost::StageMemory per stage and ask layout_memory for every GPU and iteration
  // with only the tokens changing. One kept StageMemory per stage, queried with random tokens, must
  // equal a StageMemory made fresh for each query, field for field and bit for bit; and the routed
  // tokens enter the activations linearly: without recompute, bytes(r) - bytes(0) = r x routed_kept
  // per micro-batch in flight; with recompute=full, (r / blocks) x routed_kept.
  auto m = test::small_moe_model("m16", 16, 2, 1024, 1, 16);
  m.grad_accum = 8;
  Rng rng(11);
  for (const char* text : {"tp=2,pp=2,ep=4", "tp=1,pp=4,ep=4,recompute=full", "tp=2,pp=2,ep=2,vpp=2",
                           "tp=1,pp=4,ep=4,schedule=dualpipe"}) {
    const auto l = layout(text, 16, m);
    for (int s = 0; s < l.pp; ++s) {
      const cost::StageMemory kept(m, l, s);
      for (int q = 0; q < 25; ++q) {
        const double received = std::floor(rng.uniform() * 1e5), largest = std::floor(rng.uniform() * 1e4);
        const double extra = std::floor(rng.uniform() * 4);
        const auto a = cost::layout_memory(m, l, kept, received, largest, extra);
        const auto b = cost::layout_memory(m, l, cost::StageMemory(m, l, s), received, largest, extra);
        const auto c = cost::layout_memory(m, l, s, received, largest, extra);
        for (const auto* x : {&b, &c}) {
          CHECK(a.params == x->params);
          CHECK(a.grads == x->grads);
          CHECK(a.optimizer == x->optimizer);
          CHECK(a.activations == x->activations);
          CHECK(a.comm_buffers == x->comm_buffers);
          CHECK(a.reserve == x->reserve);
        }
        const double routed = kept.activation.full ? received / kept.activation.blocks : received;
        CHECK(kept.activation.bytes(received) - kept.activation.bytes(0) ==
              hs::test::approx(routed * kept.activation.routed_kept));
        CHECK(kept.activation.bytes(received) == cost::stage_activation_bytes(m, l, s, received));
      }
    }
  }
}
