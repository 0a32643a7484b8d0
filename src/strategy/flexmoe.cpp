#include "strategy/flexmoe.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "collective/ring.hpp"
#include "collective/sparse_plan.hpp"
#include "strategy/flexmoe_planner.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/load_history.hpp"
#include "strategy/materialization.hpp"
#include "strategy/moe_iteration.hpp"

namespace hs::strategy {

namespace {

class FlexMoe final : public Strategy {
 public:
  FlexMoe(const Context& ctx, FlexMoeKnobs k)
      : ctx_(ctx), k_(k), n_(ctx.topo.num_gpus()), L_(ctx.model.moe_layers()), E_(ctx.model.experts),
        slots_(std::min(E_, E_ / n_ + k.reserve_slots)), graph_(ctx, options(ctx, slots_ > E_ / n_)), plans_(L_),
        history_(L_, k.window), holders_(L_, ep_holders(E_, n_)) {
    const auto& m = ctx.model;
    const auto params = cost::count_params(m);
    per_expert_ = params.per_expert;
    dense_ = params.dense;
    state_bytes_ = per_expert_ * (m.precision.param_bytes + m.precision.master_bytes + m.precision.optimizer_bytes());
    grad_bytes_ = per_expert_ * m.precision.grad_bytes;
    std::vector<int> all;
    for (int g = 0; g < n_; ++g) node_of_.push_back(ctx.topo.node_of(g)), all.push_back(g);
    // Every slot, filled or not, holds (or is reserved for) a full copy: params, grads, optimizer.
    static_ = owned_state(m, dense_ + per_expert_ * slots_ * L_);
    nccl_ = ep_nccl_bytes(ctx.topo, n_, false);
    costs_ = replica_costs(ctx, graph_.network(), std::move(all));
  }

  static MoeGraphOptions options(const Context& ctx, bool replicas) {
    MoeGraphOptions o;
    // EP's per-GPU parameters, computed as EP does (reserve_slots = 0 is EP to the last bit).
    const double local = static_cast<double>(ctx.model.experts) / ctx.topo.num_gpus();
    o.optimizer_params_per_gpu = cost::count_params(ctx.model).dense +
                                 cost::count_params(ctx.model).per_expert * local * ctx.model.moe_layers();
    o.migrations = replicas;
    o.replica_allreduce = replicas;
    return o;
  }

  bool stateless() const override { return false; }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const bool replicas = slots_ > E_ / n_;
    IterationExtras extras;
    if (replicas && iteration_ > 0 && iteration_ % k_.period == 0) replan(extras);
    const double token_bytes = m.d_model * m.precision.activation_bytes;
    std::vector<double> instances(n_, 0.0);
    for (int l = 0; l < L_; ++l) {
      collective::SparsePlacement p{std::vector<int>(E_), std::vector<std::vector<int>>(E_)};
      for (int e = 0; e < E_; ++e) {
        const auto& h = holders_[l][e];
        p.owner[e] = h.front();
        p.replicas[e].assign(h.begin() + 1, h.end());
        for (int g : h) instances[g] += 1;
      }
      // The replicas hold for the whole iteration; every micro-batch is routed through them.
      auto route = [&](std::span<const double> counts, LayerPlan& plan) {
        DispatchResult d;
        dispatch(counts, n_, p, node_of_, k_.dispatch, token_bytes, d);
        take_dispatch(std::move(d), plan);
      };
      LayerPlan& plan = plans_[l];
      route(loads.layer(l, n_, E_), plan);
      route_micro_batches(loads, l, n_, E_, plan, route);
      plan.replica_grad_flows = collective::concurrent_ring_flows(ctx_.topo, replica_groups(holders_[l]), grad_bytes_,
                                                                  collective::RingOp::kAllReduce,
                                                                  plan.replica_grad_latency);
    }
    if (replicas) {  // every instance's optimizer step
      extras.optimizer_params.assign(n_, 0.0);
      for (int g = 0; g < n_; ++g) extras.optimizer_params[g] = dense_ + per_expert_ * instances[g];
    }
    IterationResult r = graph_.run(plans_, extras, take_timeline());
    set_worst_memory(r, plans_, n_, m, static_, nccl_);
    history_.push(global_loads(loads.total(), L_, n_, E_));
    ++iteration_;
    return r;
  }

  std::vector<ResolvedSetting> resolved() const override {
    std::vector<int> per_layer(L_, 0);
    for (int l = 0; l < L_; ++l)
      for (const auto& h : holders_[l]) per_layer[l] += static_cast<int>(h.size()) - 1;
    auto r = flexmoe_resolved(slots_, per_layer, counts_);
    r.push_back(resolved_text("dense_allreduce", graph_.dense_allreduce_algo()));
    return r;
  }

 private:
  // Re-plans every layer whose predicted balance ratio exceeds the trigger; all layers' state
  // copies run as one migration before the iteration.
  void replan(IterationExtras& extras) {
    collective::Coflow moves;
    for (int l = 0; l < L_; ++l) {
      ReplicaPlan p = plan_replicas(history_.mean(l, E_), holders_[l], node_of_, slots_, 1.0 + k_.trigger_pct / 100.0,
                                    k_.period, costs_);
      if (!p.triggered) continue;
      counts_.add(p);
      for (const auto& mv : p.moves) moves.push_back({mv.src, mv.dst, state_bytes_});
      holders_[l] = std::move(p.holders);
    }
    if (moves.empty()) return;
    ++counts_.changes;
    counts_.moved += static_cast<int>(moves.size());
    extras.reshard = graph_.network().coflow_time(moves);
    extras.reshard_flows = std::move(moves);
  }

  const Context& ctx_;
  FlexMoeKnobs k_;
  int n_, L_, E_, slots_;
  MoeIterationGraph graph_;
  std::vector<LayerPlan> plans_;
  LoadHistory history_;
  std::vector<Holders> holders_;  // [layer]
  std::vector<int> node_of_;
  double per_expert_ = 0, dense_ = 0, state_bytes_ = 0, grad_bytes_ = 0;
  cost::MemoryBreakdown static_;
  std::vector<double> nccl_;  // per GPU
  ReplicaCosts costs_;
  int iteration_ = 0;
  FlexMoeCounts counts_;
};

}  // namespace

std::vector<ResolvedSetting> flexmoe_resolved(int slots, const std::vector<int>& replicas_per_layer,
                                              const FlexMoeCounts& c) {
  return {resolved_value("slots_per_gpu", slots),        resolved_list("replicas_per_layer", replicas_per_layer),
          resolved_value("layer_replans", c.layers_replanned), resolved_value("placement_changes", c.changes),
          resolved_value("expands", c.expands),          resolved_value("shrinks", c.shrinks),
          resolved_value("migrations", c.migrations),    resolved_value("experts_moved", c.moved)};
}

FlexMoeKnobs flexmoe_knobs(const std::map<std::string, std::string>& knobs) {
  FlexMoeKnobs k;
  k.reserve_slots = static_cast<int>(knob_int(knobs, "flexmoe", "reserve_slots", 2, 0, 1 << 20));
  k.period = static_cast<int>(knob_int(knobs, "flexmoe", "period", 10, 1, 1 << 30));
  k.window = static_cast<int>(knob_int(knobs, "flexmoe", "window", 5, 1, 100000));
  k.trigger_pct = static_cast<int>(knob_int(knobs, "flexmoe", "trigger_pct", 10, 0, 100000));
  k.dispatch = knob_choice(knobs, "flexmoe", "dispatch", "even", {"even", "topology"}) == "topology"
                   ? DispatchRule::kTopology
                   : DispatchRule::kEven;
  return k;
}

ReplicaCosts replica_costs(const Context& ctx, collective::AnalyticNetwork& net, std::vector<int> gpus) {
  const auto& m = ctx.model;
  const double per_expert = cost::count_params(m).per_expert;
  const double state = per_expert * (m.precision.param_bytes + m.precision.master_bytes + m.precision.optimizer_bytes());
  const double grad = per_expert * m.precision.grad_bytes, ga = m.grad_accum;
  ReplicaCosts c;
  c.gpu_time = [&ctx, ga](const std::vector<double>& tokens) {
    std::vector<double> mb(tokens);
    for (double& t : mb) t /= ga;
    return (ctx.compute.expert_forward(mb).value() + ctx.compute.expert_backward(mb).value()) * ga;
  };
  c.move_time = [&net, gpus, state](int src, int dst) {
    return net.coflow_time(collective::Coflow{{gpus[src], gpus[dst], state}});
  };
  c.allreduce_time = [&net, gpus, grad](const std::vector<int>& group) {
    std::vector<int> global;
    for (int i : group) global.push_back(gpus[i]);
    return collective::ring_time(net, global, grad, collective::RingOp::kAllReduce);
  };
  return c;
}

std::unique_ptr<Strategy> make_flexmoe(const Context& ctx, const std::map<std::string, std::string>& knobs) {
  const int n = ctx.topo.num_gpus(), e = ctx.model.experts;
  if (e % n != 0)
    throw InputError({"--strategy", 0, 0}, "flexmoe",
                     fmt::format("FlexMoE starts from EP's placement with E/N experts per GPU and needs the experts "
                                 "to divide evenly over the GPUs: {} experts on {} GPUs", e, n));
  return std::make_unique<FlexMoe>(ctx, flexmoe_knobs(knobs));
}

}  // namespace hs::strategy
