#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "support/make_named.hpp"
#include "collective/analytic_network.hpp"
#include "collective/sparse_plan.hpp"
#include "strategy/policy/ep/ep.hpp"
#include "strategy/policy/fastermoe/fastermoe.hpp"
#include "strategy/layer_plan.hpp"
#include "support/resolved_setting.hpp"
#include "support/test_platforms.hpp"
#include "util/diagnostics.hpp"
#include "support/approx.hpp"

using namespace hs;

namespace {
using test::uniform_loads;
// The tiny model (d_model 512, 8 experts of d_ffn 1024, plain MLP, top-2) on 8 GPUs of one switch.
struct Tiny {
  workload::ModelSpec m = test::tiny_moe_model();
  topology::Topology t = test::node8();
  cost::ComputeCost cc{t.gpu_model(), m};
  strategy::Context ctx{t, m, cc, 1};
};
// Layer 0: every source sends 2048 assignments to expert 0 and 2048/7 to each of experts 1..7;
// layer 1 uniform (4096 per GPU).
std::vector<double> one_hot_expert() {
  std::vector<double> hot = uniform_loads(2, 8, 8, 4096);
  for (int g = 0; g < 8; ++g)
    for (int e = 0; e < 8; ++e) hot[(0 * 8 + g) * 8 + e] = e == 0 ? 2048 : 2048.0 / 7;
  return hot;
}
struct Events : strategy::TimelineSink {
  std::vector<strategy::TimelineEvent> all;
  void event(const strategy::TimelineEvent& e) override { all.push_back(e); }
  double duration(const std::string& name) const {  // of the first event with that name
    for (const auto& e : all)
      if (e.name == name) return e.end - e.start;
    return -1;
  }
};
using test::resolved_json;
}  // namespace

TEST_CASE("FastMoE's policy: shadow the next hottest expert while the modelled latency falls") {
  // One expert per GPU, comp = 1 us per token, no token transfer cost (feat = 0).
  // counts {1000, 100, 100, 100}, model = 1 ms:
  //   base = 3 * 1e-6 * 1000                  = 3.0 ms
  //   shadow expert 0: B = 100 -> 0.3 + 1     = 1.3 ms < 3.0   taken
  //   shadow expert 1: B = 100 -> 0.3 + 2     = 2.3 ms > 1.3   stop
  strategy::ShadowCostModel cm{1e-6, 0.0, 1e-3};
  std::vector<double> a{1000, 100, 100, 100};
  CHECK(strategy::fastermoe_shadow_policy(a, 1, cm) == std::vector<int>{0});
  // counts {900, 1000, 100, 100}, model = 0.1 ms: expert 1 first (hottest), then 0, then stop:
  //   base 3.0; shadow 1: B = 900 -> 2.7 + 0.1 = 2.8 < 3.0; shadow 0: B = 100 -> 0.3 + 0.2 = 0.5 < 2.8;
  //   shadow 2: B = 100 (expert 3) -> 0.3 + 0.3 = 0.6 > 0.5: stop.
  cm.model = 1e-4;
  std::vector<double> b{900, 1000, 100, 100};
  CHECK(strategy::fastermoe_shadow_policy(b, 1, cm) == std::vector<int>{1, 0});
  // Token transfers count 4x per token: with feat = 1 us, base = (3 + 4) * 1000 us = 7 ms, shadowing
  // expert 0 gives 0.7 + 0.1 ms; so does {0, 1} at 0.7 + 0.2 (no gain): stop after one.
  cm.feat = 1e-6;
  CHECK(strategy::fastermoe_shadow_policy(a, 1, cm) == std::vector<int>{0});
  // Equal loads: shadowing never lowers the largest load, so nothing is shadowed, even for free.
  cm.model = 0;
  CHECK(strategy::fastermoe_shadow_policy(std::vector<double>{100, 100, 100, 100}, 1, cm).empty());
  // Free broadcasts and falling loads: everything but the last expert of the order (as the source).
  CHECK(strategy::fastermoe_shadow_policy(std::vector<double>{400, 300, 200, 100}, 1, cm) == std::vector<int>{0, 1, 2});
  // Two experts per GPU: B is the GPU's load. {500, 500 | 400, 10}: GPU loads 1000 and 410.
  //   shadow expert 0 (ties: lower id first): GPU 0 = 500 -> lower; expert 1: GPU 0 = 0, B = 410 -> lower;
  //   expert 2: B = 10 -> lower; the last one (3) is never shadowed.
  CHECK(strategy::fastermoe_shadow_policy(std::vector<double>{500, 500, 400, 10}, 2, cm) == std::vector<int>{0, 1, 2});
  // A single GPU has nobody to shadow to.
  CHECK(strategy::fastermoe_shadow_policy(std::vector<double>{500, 10}, 2, cm).empty());
}

TEST_CASE("EP routing with shadows conserves tokens: each computed once, shadowed ones locally") {
  // 8 GPUs, 8 experts, EP over all: expert 0 shadowed.
  const int n = 8, E = 8;
  std::vector<double> counts(n * E);
  for (int s = 0; s < n; ++s)
    for (int e = 0; e < E; ++e) counts[s * E + e] = 10 * (s + 1) + e;
  std::vector<char> mask(E, 0);
  mask[0] = 1;
  strategy::LayerPlan p;
  strategy::route_ep_layer(counts.data(), n, E, n, 4.0, mask, p);
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  double computed = 0, received = 0;
  for (int g = 0; g < n; ++g) {
    computed += std::accumulate(p.expert_tokens[g].begin(), p.expert_tokens[g].end(), 0.0);
    computed += std::accumulate(p.shadow_tokens[g].begin(), p.shadow_tokens[g].end(), 0.0);
    received += p.received_tokens[g];
    // GPU g computes its own tokens of expert 0 and nothing else as a shadow.
    CHECK(p.shadow_tokens[g][0] == counts[g * E]);
    // Nothing is sent towards expert 0's owner for expert 0: GPU 0 hosts only expert 0.
    if (g != 0) CHECK(p.dispatch_bytes[g * n + 0] == 0);
  }
  CHECK(computed == total);
  CHECK(received == total);
  CHECK(p.expert_tokens[0][0] == 0);
  // GPU 1 (expert 1) still receives every source's tokens: sum_s (10 (s + 1) + 1) * 4 bytes.
  for (int s = 0; s < n; ++s) CHECK(p.dispatch_bytes[s * n + 1] == (10.0 * (s + 1) + 1) * 4.0);
}

TEST_CASE("FasterMoE with the trigger off is EP, exactly") {
  Tiny x;
  auto& [m, t, cc, ctx] = x;
  auto ep = hs::test::make_named("ep", ctx, {});
  auto off = hs::test::make_named("fastermoe", ctx, {{"trigger", "false"}});
  // No shadow chosen: a shadow pays when (3 comp + 4 feat) x (tokens it takes off the busiest GPU)
  // beats one broadcast. comp and the broadcast both scale with alpha, feat and the broadcast with
  // 1 / bandwidth, so neither knob alone stops it; with alpha = 1e5 and 1 GB/s the broadcast of
  // 1e5 x 2 x 512^2 x 2 B takes ~105 s against a saving of ~(4 x 1024 B / 1 GB/s + 3 comp) x 14043
  // tokens ~ 0.06 s + a few ms. EP's time too.
  auto none = hs::test::make_named("fastermoe", ctx, {{"alpha", "100000"}, {"bandwidth", "1GB/s"}});
  for (const auto& loads : {one_hot_expert(), uniform_loads(2, 8, 8, 4096)}) {
    auto a = ep->simulate(loads);
    auto b = off->simulate(loads);
    auto c = none->simulate(loads);
    CHECK(a.time == b.time);
    CHECK(a.breakdown == b.breakdown);
    CHECK(a.memory.total() == b.memory.total());
    CHECK(resolved_json(*none, "shadowed_per_layer") == "[0, 0]");
    CHECK(c.time == doctest::Approx(a.time).epsilon(1e-12));
    CHECK(c.memory.total() == a.memory.total());
  }
}

TEST_CASE("one hot expert is shadowed: broadcast on the critical path, its tokens stay local") {
  Tiny x;  // 2 x 512 x 1024 weights per expert
  auto& [m, t, cc, ctx] = x;
  auto ep = hs::test::make_named("ep", ctx, {});
  auto fm = hs::test::make_named("fastermoe", ctx, {});
  // Policy inputs (auto): bandwidth = a GPU's route to its neighbour, 200 GB/s; alpha = 1024 / 512 = 2.
  CHECK(resolved_json(*fm, "bandwidth") == "200000000000");
  CHECK(resolved_json(*fm, "alpha") == "2");
  // Layer 0: GPU 0 hosts expert 0 and computes 8 x 2048 = 16384 tokens, the others 8 x 2048 / 7 = 2341.
  // feat = 512 x 2 B / 200 GB/s = 5.1 ns, model = 2 x 2 x 512^2 x 2 B / 200 GB/s = 10.5 us; comp is
  // ~2 x 2 x 2 x 512^2 / (a few 100 TFLOP/s) ~ 0.01 us. Shadowing expert 0 drops B from 16384 to
  // 2341: saves ~(3 x 0.01 + 4 x 0.005) us x 14043 ~ 0.7 ms for 10.5 us; the next expert leaves B at
  // 2341 and costs another broadcast: one shadow. Layer 1 is uniform: none.
  Events ev;
  fm->record_next(&ev);
  auto r = fm->simulate(one_hot_expert());
  CHECK(resolved_json(*fm, "shadowed_per_layer") == "[1, 0]");
  // The broadcast is expert 0's parameters from GPU 0 to the 7 others (a chain), alone on the network
  // after the dispatch: the time the analytic tier gives that coflow.
  const double expert_bytes = 2.0 * 512 * 1024 * 2;
  std::vector<int> node_of(8, 0);
  collective::SparsePlacement shadow{{0}, {{1, 2, 3, 4, 5, 6, 7}}};
  // The chain 0 -> 1 -> ... -> 7 is pipelined: its first bytes cross 7 hops in turn, so it pays 7 route
  // latencies where the coflow alone charges one: + 6 x lambda.
  collective::AnalyticNetwork net(t);
  const double lambda = t.route(0, 1).latency.value();
  const double bcast = net.coflow_time(collective::sparse_allgather(shadow, expert_bytes, node_of)) + 6 * lambda;
  CHECK(bcast > 0);
  CHECK(ev.duration("shadow broadcast fwd block 0 mb0") == doctest::Approx(bcast).epsilon(1e-9));
  // Its gradients return in the mirror reduce (grads in the parameters' precision here); summing at
  // each hop caps a transfer at HBM / 3, far above the 200 GB/s links here, so the links decide.
  CHECK(ev.duration("shadow grad reduce bwd block 0 mb0") ==
        hs::test::approx(net.coflow_time(collective::sparse_reduce_scatter(shadow, expert_bytes, node_of)) + 6 * lambda)
            .epsilon(1e-9));
  // The dispatch carries EP's bytes less expert 0's remote tokens: each source keeps its 2048 and
  // sends 2048/7 (x 2 B x 512) to each other GPU.
  std::vector<double> bytes(64, 0.0);
  for (int s = 0; s < 8; ++s)
    for (int d = 1; d < 8; ++d) bytes[s * 8 + d] = 2048.0 / 7 * 512 * 2;
  CHECK(ev.duration("dispatch fwd block 0 mb0") == doctest::Approx(net.alltoallv_time(bytes, false)).epsilon(1e-9));
  // Every GPU computes its 2048 tokens of expert 0 locally (the hot GPU no longer straggles).
  CHECK(ev.duration("fwd mb0 block 0 shadow experts") == hs::test::approx(cc.expert_forward(std::vector<double>{2048.0}).value()));
  auto e = ep->simulate(one_hot_expert());
  CHECK(r.time < e.time);
  // Shadow buffers: the shadowed expert's parameters on every GPU plus one expert's gradient.
  CHECK(r.memory.copy_params == hs::test::approx(expert_bytes));
  CHECK(r.memory.copy_grads == hs::test::approx(2.0 * 512 * 1024 * m.precision.grad_bytes));
  CHECK(e.memory.copy_params + e.memory.copy_grads == 0);
  // The breakdown still sums to the iteration time, the broadcast in exposed_spag at most.
  double sum = 0;
  for (double x : r.breakdown) sum += x;
  CHECK(sum == hs::test::approx(r.time));
  CHECK(r.breakdown[static_cast<int>(strategy::Component::kExposedSpag)] <= bcast * (1 + 1e-9));
}

TEST_CASE("relabelling experts does not change FasterMoE's iteration") {
  Tiny x;
  auto& [m, t, cc, ctx] = x;
  auto a = hs::test::make_named("fastermoe", ctx, {});
  auto b = hs::test::make_named("fastermoe", ctx, {});
  // Distinct, skewed loads (no ties), then the same with expert e renamed 7 - e and, as experts live
  // on the GPU of their number, GPU s renamed 7 - s (on one switch every GPU is alike).
  std::vector<double> loads(2 * 8 * 8), relabelled(loads.size());
  for (int l = 0; l < 2; ++l)
    for (int s = 0; s < 8; ++s)
      for (int e = 0; e < 8; ++e) loads[(l * 8 + s) * 8 + e] = 4096.0 * (e + 1 + l) * (e + 1 + l) / 300 + s;
  for (int l = 0; l < 2; ++l)
    for (int s = 0; s < 8; ++s)
      for (int e = 0; e < 8; ++e) relabelled[(l * 8 + (7 - s)) * 8 + (7 - e)] = loads[(l * 8 + s) * 8 + e];
  auto ra = a->simulate(loads);
  auto rb = b->simulate(relabelled);
  CHECK(resolved_json(*a, "shadowed_per_layer") == resolved_json(*b, "shadowed_per_layer"));
  CHECK(resolved_json(*a, "shadowed_per_layer") != "[0, 0]");
  CHECK(ra.time == doctest::Approx(rb.time).epsilon(1e-9));
  CHECK(ra.memory.total() == hs::test::approx(rb.memory.total()));
}

TEST_CASE("FasterMoE knobs: overrides reach the policy, bad values are located input errors") {
  Tiny x;
  auto& [m, t, cc, ctx] = x;
  auto fm = strategy::make_strategy(strategy::parse_strategy_spec("fastermoe:bandwidth=100Gbps:gemm_throughput=50TFLOPS:alpha=4"), ctx);
  CHECK(resolved_json(*fm, "bandwidth") == "12500000000");
  CHECK(resolved_json(*fm, "gemm_throughput") == "50000000000000");
  CHECK(resolved_json(*fm, "alpha") == "4");
  CHECK_THROWS_AS(strategy::make_strategy(strategy::parse_strategy_spec("fastermoe:bandwidth=fast"), ctx), InputError);
  CHECK_THROWS_AS(strategy::make_strategy(strategy::parse_strategy_spec("fastermoe:bandwidth=0Gbps"), ctx), InputError);
  CHECK_THROWS_AS(strategy::make_strategy(strategy::parse_strategy_spec("fastermoe:gemm_throughput=10GB/s"), ctx), InputError);
  CHECK_THROWS_AS(strategy::make_strategy(strategy::parse_strategy_spec("fastermoe:alpha=-1"), ctx), InputError);
  CHECK_THROWS_AS(strategy::make_strategy(strategy::parse_strategy_spec("fastermoe:trigger=maybe"), ctx), InputError);
  // Experts that cannot be spread over the GPUs: EP's error.
  auto m6 = m;
  m6.experts = 6;
  cost::ComputeCost cc6(t.gpu_model(), m6);
  strategy::Context ctx6{t, m6, cc6, 1};
  CHECK_THROWS_AS(hs::test::make_named("fastermoe", ctx6, {}), InputError);
}
