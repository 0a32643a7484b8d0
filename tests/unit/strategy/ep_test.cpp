#include <doctest/doctest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "support/make_named.hpp"
#include "strategy/policy/ep/ep.hpp"
#include "strategy/runner.hpp"
#include "topology/topology_builder.hpp"
#include "support/test_platforms.hpp"
#include "workload/model_spec.hpp"
#include "support/approx.hpp"

using namespace hs;

namespace {
workload::ModelSpec small_model() { return test::tiny_moe_model(); }
using test::node8;
// loads[layer][gpu][expert]: every GPU routes its 2048 tokens x top-2 = 4096 assignments.
using test::uniform_loads;
}  // namespace

TEST_CASE("EP equals the balanced oracle when loads are uniform") {
  auto m = small_model();
  auto t = node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  auto ep = hs::test::make_named("ep", ctx, {});
  auto oracle = hs::test::make_named("oracle", ctx, {});
  auto loads = uniform_loads(2, 8, 8, 4096);
  auto a = ep->simulate(loads);
  auto b = oracle->simulate(loads);
  CHECK(a.time == hs::test::approx(b.time));
  CHECK(a.breakdown[static_cast<int>(strategy::Component::kStragglerWait)] == doctest::Approx(0).epsilon(1e-12));
  // The breakdown sums to the iteration time (critical path with no gaps).
  double sum = 0;
  for (double x : a.breakdown) sum += x;
  CHECK(sum == hs::test::approx(a.time));
}

TEST_CASE("EP straggling: the MoE phase lasts as long as the most loaded GPU's work") {
  auto m = small_model();
  auto t = node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  auto ep = hs::test::make_named("ep", ctx, {});
  // Layer 0: every source sends 2048 assignments (one per token, the cap) to expert 0, which lives
  // on GPU 0 (8 experts / 8 GPUs), and spreads its other 2048 over experts 1..7. GPU 0 computes
  // 8 x 2048 = 16384 tokens, the others 8 x 2048/7 each. Layer 1 is uniform: 4096 tokens per GPU.
  std::vector<double> hot = uniform_loads(2, 8, 8, 4096);
  for (int g = 0; g < 8; ++g)
    for (int e = 0; e < 8; ++e) hot[(0 * 8 + g) * 8 + e] = e == 0 ? 2048 : 2048.0 / 7;
  auto r = ep->simulate(hot);
  auto base = ep->simulate(uniform_loads(2, 8, 8, 4096));
  CHECK(r.time > base.time);
  CHECK(r.bottleneck_gpu == 0);
  // Expert work on the critical path = GPU 0's layer-0 fwd + bwd (16384 tokens) + layer 1's (4096).
  std::vector<double> t0{16384.0}, uni{4096.0};
  const double expected = cc.expert_forward(t0).value() + cc.expert_backward(t0).value() +
                          cc.expert_forward(uni).value() + cc.expert_backward(uni).value();
  const double expert_on_path = r.breakdown[static_cast<int>(strategy::Component::kExpertCompute)] +
                                r.breakdown[static_cast<int>(strategy::Component::kStragglerWait)];
  CHECK(expert_on_path == hs::test::approx(expected));
  // The straggler wait is the excess over the mean GPU (mean of layer 0: 2 of 8 GPUs busy).
  CHECK(r.breakdown[static_cast<int>(strategy::Component::kStragglerWait)] > 0);
}

TEST_CASE("tokens are conserved from loads to expert work, and relabelling sources changes nothing") {
  auto m = small_model();
  auto t = node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  auto ep = hs::test::make_named("ep", ctx, {});
  std::vector<double> loads = uniform_loads(2, 8, 8, 4096);
  for (int g = 0; g < 8; ++g)
    for (int e = 0; e < 8; ++e) loads[(1 * 8 + g) * 8 + e] = (e == g % 8) ? 1024 : 3072.0 / 7;
  auto a = ep->simulate(loads);
  // Relabel GPUs 2 <-> 5 (sources and the experts they host, expert e lives on GPU e): the same
  // work on a symmetric node gives the same time.
  std::vector<double> swapped = loads;
  for (int l = 0; l < 2; ++l) {
    for (int e = 0; e < 8; ++e) std::swap(swapped[(l * 8 + 2) * 8 + e], swapped[(l * 8 + 5) * 8 + e]);
    for (int g = 0; g < 8; ++g) std::swap(swapped[(l * 8 + g) * 8 + 2], swapped[(l * 8 + g) * 8 + 5]);
  }
  auto b = ep->simulate(swapped);
  CHECK(a.time == hs::test::approx(b.time));
}

TEST_CASE("bad strategy specs are bad input") {
  CHECK(strategy::parse_strategy_spec("fssdp:window=10:rematerialize=true").knobs.size() == 2);
  CHECK_THROWS_AS(strategy::parse_strategy_spec("ep:window"), InputError);
  CHECK_THROWS_AS(strategy::parse_strategy_spec(":x=1"), InputError);
  auto m = small_model();
  auto t = node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  CHECK_THROWS_AS(strategy::make_strategy(strategy::parse_strategy_spec("nope"), ctx), InputError);
  CHECK_THROWS_AS(strategy::make_strategy(strategy::parse_strategy_spec("ep:windw=3"), ctx), InputError);
  CHECK_THROWS_AS(strategy::make_strategy(strategy::parse_strategy_spec("ep:ep_size=3"), ctx), InputError);
}

TEST_CASE("percentiles interpolate between ranks") {
  // numpy.percentile([1,2,3,4], 50) = 2.5; 99 -> 3.97.
  CHECK(strategy::percentile({4, 1, 3, 2}, 0.5) == hs::test::approx(2.5));
  CHECK(strategy::percentile({4, 1, 3, 2}, 0.99) == hs::test::approx(3.97));
}
