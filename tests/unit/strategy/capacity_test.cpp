#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "strategy/capacity.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "strategy/strategy.hpp"
#include "support/make_named.hpp"
#include "support/test_platforms.hpp"

using namespace hs;

TEST_CASE("capacity: ceil(factor x tokens x top_k / experts) per GPU and micro-batch") {
  CHECK(strategy::expert_capacity(1.0, 2048, 2, 8) == 512);    // 2048 x 2 / 8 = 512 exactly
  CHECK(strategy::expert_capacity(1.25, 2048, 2, 8) == 640);   // 1.25 x 512
  CHECK(strategy::expert_capacity(1.1, 1000, 1, 3) == 367);    // 366.67 rounds up
  auto m = test::tiny_moe_model();  // 2 x 1024 tokens per GPU, top-2, 8 experts
  CHECK(strategy::token_capacity(m, 1).dropless());
  m.capacity_factor = 1.0;
  m.grad_accum = 3;
  const auto c = strategy::token_capacity(m, 2);  // with TP 2 a rank routes 1024 tokens: 1024 x 2 / 8
  CHECK(c.micro_batch == 256);
  CHECK(c.iteration() == 768);  // 3 micro-batches of 1/3 of the iteration's counts each
}

TEST_CASE("capacity factor 1.0 drops the expected tokens on a hand-made trace (EP)") {
  // tiny model: 8 GPUs x 2 x 1024 tokens, top-2 over 8 experts: C = ceil(1.0 x 2048 x 2 / 8) = 512
  // per GPU and expert. Layer 0: every GPU sends 2048 assignments to expert 0 and 2048 / 7 = 292.6
  // to each of experts 1..7: it keeps 512 of expert 0's and all the others', dropping 2048 - 512 =
  // 1536, so the layer drops 8 x 1536 = 12288 of its 8 x 4096 = 32768. Layer 1 sends 512 to every
  // expert, exactly C: nothing dropped. Fraction: 12288 / 65536 = 0.1875.
  auto m = test::tiny_moe_model();
  m.capacity_factor = 1.0;
  auto t = test::node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  std::vector<double> loads = test::uniform_loads(2, 8, 8, 4096);
  for (int g = 0; g < 8; ++g)
    for (int e = 0; e < 8; ++e) loads[g * 8 + e] = e == 0 ? 2048 : 2048.0 / 7;
  auto ep = test::make_named("ep", ctx, {});
  const auto r = ep->simulate(loads);
  REQUIRE(r.dropped_tokens.size() == 2);
  CHECK(r.routed_tokens[0] == doctest::Approx(32768));
  CHECK(r.routed_tokens[1] == doctest::Approx(32768));
  CHECK(r.dropped_tokens[0] == doctest::Approx(12288));
  CHECK(r.dropped_tokens[1] == 0);
  // GPU 0 (expert 0) now computes 8 x 512 = 4096 tokens in layer 0, as in the uniform layer 1: the
  // hot expert no longer straggles, so the iteration is no slower than dropless on uniform loads by
  // more than the all-to-all's share (and faster than dropless on the hot trace).
  m.capacity_factor.reset();
  auto dropless = test::make_named("ep", ctx, {});
  const auto d = dropless->simulate(loads);
  CHECK(d.dropped_tokens.empty());
  CHECK(r.time < d.time);
  const int straggler = static_cast<int>(strategy::Component::kStragglerWait);
  CHECK(r.breakdown[straggler] < 0.5 * d.breakdown[straggler]);
  // grad_accum 2, no micro-batch axis: each micro-batch routes half the counts against the same C,
  // so the iteration's counts are cut at 2 x 512: doubling the counts doubles what is dropped.
  m.capacity_factor = 1.0;
  m.grad_accum = 2;
  for (double& c : loads) c *= 2;
  auto ep2 = test::make_named("ep", ctx, {});
  const auto r2 = ep2->simulate(loads);
  CHECK(r2.dropped_tokens[0] == doctest::Approx(2 * 12288));
  CHECK(r2.dropped_tokens[1] == 0);
}

TEST_CASE("capacity: a replica group has capacity per instance (dispatch)") {
  // 2 GPUs, 2 experts; expert 0 owned by GPU 0 with a copy on GPU 1, expert 1 on GPU 1 alone. Cap 10
  // per instance: a source keeps up to 20 of expert 0 (two holders) and 10 of expert 1.
  collective::SparsePlacement p{{0, 1}, {{1}, {}}};
  const std::vector<double> counts{30, 15, 12, 4};  // [source][expert]
  strategy::DispatchResult d;
  strategy::dispatch(counts, 2, p, {0, 0}, strategy::DispatchRule::kTopology, 1.0, d, 10);
  // kept: source 0: 20 + 10, source 1: 12 + 4; dropped (30 - 20) + (15 - 10) = 15 of 61.
  CHECK(d.routed == 61);
  CHECK(d.dropped == 15);
  CHECK(d.received[0] + d.received[1] == 46);
  // Each source holds expert 0, so its expert-0 tokens stay local (topology rule).
  CHECK(d.bytes[0 * 2 + 1] == 10);  // source 0 -> GPU 1: expert 1's kept 10
  CHECK(d.bytes[1 * 2 + 0] == 0);
}

TEST_CASE("capacity: kept + dropped = routed, kept within the cap, over seeds (property)") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int seed = 0; seed < 200; ++seed) {
    const int n = 2 + static_cast<int>(u(rng) * 7), E = 1 + static_cast<int>(u(rng) * 12);
    std::vector<double> counts(static_cast<size_t>(n) * E);
    for (double& c : counts) c = std::round(std::pow(u(rng), 3) * 400);
    collective::SparsePlacement p{std::vector<int>(E), std::vector<std::vector<int>>(E)};
    std::vector<int> instances(E);
    for (int e = 0; e < E; ++e) {
      p.owner[e] = static_cast<int>(u(rng) * n);
      for (int g = 0; g < n; ++g)
        if (g != p.owner[e] && u(rng) < 0.2) p.replicas[e].push_back(g);
      instances[e] = 1 + static_cast<int>(p.replicas[e].size());
    }
    const double cap = std::ceil(u(rng) * 100);
    std::vector<int> node_of(n);
    for (int g = 0; g < n; ++g) node_of[g] = g / 4;
    strategy::DispatchResult d;
    strategy::dispatch(counts, n, p, node_of, strategy::DispatchRule::kTopology, 1.0, d, cap);
    const double routed = std::accumulate(counts.begin(), counts.end(), 0.0);
    const double kept = std::accumulate(d.received.begin(), d.received.end(), 0.0);
    double bytes = std::accumulate(d.bytes.begin(), d.bytes.end(), 0.0), computed = 0;
    for (const auto& v : d.expert_tokens) computed += std::accumulate(v.begin(), v.end(), 0.0);
    INFO("seed ", seed, " n ", n, " E ", E, " cap ", cap);
    CHECK(d.routed == doctest::Approx(routed));
    CHECK(kept + d.dropped == doctest::Approx(routed));
    CHECK(computed == doctest::Approx(kept));  // what is kept is computed
    CHECK(bytes == doctest::Approx(kept));     // and dispatched (1 byte a token), nothing dropped is
    // The same cut by hand: min(c, cap x instances) per source and expert.
    std::vector<double> cut = counts;
    const auto t = strategy::cut_to_capacity(cut, E, cap, instances);
    CHECK(t.dropped == doctest::Approx(d.dropped));
    for (size_t i = 0; i < cut.size(); ++i) CHECK(cut[i] <= cap * instances[i % E]);
  }
}

TEST_CASE("capacity: every strategy conserves tokens and drops no more than EP (one instance each)") {
  auto m = test::small_moe_model("m16", 16, 2, 1024, 2);
  auto t = test::node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const int n = 8, E = 16, L = m.moe_layers();
  const double per_gpu = static_cast<double>(m.tokens_per_gpu_iteration()) * m.top_k;
  for (double f : {0.5, 1.0, 1.25}) {
    m.capacity_factor = f;
    std::vector<std::vector<double>> iters;
    for (int i = 0; i < 4; ++i) {  // skewed loads: a random power of uniform weights per source
      std::vector<double> loads(static_cast<size_t>(L) * n * E);
      for (size_t r = 0; r < loads.size() / E; ++r) {
        std::vector<double> w(E);
        for (double& x : w) x = std::pow(u(rng), 4) + 1e-3;
        const double sum = std::accumulate(w.begin(), w.end(), 0.0);
        for (int e = 0; e < E; ++e) loads[r * E + e] = per_gpu * w[e] / sum;
      }
      iters.push_back(std::move(loads));
    }
    std::vector<std::vector<double>> ep_dropped;
    for (const auto& info : strategy::registry()) {
      auto s = test::make_named(info.name, ctx, {});
      for (size_t i = 0; i < iters.size(); ++i) {
        const auto r = s->simulate(iters[i]);
        INFO(info.name, " capacity_factor ", f, " iteration ", i);
        REQUIRE(r.dropped_tokens.size() == static_cast<size_t>(L));
        const bool ep = std::string(info.name) == "ep";  // the registry's first
        if (ep) ep_dropped.push_back(r.dropped_tokens);
        for (int l = 0; l < L; ++l) {
          CHECK(r.routed_tokens[l] == doctest::Approx(n * per_gpu));  // every assignment is counted once
          CHECK(r.dropped_tokens[l] >= 0);
          CHECK(r.dropped_tokens[l] <= r.routed_tokens[l]);
          CHECK(r.dropped_tokens[l] <= ep_dropped.at(i)[l] * (1 + 1e-12) + 1e-9);
        }
      }
    }
  }
}

TEST_CASE("capacity applies per micro-batch: a trace's micro-batch axis cuts each micro-batch at C") {
  // tiny model, grad_accum 2: C = 512 per GPU, expert and micro-batch (2048 tokens x top-2 / 8).
  // Layer 0, per GPU: micro-batch 0 sends 2048 to expert 0 and 2048 / 7 to each other expert (drops
  // 2048 - 512 = 1536); micro-batch 1 sends none to expert 0 and 4096 / 7 = 585.14 to each other
  // (drops 7 x (585.14 - 512) = 512). Over 8 GPUs: 8 x (1536 + 512) = 16384 dropped. Cut as one
  // iteration at 2 x 512 instead, expert 0's 2048 would drop 1024 and the others' 877.7 nothing:
  // 8192. Layer 1 is uniform (512 per expert and micro-batch): nothing dropped either way.
  auto m = test::tiny_moe_model();
  m.capacity_factor = 1.0;
  m.grad_accum = 2;
  auto t = test::node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  std::vector<std::vector<double>> micro(2, test::uniform_loads(2, 8, 8, 4096));
  for (int g = 0; g < 8; ++g)
    for (int e = 0; e < 8; ++e) {
      micro[0][g * 8 + e] = e == 0 ? 2048 : 2048.0 / 7;
      micro[1][g * 8 + e] = e == 0 ? 0 : 4096.0 / 7;
    }
  std::vector<double> total(micro[0].size());
  for (size_t i = 0; i < total.size(); ++i) total[i] = micro[0][i] + micro[1][i];
  // Every strategy with one instance per expert: EP, the oracle, the bound, FasterMoE without shadows.
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> runs{
      {"ep", {}}, {"oracle", {}}, {"bound", {}}, {"fastermoe", {{"trigger", "false"}}}};
  for (const auto& [name, knobs] : runs) {
    auto s = test::make_named(name, ctx, knobs);
    const auto r = s->simulate(strategy::IterationCounts{total, micro});
    INFO(name);
    CHECK(r.dropped_tokens[0] == doctest::Approx(16384));
    CHECK(r.dropped_tokens[1] == doctest::Approx(0).epsilon(1e-9));
    CHECK(r.routed_tokens[0] == doctest::Approx(2 * 32768));
  }
}
