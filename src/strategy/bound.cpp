#include "strategy/bound.hpp"

#include <vector>

#include "strategy/gpu_memory.hpp"
#include "strategy/load_history.hpp"
#include "strategy/moe_iteration.hpp"

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
    for (auto& p : plans_) {
      p.expert_tokens.assign(n_, std::vector<double>(1, 0.0));
      p.dispatch_bytes.assign(static_cast<size_t>(n_) * n_, 0.0);
      p.received_tokens.assign(n_, 0.0);
      p.expert_fwd_seconds.assign(n_, 0.0);
      p.expert_bwd_seconds.assign(n_, 0.0);
    }
  }

  IterationResult simulate(const std::vector<double>& loads) override {
    const auto& m = ctx_.model;
    const auto& cc = ctx_.compute;
    const int E = m.experts, L = m.moe_layers();
    const double ga = m.grad_accum;
    // expert_forward(c) = launch + sum_e gemm(c_e); expert_forward({}) = launch.
    const double launch_f = cc.expert_forward({}).value(), launch_b = cc.expert_backward({}).value();
    std::vector<double> per_expert(E);
    for (int l = 0; l < L; ++l) {
      LayerPlan& p = plans_[l];
      const double* layer = loads.data() + static_cast<size_t>(l) * n_ * E;
      std::fill(per_expert.begin(), per_expert.end(), 0.0);
      double total = 0;
      for (int s = 0; s < n_; ++s)
        for (int e = 0; e < E; ++e) per_expert[e] += layer[static_cast<size_t>(s) * E + e];
      for (double c : per_expert) total += c;
      for (double& c : per_expert) c /= ga;  // one micro-batch, as the graph times expert tasks
      const double f = launch_f + (cc.expert_forward(per_expert).value() - launch_f) / n_;
      const double b = launch_b + (cc.expert_backward(per_expert).value() - launch_b) / n_;
      for (int g = 0; g < n_; ++g) {
        p.expert_tokens[g][0] = total / n_;
        p.received_tokens[g] = total / n_;
        p.expert_fwd_seconds[g] = f;
        p.expert_bwd_seconds[g] = b;
      }
    }
    IterationResult r = graph_.run(plans_, {}, take_timeline());
    set_worst_memory(r, plans_, n_, m, static_, nccl_);
    return r;
  }

  std::vector<ResolvedSetting> resolved() const override {
    return {resolved_text("dense_allreduce", graph_.dense_allreduce_algo())};
  }

 private:
  const Context& ctx_;
  int n_;
  MoeIterationGraph graph_;
  std::vector<LayerPlan> plans_;
  cost::MemoryBreakdown static_;
  std::vector<double> nccl_;  // per GPU
};

}  // namespace

std::unique_ptr<Strategy> make_bound(const Context& ctx, const std::map<std::string, std::string>&) {
  return std::make_unique<LowerBound>(ctx);
}

}  // namespace hs::strategy
