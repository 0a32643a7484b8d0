#include <doctest/doctest.h>

#include <numeric>

#include "collective/analytic_network.hpp"
#include "collective/ring.hpp"
#include "strategy/layout_iteration.hpp"
#include "strategy/layout_strategy.hpp"
#include "support/test_platforms.hpp"
#include "support/approx.hpp"

using namespace hs;

namespace {
const SourceLocation kSrc{"--layout", 0, 0};
workload::ParallelLayout layout(const std::string& text, const topology::Topology& t, const workload::ModelSpec& m) {
  auto l = workload::parse_parallel_layout(text, kSrc);
  workload::resolve_layout(l, t.num_gpus(), t.num_gpus() / t.num_nodes(), m, kSrc);
  return l;
}
std::string ops_text(const std::vector<strategy::PipelineOp>& ops) {
  std::string s;
  for (const auto& o : ops) s += (o.forward ? "F" : "B") + std::to_string(o.mb) + " ";
  return s;
}
}  // namespace

TEST_CASE("1F1B: warm-up forwards, one forward one backward, cool-down backwards") {
  CHECK(ops_text(strategy::one_f_one_b(4, 0, 6)) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  CHECK(ops_text(strategy::one_f_one_b(4, 3, 3)) == "F0 B0 F1 B1 F2 B2 ");
  CHECK(ops_text(strategy::one_f_one_b(4, 1, 1)) == "F0 B0 ");
}

TEST_CASE("TP traffic per block, hand-worked") {
  // s 4096 x b 1 x h 512 x 2 B = 4,194,304 B per collective. tp 4: a ring all-gather or
  // reduce-scatter sends 3/4 of it per GPU, an all-reduce twice that.
  auto m = test::small_moe_model("tp", 8, 2, 4096, 1, 2);
  workload::ParallelLayout l;
  l.tp = 4;
  const auto moe = strategy::tp_traffic(m, l, true);
  CHECK(moe.payload == 4194304.0);
  CHECK(moe.collectives == 2);  // all-gather before attention, reduce-scatter after it
  CHECK(moe.sent_per_gpu == 2 * 0.75 * 4194304.0);
  CHECK(strategy::tp_traffic(m, l, false).sent_per_gpu == 4 * 0.75 * 4194304.0);
  l.sequence_parallel = false;  // two all-reduces: the same bytes (Korthikanti et al. §4.2.2)
  const auto ar = strategy::tp_traffic(m, l, false);
  CHECK(ar.collectives == 2);
  CHECK(ar.all_reduce);
  CHECK(ar.sent_per_gpu == 4 * 0.75 * 4194304.0);
  // The graph's ring all-gather over a TP group of 4 sends exactly that share from each GPU.
  auto topo = test::node8();
  double extra = 0;
  const std::vector<int> group{0, 1, 2, 3};
  const auto flows = collective::ring_flows(topo, group, moe.payload, collective::RingOp::kAllGather, extra);
  double from0 = 0;
  for (const auto& f : flows)
    if (f.src == 0) from0 += f.bytes;
  CHECK(from0 == hs::test::approx(0.75 * 4194304.0));
}

TEST_CASE("1F1B pipeline: the bubble (p-1)/(m+p-1) emerges from the task graph") {
  test::ClusterShape c;
  c.gpus_per_node = 4;
  c.intra_bw = 1e16, c.intra_lat = 0;  // stage-to-stage sends take no time: the bubble is the schedule's alone
  c.peak_flops = 300e12, c.hbm = 2e12;
  auto topo = test::make_cluster(c);
  for (int m : {4, 8}) {
    auto model = test::small_moe_model("pp", 8, 2, 1024, 1, 8);
    model.vocab = 8;  // an LM head of no weight: every stage runs the same work
    model.grad_accum = m;
    cost::ComputeCost cc(topo.gpu_model(), model);
    strategy::Context ctx{topo, model, cc, 1};
    auto l = layout("pp=4", topo, model);
    auto s = strategy::make_layout_strategy(strategy::parse_strategy_spec("ep"), ctx, l);
    // 8 blocks x 4 GPUs x 8 experts: each GPU routes 1024 x m tokens x top-2, its own experts (ep 1).
    const auto r = s->simulate(test::uniform_loads(8, 4, 8, 2048.0 * m));
    double bubble = -1;
    for (const auto& x : s->resolved())
      if (x.key == "pp_bubble") bubble = std::stod(x.json);
    CHECK(bubble == doctest::Approx(3.0 / (m + 3)).epsilon(0.02));
    double sum = 0;
    for (double x : r.breakdown) sum += x;
    CHECK(sum == hs::test::approx(r.time));
    // Stage 0 keeps 4 micro-batches in flight and holds the embeddings: it is the memory peak.
    CHECK(r.memory_gpu == 0);
  }
}

TEST_CASE("a layout whose TP group crosses nodes is slower than one keeping TP in a node") {
  auto model = test::small_moe_model("tp", 8, 2, 2048, 1, 2);
  model.grad_accum = 2;
  auto run = [&](int nodes, int per_node) {
    test::ClusterShape c;
    c.nodes = nodes, c.gpus_per_node = per_node, c.nics = per_node, c.nic_bw = 25e9;
    c.peak_flops = 300e12, c.hbm = 2e12;
    auto topo = test::make_cluster(c);
    cost::ComputeCost cc(topo.gpu_model(), model);
    strategy::Context ctx{topo, model, cc, 1};
    // tp 4, dp 2, EP groups of 2: the same layout; only whether a TP group shares a node differs.
    auto l = layout("tp=4,ep=2,tp_span=any", topo, model);
    auto s = strategy::make_layout_strategy(strategy::parse_strategy_spec("ep"), ctx, l);
    const auto r = s->simulate(test::uniform_loads(2, 8, 8, 2 * 2048.0 * 2));
    double tp = 0;
    for (const auto& x : s->resolved())
      if (x.key == "tp_comm_on_path_ms") tp = std::stod(x.json);
    return std::pair{r.time, tp};
  };
  const auto [inside, tp_inside] = run(2, 4);  // TP groups {0..3}, {4..7}: NVLink
  const auto [across, tp_across] = run(4, 2);  // TP groups span two nodes: every layer on the NICs
  CHECK(across > inside * 1.2);
  MESSAGE("iteration ", inside * 1e3, " ms (TP in a node) vs ", across * 1e3, " ms (across); TP on the path ", tp_inside, " vs ", tp_across, " ms");
  CHECK(tp_across > 2 * tp_inside);
}

TEST_CASE("under a layout only EP is built; other strategies are refused naming --strategy") {
  auto topo = test::node8();
  auto model = test::tiny_moe_model();
  cost::ComputeCost cc(topo.gpu_model(), model);
  strategy::Context ctx{topo, model, cc, 1};
  auto l = layout("tp=2,ep=4", topo, model);
  CHECK_THROWS_AS(strategy::make_layout_strategy(strategy::parse_strategy_spec("fssdp"), ctx, l), InputError);
}

TEST_CASE("recomputation costs time: full re-runs each block's forward before its backward") {
  // One stage (pp 1, tp 1, ep 4) of 4 GPUs with free communication, uniform loads: every GPU's
  // compute stream is the critical path. Full recomputation adds, per micro-batch and block, the
  // block's forward: attention forward + router/permute + expert forward + unpermute, where each GPU
  // routes 1024 tokens x top-2 per micro-batch and computes its 2 experts' 1024 tokens each:
  //   extra = m (2) x blocks (4) x (attn_f + router(1024) + expert_fwd({1024, 1024}) + unpermute(1024)
  //           + dispatch + combine), each all-to-all moving 512 tokens x 512 x 2 B = 512 KiB to every
  //           other GPU (free links, but NCCL's per-connection channel rate still applies).
  // `selective` with FlashAttention (capability 8.0+) adds nothing: flash's backward already
  // recomputes the scores. Memory: full keeps only each block's input.
  test::ClusterShape c;
  c.gpus_per_node = 4, c.intra_bw = 1e16, c.intra_lat = 0, c.peak_flops = 300e12, c.hbm = 2e12;
  auto topo = test::make_cluster(c);
  auto model = test::small_moe_model("rc", 8, 2, 1024, 1, 4);
  model.grad_accum = 2;
  cost::resolve_attention(model, topo.gpu_model());
  cost::ComputeCost cc(topo.gpu_model(), model);
  strategy::Context ctx{topo, model, cc, 1};
  auto run = [&](const std::string& rc) {
    auto l = layout("ep=4,recompute=" + rc, topo, model);
    auto s = strategy::make_layout_strategy(strategy::parse_strategy_spec("ep"), ctx, l);
    return s->simulate(test::uniform_loads(4, 4, 8, 2 * 1024.0 * 2));
  };
  const auto none = run("none"), selective = run("selective"), full = run("full");
  const std::vector<double> two{1024, 1024};
  collective::AnalyticNetwork net(topo);
  std::vector<double> matrix(16, 512.0 * 512 * 2);
  for (int g = 0; g < 4; ++g) matrix[g * 4 + g] = 0;
  const double a2a = net.alltoallv_time(matrix, false);
  const double block_fwd = cc.attention_forward().value() + cc.router_and_permute(1024).value() +
                           cc.expert_forward(two).value() + cc.unpermute(1024).value() + 2 * a2a;
  MESSAGE("none ", none.time * 1e3, " ms, selective ", selective.time * 1e3, " ms, full ", full.time * 1e3,
          " ms; expected extra ", 2 * 4 * block_fwd * 1e3, " ms");
  CHECK(selective.time == none.time);
  CHECK(full.time - none.time == doctest::Approx(2 * 4 * block_fwd).epsilon(1e-6));
  CHECK(full.memory.activations < none.memory.activations);
}
