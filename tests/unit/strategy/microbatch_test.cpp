// Micro-batches: traces that record them (axis micro_batch) give every micro-batch its own counts,
// from the trace to the loads (IterationLoads) to the iteration graph (LayerPlan::micro).
#include <doctest/doctest.h>

#include <algorithm>
#include <fmt/format.h>
#include <numeric>
#include <string>
#include <vector>

#include "strategy/iteration_loads.hpp"
#include "strategy/strategy.hpp"
#include "support/resolved_setting.hpp"
#include "support/test_platforms.hpp"
#include "util/diagnostics.hpp"
#include "workload/model_spec.hpp"
#include "workload/trace.hpp"
#include "support/approx.hpp"

using namespace hs;

namespace {

// One MoE layer of 4 experts, top-2, `seq` tokens per micro-batch and GPU, `ga` micro-batches.
workload::ModelSpec one_layer_model(int seq, int ga) {
  return workload::load_model(fmt::format("schema: hecate-sim/model@1\nname: m\nlayers: 1\nd_model: 64\nd_ffn: 128\n"
                                          "experts: 4\ntop_k: 2\nheads: 4\nseq_len: {}\ngrad_accum: {}\n",
                                          seq, ga),
                              "m.yaml");
}

// A one-layer trace of `slices` micro-batches, each a list of per-source rows of 4 experts.
workload::Trace micro_trace(const std::vector<std::vector<std::vector<uint32_t>>>& slices, bool per_source = true) {
  workload::Trace t;
  t.moe_layers = 1, t.experts = 4, t.top_k = 2;
  t.axes = per_source ? workload::TraceAxes::kLayerSourceExpert : workload::TraceAxes::kLayerExpert;
  t.micro_batches = static_cast<int>(slices.size());
  const int rows = static_cast<int>(slices[0].size());
  uint32_t assignments = 0;
  for (uint32_t c : slices[0][0]) assignments += c;
  t.sources = per_source ? rows : 4;  // a global trace here: 4 sources' worth of tokens in one row
  t.tokens_per_source = static_cast<int64_t>(assignments / 2 / (per_source ? 1 : 4)) * t.micro_batches;
  workload::TraceRecord r;
  for (const auto& slice : slices)
    for (const auto& row : slice) r.micro.insert(r.micro.end(), row.begin(), row.end());
  REQUIRE(workload::sum_micro_batches(t, r));
  t.records.push_back(r);
  return t;
}

double sum(std::span<const double> v) { return std::accumulate(v.begin(), v.end(), 0.0); }

}  // namespace

TEST_CASE("a recorded micro-batch is what the model's micro-batch routes when their numbers match") {
  // 2 sources x 2 micro-batches of 4 tokens (8 assignments each); model: 4 tokens per micro-batch,
  // grad_accum 2, on 2 GPUs: 8 tokens per GPU-iteration on both sides, so no scaling.
  const auto t = micro_trace({{{4, 4, 0, 0}, {4, 2, 2, 0}}, {{0, 0, 4, 4}, {2, 2, 2, 2}}});
  const auto m = one_layer_model(4, 2);
  Diagnostics w;
  strategy::IterationLoads loads(t, m, 2, "t.json", w);
  CHECK(w.all().empty());
  CHECK(loads.micro_batches() == 2);
  std::vector<double> total;
  std::vector<std::vector<double>> micro;
  loads.load(0, total, micro);
  REQUIRE(micro.size() == 2);
  CHECK(micro[0] == std::vector<double>{4, 4, 0, 0, 4, 2, 2, 0});
  CHECK(micro[1] == std::vector<double>{0, 0, 4, 4, 2, 2, 2, 2});
  CHECK(total == std::vector<double>{4, 4, 4, 4, 6, 4, 4, 2});  // the iteration: their sum
  std::vector<double> only;
  loads.load(0, only);
  CHECK(only == total);
}

TEST_CASE("grad_accum != recorded micro-batches: proportional re-binning, with a warning naming both") {
  const auto t = micro_trace({{{4, 4, 0, 0}, {4, 2, 2, 0}}, {{0, 0, 4, 4}, {2, 2, 2, 2}}});
  std::vector<double> total;
  std::vector<std::vector<double>> micro;
  Diagnostics w;
  // Loads of the model with `seq` tokens per micro-batch and grad_accum `ga` on 2 GPUs.
  auto load = [&](int seq, int ga) {
    strategy::IterationLoads loads(t, one_layer_model(seq, ga), 2, "t.json", w);
    loads.load(0, total, micro);
  };
  auto warned = [&](const std::string& text) {
    for (const auto& d : w.all())
      if (d.field == "workload.micro_batches" && d.message.find(text) != std::string::npos) return true;
    return false;
  };
  SUBCASE("grad_accum 1 sums them (the trace's 8 tokens per GPU, the model's 8: no scaling)") {
    load(8, 1);
    REQUIRE(micro.size() == 1);
    CHECK(micro[0] == std::vector<double>{4, 4, 4, 4, 6, 4, 4, 2});
    CHECK(warned("records 2 micro-batches per iteration but the model runs grad_accum 1"));
    CHECK(warned("every 2 consecutive recorded micro-batches are summed"));
  }
  SUBCASE("grad_accum 4 halves each (2 tokens per micro-batch: 8 per GPU-iteration again)") {
    load(2, 4);
    REQUIRE(micro.size() == 4);
    CHECK(micro[0] == std::vector<double>{2, 2, 0, 0, 2, 1, 1, 0});
    CHECK(micro[1] == micro[0]);
    CHECK(micro[3] == std::vector<double>{0, 0, 2, 2, 1, 1, 1, 1});
    CHECK(warned("split evenly over 2 of the model's"));
  }
  SUBCASE("grad_accum 3: model micro-batch j covers [j/3, (j+1)/3) of the iteration") {
    // Trace micro-batch i covers [i/2, (i+1)/2). Model micro-batch 0 takes 2/3 of trace micro-batch
    // 0, micro-batch 1 a third of each, micro-batch 2 2/3 of trace micro-batch 1. The model routes
    // 3 x 4 = 12 tokens per GPU-iteration against the trace's 8: counts x 1.5. So micro-batch 0 =
    // 1.5 x 2/3 x slice 0 = slice 0, micro-batch 1 = (slice 0 + slice 1) / 2, micro-batch 2 = slice 1:
    // every model micro-batch routes its 4 tokens x top-2 = 8 assignments per GPU.
    load(4, 3);
    REQUIRE(micro.size() == 3);
    const std::vector<double> want0{4, 4, 0, 0, 4, 2, 2, 0}, want1{2, 2, 2, 2, 3, 2, 2, 1}, want2{0, 0, 4, 4, 2, 2, 2, 2};
    for (size_t i = 0; i < 8; ++i) {
      CHECK(micro[0][i] == hs::test::approx(want0[i]));
      CHECK(micro[1][i] == hs::test::approx(want1[i]));
      CHECK(micro[2][i] == hs::test::approx(want2[i]));
    }
    CHECK(warned("re-binned proportionally"));
  }
}

TEST_CASE("property: every model micro-batch routes exactly its tokens, and the micro-batches sum to the iteration") {
  // Traces of 2 to 4 micro-batches over 2 to 8 sources (per source or global, split multinomially or
  // evenly), simulated on 1 to 8 GPUs with grad_accum 1 to 5: per micro-batch, layer and GPU the
  // loads sum to micro_batch x seq_len x top_k (model tokens per micro-batch = seq 4 here, 8
  // assignments), whatever the re-binning and scaling.
  for (int M : {2, 3, 4})
    for (int S : {2, 3, 8})
      for (bool per_source : {true, false}) {
        std::vector<std::vector<std::vector<uint32_t>>> slices(M);
        for (int mb = 0; mb < M; ++mb)
          for (int s = 0; s < (per_source ? S : 1); ++s) {
            // Every source: 6 tokens per micro-batch (12 assignments), skewed by micro-batch and source.
            std::vector<uint32_t> row{6, 3, 2, 1};
            std::rotate(row.begin(), row.begin() + (mb + s) % 4, row.end());
            if (!per_source)
              for (auto& c : row) c *= 4;
            slices[mb].push_back(row);
          }
        const auto t = micro_trace(slices, per_source);
        for (int N : {1, 2, 5, 8})
          for (int G : {1, 2, 3, 5})
            for (auto split : {strategy::GlobalSplit::kMultinomial, strategy::GlobalSplit::kEven}) {
              Diagnostics w;
              strategy::IterationLoads loads(t, one_layer_model(4, G), N, "t.json", w, split, 7);
              std::vector<double> total;
              std::vector<std::vector<double>> micro;
              loads.load(0, total, micro);
              INFO("M ", M, " S ", S, " per_source ", per_source, " N ", N, " G ", G);
              REQUIRE(static_cast<int>(micro.size()) == G);
              std::vector<double> summed(total.size(), 0.0);
              // A multinomial split draws how many of a global count each GPU gets: per GPU only the
              // expectation is 8, the sum over GPUs exact.
              const bool exact_per_gpu = per_source || split == strategy::GlobalSplit::kEven;
              for (int j = 0; j < G; ++j) {
                for (int g = 0; g < N && exact_per_gpu; ++g)
                  CHECK(sum(std::span<const double>(micro[j]).subspan(static_cast<size_t>(g) * 4, 4)) ==
                        doctest::Approx(8.0).epsilon(1e-12));
                CHECK(sum(micro[j]) == doctest::Approx(8.0 * N).epsilon(1e-12));
                for (size_t i = 0; i < total.size(); ++i) summed[i] += micro[j][i];
              }
              for (size_t i = 0; i < total.size(); ++i) CHECK(summed[i] == doctest::Approx(total[i]).epsilon(1e-12));
            }
      }
}

namespace {

// The tiny model (8 experts, top-2, 2 x 1024 tokens per GPU and micro-batch) with 2 micro-batches,
// 16 experts when `experts` says so (SmartMoE needs 2 per GPU).
workload::ModelSpec tiny_ga2(int experts = 8) {
  return workload::load_model(fmt::format("schema: hecate-sim/model@1\nname: tiny\nlayers: 2\nd_model: 512\n"
                                          "d_ffn: 1024\nexperts: {}\ntop_k: 2\nheads: 8\nseq_len: 1024\n"
                                          "micro_batch: 2\ngrad_accum: 2\n",
                                          experts),
                              "tiny.yaml");
}

// One micro-batch of the tiny model on 8 GPUs, counts[layer][gpu][expert]: layer 0 has every source
// send 2048 of its 4096 assignments (one per token, the cap) to expert `hot` and 2048/7 to each
// other expert; layer 1 is uniform (512 per expert).
std::vector<double> hot_micro_batch(int hot) {
  std::vector<double> v = test::uniform_loads(2, 8, 8, 4096);
  for (int g = 0; g < 8; ++g)
    for (int e = 0; e < 8; ++e) v[static_cast<size_t>(g) * 8 + e] = e == hot ? 2048 : 2048.0 / 7;
  return v;
}

std::vector<double> plus(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> s(a.size());
  for (size_t i = 0; i < a.size(); ++i) s[i] = a[i] + b[i];
  return s;
}

double component(const strategy::IterationResult& r, strategy::Component c) { return r.breakdown[static_cast<int>(c)]; }

}  // namespace

TEST_CASE("EP: two micro-batches with mirrored skew straggle more than their summed counts say") {
  // Micro-batch 0 sends half of every source's assignments to expert 0 (GPU 0), micro-batch 1 to
  // expert 7 (GPU 7). Per micro-batch the busiest GPU computes 8 x 2048 = 16384 tokens of layer 0.
  // The summed counts, divided by grad_accum, give GPU 0 and GPU 7 each 8 x (2048 + 2048/7) / 2 =
  // 9362.3 tokens in both micro-batches: sum over micro-batches of the busiest GPU (2 x 16384) >
  // busiest GPU of the sum (2 x 9362.3). Layer 1 is uniform, 4096 tokens per GPU and micro-batch.
  // Expert work on the critical path is each micro-batch's busiest GPU's forward and backward:
  //   per micro-batch: 2 x [F(16384) + B(16384)] + 2 x [F(4096) + B(4096)]
  //   summed:          2 x [F(9362.3) + B(9362.3)] + 2 x [F(4096) + B(4096)]
  const auto m = tiny_ga2();
  const auto t = test::node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  auto ep = strategy::make_strategy(strategy::parse_strategy_spec("ep"), ctx);
  const std::vector<std::vector<double>> micro{hot_micro_batch(0), hot_micro_batch(7)};
  const auto total = plus(micro[0], micro[1]);
  const auto per_mb = ep->simulate(strategy::IterationCounts{total, micro});
  const auto summed = ep->simulate(total);
  auto fb = [&](double tokens) {
    const std::vector<double> v{tokens};
    return cc.expert_forward(v).value() + cc.expert_backward(v).value();
  };
  const double skewed = 8 * 2048.0, spread = 8 * (2048 + 2048.0 / 7) / 2;
  const double on_path_mb = component(per_mb, strategy::Component::kExpertCompute) +
                            component(per_mb, strategy::Component::kStragglerWait);
  const double on_path_sum = component(summed, strategy::Component::kExpertCompute) +
                             component(summed, strategy::Component::kStragglerWait);
  CHECK(on_path_mb == hs::test::approx(2 * fb(skewed) + 2 * fb(4096)));
  CHECK(on_path_sum == hs::test::approx(2 * fb(spread) + 2 * fb(4096)));
  CHECK(component(per_mb, strategy::Component::kStragglerWait) > component(summed, strategy::Component::kStragglerWait));
  CHECK(per_mb.time > summed.time);
  double parts = 0;
  for (double x : per_mb.breakdown) parts += x;
  CHECK(parts == hs::test::approx(per_mb.time));
  // The oracle spreads each micro-batch evenly: the same time either way (balanced).
  auto oracle = strategy::make_strategy(strategy::parse_strategy_spec("oracle"), ctx);
  CHECK(oracle->simulate(strategy::IterationCounts{total, micro}).time == hs::test::approx(oracle->simulate(total).time));
}

TEST_CASE("FasterMoE decides its shadows per micro-batch, as FastMoE per forward call") {
  // With the mirrored micro-batches each forward call has one hot expert (0, then 7): shadowing it
  // drops the busiest GPU from 16384 tokens to 2341 for one broadcast (~10 us against ~0.7 ms,
  // fastermoe_test's figures), so one shadow per micro-batch of layer 0; shadowed_per_layer reports
  // the last micro-batch's. From the summed counts every micro-batch sees experts 0 and 7 equally hot
  // (9362 tokens each, the rest 2341): shadowing 0 (first of the tie) leaves GPU 7 at 9362, the
  // modelled latency does not fall, and FastMoE's greedy policy stops there: no shadow at all.
  const auto m = tiny_ga2();
  const auto t = test::node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  const std::vector<std::vector<double>> micro{hot_micro_batch(0), hot_micro_batch(7)};
  const auto total = plus(micro[0], micro[1]);
  auto fm = strategy::make_strategy(strategy::parse_strategy_spec("fastermoe"), ctx);
  const auto per_mb = fm->simulate(strategy::IterationCounts{total, micro});
  CHECK(test::resolved_json(*fm, "shadowed_per_layer") == "[1, 0]");
  CHECK(test::resolved_json(*fm, "shadowed_max_per_layer") == "[1, 0]");
  // Memory: one shadow's parameters (the most any micro-batch holds) plus one expert's gradient.
  const double expert_bytes = 2.0 * 512 * 1024 * m.precision.param_bytes;
  CHECK(per_mb.memory.copy_params == hs::test::approx(expert_bytes));
  CHECK(per_mb.memory.copy_grads == hs::test::approx(2.0 * 512 * 1024 * m.precision.grad_bytes));
  auto again = strategy::make_strategy(strategy::parse_strategy_spec("fastermoe"), ctx);
  again->simulate(total);
  CHECK(test::resolved_json(*again, "shadowed_per_layer") == "[0, 0]");
}

TEST_CASE("property: micro-batches that are equal give exactly the summed counts' results, every strategy") {
  // Routing is linear in the counts for a fixed placement, and halving is exact in binary floating
  // point: micro-batches of total / 2 each must reproduce the iteration-only path bit for bit, for
  // every strategy over several iterations (the stateful ones re-plan from the same history).
  const auto m = tiny_ga2(16);
  const auto t = test::node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  const int L = 2, n = 8, E = 16;
  for (const std::string spec : {"ep", "oracle", "fssdp", "fssdp:calibrate=true:window=2:reshard_every=3", "smartmoe:period=2",
                                 "flexmoe:period=2", "fastermoe", "fsdp", "bound"}) {
    INFO(spec);
    auto a = strategy::make_strategy(strategy::parse_strategy_spec(spec), ctx);
    auto b = strategy::make_strategy(strategy::parse_strategy_spec(spec), ctx);
    for (int it = 0; it < 7; ++it) {
      // A skew that moves with the iteration and the layer: per micro-batch source g sends 2048 of its
      // 4096 assignments to expert (g (l + 1) + it) mod E, 2048/15 to each other; two micro-batches.
      std::vector<double> total(static_cast<size_t>(L) * n * E, 2 * 2048.0 / 15);
      for (int l = 0; l < L; ++l)
        for (int g = 0; g < n; ++g) total[(static_cast<size_t>(l) * n + g) * E + (g * (l + 1) + it) % E] = 2 * 2048.0;
      std::vector<std::vector<double>> micro(2, total);
      for (auto& v : micro)
        for (double& c : v) c /= 2;
      const auto ra = a->simulate(total);
      const auto rb = b->simulate(strategy::IterationCounts{total, micro});
      CHECK(ra.time == rb.time);
      CHECK(ra.breakdown == rb.breakdown);
      CHECK(ra.memory.total() == rb.memory.total());
      CHECK(ra.bottleneck_gpu == rb.bottleneck_gpu);
    }
  }
}
