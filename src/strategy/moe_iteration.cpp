#include "strategy/moe_iteration.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "collective/ring.hpp"

namespace hs::strategy {

MoeIterationGraph::MoeIterationGraph(const Context& ctx, MoeGraphOptions opt)
    : ctx_(ctx), n_(ctx.topo.num_gpus()), net_(ctx.topo) {
  const auto& m = ctx.model;
  const auto& cc = ctx.compute;
  const int L = m.moe_layers();
  expert_fwd_.assign(L, {});
  expert_bwd_.assign(L, {});
  a2a_.assign(L, {});
  std::vector<engine::ResourceId> compute(n_), a2a(n_), dp(n_);
  for (int g = 0; g < n_; ++g) {
    compute[g] = graph_.add_resource(fmt::format("gpu{}.compute", g));
    a2a[g] = graph_.add_resource(fmt::format("gpu{}.a2a", g));
    dp[g] = graph_.add_resource(fmt::format("gpu{}.dp", g));
  }
  // Map block -> MoE layer index.
  std::vector<int> moe_index(m.layers, -1);
  for (int i = 0; i < L; ++i) moe_index[m.moe_layer_ids[i]] = i;
  const double tokens_mb = static_cast<double>(m.tokens_per_micro_batch());
  const double attn_f = cc.attention_forward().value(), attn_b = cc.attention_backward().value();
  const double router = cc.router_and_permute(tokens_mb).value(), unperm = cc.unpermute(tokens_mb).value();
  const auto params = cost::count_params(m);
  const double block_grad_bytes = params.dense_per_block * m.precision.grad_bytes;
  std::vector<int> all(n_);
  std::iota(all.begin(), all.end(), 0);
  const double dp_time = collective::ring_time(net_, all, block_grad_bytes, collective::RingOp::kAllReduce);
  const double emb_grad_bytes = (params.dense - params.dense_per_block * m.layers) * m.precision.grad_bytes;
  const double emb_time = collective::ring_time(net_, all, emb_grad_bytes, collective::RingOp::kAllReduce);
  // Expert-gradient all-reduce across EP replicas (one coflow: every replica set's ring at once).
  double expert_ar_time = 0;
  const int ep = opt.ep_size > 0 ? opt.ep_size : n_;
  if (ep < n_ && opt.expert_grad_bytes_per_gpu_layer > 0) {
    collective::Coflow step;
    std::vector<int> group;
    int members = n_ / ep;
    for (int r = 0; r < ep; ++r) {
      group.clear();
      for (int k = 0; k < members; ++k) group.push_back(k * ep + r);
      auto part = collective::ring_step(ctx.topo, group, opt.expert_grad_bytes_per_gpu_layer,
                                        collective::default_ring_channels(ctx.topo, group));
      step.insert(step.end(), part.begin(), part.end());
    }
    expert_ar_time = net_.coflow_time(step) * collective::ring_steps(collective::RingOp::kAllReduce, members);
  }

  std::vector<engine::TaskId> last(n_, engine::kNoTask);  // last compute task per GPU
  auto seq = [&](int g, engine::TaskId t) {
    last[g] = t;
  };
  auto collective_after = [&](Kind k, int layer, std::span<const engine::ResourceId> res,
                              const std::vector<engine::TaskId>& before) {
    engine::TaskId c = add(k, layer, -1, res, 0.0);
    for (int g = 0; g < n_; ++g)
      if (before[g] != engine::kNoTask) graph_.add_dependency(before[g], c);
    return c;
  };
  std::vector<engine::TaskId> dp_tasks;
  std::vector<double> dp_durations;
  for (int mb = 0; mb < m.grad_accum; ++mb) {
    const bool last_mb = mb + 1 == m.grad_accum;
    // Forward.
    for (int b = 0; b < m.layers; ++b) {
      for (int g = 0; g < n_; ++g) seq(g, add(Kind::kAttnFwd, -1, g, {&compute[g], 1}, attn_f));
      const int l = moe_index[b];
      if (l < 0) {
        for (int g = 0; g < n_; ++g) seq(g, add(Kind::kDenseFwd, -1, g, {&compute[g], 1}, cc.dense_ffn_forward().value()));
        continue;
      }
      for (int g = 0; g < n_; ++g) seq(g, add(Kind::kRouter, l, g, {&compute[g], 1}, router));
      engine::TaskId disp = collective_after(Kind::kDispatch, l, a2a, last);
      a2a_[l].push_back({disp, false});
      for (int g = 0; g < n_; ++g) {
        engine::TaskId t = add(Kind::kExpertFwd, l, g, {&compute[g], 1}, 0.0);
        graph_.add_dependency(disp, t);
        expert_fwd_[l].push_back(t);
        seq(g, t);
      }
      engine::TaskId comb = collective_after(Kind::kCombine, l, a2a, last);
      a2a_[l].push_back({comb, true});
      for (int g = 0; g < n_; ++g) {
        engine::TaskId t = add(Kind::kUnpermute, l, g, {&compute[g], 1}, unperm);
        graph_.add_dependency(comb, t);
        seq(g, t);
      }
    }
    for (int g = 0; g < n_; ++g) seq(g, add(Kind::kHeadFwd, -1, g, {&compute[g], 1}, cc.head_forward().value()));
    for (int g = 0; g < n_; ++g) seq(g, add(Kind::kHeadBwd, -1, g, {&compute[g], 1}, cc.head_backward().value()));
    // Backward.
    for (int b = m.layers - 1; b >= 0; --b) {
      const int l = moe_index[b];
      if (l < 0) {
        for (int g = 0; g < n_; ++g) seq(g, add(Kind::kDenseBwd, -1, g, {&compute[g], 1}, cc.dense_ffn_backward().value()));
      } else {
        for (int g = 0; g < n_; ++g) seq(g, add(Kind::kUnpermuteBwd, l, g, {&compute[g], 1}, unperm));
        engine::TaskId cg = collective_after(Kind::kCombineGrad, l, a2a, last);
        a2a_[l].push_back({cg, false});
        for (int g = 0; g < n_; ++g) {
          engine::TaskId t = add(Kind::kExpertBwd, l, g, {&compute[g], 1}, 0.0);
          graph_.add_dependency(cg, t);
          expert_bwd_[l].push_back(t);
          seq(g, t);
        }
        engine::TaskId dg = collective_after(Kind::kDispatchGrad, l, a2a, last);
        a2a_[l].push_back({dg, true});
        for (int g = 0; g < n_; ++g) {
          engine::TaskId t = add(Kind::kRouterBwd, l, g, {&compute[g], 1}, router);
          graph_.add_dependency(dg, t);
          seq(g, t);
        }
      }
      for (int g = 0; g < n_; ++g) seq(g, add(Kind::kAttnBwd, -1, g, {&compute[g], 1}, attn_b));
      if (last_mb) {
        dp_tasks.push_back(collective_after(Kind::kDpAllReduce, l, dp, last));
        dp_durations.push_back(dp_time + (l >= 0 ? expert_ar_time : 0.0));
      }
    }
    if (last_mb) {  // embeddings / LM head
      dp_tasks.push_back(collective_after(Kind::kDpAllReduce, -1, dp, last));
      dp_durations.push_back(emb_time);
    }
  }
  for (size_t i = 0; i < dp_tasks.size(); ++i) graph_.set_duration(dp_tasks[i], Seconds(dp_durations[i]));
  const double owned = opt.optimizer_params_per_gpu;
  for (int g = 0; g < n_; ++g) {
    engine::TaskId t = add(Kind::kOptimizer, -1, g, {&compute[g], 1}, cc.optimizer_step(owned).value());
    graph_.add_dependency(dp_tasks.back(), t);
    for (auto d : dp_tasks) graph_.add_dependency(d, t);
  }
  graph_.seal();
}

engine::TaskId MoeIterationGraph::add(Kind k, int moe_layer, int gpu, std::span<const engine::ResourceId> res, double dur) {
  info_.push_back({k, static_cast<int16_t>(moe_layer), gpu});
  return graph_.add_task(res, Seconds(dur), static_cast<uint32_t>(info_.size() - 1));
}

Component MoeIterationGraph::component(Kind k) const {
  switch (k) {
    case Kind::kAttnFwd: case Kind::kAttnBwd: case Kind::kDenseFwd: case Kind::kDenseBwd:
    case Kind::kHeadFwd: case Kind::kHeadBwd:
      return Component::kAttention;
    case Kind::kRouter: case Kind::kUnpermute: case Kind::kRouterBwd: case Kind::kUnpermuteBwd:
      return Component::kRouting;
    case Kind::kExpertFwd: case Kind::kExpertBwd:
      return Component::kExpertCompute;
    case Kind::kDispatch: case Kind::kCombine: case Kind::kCombineGrad: case Kind::kDispatchGrad:
      return Component::kAllToAll;
    case Kind::kDpAllReduce:
      return Component::kDenseAllReduce;
    case Kind::kOptimizer:
      return Component::kOptimizer;
  }
  return Component::kAttention;
}

IterationResult MoeIterationGraph::run(std::span<const LayerPlan> plans) {
  const auto& m = ctx_.model;
  const auto& cc = ctx_.compute;
  const int L = m.moe_layers();
  const double ga = m.grad_accum;
  IterationResult res;
  // Mean expert time per (layer, direction) for the straggler split.
  std::vector<double> mean_fwd(L), mean_bwd(L);
  std::vector<double> scratch;
  double worst_a2a = -1;
  for (int l = 0; l < L; ++l) {
    const LayerPlan& p = plans[l];
    double sf = 0, sb = 0;
    for (int g = 0; g < n_; ++g) {
      scratch.assign(p.expert_tokens[g].begin(), p.expert_tokens[g].end());
      for (double& t : scratch) t /= ga;
      const double f = cc.expert_forward(scratch).value();
      const double b = cc.expert_backward(scratch).value();
      sf += f;
      sb += b;
      for (int mb = 0; mb < m.grad_accum; ++mb) {
        graph_.set_duration(expert_fwd_[l][static_cast<size_t>(mb) * n_ + g], Seconds(f));
        graph_.set_duration(expert_bwd_[l][static_cast<size_t>(mb) * n_ + g], Seconds(b));
      }
    }
    mean_fwd[l] = sf / n_;
    mean_bwd[l] = sb / n_;
    scratch.assign(p.dispatch_bytes.begin(), p.dispatch_bytes.end());
    for (double& x : scratch) x /= ga;
    const double t_fwd = net_.alltoallv_time(scratch, false);
    const auto link_fwd = net_.last_bottleneck();
    const double t_tr = net_.alltoallv_time(scratch, true);
    const auto link_tr = net_.last_bottleneck();
    if (std::max(t_fwd, t_tr) > worst_a2a) {
      worst_a2a = std::max(t_fwd, t_tr);
      res.bottleneck_link = t_fwd >= t_tr ? link_fwd : link_tr;
    }
    for (const auto& a : a2a_[l]) graph_.set_duration(a.task, Seconds(a.transposed ? t_tr : t_fwd));
  }
  engine::Simulation sim(graph_);
  sim.run();
  res.time = sim.makespan();
  std::vector<double> gpu_expert(n_, 0.0);
  for (engine::TaskId t : sim.critical_path()) {
    const Info& in = info_[graph_.tag(t)];
    const double d = sim.end_time(t) - sim.start_time(t);
    const Component c = component(in.kind);
    if (c == Component::kExpertCompute) {
      const double mean = in.kind == Kind::kExpertFwd ? mean_fwd[in.moe_layer] : mean_bwd[in.moe_layer];
      const double base = std::min(d, mean);
      res.breakdown[static_cast<int>(Component::kExpertCompute)] += base;
      res.breakdown[static_cast<int>(Component::kStragglerWait)] += d - base;
      gpu_expert[in.gpu] += d;
    } else {
      res.breakdown[static_cast<int>(c)] += d;
    }
  }
  double best = 0;
  for (int g = 0; g < n_; ++g)
    if (gpu_expert[g] > best) best = gpu_expert[g], res.bottleneck_gpu = g;
  return res;
}

}  // namespace hs::strategy
