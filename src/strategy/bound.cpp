#include "strategy/bound.hpp"

#include <vector>

#include "strategy/gpu_memory.hpp"
#include "strategy/load_history.hpp"
#include "strategy/moe_iteration.hpp"
#include "strategy/traffic_floor.hpp"

namespace hs::strategy {

namespace {

MoeGraphOptions bound_graph_options(const Context& ctx) {
  MoeGraphOptions o;
  o.ep_size = ctx.topo.num_gpus();  // one group: no expert-gradient all-reduce
  o.optimizer_params_per_gpu = balanced_owned_params(ctx.model, ctx.topo.num_gpus());
  return o;
}

class LowerBound final : public Strategy {
 public:
  explicit LowerBound(const Context& ctx)
      : ctx_(ctx), n_(ctx.topo.num_gpus()), graph_(ctx, bound_graph_options(ctx)), plans_(ctx.model.moe_layers()) {
    static_ = owned_state(ctx.model, balanced_owned_params(ctx.model, n_));
    nccl_ = world_nccl_bytes(ctx.topo, false);  // the dense all-reduce only
  }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const int E = m.experts, L = m.moe_layers();
    // Expert seconds are per micro-batch: the iteration's counts / grad_accum, or (micro-batch axis)
    // each micro-batch's own counts, whose per-expert GEMMs bound that micro-batch.
    for (int l = 0; l < L; ++l) {
      bound_layer(loads.layer(l, n_, E), m.grad_accum, plans_[l]);
      route_micro_batches(loads, l, n_, E, plans_[l],
                          [&](std::span<const double> layer, LayerPlan& p) { bound_layer(layer, 1, p); });
    }
    IterationResult r = graph_.run(plans_, {}, take_timeline());
    set_worst_memory(r, plans_, n_, m, static_, nccl_);
    // The least traffic any placement needs, at the fabric's full capacity: where it takes longer
    // than the compute floor's graph, the iteration cannot be faster than it, and the difference is
    // communication (charged to the all-to-all).
    traffic_ = floor_.evaluate(loads.total());
    graph_time_ = r.time;
    if (traffic_.seconds > r.time) {
      r.breakdown[static_cast<size_t>(Component::kAllToAll)] += traffic_.seconds - r.time;
      r.time = traffic_.seconds;
    }
    return r;
  }

  // One layer's floor from counts[source][expert]; `ga` divides them into one micro-batch.
  void bound_layer(std::span<const double> layer, double ga, LayerPlan& p) const {
    const auto& cc = ctx_.compute;
    const int E = ctx_.model.experts;
    // expert_forward(c) = launch + sum_e gemm(c_e); expert_forward({}) = launch.
    const double launch_f = cc.expert_forward({}).value(), launch_b = cc.expert_backward({}).value();
    std::vector<double> per_expert(E, 0.0);
    double total = 0;
    for (int s = 0; s < n_; ++s)
      for (int e = 0; e < E; ++e) per_expert[e] += layer[static_cast<size_t>(s) * E + e];
    for (double c : per_expert) total += c;
    for (double& c : per_expert) c /= ga;  // one micro-batch, as the graph times expert tasks
    const double f = launch_f + (cc.expert_forward(per_expert).value() - launch_f) / n_;
    const double b = launch_b + (cc.expert_backward(per_expert).value() - launch_b) / n_;
    p.expert_tokens.assign(n_, std::vector<double>(1, total / n_));
    p.dispatch_bytes.assign(static_cast<size_t>(n_) * n_, 0.0);
    p.received_tokens.assign(n_, total / n_);
    p.expert_fwd_seconds.assign(n_, f);
    p.expert_bwd_seconds.assign(n_, b);
  }

  std::vector<ResolvedSetting> resolved() const override {
    // The last iteration's two floors; the bound is the larger.
    return {resolved_value("compute_floor_ms", graph_time_ * 1e3), resolved_value("traffic_floor_ms", traffic_.seconds * 1e3),
            resolved_text("traffic_floor_level", traffic_.level.empty() ? "none" : traffic_.level),
            resolved_value("least_traffic_bytes", traffic_.bytes),
            resolved_text("dense_allreduce", graph_.dense_allreduce_algo())};
  }

 private:
  const Context& ctx_;
  int n_;
  MoeIterationGraph graph_;
  std::vector<LayerPlan> plans_;
  cost::MemoryBreakdown static_;
  std::vector<double> nccl_;  // per GPU
  TrafficFloorModel floor_{ctx_.topo, ctx_.model};  // after ctx_: built from it
  TrafficFloor traffic_;
  double graph_time_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_bound(const Context& ctx, const std::map<std::string, std::string>&) {
  return std::make_unique<LowerBound>(ctx);
}

}  // namespace hs::strategy
