// The lower bound (`bound`): no strategy this simulator models can finish an iteration faster, under
// the same model, trace, topology and cost models. It answers "how far is each strategy from the
// best possible?" (`oracle` answers a different question: what EP would take without imbalance).
//
// It runs the iteration graph (layout_iteration.hpp), so attention, dense FFNs, router and
// permutes, LM head, the dense gradient all-reduce, micro-batches and the optimizer are charged
// exactly as every other strategy is charged, with each MoE layer planned as follows.
//
// * Expert compute: every GPU computes, per micro-batch,
//       launch + (1/N) * sum_e gemm(c_e) + activation(sum_e c_e / N)   (backward likewise)
//   where c_e is expert e's global assignment count of the micro-batch and gemm the cost model's
//   per-expert term (cost/compute_cost.hpp; with the tile/wave model, the default, the launches'
//   fixed call times are paid whole, ComputeCost::expert_fixed, and the waves and HBM rooflines are
//   subadditive over any split of the tiles: cost/gemm_tiles.hpp). Why this is below every strategy: the curve's
//   gemm(t) = max(A * (t + t_half), A * pad(t), W + a * t) is subadditive, gemm(x + y) <=
//   gemm(x) + gemm(y) (each term is: t_half >= 0, pad() is a ceiling so pad(x + y) <= pad(x) + pad(y),
//   W >= 0; and so is their max), and gemm(0) = 0 (tests/unit/cost/expert_gemm_test.cpp checks it). Whatever a strategy does with expert e (one owner, replicas,
//   shadows, materialized copies), the instances that compute it split c_e, so their gemm terms sum
//   to at least gemm(c_e); over all GPUs the expert work is at least sum_e gemm(c_e), and the most
//   loaded GPU, which every collective after the layer waits for, does at least the mean of it plus
//   its launch. A GPU of the bound does exactly that mean. With uniform loads and E >= N this is the
//   oracle's expert compute (E/N experts of c/E tokens each), up to rounding.
// * All-to-all: zero bytes in the graph (every token computed on its own GPU). Token locality is
//   reachable (FSDP of experts, FSSDP with everything materialized), but its price is not a per-layer
//   charge every strategy pays: FlexMoE's replicas persist between iterations and their gradient
//   all-reduce overlaps the whole backward; FSSDP's spAG and spRS hide behind attention. So the
//   graph charges nothing for it, and the traffic floor (strategy/policy/bound/traffic_floor.hpp) bounds it
//   instead, over the whole iteration: the least bytes any placement must move for the iteration's
//   routing (tokens out and back, or parameters and gradients of the copies that keep them local)
//   over the fabric's summed link capacity. The bound is max(graph makespan, traffic floor): both
//   are floors, so their max is.
// * No sparse collectives, shadows, replica all-reduces, migrations or copies (each only adds work).
// * Optimizer: every GPU updates the mean owned parameters (dense + E/N experts of every MoE layer);
//   every expert has at least one owner, so the most loaded GPU updates at least that.
// * Memory: owned state as above, activations at the mean routed tokens (reported, never binding).
//
// The argument is per task; the iteration time follows because the graph's makespan grows with its
// task durations and the bound's graph is every strategy's graph less tasks, with each task no
// longer than the longest of its kind among the GPUs in that strategy (an all-GPU collective starts
// only when the slowest GPU reaches it). Communication sharing links with other communication runs
// no slower with less traffic beside it. The property test (tests/unit/strategy/bound_test.cpp)
// checks bound <= every registered strategy over random loads on several platforms.
//
// What it leaves out: latencies, contention and uneven link use in the traffic floor (it divides by
// the fabric's total capacity), and any overlap limit between the two floors. It is a floor, not a
// forecast.
//
// The lower bound (`bound`, strategy/policy/bound/layout_bound.cpp) under a parallel layout: no strategy built under the
// same layout (ep, fssdp, fsdp, smartmoe) finishes an iteration faster, for the same model, trace,
// topology and cost models. Not the oracle: it is a reference, not a placement. It gives every
// expert of a stage the stage's mean count, and the curve's gemm is convex (a max of affine terms),
// so sum_e gemm(mean) <= sum_e gemm(c_e) (Jensen): where the all-to-all costs little it can be below
// the bound (tests/unit/strategy/bound_test.cpp shows a case). The tile model's waves are not
// convex (ceilings), so there the oracle's expert compute is near, not always below, the bound's.
//
// It runs the layout's iteration graph (strategy/graph/layout_iteration.hpp) with every MoE layer planned
// as follows; the TP collectives, attention, dense FFNs, router and permutes, LM head, the pipeline's
// sends and schedule, recomputation, the (expert-)DP reductions and the optimizer are the same tasks
// every strategy under the layout runs, with the same durations (none of them depends on the MoE
// policy: the optimizer steps the stage's 1/dp and 1/edp shards in every strategy).
//
// * Expert compute of MoE layer l, held by stage s of S = tp x dp GPUs: every GPU of s computes,
//   per micro-batch,
//       launch + (1/S) * sum_e gemm(c_e)          (backward likewise)
//   where c_e = sum over the stage's GPUs x of counts[l][x][e] / tp / grad_accum is expert e's
//   assignment count of one micro-batch in the stage. Proof that no strategy's slowest GPU of the
//   stage is faster: under the layout the stage's tokens are computed by instances of e on the
//   stage's GPUs (EP groups are carved from the stage; copies, replicas and moves stay in a group),
//   whose counts split c_e; gemm is subadditive with gemm(0) = 0 (above), so the stage's GPUs do
//   at least sum_e gemm(c_e) of expert work between them, plus one launch each, and the slowest does
//   at least the mean, which is what every GPU of the bound does.
// * All-to-all: zero bytes (every token computed where it is routed).
// * No spAG / spRS, copies or migrations: shape and tasks only add time.
// Why the iteration follows: in the layout graph the expert tasks of a stage sit between two
// stage-wide tasks (the dispatch they wait for and the combine that waits for all of them), so the
// combine cannot start before the slowest GPU's expert task ends; the bound's graph is every
// strategy's graph with each such segment no longer (every GPU at the mean <= the strategy's slowest
// GPU, all-to-alls at zero bytes, the extra tasks removed), and a task graph's makespan does not
// grow when tasks shrink or go away. Communication beside less traffic runs no slower.
//
// The traffic floor (strategy/policy/bound/traffic_floor.hpp): the least bytes any placement must move, over
// the fabric's capacity; the bound is max(graph makespan, traffic floor), both floors. It is derived
// for units holding all of the model's dense parameters and routing their own trace rows of every
// layer, which holds with tp = 1 and pp = 1 (a run without --layout); under a pipeline a GPU holds
// one stage's blocks and with TP it routes 1/tp of its rows, so its dense term and which units route
// a layer differ, and it is not applied there (the bound is then the compute floor's graph: a
// floor, weaker where the fabric binds; resolved settings say so).
#include "cost/layout_memory.hpp"
#include "strategy/capacity.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/graph/layout_iteration.hpp"
#include "strategy/layout_strategy.hpp"
#include "strategy/load_history.hpp"
#include "strategy/policy/bound/traffic_floor.hpp"

namespace hs::strategy {

namespace {

// The iteration's counts[layer][gpu][expert] as one instance per expert keeps them at `capacity`
// (tp = 1): each micro-batch cut at C when the trace has them, else the iteration's at G x C.
std::vector<double> kept_counts(const IterationCounts& loads, const TokenCapacity& capacity, int E) {
  if (loads.micro.empty()) {
    std::vector<double> kept(loads.total().begin(), loads.total().end());
    cut_to_capacity(kept, E, capacity.iteration());
    return kept;
  }
  std::vector<double> kept(loads.total().size(), 0.0), mb;
  for (const auto& v : loads.micro) {
    mb = v;
    cut_to_capacity(mb, E, capacity.micro_batch);
    for (size_t i = 0; i < kept.size(); ++i) kept[i] += mb[i];
  }
  return kept;
}

class LayoutBound final : public LayoutStrategyBase {
 public:
  LayoutBound(const Context& ctx, const workload::ParallelLayout& layout) : LayoutStrategyBase(ctx, layout) {
    nccl_ = layout_nccl_bytes(ctx.topo, layout, false, false);  // no all-to-all: the DP rings only
  }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const auto& cc = ctx_.compute;
    const int n = ctx_.topo.num_gpus(), E = m.experts, S = layout_.stage_size();
    const double M = m.grad_accum;
    // expert_forward(c) = fixed + G(c) + activation(sum_e c_e), fixed the launches every GPU with
    // tokens pays whole (ComputeCost::expert_fixed) and G subadditive over a split of the tokens
    // (the curve's sum_e gemm(c_e), or the tile model's waves and HBM rooflines). The activation
    // kernel is linear in the tokens plus one launch on every GPU that computes any
    // (ComputeCost::activation): a bound GPU pays the launches whole and 1/S of the rest.
    const double launch_f = cc.expert_fixed(false).value(), launch_b = cc.expert_fixed(true).value();
    const double act_launch = cc.params().launch.value();
    std::vector<double> per_expert(E);
    // Token dropping (strategy/capacity.hpp): every strategy keeps at least what one instance per
    // expert keeps (replicas only raise a source's capacity), so the floor computes that.
    const TokenCapacity capacity = token_capacity(m, layout_.tp);
    for (size_t l = 0; l < plans_.size(); ++l) {
      // The floor of `counts` (the iteration's, / grad_accum per micro-batch; or one micro-batch's own).
      auto floor = [&](std::span<const double> counts, double per_mb, LayerPlan& p) {
        std::fill(per_expert.begin(), per_expert.end(), 0.0);
        const double cap = capacity.micro_batch * per_mb;
        double total = 0, routed = 0;  // the stage's assignments: kept, routed
        for (int x : layout_.stage_gpus(stage_[l]))
          for (int e = 0; e < E; ++e) {
            const double r = counts[static_cast<size_t>(x) * E + e] / layout_.tp, c = std::min(r, cap);
            per_expert[e] += c / per_mb;
            total += c;
            routed += r;
          }
        p.routed_tokens = capacity.dropless() ? 0 : routed;
        p.dropped_tokens = capacity.dropless() ? 0 : routed - total;
        p.expert_tokens.assign(n, std::vector<double>(1, total / S));
        p.dispatch_bytes.assign(static_cast<size_t>(n) * n, 0.0);
        p.received_tokens.assign(n, total / S);
        // Without tokens the whole time is fixed (the curve's launch; 0 for the tile model).
        const double all_f = cc.expert_forward(per_expert).value(), all_b = cc.expert_backward(per_expert).value();
        const double fixed_f = total > 0 ? launch_f + act_launch : all_f, fixed_b = total > 0 ? launch_b + act_launch : all_b;
        p.expert_fwd_seconds.assign(n, fixed_f + (all_f - fixed_f) / S);
        p.expert_bwd_seconds.assign(n, fixed_b + (all_b - fixed_b) / S);
      };
      floor(loads.layer(static_cast<int>(l), n, E), M, plans_[l]);
      // A trace with a micro-batch axis: each micro-batch's own floor (what EP's routing of its own
      // counts computes at least, by the same argument per micro-batch).
      route_micro_batches(loads, static_cast<int>(l), n, E, plans_[l],
                          [&](std::span<const double> counts, LayerPlan& p) { floor(counts, 1.0, p); });
    }
    IterationResult r = graph_.run(plans_, {}, {}, take_timeline());
    set_layout_memory(m, layout_, stage_, plans_, nccl_, r);
    graph_time_ = r.time;
    if (floor_) {
      // Where the least traffic takes longer than the compute floor's graph, the iteration cannot be
      // faster than it; the difference is communication (charged to the all-to-all).
      traffic_ = floor_->evaluate(capacity.dropless() ? loads.total() : kept_counts(loads, capacity, E));
      if (traffic_.seconds > r.time) {
        r.breakdown[static_cast<size_t>(Component::kAllToAll)] += traffic_.seconds - r.time;
        r.time = traffic_.seconds;
      }
    }
    return r;
  }

  std::vector<ResolvedSetting> resolved() const override {
    auto r = layout_resolved(layout_, graph_.stats());
    r.push_back(resolved_value("compute_floor_ms", graph_time_ * 1e3));
    if (!floor_) {
      r.push_back(resolved_text("traffic_floor_level", "none (not applied with tp > 1 or pp > 1)"));
      return r;
    }
    r.push_back(resolved_value("traffic_floor_ms", traffic_.seconds * 1e3));
    r.push_back(resolved_text("traffic_floor_level", traffic_.level.empty() ? "none" : traffic_.level));
    r.push_back(resolved_value("least_traffic_bytes", traffic_.bytes));
    return r;
  }

 private:
  std::unique_ptr<TrafficFloorModel> floor_ =
      layout_.tp == 1 && layout_.pp == 1 ? std::make_unique<TrafficFloorModel>(ctx_.topo, ctx_.model) : nullptr;
  TrafficFloor traffic_;
  double graph_time_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_layout_bound(const StrategySpec&, const Context& ctx,
                                            const workload::ParallelLayout& layout) {
  return std::make_unique<LayoutBound>(ctx, layout);
}

}  // namespace hs::strategy
