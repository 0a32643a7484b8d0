#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "strategy/layout_strategy.hpp"
#include "strategy/strategy.hpp"
#include "support/resolved_setting.hpp"
#include "support/test_platforms.hpp"
#include "util/diagnostics.hpp"
#include "layout/parallel_layout.hpp"
#include "support/approx.hpp"

using namespace hs;

namespace {
struct Platform {
  std::string label;
  workload::ModelSpec m;
  topology::Topology t;
  cost::ComputeCost cc;
  strategy::Context ctx;
  Platform(std::string l, workload::ModelSpec model, topology::Topology topo, cost::ComputeParams params = {})
      : label(std::move(l)), m(std::move(model)), t(std::move(topo)), cc(t.gpu_model(), m, params), ctx{t, m, cc, 1} {}
};

// loads[layer][gpu][expert]: every GPU routes `per_gpu` assignments over the experts with skewed,
// random weights (a random power of uniform draws: from near-uniform to one or two hot experts).
std::vector<double> random_loads(std::mt19937& rng, int L, int n, int E, double per_gpu) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> out(static_cast<size_t>(L) * n * E);
  for (int l = 0; l < L; ++l) {
    const double skew = 1 + 8 * u(rng);
    std::vector<double> base(E);
    for (double& b : base) b = std::pow(u(rng), skew) + 1e-3;
    for (int g = 0; g < n; ++g) {
      std::vector<double> w(E);
      double sum = 0;
      for (int e = 0; e < E; ++e) sum += w[e] = base[e] * (0.5 + u(rng));
      for (int e = 0; e < E; ++e) out[(static_cast<size_t>(l) * n + g) * E + e] = std::round(per_gpu * w[e] / sum);
    }
  }
  return out;
}

std::unique_ptr<strategy::Strategy> make(const std::string& spec, const strategy::Context& ctx) {
  return strategy::make_strategy(strategy::parse_strategy_spec(spec), ctx);
}

struct Events : strategy::TimelineSink {
  std::vector<strategy::TimelineEvent> all;
  void event(const strategy::TimelineEvent& e) override { all.push_back(e); }
  double duration(const std::string& name, int gpu) const {
    for (const auto& e : all)
      if (e.name == name && e.gpu == gpu) return e.end - e.start;
    return -1;
  }
};
}  // namespace

TEST_CASE("bound: no registered strategy is faster, over random loads on five platforms") {
  test::ClusterShape two_nodes;  // 2 nodes x 4 GPUs, one 25 GB/s NIC per GPU
  two_nodes.nodes = 2, two_nodes.gpus_per_node = 4, two_nodes.nics = 4, two_nodes.nic_bw = 25e9;
  test::ClusterShape four;  // one node of 4 slow-linked GPUs
  four.gpus_per_node = 4, four.intra_bw = 50e9, four.peak_flops = 100e12;
  std::vector<std::unique_ptr<Platform>> platforms;  // Context refers to its Platform's members: never moved
  platforms.push_back(std::make_unique<Platform>("node8, 16 experts", test::small_moe_model("m16", 16, 2, 1024, 2), test::node8()));
  cost::ComputeParams curve;  // the efficiency curve (GemmModel::kCurve) as well as the tile model
  curve.gemm_model = cost::GemmModel::kCurve;
  platforms.push_back(
      std::make_unique<Platform>("node8, 16 experts, curve", test::small_moe_model("m16", 16, 2, 1024, 2), test::node8(), curve));
  platforms.push_back(std::make_unique<Platform>("2x4 with NICs, 16 experts", test::small_moe_model("m16", 16, 2, 1024, 2),
                         test::make_cluster(two_nodes)));
  platforms.push_back(std::make_unique<Platform>("node4, 8 experts top-1", test::small_moe_model("m8", 8, 1, 512, 4),
                                                 test::make_cluster(four)));
  test::ClusterShape starved = two_nodes;  // one 2 GB/s NIC per node: the traffic floor binds
  starved.nics = 1, starved.nic_bw = 2e9;
  platforms.push_back(std::make_unique<Platform>("2x4, one slow NIC, 16 experts", test::small_moe_model("m16", 16, 2, 1024, 2),
                                                 test::make_cluster(starved)));
  // Token dropping (strategy/capacity.hpp): the bound computes what one instance per expert keeps,
  // the least any strategy keeps (replicas only raise a source's capacity).
  auto dropping = test::small_moe_model("m16", 16, 2, 1024, 2);
  dropping.capacity_factor = 1.0;
  platforms.push_back(std::make_unique<Platform>("node8, 16 experts, capacity_factor 1.0", dropping, test::node8()));
  int traffic_bound = 0;  // iterations where the traffic floor, not the compute graph, is the bound
  std::mt19937 rng(12345);
  for (auto& pp : platforms) {
    Platform& p = *pp;
    const int n = p.t.num_gpus(), E = p.m.experts, L = p.m.moe_layers();
    const double per_gpu = static_cast<double>(p.m.tokens_per_gpu_iteration()) * p.m.top_k;
    std::vector<std::vector<double>> iters;
    for (int i = 0; i < 12; ++i) iters.push_back(random_loads(rng, L, n, E, per_gpu));
    auto bound = make("bound", p.ctx);
    std::vector<double> floor;
    for (const auto& loads : iters) {
      floor.push_back(bound->simulate(loads).time);
      if (std::stod(test::resolved_json(*bound, "traffic_floor_ms")) > std::stod(test::resolved_json(*bound, "compute_floor_ms")))
        ++traffic_bound;
    }
    int compared = 0;
    for (const auto& info : strategy::registry()) {
      const std::string name = info.name;
      if (name == "bound") continue;
      // Short periods so the stateful strategies re-plan (and migrate) within the run.
      std::string spec = name;
      if (name == "smartmoe" || name == "flexmoe") spec += ":period=3:window=2";
      if (name == "fssdp") spec += ":window=2:reshard_every=4";
      auto s = make(spec, p.ctx);
      for (size_t i = 0; i < iters.size(); ++i) {
        const double t = s->simulate(iters[i]).time;
        INFO(p.label, ": ", spec, " iteration ", i, " time ", t, " bound ", floor[i]);
        CHECK(floor[i] <= t * (1 + 1e-12));
      }
      ++compared;
    }
    CHECK(compared == static_cast<int>(strategy::registry().size()) - 1);
  }
  // Whether the traffic floor ever binds here: since the graph reduces the dense gradients in DDP's
  // buckets (the embeddings' last, after the backward, exposed on the slow NIC), the compute floor's
  // graph stays above the traffic floor on these platforms (on the slow NIC 62 vs 45-48 ms); the
  // property above holds either way. TrafficFloorModel's own tests check the floor's bytes.
  MESSAGE("iterations where the traffic floor bound: ", traffic_bound);
}

TEST_CASE("bound: uniform loads give the oracle's expert compute, and never more time") {
  // With the efficiency curve the two are equal; with the tile model (below) the bound's GPU runs
  // 1/8 of one launch over all 16 experts, whose waves quantize no worse than the oracle's 2 experts.
  cost::ComputeParams curve;
  curve.gemm_model = cost::GemmModel::kCurve;
  Platform p("node8", test::small_moe_model("m16", 16, 2, 1024, 2), test::node8(), curve);
  const double per_gpu = static_cast<double>(p.m.tokens_per_gpu_iteration()) * p.m.top_k;
  const auto loads = test::uniform_loads(p.m.moe_layers(), 8, 16, per_gpu);
  auto bound = make("bound", p.ctx), oracle = make("oracle", p.ctx);
  Events eb, eo;
  bound->record_next(&eb);
  oracle->record_next(&eo);
  const auto rb = bound->simulate(loads), ro = oracle->simulate(loads);
  for (const char* task : {"fwd mb0 block 0 experts", "bwd mb0 block 1 experts"})
    for (int g : {0, 5}) {
      INFO(task, " gpu ", g);
      CHECK(eb.duration(task, g) > 0);
      CHECK(eb.duration(task, g) == doctest::Approx(eo.duration(task, g)).epsilon(1e-9));
    }
  const auto ec = static_cast<size_t>(strategy::Component::kExpertCompute);
  CHECK(rb.breakdown[ec] == doctest::Approx(ro.breakdown[ec]).epsilon(1e-9));
  CHECK(rb.breakdown[static_cast<size_t>(strategy::Component::kStragglerWait)] == hs::test::approx(0.0));
  CHECK(rb.time <= ro.time);
  CHECK(rb.breakdown[static_cast<size_t>(strategy::Component::kAllToAll)] <= ro.breakdown[static_cast<size_t>(strategy::Component::kAllToAll)]);
}

TEST_CASE("bound: uniform loads, tile model: the bound's expert compute is at most the oracle's") {
  Platform p("node8", test::small_moe_model("m16", 16, 2, 1024, 2), test::node8());
  const double per_gpu = static_cast<double>(p.m.tokens_per_gpu_iteration()) * p.m.top_k;
  const auto loads = test::uniform_loads(p.m.moe_layers(), 8, 16, per_gpu);
  auto bound = make("bound", p.ctx), oracle = make("oracle", p.ctx);
  const auto rb = bound->simulate(loads), ro = oracle->simulate(loads);
  const auto ec = static_cast<size_t>(strategy::Component::kExpertCompute);
  CHECK(rb.breakdown[ec] > 0);
  CHECK(rb.breakdown[ec] <= ro.breakdown[ec] * (1 + 1e-12));
  CHECK(rb.time <= ro.time);
}

TEST_CASE("bound: one hot expert, worked by hand") {
  // Tiny model (d_model 512, d_ffn 1024, plain MLP: 2 matrices, top-2, 8 experts) on node8
  // (300 TFLOP/s, 2 TB/s HBM, no SM count named: 132), one micro-batch, the tile/wave model
  // (128 x 128 tiles, eta_tile 0.79, k_fill 272, 12.5 us per launch). Layer 0: all 8 GPUs send their
  // 4096 assignments to expert 0, so c_0 = 32768 and the other experts have none.
  //   Up [32768 x 512] x [512 x 1024]: 256 x 8 = 2048 tiles, ceil(2048 / 132) = 16 waves of
  //     2 x 128^2 x (512 + 272) x 132 / (0.79 x 300e12) = 14.31 us: 228.9 us; HBM (1 MiB of weights
  //     + 32768 x (512 + 1024) x 2 B) / (0.85 x 2 TB/s) = 59.8 us does not bind.
  //   Down [32768 x 1024] x [1024 x 512]: 256 x 4 = 1024 tiles, 8 waves of (1024 + 272): 8 x 23.65 us
  //     = 189.2 us. G = 418.2 us, plus two launches of 12.5 us.
  //   EP computes it all on GPU 0: 25 + 418.2 us. Every GPU of the bound: the launches whole and
  //   1/8 of G: 25 + 52.27 us. The oracle gives each GPU one expert of 4096 tokens: 256 and 128
  //   tiles, 2 + 1 waves = 25 + 2 x 14.31 + 23.65 us, the same 77.27 us.
  //   Each adds the GeLU kernel (ComputeCost::activation), 2 x 1024 x 2 B per token at 0.85 x 2 TB/s
  //   plus a 5 us launch: EP 32768 tokens = 78.95 us + 5 us; the oracle 4096 = 9.87 + 5 us; a bound
  //   GPU its launch and 1/8 of EP's bytes, 5 + 9.87 us.
  workload::ModelSpec m = test::tiny_moe_model();
  topology::Topology t = test::node8();
  cost::ComputeCost cc{t.gpu_model(), m};
  strategy::Context ctx{t, m, cc, 1};
  auto loads = test::uniform_loads(2, 8, 8, 4096);
  for (int g = 0; g < 8; ++g)
    for (int e = 0; e < 8; ++e) loads[(0 * 8 + g) * 8 + e] = e == 0 ? 4096 : 0;
  const double wave_up = 2.0 * 128 * 128 * (512 + 272) * 132 / (0.79 * 300e12);
  const double wave_down = 2.0 * 128 * 128 * (1024 + 272) * 132 / (0.79 * 300e12);
  const double gemm = 16 * wave_up + 8 * wave_down, calls = 2 * 12.5e-6;
  CHECK(gemm == doctest::Approx(418.2e-6).epsilon(1e-3));
  const double act_bytes = 2.0 * 1024 * 2 / (0.85 * 2e12);  // seconds per token
  const double expected = calls + gemm / 8 + 5e-6 + 32768 * act_bytes / 8;
  CHECK(expected == doctest::Approx(77.27e-6 + 14.87e-6).epsilon(1e-3));
  auto bound = make("bound", ctx), ep = make("ep", ctx), oracle = make("oracle", ctx);
  Events eb, ee, eo;
  bound->record_next(&eb);
  ep->record_next(&ee);
  oracle->record_next(&eo);
  const double tb = bound->simulate(loads).time, te = ep->simulate(loads).time, to = oracle->simulate(loads).time;
  for (int g : {0, 3, 7}) CHECK(eb.duration("fwd mb0 block 0 experts", g) == doctest::Approx(expected).epsilon(1e-9));
  CHECK(ee.duration("fwd mb0 block 0 experts", 0) == doctest::Approx(calls + gemm + 5e-6 + 32768 * act_bytes).epsilon(1e-9));
  CHECK(eo.duration("fwd mb0 block 0 experts", 0) ==
        doctest::Approx(calls + 2 * wave_up + wave_down + 5e-6 + 4096 * act_bytes).epsilon(1e-9));
  // No token leaves its GPU in the bound; EP and the oracle send 7/8 of theirs.
  CHECK(tb < to);
  CHECK(to < te);
}

TEST_CASE("bound: takes no knobs") {
  workload::ModelSpec m = test::tiny_moe_model();
  topology::Topology t = test::node8();
  cost::ComputeCost cc{t.gpu_model(), m};
  strategy::Context ctx{t, m, cc, 1};
  CHECK_THROWS_AS(make("bound:ep_size=4", ctx), InputError);
  const auto* info = strategy::find_strategy("bound");
  REQUIRE(info != nullptr);
  CHECK(std::string(info->help).find("lower bound") != std::string::npos);
}

namespace {
workload::ParallelLayout parse_layout(const std::string& text, const Platform& p) {
  const SourceLocation src{"--layout", 0, 0};
  auto l = workload::parse_parallel_layout(text, src);
  workload::resolve_layout(l, p.t.num_gpus(), p.t.num_gpus() / p.t.num_nodes(), p.m, src);
  return l;
}
std::unique_ptr<strategy::Strategy> make_under(const std::string& spec, const Platform& p, const workload::ParallelLayout& l) {
  return strategy::make_layout_strategy(strategy::parse_strategy_spec(spec), p.ctx, l);
}
}  // namespace

TEST_CASE("bound under a layout: no strategy under the same layout is faster, over random loads and layouts") {
  // Strategies under a layout share the layout's TP / PP / DP tasks; the bound keeps them and puts
  // each stage's expert work at its floor (see strategy/policy/bound/layout_bound.cpp), so it must be <= every
  // strategy built under the layout that computes the tokens' real experts (all but the oracle, a
  // reference that evens the experts' counts out: the next test), iteration by iteration.
  test::ClusterShape two_nodes;
  two_nodes.nodes = 2, two_nodes.gpus_per_node = 4, two_nodes.nics = 4, two_nodes.nic_bw = 25e9;
  auto model = test::small_moe_model("m8", 8, 2, 1024, 1, 4);
  model.grad_accum = 4;
  std::vector<std::unique_ptr<Platform>> platforms;
  platforms.push_back(std::make_unique<Platform>("node8", model, test::node8()));
  platforms.push_back(std::make_unique<Platform>("2x4 with NICs", model, test::make_cluster(two_nodes)));
  std::mt19937 rng(777);
  int compared = 0;
  for (auto& pp : platforms) {
    Platform& p = *pp;
    const int n = p.t.num_gpus(), E = p.m.experts, L = p.m.moe_layers();
    const double per_gpu = static_cast<double>(p.m.tokens_per_gpu_iteration()) * p.m.top_k;
    for (const char* text : {"pp=2,ep=4", "tp=2,ep=2", "pp=2,ep=2,vpp=2", "tp=2,pp=2,ep=2,recompute=full", "pp=4,ep=2"}) {
      const auto l = parse_layout(text, p);
      std::vector<std::vector<double>> iters;
      for (int i = 0; i < 4; ++i) iters.push_back(random_loads(rng, L, n, E, per_gpu));
      auto bound = make_under("bound", p, l);
      std::vector<double> floor;
      for (const auto& loads : iters) floor.push_back(bound->simulate(loads).time);
      for (const char* spec : {"ep", "fssdp:window=2", "fsdp", "smartmoe:period=2:window=2", "flexmoe:period=2:window=2",
                               "flexmoe:period=1:window=1:reserve_slots=1:dispatch=topology", "fastermoe"}) {
        auto s = make_under(spec, p, l);
        for (size_t i = 0; i < iters.size(); ++i) {
          const double t = s->simulate(iters[i]).time;
          INFO(p.label, " layout ", text, ": ", spec, " iteration ", i, " time ", t, " bound ", floor[i]);
          CHECK(floor[i] <= t * (1 + 1e-12));
        }
        ++compared;
      }
    }
  }
  CHECK(compared == 2 * 5 * 7);
}

TEST_CASE("bound under a layout: reached where a stage is one GPU, below EP and the oracle otherwise") {
  // One node of 4 GPUs, pp 4 (one block and one GPU per stage), ep 1: each stage's GPU holds all 8
  // experts and computes every token of its layer itself, launch + sum_e gemm(c_e) per micro-batch,
  // with no byte leaving it (its dispatch is to itself). The bound's GPU computes
  // launch + (1/S) sum_e gemm(c_e) with S = 1: the same. Everything else is the same graph, so for
  // any loads the bound equals EP there. The oracle is no strategy the bound bounds: it gives each
  // expert the mean count, and gemm (a max of affine terms, convex) summed over equal counts is at
  // most its sum over the real ones (Jensen), so with no all-to-all to pay it can be below: here
  // it is. On node8 with pp 2 and EP groups of 4 the
  // stage's GPUs exchange tokens and the oracle splits each expert's work, so the bound is below.
  test::ClusterShape c;
  c.gpus_per_node = 4, c.peak_flops = 300e12, c.hbm = 2e12;
  auto model = test::small_moe_model("m8", 8, 2, 1024, 1, 4);
  model.grad_accum = 2;
  Platform p("4 GPUs", model, test::make_cluster(c));
  const auto l = parse_layout("pp=4,ep=1", p);
  const double per_gpu = static_cast<double>(p.m.tokens_per_gpu_iteration()) * p.m.top_k;
  std::mt19937 rng(5);
  const auto loads = random_loads(rng, p.m.moe_layers(), 4, 8, per_gpu);
  const auto rb = make_under("bound", p, l)->simulate(loads);
  CHECK(rb.time == hs::test::approx(make_under("ep", p, l)->simulate(loads).time, 1e-12));
  CHECK(make_under("oracle", p, l)->simulate(loads).time < rb.time);
  Platform q("node8", model, test::node8());
  const auto lq = parse_layout("pp=2,ep=4", q);
  const auto loads8 = test::uniform_loads(q.m.moe_layers(), 8, 8, per_gpu);
  const auto qb = make_under("bound", q, lq)->simulate(loads8), qo = make_under("oracle", q, lq)->simulate(loads8);
  CHECK(qb.time < qo.time);
  CHECK(qb.breakdown[static_cast<size_t>(strategy::Component::kAllToAll)] == 0.0);
  CHECK(qb.breakdown[static_cast<size_t>(strategy::Component::kStragglerWait)] == 0.0);
  CHECK(test::resolved_json(*make_under("bound", q, lq), "traffic_floor_level") == "\"none (not applied with tp > 1 or pp > 1)\"");
}
