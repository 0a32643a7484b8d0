#include "strategy/ep.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "strategy/knobs.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/moe_iteration.hpp"

namespace hs::strategy {

int resolve_ep_size(const Context& ctx, int requested, const std::string& spec) {
  const int n = ctx.topo.num_gpus(), e = ctx.model.experts;
  int ep = requested;
  if (ep == 0) {
    if (e % n == 0) ep = n;
    else if (n % e == 0) ep = e;
    else
      throw InputError({"--strategy", 0, 0}, spec,
                       fmt::format("{} experts cannot be spread evenly over {} GPUs: set ep_size to a divisor of "
                                   "the GPU count that divides the experts (or divides into them)", e, n));
  }
  if (n % ep != 0 || (e % ep != 0 && ep % e != 0) || ep > n)
    throw InputError({"--strategy", 0, 0}, spec + ".ep_size",
                     fmt::format("ep_size {} must divide the {} GPUs and divide (or be divided by) the {} experts", ep, n, e));
  if (ep > e)
    throw InputError({"--strategy", 0, 0}, spec + ".ep_size",
                     fmt::format("ep_size {} exceeds the {} experts: use ep_size={} (experts replicated across groups)", ep, e, e));
  return ep;
}

MoeGraphOptions ep_graph_options(const Context& ctx, int ep) {
  const auto params = cost::count_params(ctx.model);
  const double local = static_cast<double>(ctx.model.experts) / ep;
  MoeGraphOptions o;
  o.ep_size = ep;
  o.expert_grad_bytes_per_gpu_layer = params.per_expert * local * ctx.model.precision.grad_bytes;
  o.optimizer_params_per_gpu = ep_owned_params(ctx, ep);
  return o;
}

double ep_owned_params(const Context& ctx, int ep) {
  const auto params = cost::count_params(ctx.model);
  return params.dense + params.per_expert * static_cast<double>(ctx.model.experts) / ep * ctx.model.moe_layers();
}

void route_ep_layer(const double* layer, int n, int E, int ep, double token_bytes, const std::vector<char>& shadowed,
                    LayerPlan& p) {
  const int per = E / ep;
  p.expert_tokens.resize(n);
  for (auto& v : p.expert_tokens) v.assign(static_cast<size_t>(per), 0.0);
  p.dispatch_bytes.assign(static_cast<size_t>(n) * n, 0.0);
  p.received_tokens.assign(n, 0.0);
  if (shadowed.empty()) p.shadow_tokens.clear();
  else p.shadow_tokens.assign(n, std::vector<double>(E, 0.0));
  for (int s = 0; s < n; ++s) {
    const int base = (s / ep) * ep;
    const double* row = layer + static_cast<size_t>(s) * E;
    const char* shadow = shadowed.empty() ? nullptr : shadowed.data() + static_cast<size_t>(s / ep) * E;
    for (int e = 0; e < E; ++e) {
      const double c = row[e];
      if (c == 0) continue;
      if (shadow && shadow[e]) {  // computed on its own GPU with the broadcast parameters
        p.shadow_tokens[s][e] += c;
        p.received_tokens[s] += c;
        continue;
      }
      const int g = base + e / per;
      p.expert_tokens[g][e % per] += c;
      p.received_tokens[g] += c;
      p.dispatch_bytes[static_cast<size_t>(s) * n + g] += c * token_bytes;
    }
  }
}

namespace {

class ExpertParallel final : public Strategy {
 public:
  ExpertParallel(const Context& ctx, int ep, bool balanced)
      : ctx_(ctx), n_(ctx.topo.num_gpus()), ep_(ep), balanced_(balanced),
        graph_(ctx, ep_graph_options(ctx, ep)), plans_(ctx.model.moe_layers()) {
    static_ = owned_state(ctx.model, ep_owned_params(ctx, ep));
    nccl_ = ep_nccl_bytes(ctx.topo, ep, false);
    const double local_experts = static_cast<double>(ctx.model.experts) / ep_;
    for (auto& p : plans_) {
      p.expert_tokens.assign(n_, std::vector<double>(static_cast<size_t>(local_experts), 0.0));
      p.dispatch_bytes.assign(static_cast<size_t>(n_) * n_, 0.0);
      p.received_tokens.assign(n_, 0.0);
    }
  }

  IterationResult simulate(const std::vector<double>& loads) override {
    const auto& m = ctx_.model;
    const int E = m.experts, L = m.moe_layers();
    const int per = E / ep_;
    const double token_bytes = m.d_model * m.precision.activation_bytes;
    for (int l = 0; l < L; ++l) {
      LayerPlan& p = plans_[l];
      const double* layer = loads.data() + static_cast<size_t>(l) * n_ * E;
      if (!balanced_) {
        route_ep_layer(layer, n_, E, ep_, token_bytes, {}, p);
        continue;
      }
      // Same total assignments, spread perfectly: every GPU computes total/N, every source sends
      // an equal share of its assignments to every GPU of its group.
      double total = 0;
      for (size_t i = 0; i < static_cast<size_t>(n_) * E; ++i) total += layer[i];
      const double each = total / n_;
      for (int g = 0; g < n_; ++g) {
        std::fill(p.expert_tokens[g].begin(), p.expert_tokens[g].end(), each / per);
        p.received_tokens[g] = each;
        double sent = 0;
        for (int e = 0; e < E; ++e) sent += layer[static_cast<size_t>(g) * E + e];
        const int base = (g / ep_) * ep_;
        for (int d = 0; d < ep_; ++d) p.dispatch_bytes[static_cast<size_t>(g) * n_ + base + d] = sent / ep_ * token_bytes;
      }
    }
    IterationResult r = graph_.run(plans_, {}, take_timeline());
    set_worst_memory(r, plans_, n_, m, static_, nccl_);
    return r;
  }

  std::vector<ResolvedSetting> resolved() const override {
    return {resolved_value("ep_size", ep_), resolved_text("dense_allreduce", graph_.dense_allreduce_algo())};
  }

 private:
  const Context& ctx_;
  int n_, ep_;
  bool balanced_;
  MoeIterationGraph graph_;
  std::vector<LayerPlan> plans_;
  cost::MemoryBreakdown static_;
  std::vector<double> nccl_;  // per GPU
};

}  // namespace

std::unique_ptr<Strategy> make_ep(const Context& ctx, const std::map<std::string, std::string>& knobs) {
  const int ep = static_cast<int>(knob_int(knobs, "ep", "ep_size", 0, 0, 1 << 20));
  return std::make_unique<ExpertParallel>(ctx, resolve_ep_size(ctx, ep, "ep"), false);
}

std::unique_ptr<Strategy> make_oracle(const Context& ctx, const std::map<std::string, std::string>& knobs) {
  const int ep = static_cast<int>(knob_int(knobs, "oracle", "ep_size", 0, 0, 1 << 20));
  return std::make_unique<ExpertParallel>(ctx, resolve_ep_size(ctx, ep, "oracle"), true);
}

}  // namespace hs::strategy
