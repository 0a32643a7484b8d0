// FlexMoE under a parallel layout: each EP group of each pipeline stage keeps and re-plans its own
// replicas (strategy/policy/flexmoe/flexmoe.hpp is FlexMoE without a layout; the planner is flexmoe_planner.hpp's).
//
// Per MoE layer l (held by stage s) and EP group k of s (ep consecutive GPUs):
//   slots: every GPU of the group holds its E/ep experts (EP's blocks at first) and reserves
//     reserve_slots more instance slots per MoE layer (E/ep + reserve_slots capped at E);
//   re-planning: every `period` iterations (the first at iteration `period`) the group plans its
//     layer with plan_replicas (Expand / Shrink / Migrate over the group's GPUs, trigger_pct on the
//     group's balance ratio) from the sliding-window mean (`window`) of its own loads (its GPUs' trace
//     rows / tp), the costs timed on the group's GPUs (replica_costs);
//   moves: every new instance copies the expert's parameters, master weights and optimizer state
//     from a GPU of the group that held it; every group's copies form one coflow run on every GPU
//     before the iteration's first forward (LayoutIterationGraph::run's `migrations`, charged to
//     reshard_migration on the critical path, as SmartMoE's moves under a layout);
//   routing: a token of expert e goes to e's holders inside its group, split evenly over them
//     (`dispatch=even`) or preferring a holder on the source GPU, then in its node (`topology`);
//   gradients: each replicated expert's gradient is all-reduced among its holders inside the group
//     every iteration, one ring per replica group, every group's at once, issued after the stage's
//     last micro-batch's backward of the layer on the DP stream, beside the expert-DP reduction,
//     which waits for it (the gradient is complete only then; earlier micro-batches accumulate);
//     it overlaps the rest of the stage's backward and shows as dense_allreduce where exposed;
//   optimizer: each GPU steps its instances (EP's step plus the parameters of its instances beyond
//     E/ep per layer, over expert-DP with the distributed optimizer);
//   memory: every reserve slot, filled or not, counts as an expert of the GPU: params, grads and
//     optimizer state (sharded over expert-DP with the distributed optimizer, as the layout's
//     memory model shards an expert's).
// The expert-DP reduction keeps EP's volume (E/ep experts' gradients per GPU): each group's sums
// reduced across its expert-DP peers. With reserve_slots = 0 nothing is replicated or moved and the
// iteration is EP's under the layout.
#include <algorithm>
#include <fmt/format.h>

#include "collective/ring.hpp"
#include "cost/memory_model.hpp"
#include "strategy/policy/flexmoe/flexmoe.hpp"
#include "strategy/policy/flexmoe/flexmoe_planner.hpp"
#include "strategy/layout_group_routing.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/graph/layout_iteration.hpp"
#include "strategy/layout_strategy.hpp"
#include "strategy/load_history.hpp"

namespace hs::strategy {

namespace {

class LayoutFlexMoe final : public Strategy {
 public:
  LayoutFlexMoe(const Context& ctx, const workload::ParallelLayout& layout, FlexMoeKnobs k)
      : ctx_(ctx), layout_(layout), k_(k), graph_(ctx, layout), n_(ctx.topo.num_gpus()), L_(ctx.model.moe_layers()),
        E_(ctx.model.experts), G_(layout.stage_size() / layout.ep), own_(E_ / layout.ep),
        slots_(std::min(E_, own_ + k.reserve_slots)), plans_(L_), history_(G_, LoadHistory(L_, k.window)),
        holders_(G_, std::vector<Holders>(L_, ep_holders(E_, layout.ep))) {
    const auto& m = ctx.model;
    graph_.set_memo(true);  // stateful: iterations repeat on a cycling trace
    for (int l = 0; l < L_; ++l) stage_.push_back(layout.stage_of_block(m.moe_layer_ids[l], m.layers, m.mtp_layers));
    for (int g = 0; g < n_; ++g) node_of_.push_back(ctx.topo.node_of(g));
    per_expert_ = cost::count_params(m).per_expert;
    state_bytes_ = per_expert_ * (m.precision.param_bytes + m.precision.master_bytes + m.precision.optimizer_bytes());
    grad_bytes_ = per_expert_ * m.precision.grad_bytes;
  }

  bool stateless() const override { return false; }

  std::vector<ResolvedSetting> resolved() const override {
    std::vector<int> per_layer(L_, 0);
    for (int k = 0; k < G_; ++k)
      for (int l = 0; l < L_; ++l)
        for (const auto& h : holders_[k][l]) per_layer[l] += static_cast<int>(h.size()) - 1;
    auto r = layout_resolved(layout_, graph_.stats());
    for (auto& x : flexmoe_resolved(slots_, per_layer, counts_)) r.push_back(std::move(x));
    return r;
  }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const bool replicas = slots_ > own_;
    collective::Coflow moves;
    if (replicas && iteration_ > 0 && iteration_ % k_.period == 0) replan(moves);
    const double token_bytes = m.d_model * m.precision.activation_bytes;
    const TokenCapacity cap = token_capacity(m, layout_.tp);
    std::vector<std::vector<std::vector<double>>> actual(G_, std::vector<std::vector<double>>(L_));
    std::vector<collective::SparsePlacement> placement(G_);
    std::vector<std::vector<double>> group_loads;
    std::vector<double> instances(n_, 0.0);
    for (int l = 0; l < L_; ++l) {
      std::vector<std::vector<int>> groups;  // the layer's replica groups, global GPU ids
      for (int k = 0; k < G_; ++k) {
        placement[k] = {std::vector<int>(E_), std::vector<std::vector<int>>(E_)};
        for (int e = 0; e < E_; ++e) {
          const auto& h = holders_[k][l][e];
          placement[k].owner[e] = h.front();
          placement[k].replicas[e].assign(h.begin() + 1, h.end());
          for (int i : h) instances[gpu(l, k, i)] += 1;
        }
        for (auto grp : replica_groups(holders_[k][l])) {
          for (int& i : grp) i = gpu(l, k, i);
          groups.push_back(std::move(grp));
        }
      }
      // The replicas hold for the whole iteration; every micro-batch is routed through them.
      auto route = [&](std::span<const double> all, LayerPlan& plan) {
        route_in_groups(all, layout_, stage_[l], E_, node_of_, placement, k_.dispatch, token_bytes, cap.micro_batch,
                        plan, nullptr, &dispatch_memo_);
      };
      LayerPlan& plan = plans_[l];
      route_in_groups(loads.layer(l, n_, E_), layout_, stage_[l], E_, node_of_, placement, k_.dispatch,
                      token_bytes, cap.iteration(), plan, &group_loads, &dispatch_memo_);
      for (int k = 0; k < G_; ++k) actual[k][l] = std::move(group_loads[k]);
      route_micro_batches(loads, l, n_, E_, plan, route);
      plan.replica_grad_latency = 0;
      plan.replica_grad_flows.clear();
      if (!groups.empty())
        plan.replica_grad_flows = collective::concurrent_ring_flows(ctx_.topo, groups, grad_bytes_,
                                                                    collective::RingOp::kAllReduce,
                                                                    plan.replica_grad_latency);
    }
    // Every instance's optimizer step: the parameters of a GPU's instances beyond its E/ep per layer
    // (fewer where a migration took one away), over expert-DP with the distributed optimizer. Under
    // DualPipe a GPU holds its mirror's instances too (the second copy of the mirrored stage's
    // layers), and the optimizer shards over both copies' expert-DP ranks.
    std::vector<double> extra_step;
    if (replicas) {
      std::vector<double> own(n_, 0.0);
      for (int l = 0; l < L_; ++l)
        for (int x : layout_.stage_gpus(stage_[l])) own[x] += own_;
      const double shard = layout_.distributed_optimizer ? layout_.piece_copies() * layout_.edp() : 1.0;
      extra_step.assign(n_, 0.0);
      for (int x = 0; x < n_; ++x) {
        const int y = layout_.mirror_rank(x);
        extra_step[x] = per_expert_ * (instances[x] - own[x] + (y != x ? instances[y] - own[y] : 0.0)) / shard;
      }
    }
    IterationResult r = graph_.run(plans_, moves, extra_step, take_timeline());
    set_layout_memory(m, layout_, stage_, plans_, nccl_, r, slots_ - own_);
    for (int k = 0; k < G_; ++k) history_[k].push(actual[k]);
    ++iteration_;
    return r;
  }

 private:
  // GPU i of EP group k of the stage holding MoE layer l.
  int gpu(int l, int k, int i) const { return stage_[l] * layout_.stage_size() + k * layout_.ep + i; }

  // Re-plans every group's layers whose predicted balance ratio exceeds the trigger; all groups'
  // state copies run as one coflow before the iteration.
  void replan(collective::Coflow& moves) {
    for (int k = 0; k < G_; ++k)
      for (int l = 0; l < L_; ++l) {
        std::vector<int> gpus, nodes;
        for (int i = 0; i < layout_.ep; ++i) gpus.push_back(gpu(l, k, i)), nodes.push_back(node_of_[gpus.back()]);
        const ReplicaCosts costs = replica_costs(ctx_, graph_.network(), gpus);
        ReplicaPlan p = plan_replicas(history_[k].mean(l, E_), holders_[k][l], nodes, slots_,
                                      1.0 + k_.trigger_pct / 100.0, k_.period, costs);
        if (!p.triggered) continue;
        counts_.add(p);
        for (const auto& mv : p.moves) moves.push_back({gpus[mv.src], gpus[mv.dst], state_bytes_});
        holders_[k][l] = std::move(p.holders);
      }
    if (moves.empty()) return;
    ++counts_.changes;
    counts_.moved += static_cast<int>(moves.size());
  }

  const Context& ctx_;
  workload::ParallelLayout layout_;
  FlexMoeKnobs k_;
  LayoutIterationGraph graph_;
  DispatchMemo dispatch_memo_;  // the routing of counts and placements that come back
  int n_, L_, E_, G_, own_, slots_;
  std::vector<LayerPlan> plans_;
  std::vector<LoadHistory> history_;          // [group of a stage]
  std::vector<std::vector<Holders>> holders_;  // [group][layer] -> holders of each expert (group ids)
  std::vector<int> stage_, node_of_;
  std::vector<double> nccl_ = layout_nccl_bytes(ctx_.topo, layout_, true, false);  // [gpu] NCCL buffers
  double per_expert_ = 0, state_bytes_ = 0, grad_bytes_ = 0;
  int iteration_ = 0;
  FlexMoeCounts counts_;
};

}  // namespace

std::unique_ptr<Strategy> make_layout_flexmoe(const StrategySpec& spec, const Context& ctx,
                                              const workload::ParallelLayout& layout) {
  return std::make_unique<LayoutFlexMoe>(ctx, layout, flexmoe_knobs(KnobValues(spec)));
}

}  // namespace hs::strategy
