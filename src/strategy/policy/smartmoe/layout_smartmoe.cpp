// SmartMoE under a parallel layout: each EP group of each pipeline stage re-plans its own placement.
//
// Per MoE layer l (held by stage s) and EP group k of s (ep consecutive GPUs, E/ep slots each):
//   placement: EP's blocks at first; every `period` iterations (from iteration `period` on) the
//     group's experts by predicted load (descending) go to the group's least-loaded GPU with a free
//     slot (lpt_placement, SmartMoE's greedy as in strategy/policy/smartmoe/smartmoe.cpp), the prediction being the
//     sliding-window mean of the group's own loads (its GPUs' trace rows / tp);
//   migrations: an expert that changes GPU moves its parameters, fp32 master weights and optimizer
//     state between two GPUs of the group; every group's moves form one coflow that runs on every
//     GPU before the iteration's first forward (LayoutIterationGraph::run's `migrations`), on the
//     critical path as SmartMoE's are;
//   routing: topology-aware dispatch to the owners inside the group (no replicas).
// Memory: the layout's (E/ep experts per GPU, as EP; the moves need no extra slot in this model).
#include <fmt/format.h>

#include "cost/layout_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/layout_group_routing.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/graph/layout_iteration.hpp"
#include "strategy/layout_strategy.hpp"
#include "strategy/load_history.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "strategy/policy/fssdp/sharding.hpp"
#include "strategy/policy/smartmoe/smartmoe.hpp"
#include "util/diagnostics.hpp"

namespace hs::strategy {

namespace {

class LayoutSmartMoe final : public Strategy {
 public:
  LayoutSmartMoe(const Context& ctx, const workload::ParallelLayout& layout, int period, int window)
      : ctx_(ctx), layout_(layout), graph_(ctx, layout), n_(ctx.topo.num_gpus()), L_(ctx.model.moe_layers()),
        E_(ctx.model.experts), G_(layout.stage_size() / layout.ep), period_(period), plans_(L_),
        history_(G_, LoadHistory(L_, window)) {
    const auto& m = ctx.model;
    graph_.set_memo(true);  // stateful: iterations repeat on a cycling trace
    for (int l = 0; l < L_; ++l) stage_.push_back(layout.stage_of_block(m.moe_layer_ids[l], m.layers, m.mtp_layers));
    for (int g = 0; g < n_; ++g) node_of_.push_back(ctx.topo.node_of(g));
    const auto params = cost::count_params(m);
    state_bytes_ = params.per_expert * (m.precision.param_bytes + m.precision.master_bytes + m.precision.optimizer_bytes());
    owners_.assign(G_, homogeneous_owners(L_, E_, layout.ep));  // [group][layer][expert] -> GPU of the group
  }

  bool stateless() const override { return false; }

  std::vector<ResolvedSetting> resolved() const override {
    auto r = layout_resolved(layout_, graph_.stats());
    r.push_back(resolved_value("placement_changes", replans_));
    r.push_back(resolved_value("experts_moved", moved_));
    return r;
  }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const int ep = layout_.ep;
    const double token_bytes = m.d_model * m.precision.activation_bytes;
    const TokenCapacity cap = token_capacity(m, layout_.tp);
    collective::Coflow moves;
    const bool replan = iteration_ > 0 && iteration_ % period_ == 0;
    for (int k = 0; k < G_ && replan; ++k)
      for (int l = 0; l < L_; ++l) {
        const auto next = lpt_placement(history_[k].mean(l, E_), ep, E_ / ep, l);
        for (int e = 0; e < E_; ++e)
          if (next[e] != owners_[k][l][e]) moves.push_back({gpu(l, k, owners_[k][l][e]), gpu(l, k, next[e]), state_bytes_});
        owners_[k][l] = next;
      }
    if (!moves.empty()) ++replans_, moved_ += static_cast<int>(moves.size());
    std::vector<std::vector<std::vector<double>>> actual(G_, std::vector<std::vector<double>>(L_));
    std::vector<collective::SparsePlacement> placement(G_);
    std::vector<std::vector<double>> group_loads;
    for (int l = 0; l < L_; ++l) {
      for (int k = 0; k < G_; ++k) placement[k] = {owners_[k][l], std::vector<std::vector<int>>(E_)};
      // Routes `all` (the iteration's counts, or with a trace's micro-batch axis one micro-batch's)
      // to the owners inside each group; the iteration's counts are also the history's.
      auto route = [&](std::span<const double> all, LayerPlan& plan) {
        route_in_groups(all, layout_, stage_[l], E_, node_of_, placement, DispatchRule::kTopology, token_bytes,
                        cap.micro_batch, plan, nullptr, &dispatch_memo_);
      };
      route_in_groups(loads.layer(l, n_, E_), layout_, stage_[l], E_, node_of_, placement,
                      DispatchRule::kTopology, token_bytes, cap.iteration(), plans_[l], &group_loads, &dispatch_memo_);
      for (int k = 0; k < G_; ++k) actual[k][l] = std::move(group_loads[k]);
      route_micro_batches(loads, l, n_, E_, plans_[l], route);
    }
    IterationResult r = graph_.run(plans_, moves, {}, take_timeline());
    set_layout_memory(ctx_.model, layout_, stage_, plans_, nccl_, r);
    for (int k = 0; k < G_; ++k) history_[k].push(actual[k]);
    ++iteration_;
    return r;
  }

 private:
  // GPU i of EP group k of the stage holding MoE layer l.
  int gpu(int l, int k, int i) const { return stage_[l] * layout_.stage_size() + k * layout_.ep + i; }

  const Context& ctx_;
  workload::ParallelLayout layout_;
  LayoutIterationGraph graph_;
  DispatchMemo dispatch_memo_;  // the routing of counts and placements that come back
  int n_, L_, E_, G_, period_;
  std::vector<LayerPlan> plans_;
  std::vector<LoadHistory> history_;  // [group of a stage]
  std::vector<int> stage_, node_of_;
  std::vector<double> nccl_ = layout_nccl_bytes(ctx_.topo, layout_, true, false);  // [gpu] NCCL buffers
  std::vector<Owners> owners_;        // [group][layer][expert] -> GPU of the group (group ids)
  double state_bytes_ = 0;
  int iteration_ = 0, replans_ = 0, moved_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_layout_smartmoe(const StrategySpec& spec, const Context& ctx,
                                               const workload::ParallelLayout& layout) {
  const int e = ctx.model.experts, ep = layout.ep;
  if (e / ep < 2)
    throw InputError({"--strategy", 0, 0}, spec.full,
                     fmt::format("SmartMoE swaps experts between the GPUs of an EP group and needs at least 2 experts "
                                 "per GPU: {} experts over ep {}", e, ep));
  const KnobValues knobs(spec);
  const int period = static_cast<int>(knobs.integer("period"));
  const int window = static_cast<int>(knobs.integer("window"));
  return std::make_unique<LayoutSmartMoe>(ctx, layout, period, window);
}

}  // namespace hs::strategy
