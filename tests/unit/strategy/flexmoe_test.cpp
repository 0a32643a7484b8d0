#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "support/make_named.hpp"
#include "collective/ring.hpp"
#include "collective/sparse_plan.hpp"
#include "strategy/policy/ep/ep.hpp"
#include "strategy/policy/flexmoe/flexmoe.hpp"
#include "strategy/policy/flexmoe/flexmoe_planner.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "support/resolved_setting.hpp"
#include "support/test_platforms.hpp"
#include "util/rng.hpp"
#include "workload/model_spec.hpp"
#include "support/approx.hpp"

using namespace hs;
using namespace hs::strategy;

namespace {
// A planner cost model that makes the arithmetic visible: 1 us per token computed, a state copy
// 0.1 ms, all-reduces free.
ReplicaCosts linear_costs() {
  ReplicaCosts c;
  c.gpu_time = [](const std::vector<double>& t) { return std::accumulate(t.begin(), t.end(), 0.0) * 1e-6; };
  c.move_time = [](int, int) { return 1e-4; };
  c.allreduce_time = [](const std::vector<int>&) { return 0.0; };
  return c;
}

// 4 experts, top-1, one micro-batch of 8192 tokens per GPU.
workload::ModelSpec four_experts() { return test::small_moe_model("four", 4, 1, 8192, 1); }

// loads[layer][gpu][expert] of the tiny model (2 layers, 8 GPUs, 8 experts) from f(layer, gpu, expert).
template <class F>
std::vector<double> tiny_loads(F f) {
  std::vector<double> l(2 * 8 * 8);
  for (int layer = 0; layer < 2; ++layer)
    for (int g = 0; g < 8; ++g)
      for (int e = 0; e < 8; ++e) l[(layer * 8 + g) * 8 + e] = f(layer, g, e);
  return l;
}

topology::Topology gpus(int nodes, int per_node) {
  test::ClusterShape c;
  c.nodes = nodes, c.gpus_per_node = per_node, c.intra_bw = 200e9, c.intra_lat = 2e-6, c.peak_flops = 300e12,
  c.hbm = 2e12;
  if (nodes > 1) c.nics = 1, c.nic_bw = 12.5e9, c.nic_lat = 5e-6, c.pcie_bw = 32e9, c.pcie_lat = 1e-6;
  return test::make_cluster(c);
}

// loads[layer][gpu][expert] of the hand-worked case: every source sends 5120 tokens to expert 0,
// 1536 to expert 1 and 768 to each of experts 2 and 3 (8192 in all), in both layers.
std::vector<double> one_hot_expert() {
  std::vector<double> l;
  for (int layer = 0; layer < 2; ++layer)
    for (int g = 0; g < 2; ++g) l.insert(l.end(), {5120, 1536, 768, 768});
  return l;
}

// A model on a platform with its cost model and strategy context (not copyable: the context refers
// to the members).
struct Setup {
  Setup(workload::ModelSpec model, topology::Topology topo)
      : m(std::move(model)), t(std::move(topo)), cc(t.gpu_model(), m), ctx{t, m, cc, 1} {}
  Setup(const Setup&) = delete;
  std::unique_ptr<Strategy> make(const std::string& spec) const { return make_strategy(parse_strategy_spec(spec), ctx); }
  workload::ModelSpec m;
  topology::Topology t;
  cost::ComputeCost cc;
  Context ctx;
};

const auto idx = [](Component c) { return static_cast<int>(c); };

using test::resolved_json;
}  // namespace

TEST_CASE("hand-worked: one hot expert is expanded to the second GPU and the load balances") {
  // 2 GPUs, 4 experts: GPU 0 owns experts 0 and 1, GPU 1 owns 2 and 3 (EP), one reserve slot each
  // (3 slots). Global loads: e0 = 2 x 5120 = 10240, e1 = 3072, e2 = e3 = 1536.
  // EP: GPU 0 computes 10240 + 3072 = 13312 tokens, GPU 1 3072; mean 8192, balance ratio 1.625.
  // Expand e0 onto GPU 1: each holder gets 10240 / 2 = 5120, so GPU 0 computes 5120 + 3072 = 8192
  // and GPU 1 5120 + 1536 + 1536 = 8192: balanced (ratio 1), and no further step can lower the max.
  // The alternatives are worse: migrating e0 to GPU 1 gives GPU 1 13312; migrating e1 gives
  // GPU 0 10240. Gain 13312 - 8192 = 5120 tokens = 5.12 ms per iteration at 1 us/token, x period
  // 10 = 51.2 ms, far above the 0.1 ms copy.
  const std::vector<double> load{10240, 3072, 1536, 1536};
  const std::vector<int> node_of{0, 0};
  const Holders ep = ep_holders(4, 2);
  CHECK(ep == Holders{{0}, {0}, {1}, {1}});
  CHECK(balance_ratio(load, ep, 2) == hs::test::approx(1.625));
  const ReplicaPlan p = plan_replicas(load, ep, node_of, 3, 1.1, 10, linear_costs());
  CHECK(p.triggered);
  CHECK(p.holders == Holders{{0, 1}, {0}, {1}, {1}});
  CHECK(p.expands == 1);
  CHECK(p.shrinks == 0);
  CHECK(p.migrations == 0);
  REQUIRE(p.moves.size() == 1);
  CHECK(p.moves[0].expert == 0);
  CHECK(p.moves[0].src == 0);
  CHECK(p.moves[0].dst == 1);
  CHECK(gpu_loads(load, p.holders, 2) == std::vector<double>{8192, 8192});
  CHECK(p.ratio_after == hs::test::approx(1.0));

  // Dispatch (even split over holders): source s sends 5120 tokens of e0, 2560 to each holder.
  // Source 0 keeps 2560 (e0) + 1536 (e1) = 4096 and sends GPU 1 2560 (e0) + 768 + 768 = 4096
  // tokens; source 1 mirrors it. Each GPU computes 8192; token bytes = d_model 512 x 2 (bf16).
  collective::SparsePlacement sp{{0, 0, 1, 1}, {{1}, {}, {}, {}}};
  std::vector<double> counts{5120, 1536, 768, 768, 5120, 1536, 768, 768};
  DispatchResult d;
  dispatch(counts, 2, sp, node_of, DispatchRule::kEven, 1024.0, d);
  CHECK(d.received == std::vector<double>{8192, 8192});
  CHECK(d.bytes[0 * 2 + 1] == hs::test::approx(4096 * 1024.0));
  CHECK(d.bytes[1 * 2 + 0] == hs::test::approx(4096 * 1024.0));

  // Gradient all-reduce of the replica group {0, 1} for expert 0 only: a 2-GPU ring all-reduce of
  // S bytes sends 2(n-1)/n x S = S bytes from each GPU (S = params per expert x 2 bytes).
  auto t = gpus(1, 2);
  const double S = 2.0 * 512 * 1024 * 2;
  CHECK(replica_groups(p.holders) == std::vector<std::vector<int>>{{0, 1}});
  double extra = 0;
  const auto flows = collective::concurrent_ring_flows(t, replica_groups(p.holders), S,
                                                       collective::RingOp::kAllReduce, extra);
  const auto v = collective::volumes(flows, 2);
  CHECK(v.sent[0] == hs::test::approx(S));
  CHECK(v.sent[1] == hs::test::approx(S));
  CHECK(v.received[0] == hs::test::approx(S));
}

TEST_CASE("the hand-worked case end to end: the strategy expands, charges one migration, then runs balanced") {
  const Setup su(four_experts(), gpus(1, 2));
  auto ep = hs::test::make_named("ep", su.ctx, {});
  auto fx = su.make("flexmoe:reserve_slots=1:period=1");
  const auto loads = one_hot_expert();
  const auto e0 = ep->simulate(loads);
  const auto f0 = fx->simulate(loads);  // iteration 0: EP's placement, nothing planned yet
  CHECK(f0.time == e0.time);
  CHECK(resolved_json(*fx, "replicas_per_layer") == "[0, 0]");
  const auto f1 = fx->simulate(loads);  // re-planned from iteration 0's loads: e0 expanded, per layer
  CHECK(resolved_json(*fx, "replicas_per_layer") == "[1, 1]");
  CHECK(resolved_json(*fx, "experts_moved") == "2");
  CHECK(f1.breakdown[idx(Component::kReshard)] > 0);
  // Expert work on the critical path: 8192 tokens per GPU per layer, forward + backward, plus
  // straggling from the grouped GEMM shapes only (GPU 1 runs three experts, GPU 0 two).
  const double expert = f1.breakdown[idx(Component::kExpertCompute)] + f1.breakdown[idx(Component::kStragglerWait)];
  std::vector<double> gpu0{5120, 3072}, gpu1{5120, 1536, 1536};
  const double t0 = su.cc.expert_forward(gpu0).value() + su.cc.expert_backward(gpu0).value();
  const double t1 = su.cc.expert_forward(gpu1).value() + su.cc.expert_backward(gpu1).value();
  CHECK(expert == hs::test::approx(2 * std::max(t0, t1)));
  const auto f2 = fx->simulate(loads);  // same loads: the placement stays, nothing moves
  CHECK(f2.breakdown[idx(Component::kReshard)] == 0);
  CHECK(resolved_json(*fx, "experts_moved") == "2");
  CHECK(f2.time < e0.time);
  CHECK(f2.breakdown[idx(Component::kStragglerWait)] < e0.breakdown[idx(Component::kStragglerWait)]);
  // Memory: every GPU reserves 3 slots per layer of full copies (params, grads, optimizer state)
  // where EP keeps 2.
  CHECK(f2.memory.params > e0.memory.params);
  CHECK(f2.memory.optimizer / e0.memory.optimizer > 1.0);
}

TEST_CASE("reserve_slots = 0 is EP, to the last bit") {
  const Setup su(test::tiny_moe_model(), gpus(2, 4));
  auto ep = hs::test::make_named("ep", su.ctx, {});
  auto fx = su.make("flexmoe:reserve_slots=0:period=1");
  for (int it = 0; it < 4; ++it) {
    const auto l = tiny_loads([&](int layer, int, int e) { return e == (it + layer) % 8 ? 2048 : 2048.0 / 7; });
    const auto a = ep->simulate(l);
    const auto b = fx->simulate(l);
    CHECK(a.time == b.time);
    CHECK(a.breakdown == b.breakdown);
    CHECK(a.memory.total() == b.memory.total());
    CHECK(a.bottleneck_gpu == b.bottleneck_gpu);
  }
  CHECK(resolved_json(*fx, "replicas_per_layer") == "[0, 0]");
}

namespace {
// Random skewed loads for E experts (a few hot ones), global per expert.
std::vector<double> random_load(Rng& rng, int E) {
  std::vector<double> load(E);
  for (int e = 0; e < E; ++e) load[e] = 100 + 1000 * rng.uniform() * (rng.below(4) == 0 ? 20 : 1);
  return load;
}
}  // namespace

TEST_CASE("plans keep every expert, never exceed the slots, and dispatch conserves tokens") {
  // 8 GPUs in 2 nodes, 16 experts (2 per GPU), reserves 0..3: every GPU holds at most 2 + R
  // instances, each expert at least one and at most once per GPU; the tokens a plan dispatches sum
  // to the loads, every expert's instances together compute its load.
  const std::vector<int> node_of{0, 0, 0, 0, 1, 1, 1, 1};
  Rng rng(7);
  for (int reserve = 0; reserve <= 3; ++reserve) {
    Holders h = ep_holders(16, 8);
    for (int round = 0; round < 6; ++round) {
      const auto load = random_load(rng, 16);
      const ReplicaPlan p = plan_replicas(load, h, node_of, 2 + reserve, 1.0, 10, linear_costs());
      std::vector<int> count(8, 0);
      int extra = 0;
      for (const auto& hold : p.holders) {
        REQUIRE(!hold.empty());
        CHECK(std::is_sorted(hold.begin(), hold.end()));
        CHECK(std::adjacent_find(hold.begin(), hold.end()) == hold.end());
        for (int g : hold) ++count[g];
        extra += static_cast<int>(hold.size()) - 1;
      }
      for (int g = 0; g < 8; ++g) CHECK(count[g] <= 2 + reserve);
      CHECK(extra <= 8 * reserve);
      if (reserve == 0) CHECK(p.holders == ep_holders(16, 8));
      // Moves are exactly the new instances, each from a GPU that held the expert before.
      int added = 0;
      for (int e = 0; e < 16; ++e)
        for (int g : p.holders[e]) added += !std::binary_search(h[e].begin(), h[e].end(), g);
      CHECK(static_cast<int>(p.moves.size()) == added);
      for (const auto& mv : p.moves) CHECK(std::binary_search(h[mv.expert].begin(), h[mv.expert].end(), mv.src));
      // A plan never makes the planner's bottleneck worse.
      const auto before = gpu_loads(load, h, 8), after = gpu_loads(load, p.holders, 8);
      CHECK(*std::max_element(after.begin(), after.end()) <= *std::max_element(before.begin(), before.end()) + 1e-9);
      // Token conservation through the dispatch, sources sending load / 8 each.
      collective::SparsePlacement sp{std::vector<int>(16), std::vector<std::vector<int>>(16)};
      for (int e = 0; e < 16; ++e) {
        sp.owner[e] = p.holders[e][0];
        sp.replicas[e].assign(p.holders[e].begin() + 1, p.holders[e].end());
      }
      std::vector<double> counts(8 * 16);
      for (int s = 0; s < 8; ++s)
        for (int e = 0; e < 16; ++e) counts[s * 16 + e] = load[e] / 8;
      for (auto rule : {DispatchRule::kEven, DispatchRule::kTopology}) {
        DispatchResult d;
        dispatch(counts, 8, sp, node_of, rule, 1.0, d);
        const double total = std::accumulate(load.begin(), load.end(), 0.0);
        CHECK(std::accumulate(d.received.begin(), d.received.end(), 0.0) == hs::test::approx(total));
        CHECK(std::accumulate(d.bytes.begin(), d.bytes.end(), 0.0) == hs::test::approx(total));  // incl. local
        for (int g = 0; g < 8; ++g)
          CHECK(std::accumulate(d.expert_tokens[g].begin(), d.expert_tokens[g].end(), 0.0) ==
                hs::test::approx(d.received[g]));
        if (rule == DispatchRule::kEven) {  // the planner's load model
          const auto model = gpu_loads(load, p.holders, 8);
          for (int g = 0; g < 8; ++g) CHECK(d.received[g] == hs::test::approx(model[g]));
        }
      }
      h = p.holders;
    }
  }
}

TEST_CASE("a balanced layer is not re-planned; a full GPU shrinks a replica to make room") {
  const std::vector<int> node_of{0, 0};
  // Balanced loads: ratio 1 <= trigger, nothing happens even with free slots.
  const std::vector<double> even{1000, 1000, 1000, 1000};
  const ReplicaPlan a = plan_replicas(even, ep_holders(4, 2), node_of, 3, 1.1, 10, linear_costs());
  CHECK(!a.triggered);
  CHECK(a.moves.empty());
  // A full GPU makes room by shrinking a replica. Loads {4000, 500, 500, 100}, 3 slots per GPU;
  // GPU 0 holds e0 and e1, GPU 1 (full) e1, e2, e3: GPU 0 computes 4000 + 250 = 4250, GPU 1
  // 250 + 500 + 100 = 850. Expanding e0 needs GPU 1's slot held by e1's replica: shrink it, expand
  // e0 there: GPU 0 2000 + 500 = 2500, GPU 1 2000 + 500 + 100 = 2600. The next best step (expand e3
  // to GPU 0: 2550 / 2550) saves 50 tokens = 0.5 ms over 10 iterations, less than its 1 ms copy.
  const std::vector<double> skew{4000, 500, 500, 100};
  ReplicaCosts c = linear_costs();
  c.move_time = [](int, int) { return 1e-3; };
  const ReplicaPlan b = plan_replicas(skew, Holders{{0}, {0, 1}, {1}, {1}}, node_of, 3, 1.1, 10, c);
  CHECK(b.triggered);
  CHECK(b.shrinks == 1);
  CHECK(b.expands == 1);
  CHECK(b.holders == Holders{{0, 1}, {0}, {1}, {1}});
  CHECK(gpu_loads(skew, b.holders, 2) == std::vector<double>{2500, 2600});
  REQUIRE(b.moves.size() == 1);
  CHECK(b.moves[0].expert == 0);
}

TEST_CASE("an expansion that costs more than it saves over the period is not taken") {
  // The hand-worked case's expansion saves 5.12 ms per iteration; a 60 ms copy pays back only over
  // period 20 (102.4 ms > 60 ms), not period 10 (51.2 ms); the best migration (e1 to GPU 1, 3.072 ms
  // per iteration) does not pay over 10 either and loses to the expansion over 20.
  const std::vector<double> load{10240, 3072, 1536, 1536};
  ReplicaCosts c = linear_costs();
  c.move_time = [](int, int) { return 60e-3; };
  CHECK(plan_replicas(load, ep_holders(4, 2), {0, 0}, 3, 1.1, 10, c).moves.empty());
  CHECK(plan_replicas(load, ep_holders(4, 2), {0, 0}, 3, 1.1, 20, c).moves.size() == 1);
  // The replica group's all-reduce is charged every iteration: at 6 ms it outweighs the expansion's
  // 5.12 ms saving, and migrating e1 to GPU 1 instead (GPU 0 10240, GPU 1 6144 tokens: 3.072 ms
  // saved, no replica) is the best step; after it GPU 1 is full and nothing else pays.
  c = linear_costs();
  c.allreduce_time = [](const std::vector<int>& g) { return g.size() > 1 ? 6e-3 : 0.0; };
  const ReplicaPlan p = plan_replicas(load, ep_holders(4, 2), {0, 0}, 3, 1.1, 10, c);
  CHECK(p.expands == 0);
  CHECK(p.migrations == 1);
  CHECK(p.holders == Holders{{0}, {1}, {1}, {1}});
  REQUIRE(p.moves.size() == 1);
  CHECK(p.moves[0].expert == 1);
  CHECK(p.moves[0].src == 0);
}

TEST_CASE("migration is charged exactly when the placement changes") {
  // Two nodes of 4 GPUs, 8 experts (1 per GPU) with 1 reserve slot, a hot expert that moves
  // around: a re-plan (every 2 iterations) costs a migration iff it moved experts.
  const Setup su(test::tiny_moe_model(), gpus(2, 4));
  auto fx = su.make("flexmoe:reserve_slots=1:period=2:window=1");
  int changes = 0, moved_before = 0;
  for (int it = 0; it < 12; ++it) {
    const int hot = it < 6 ? 0 : 5;
    const auto l = tiny_loads([&](int, int, int e) { return e == hot ? 2048 : 2048.0 / 7; });
    const auto r = fx->simulate(l);
    const int moved = std::stoi(resolved_json(*fx, "experts_moved"));
    CHECK((r.breakdown[idx(Component::kReshard)] > 0) == (moved > moved_before));
    if (it % 2 == 1) CHECK(moved == moved_before);  // no re-plan on odd iterations
    changes += moved > moved_before;
    moved_before = moved;
    // Never more replicas than reserved slots: 8 GPUs x 1 per layer.
    const std::string per_layer = resolved_json(*fx, "replicas_per_layer");
    for (char ch : per_layer)
      if (ch >= '0' && ch <= '9') CHECK(ch - '0' <= 8);
  }
  CHECK(changes >= 2);  // expanded for expert 0, then re-planned for expert 5
}

TEST_CASE("relabelling GPUs (and the experts they own) changes nothing on a symmetric node") {
  // One node of 8 GPUs, 8 experts (expert e on GPU e), 1 reserve slot; the hot expert is 2.
  // Swapping GPUs 2 <-> 5 as sources and experts 2 <-> 5 gives the same iteration times.
  const Setup su(test::tiny_moe_model(), gpus(1, 8));
  auto a = su.make("flexmoe:reserve_slots=1:period=1");
  auto b = su.make("flexmoe:reserve_slots=1:period=1");
  for (int it = 0; it < 4; ++it) {
    const auto l = tiny_loads([](int, int g, int e) { return (e == 2 ? 1500 : 300 + 10 * e) + 3 * g; });
    std::vector<double> s = l;
    for (int layer = 0; layer < 2; ++layer) {
      for (int e = 0; e < 8; ++e) std::swap(s[(layer * 8 + 2) * 8 + e], s[(layer * 8 + 5) * 8 + e]);
      for (int g = 0; g < 8; ++g) std::swap(s[(layer * 8 + g) * 8 + 2], s[(layer * 8 + g) * 8 + 5]);
    }
    const auto ra = a->simulate(l);
    const auto rb = b->simulate(s);
    CHECK(ra.time == doctest::Approx(rb.time).epsilon(1e-12));
  }
  CHECK(resolved_json(*a, "replicas_per_layer") == resolved_json(*b, "replicas_per_layer"));
}

TEST_CASE("FlexMoE that cannot apply, and bad knob values, are bad input") {
  // 8 experts on 16 GPUs: EP groups of 8 (E divides N), FlexMoE inside each, as under --layout.
  const Setup su(test::tiny_moe_model(), gpus(2, 8));
  CHECK_NOTHROW(su.make("flexmoe"));
  const Setup su8(test::tiny_moe_model(), gpus(1, 8));
  CHECK_NOTHROW(su8.make("flexmoe"));
  CHECK_THROWS_AS(su8.make("flexmoe:reserve_slots=-1"), InputError);
  CHECK_THROWS_AS(su8.make("flexmoe:period=0"), InputError);
  CHECK_THROWS_AS(su8.make("flexmoe:dispatch=nearest"), InputError);
}

TEST_CASE("the analytic and flow tiers agree on FlexMoE's migrations and replica all-reduces (within 5%)") {
  // Two nodes of 4 GPUs, a hot expert per layer that moves at iteration 4: replicas expanded across
  // nodes, their gradients all-reduced every iteration, migrations at re-plans; both tiers.
  const Setup su(test::tiny_moe_model(), gpus(2, 4));
  const Context flow{su.t, su.m, su.cc, 1, true, 0.0};
  auto a = su.make("flexmoe:reserve_slots=1:period=2:window=1");
  auto f = make_strategy(parse_strategy_spec("flexmoe:reserve_slots=1:period=2:window=1"), flow);
  double ta = 0, tf = 0;
  for (int it = 0; it < 8; ++it) {
    const int hot = it < 4 ? 1 : 6;
    const auto l = tiny_loads([&](int layer, int, int e) { return e == (hot + layer) % 8 ? 2048 : 2048.0 / 7; });
    ta += a->simulate(l).time;
    tf += f->simulate(l).time;
  }
  CHECK(resolved_json(*a, "replicas_per_layer") != "[0, 0]");
  CHECK(resolved_json(*a, "replicas_per_layer") == resolved_json(*f, "replicas_per_layer"));
  CHECK(ta == doctest::Approx(tf).epsilon(0.05));
}

TEST_CASE("the planner times each token list once, and its remembered times give the plan fresh calls give") {
  // plan_replicas remembers costs_.gpu_time per token list (flexmoe_planner.cpp, timed()): the
  // greedy asks for the same lists again and again. With a cost that is a function of the list
  // (here a convex one: small GEMMs less efficient, sum t + 200 sqrt(t) us per instance), the
  // remembered time is the fresh one: a recording wrapper around the cost sees every list once
  // (the memo answers the repeats) and the plan is the one the plain cost gives. Random loads on 8
  // GPUs in 2 nodes, 16 experts, 3 slots per GPU (2 own + 1 reserve); most trials re-plan.
  auto convex = [](const std::vector<double>& t) {
    double s = 0;
    for (double x : t) s += (x + 200 * std::sqrt(x)) * 1e-6;
    return s;
  };
  const std::vector<int> node_of{0, 0, 0, 0, 1, 1, 1, 1};
  Rng rng(2024);
  int triggered = 0;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> load(16);
    for (double& x : load) x = std::floor(rng.uniform() * 20000.0 * (rng.uniform() < 0.2 ? 5.0 : 1.0));
    std::map<std::vector<double>, int> asked;
    ReplicaCosts plain = linear_costs(), recorded = linear_costs();
    plain.gpu_time = convex;
    recorded.gpu_time = [&](const std::vector<double>& t) {
      ++asked[t];
      return convex(t);
    };
    plain.move_time = recorded.move_time = [](int a, int b) { return a / 4 == b / 4 ? 1e-4 : 4e-4; };
    const ReplicaPlan a = plan_replicas(load, ep_holders(16, 8), node_of, 3, 1.05, 10, plain);
    const ReplicaPlan b = plan_replicas(load, ep_holders(16, 8), node_of, 3, 1.05, 10, recorded);
    CHECK(a.holders == b.holders);
    CHECK(a.expands == b.expands);
    CHECK(a.shrinks == b.shrinks);
    CHECK(a.migrations == b.migrations);
    CHECK(a.ratio_after == b.ratio_after);
    for (const auto& [t, times] : asked) CHECK(times == 1);
    triggered += b.triggered;
  }
  CHECK(triggered > 10);
}
