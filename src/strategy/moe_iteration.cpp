#include "strategy/moe_iteration.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>

#include "collective/all_reduce.hpp"
#include "collective/all_to_all.hpp"
#include "collective/ring.hpp"

namespace hs::strategy {

MoeIterationGraph::MoeIterationGraph(const Context& ctx, MoeGraphOptions opt)
    : ctx_(ctx), opt_(opt), n_(ctx.topo.num_gpus()), net_(ctx.topo) {
  if (ctx.flow_network) flow_ = std::make_unique<network::FlowNetwork>(ctx.topo, ctx.flow_precision);
  else coflow_ = std::make_unique<network::CoflowNetwork>(ctx.topo);
  const auto& m = ctx.model;
  const auto& cc = ctx.compute;
  const int L = m.moe_layers();
  expert_fwd_.assign(L, {});
  expert_bwd_.assign(L, {});
  shadow_fwd_.assign(L, {});
  shadow_bwd_.assign(L, {});
  a2a_.assign(L, {});
  spag_.assign(L, {});
  sprs_.assign(L, {});
  calib_.assign(L, {});
  copy_in_.assign(L, {});
  copy_out_.assign(L, {});
  std::vector<engine::ResourceId> compute(n_), a2a(n_), dp(n_), sparse;
  for (int g = 0; g < n_; ++g) {
    compute[g] = graph_.add_resource(fmt::format("gpu{}.compute", g), g);
    a2a[g] = graph_.add_resource(fmt::format("gpu{}.a2a", g), g);
    dp[g] = graph_.add_resource(fmt::format("gpu{}.dp", g), g);
    if ((opt.sparse || opt.migrations || opt.shadow) && !opt.single_queue)
      sparse.push_back(graph_.add_resource(fmt::format("gpu{}.sparse", g), g));
  }
  if (opt.single_queue) sparse = a2a;
  std::vector<int> moe_index(m.layers, -1);
  for (int i = 0; i < L; ++i) moe_index[m.moe_layer_ids[i]] = i;
  const double tokens_mb = static_cast<double>(m.tokens_per_micro_batch());
  const double attn_f = cc.attention_forward().value(), attn_b = cc.attention_backward().value();
  const double router = cc.router_and_permute(tokens_mb).value(), unperm = cc.unpermute(tokens_mb).value();
  const auto params = cost::count_params(m);
  const double block_grad_bytes = params.dense_per_block * m.precision.grad_bytes;
  std::vector<int> all(n_);
  std::iota(all.begin(), all.end(), 0);
  // Dense-gradient all-reduces: ring, tree or NVLS, whichever NCCL's model would pick.
  const auto block_ar = collective::plan_all_reduce(net_, all, block_grad_bytes);
  const double dp_time = block_ar.time;
  if (!block_ar.flows.empty()) dense_algo_ = collective::to_string(block_ar.algo);
  const double emb_grad_bytes = (params.dense - params.dense_per_block * m.layers) * m.precision.grad_bytes;
  const auto emb_ar = collective::plan_all_reduce(net_, all, emb_grad_bytes);
  const double emb_time = emb_ar.time;
  net_.loads(block_ar.flows, block_ar.extra_latency, block_loads_);
  net_.loads(emb_ar.flows, emb_ar.extra_latency, emb_loads_);
  double expert_ar_time = 0;
  const int ep = opt.ep_size > 0 ? opt.ep_size : n_;
  // The EP replicas' expert-gradient rings (every replica set at once) in fluid form, with the
  // ring's step latencies: their own tasks, after the dense one on the dp stream.
  collective::Coflow expert_flows;
  double extra_exp = 0;
  if (ep < n_ && opt.expert_grad_bytes_per_gpu_layer > 0) {
    const int members = n_ / ep;
    std::vector<std::vector<int>> groups(ep);
    for (int r = 0; r < ep; ++r)
      for (int k = 0; k < members; ++k) groups[r].push_back(k * ep + r);
    expert_flows = collective::concurrent_ring_flows(ctx.topo, groups, opt.expert_grad_bytes_per_gpu_layer,
                                                     collective::RingOp::kAllReduce, extra_exp);
    expert_ar_time = net_.loads(expert_flows, extra_exp, expert_ar_loads_);
  }

  std::vector<engine::TaskId> last(n_, engine::kNoTask);  // last compute task per GPU
  auto collective_after = [&](Kind k, int layer, std::span<const engine::ResourceId> res,
                              const std::vector<engine::TaskId>& before) {
    engine::TaskId c = add(k, layer, -1, res, 0.0, comm_model_);
    for (int g = 0; g < n_; ++g)
      if (before[g] != engine::kNoTask) graph_.add_dependency(before[g], c);
    return c;
  };
  if (opt.sparse || opt.migrations) {
    reshard_ = add(Kind::kReshard, -1, -1, sparse, 0.0, comm_model_);
  }
  auto compute_task = [&](Kind k, int l, int g, double d) {
    engine::TaskId t = add(k, l, g, {&compute[g], 1}, d);
    if (last[g] == engine::kNoTask && reshard_ != engine::kNoTask) graph_.add_dependency(reshard_, t);
    last[g] = t;
    return t;
  };
  std::vector<engine::TaskId> dp_tasks;
  std::vector<DpKind> dp_kinds;
  std::vector<int> dp_layers;  // MoE layer of a replica-group all-reduce, else -1
  std::vector<double> dp_durations;
  std::vector<engine::TaskId> pending_spag(L, engine::kNoTask);  // spAG an expert task must wait for
  for (int mb = 0; mb < m.grad_accum; ++mb) {
    building_mb_ = mb;
    const bool last_mb = mb + 1 == m.grad_accum;
    // Forward.
    for (int b = 0; b < m.layers; ++b) {
      const int l = moe_index[b];
      if (l >= 0 && opt.sparse && (mb == 0 || opt.rematerialize)) {
        pending_spag[l] = collective_after(Kind::kSpag, l, sparse, last);
        spag_[l].push_back(pending_spag[l]);
      }
      for (int g = 0; g < n_; ++g) compute_task(Kind::kAttnFwd, -1, g, attn_f);
      if (l < 0) {
        for (int g = 0; g < n_; ++g) compute_task(Kind::kDenseFwd, -1, g, cc.dense_ffn_forward().value());
        continue;
      }
      for (int g = 0; g < n_; ++g) compute_task(Kind::kRouter, l, g, router);
      engine::TaskId calib = engine::kNoTask;
      if (opt.sparse && opt.calibration && mb == 0) {
        calib = collective_after(Kind::kCalibration, l, sparse, last);
        calib_[l].push_back(calib);
      }
      engine::TaskId disp = collective_after(Kind::kDispatch, l, a2a, last);
      a2a_[l].push_back({disp, false});
      engine::TaskId bcast = engine::kNoTask;  // FasterMoE: after the dispatch on the same stream
      if (opt.shadow) {
        bcast = collective_after(Kind::kShadowBcast, l, a2a, last);
        spag_[l].push_back(bcast);
      }
      // Copies that arrived (spAG, and calibration copies) are copied into the expert buffer; the
      // experts need them, the dispatch does not.
      const bool fresh = pending_spag[l] != engine::kNoTask || calib != engine::kNoTask;
      for (int g = 0; g < n_; ++g) {
        if (fresh) {
          engine::TaskId c = compute_task(Kind::kCopyIn, l, g, 0.0);
          if (pending_spag[l] != engine::kNoTask) graph_.add_dependency(pending_spag[l], c);
          if (calib != engine::kNoTask) graph_.add_dependency(calib, c);
          copy_in_[l].push_back(c);
        }
        engine::TaskId t = compute_task(Kind::kExpertFwd, l, g, 0.0);
        graph_.add_dependency(disp, t);
        expert_fwd_[l].push_back(t);
      }
      pending_spag[l] = engine::kNoTask;
      const std::vector<engine::TaskId> experts_done = last;  // what the combine waits for
      if (opt.shadow) {
        for (int g = 0; g < n_; ++g) {
          engine::TaskId c = compute_task(Kind::kCopyIn, l, g, 0.0);
          graph_.add_dependency(bcast, c);
          copy_in_[l].push_back(c);
          shadow_fwd_[l].push_back(compute_task(Kind::kShadowFwd, l, g, 0.0));
        }
      }
      engine::TaskId comb = collective_after(Kind::kCombine, l, a2a, experts_done);
      a2a_[l].push_back({comb, true});
      for (int g = 0; g < n_; ++g) graph_.add_dependency(comb, compute_task(Kind::kUnpermute, l, g, unperm));
    }
    for (int g = 0; g < n_; ++g) compute_task(Kind::kHeadFwd, -1, g, cc.head_forward().value());
    // With re-materialization the last block's experts are gathered again during the LM head backward.
    auto issue_bwd_spag = [&](int block) {
      if (block < 0 || !opt.sparse || !opt.rematerialize) return;
      const int l = moe_index[block];
      if (l < 0) return;
      pending_spag[l] = collective_after(Kind::kSpag, l, sparse, last);
      spag_[l].push_back(pending_spag[l]);
    };
    issue_bwd_spag(m.layers - 1);
    for (int g = 0; g < n_; ++g) compute_task(Kind::kHeadBwd, -1, g, cc.head_backward().value());
    // Backward.
    for (int b = m.layers - 1; b >= 0; --b) {
      const int l = moe_index[b];
      if (l < 0) {
        for (int g = 0; g < n_; ++g) compute_task(Kind::kDenseBwd, -1, g, cc.dense_ffn_backward().value());
      } else {
        for (int g = 0; g < n_; ++g) compute_task(Kind::kUnpermuteBwd, l, g, unperm);
        engine::TaskId cg = collective_after(Kind::kCombineGrad, l, a2a, last);
        a2a_[l].push_back({cg, false});
        const bool returns = opt.sparse && (last_mb || opt.rematerialize);
        engine::TaskId reduce = engine::kNoTask;
        if (opt.shadow) {  // shadows first (local gradients), their gradients reduced to the owners
          for (int g = 0; g < n_; ++g) {
            shadow_bwd_[l].push_back(compute_task(Kind::kShadowBwd, l, g, 0.0));
            copy_out_[l].push_back(compute_task(Kind::kCopyOut, l, g, 0.0));
          }
          reduce = collective_after(Kind::kShadowReduce, l, sparse, last);
          sprs_[l].push_back(reduce);
        }
        for (int g = 0; g < n_; ++g) {
          if (pending_spag[l] != engine::kNoTask) {  // re-gathered copies into the expert buffer
            engine::TaskId c = compute_task(Kind::kCopyIn, l, g, 0.0);
            graph_.add_dependency(pending_spag[l], c);
            copy_in_[l].push_back(c);
          }
          engine::TaskId t = compute_task(Kind::kExpertBwd, l, g, 0.0);
          graph_.add_dependency(cg, t);
          if (reduce != engine::kNoTask) graph_.add_dependency(reduce, t);
          expert_bwd_[l].push_back(t);
          if (returns) copy_out_[l].push_back(compute_task(Kind::kCopyOut, l, g, 0.0));
        }
        pending_spag[l] = engine::kNoTask;
        if (returns) sprs_[l].push_back(collective_after(Kind::kSprs, l, sparse, last));
        engine::TaskId dg = collective_after(Kind::kDispatchGrad, l, a2a, last);
        a2a_[l].push_back({dg, true});
        for (int g = 0; g < n_; ++g) graph_.add_dependency(dg, compute_task(Kind::kRouterBwd, l, g, router));
      }
      issue_bwd_spag(b - 1);
      for (int g = 0; g < n_; ++g) compute_task(Kind::kAttnBwd, -1, g, attn_b);
      if (last_mb) {
        auto dp_task = [&](DpKind kind, double duration, int layer) {
          dp_tasks.push_back(collective_after(Kind::kDpAllReduce, l, dp, last));
          dp_durations.push_back(duration);
          dp_kinds.push_back(kind);
          dp_layers.push_back(layer);
        };
        dp_task(DpKind::kBlock, dp_time, -1);
        // The EP replicas' expert-gradient all-reduce follows on the same in-order stream.
        if (l >= 0 && expert_ar_time > 0) dp_task(DpKind::kExpert, expert_ar_time, -1);
        // FlexMoE's replica groups: per iteration, from the layer's plan.
        if (l >= 0 && opt.replica_allreduce) dp_task(DpKind::kReplica, 0.0, l);
      }
    }
    if (last_mb) {  // embeddings / LM head
      dp_tasks.push_back(collective_after(Kind::kDpAllReduce, -1, dp, last));
      dp_durations.push_back(emb_time);
      dp_kinds.push_back(DpKind::kEmbedding);
      dp_layers.push_back(-1);
    }
  }
  building_mb_ = -1;
  for (size_t i = 0; i < dp_tasks.size(); ++i) graph_.set_duration(dp_tasks[i], Seconds(dp_durations[i]));
  for (size_t i = 0; i < dp_tasks.size(); ++i) {
    const DpKind k = dp_kinds[i];
    dp_.push_back({dp_tasks[i], k, dp_layers[i]});
    if (!flow_) continue;
    if (k == DpKind::kEmbedding) flow_->assign(dp_tasks[i], emb_ar.flows, emb_ar.extra_latency);
    else if (k == DpKind::kExpert) flow_->assign(dp_tasks[i], expert_flows, extra_exp);
    else if (k == DpKind::kBlock) flow_->assign(dp_tasks[i], block_ar.flows, block_ar.extra_latency);
  }
  default_optimizer_time_ = cc.optimizer_step(opt.optimizer_params_per_gpu).value();
  for (int g = 0; g < n_; ++g) {
    engine::TaskId t = compute_task(Kind::kOptimizer, -1, g, default_optimizer_time_);
    for (auto d : dp_tasks) graph_.add_dependency(d, t);
    if (opt.sparse)
      for (int l = 0; l < L; ++l)
        for (auto s : sprs_[l]) graph_.add_dependency(s, t);
    optimizer_.push_back(t);
  }
  graph_.seal();
  prev_.build(graph_);
}

engine::TaskId MoeIterationGraph::add(Kind k, int moe_layer, int gpu, std::span<const engine::ResourceId> res, double dur,
                                     engine::ModelId model) {
  info_.push_back({k, static_cast<int16_t>(moe_layer), gpu, building_mb_});
  const engine::TaskId t = graph_.add_task(res, Seconds(dur), static_cast<uint32_t>(info_.size() - 1), model);
  graph_.set_activity(t, communication(k) ? engine::Activity::kCommunication : engine::Activity::kCompute);
  return t;
}

bool MoeIterationGraph::communication(Kind k) {
  switch (k) {
    case Kind::kDispatch: case Kind::kCombine: case Kind::kCombineGrad: case Kind::kDispatchGrad:
    case Kind::kDpAllReduce: case Kind::kSpag: case Kind::kSprs: case Kind::kCalibration: case Kind::kReshard:
    case Kind::kShadowBcast: case Kind::kShadowReduce:
      return true;
    default:
      return false;
  }
}

Component MoeIterationGraph::component(Kind k) {
  switch (k) {
    case Kind::kAttnFwd: case Kind::kAttnBwd: case Kind::kDenseFwd: case Kind::kDenseBwd:
    case Kind::kHeadFwd: case Kind::kHeadBwd:
      return Component::kAttention;
    case Kind::kRouter: case Kind::kUnpermute: case Kind::kRouterBwd: case Kind::kUnpermuteBwd:
      return Component::kRouting;
    case Kind::kExpertFwd: case Kind::kExpertBwd: case Kind::kShadowFwd: case Kind::kShadowBwd:
      return Component::kExpertCompute;
    case Kind::kDispatch: case Kind::kCombine: case Kind::kCombineGrad: case Kind::kDispatchGrad:
      return Component::kAllToAll;
    case Kind::kDpAllReduce:
      return Component::kDenseAllReduce;
    case Kind::kOptimizer:
      return Component::kOptimizer;
    case Kind::kSpag: case Kind::kShadowBcast:
      return Component::kExposedSpag;
    case Kind::kSprs: case Kind::kShadowReduce:
      return Component::kExposedSprs;
    case Kind::kCalibration:
      return Component::kCalibrationSpag;
    case Kind::kReshard:
      return Component::kReshard;
    case Kind::kCopyIn: case Kind::kCopyOut:
      return Component::kMaterializeCopy;
  }
  return Component::kAttention;
}

void MoeIterationGraph::breakdown(const engine::Simulation& sim, const std::vector<double>& mean_fwd,
                                  const std::vector<double>& mean_bwd, IterationResult& res) const {
  auto charge = [&](engine::TaskId t) {
    const Info& in = info_[graph_.tag(t)];
    TaskCharge c;
    c.component = component(in.kind);
    c.overlappable = overlappable(in.kind);
    c.communication = communication(in.kind);
    if (in.kind == Kind::kExpertFwd || in.kind == Kind::kExpertBwd) {
      const size_t at = static_cast<size_t>(in.moe_layer) * ctx_.model.grad_accum + std::max(0, in.mb);
      c.mean = in.kind == Kind::kExpertFwd ? mean_fwd[at] : mean_bwd[at];
      c.gpu = in.gpu;
    }
    return c;
  };
  walk_critical_path(graph_, sim, prev_, charge, n_, res);
}

const char* MoeIterationGraph::kind_name(Kind k) {
  switch (k) {
    case Kind::kAttnFwd: return "attention_fwd";
    case Kind::kAttnBwd: return "attention_bwd";
    case Kind::kDenseFwd: return "dense_ffn_fwd";
    case Kind::kDenseBwd: return "dense_ffn_bwd";
    case Kind::kRouter: return "router+permute";
    case Kind::kUnpermute: return "unpermute";
    case Kind::kRouterBwd: return "router_bwd";
    case Kind::kUnpermuteBwd: return "unpermute_bwd";
    case Kind::kExpertFwd: return "expert_fwd";
    case Kind::kExpertBwd: return "expert_bwd";
    case Kind::kDispatch: return "dispatch";
    case Kind::kCombine: return "combine";
    case Kind::kCombineGrad: return "combine_grad";
    case Kind::kDispatchGrad: return "dispatch_grad";
    case Kind::kHeadFwd: return "lm_head_fwd";
    case Kind::kHeadBwd: return "lm_head_bwd";
    case Kind::kDpAllReduce: return "dp_allreduce";
    case Kind::kOptimizer: return "optimizer";
    case Kind::kSpag: return "spAG";
    case Kind::kSprs: return "spRS";
    case Kind::kCalibration: return "calibration_spAG";
    case Kind::kReshard: return "reshard";
    case Kind::kCopyIn: return "materialize_copy";
    case Kind::kCopyOut: return "grad_copy_out";
    case Kind::kShadowBcast: return "shadow_broadcast";
    case Kind::kShadowReduce: return "shadow_grad_reduce";
    case Kind::kShadowFwd: return "shadow_expert_fwd";
    case Kind::kShadowBwd: return "shadow_expert_bwd";
  }
  return "?";
}

void MoeIterationGraph::emit(const engine::Simulation& sim, TimelineSink& sink) const {
  for (engine::TaskId t = 0; t < graph_.num_tasks(); ++t) {
    const Info& in = info_[graph_.tag(t)];
    TimelineEvent ev;
    ev.name = in.moe_layer >= 0 ? fmt::format("{} L{}", kind_name(in.kind), in.moe_layer) : kind_name(in.kind);
    ev.category = component_name(component(in.kind));
    ev.start = sim.start_time(t);
    ev.end = sim.end_time(t);
    for (engine::ResourceId r : graph_.resources(t)) {
      const std::string& rn = graph_.resource_name(r);  // "gpu<N>.<stream>"
      const auto dot = rn.find('.');
      ev.gpu = std::stoi(rn.substr(3, dot - 3));
      ev.stream = rn.substr(dot + 1);
      sink.event(ev);
    }
  }
}

IterationResult MoeIterationGraph::run(std::span<const LayerPlan> plans, const IterationExtras& extras,
                                       TimelineSink* timeline) {
  begin();
  for (int l = 0; l < ctx_.model.moe_layers(); ++l) layer(l, plans[l]);
  return finish(extras, timeline, plans);
}

void MoeIterationGraph::begin() {
  const int L = ctx_.model.moe_layers(), G = ctx_.model.grad_accum;
  res_ = IterationResult{};
  if (coflow_) coflow_->clear();
  mean_fwd_.assign(static_cast<size_t>(L) * G, 0.0);
  mean_bwd_.assign(static_cast<size_t>(L) * G, 0.0);
  worst_a2a_ = -1;
}

void MoeIterationGraph::layer(int l, const LayerPlan& p) {
  const auto& m = ctx_.model;
  const auto& cc = ctx_.compute;
  const int G = m.grad_accum;
  const double ga = G;
  IterationResult& res = res_;
  std::vector<double>& mean_fwd = mean_fwd_;
  std::vector<double>& mean_bwd = mean_bwd_;
  std::vector<double>& scratch = scratch_;
  double& worst_a2a = worst_a2a_;
  auto mb_of = [&](engine::TaskId t) { return std::max(0, info_[graph_.tag(t)].mb); };
  {
    // Token-dependent work per micro-batch: with p.micro one variant per micro-batch, its own counts;
    // without, one variant (the iteration's counts / grad_accum) for every micro-batch.
    const bool per_mb = !p.micro.empty();
    if (per_mb && static_cast<int>(p.micro.size()) != G)
      throw std::logic_error(fmt::format("layer plan with {} micro-batches for grad_accum {}", p.micro.size(), G));
    const int variants = per_mb ? G : 1;
    const double div = per_mb ? 1.0 : ga;
    for (int v = 0; v < variants; ++v) {
      const LayerPlan& q = per_mb ? p.micro[v] : p;
      const int mb_lo = per_mb ? v : 0, mb_hi = per_mb ? v + 1 : G;  // the micro-batches it serves
      double sf = 0, sb = 0;
      for (int g = 0; g < n_; ++g) {
        scratch.assign(q.expert_tokens[g].begin(), q.expert_tokens[g].end());
        for (double& t : scratch) t /= div;
        const double f = q.expert_fwd_seconds.empty() ? cc.expert_forward(scratch).value() : q.expert_fwd_seconds[g];
        const double b = q.expert_bwd_seconds.empty() ? cc.expert_backward(scratch).value() : q.expert_bwd_seconds[g];
        sf += f;
        sb += b;
        for (int mb = mb_lo; mb < mb_hi; ++mb) {
          graph_.set_duration(expert_fwd_[l][static_cast<size_t>(mb) * n_ + g], Seconds(f));
          graph_.set_duration(expert_bwd_[l][static_cast<size_t>(mb) * n_ + g], Seconds(b));
        }
      }
      // Shadowed experts' local tokens (FasterMoE): their own grouped GEMM, none without tokens.
      for (int g = 0; g < static_cast<int>(shadow_fwd_[l].size() / G); ++g) {
        double f = 0, b = 0;
        if (!q.shadow_tokens.empty()) {
          scratch.assign(q.shadow_tokens[g].begin(), q.shadow_tokens[g].end());
          for (double& t : scratch) t /= div;
          if (std::any_of(scratch.begin(), scratch.end(), [](double t) { return t > 0; }))
            f = cc.expert_forward(scratch).value(), b = cc.expert_backward(scratch).value();
        }
        for (int mb = mb_lo; mb < mb_hi; ++mb) {
          graph_.set_duration(shadow_fwd_[l][static_cast<size_t>(mb) * n_ + g], Seconds(f));
          graph_.set_duration(shadow_bwd_[l][static_cast<size_t>(mb) * n_ + g], Seconds(b));
        }
      }
      for (int mb = mb_lo; mb < mb_hi; ++mb) {
        mean_fwd[static_cast<size_t>(l) * G + mb] = sf / n_;
        mean_bwd[static_cast<size_t>(l) * G + mb] = sb / n_;
      }
      // The dispatch / combine all-to-alls of the micro-batches this variant serves (the plan's own
      // matrix when it is not divided).
      std::span<const double> bytes = q.dispatch_bytes;
      if (div != 1.0) {
        scratch.assign(q.dispatch_bytes.begin(), q.dispatch_bytes.end());
        for (double& x : scratch) x /= div;
        bytes = scratch;
      }
      auto serves = [&](engine::TaskId t) { return !per_mb || mb_of(t) == v; };
      if (flow_) {
        const double t_fwd = net_.alltoallv_time(bytes, false);
        const auto link_fwd = net_.last_bottleneck();
        const double t_tr = net_.alltoallv_time(bytes, true);
        const auto link_tr = net_.last_bottleneck();
        if (std::max(t_fwd, t_tr) > worst_a2a) {
          worst_a2a = std::max(t_fwd, t_tr);
          res.bottleneck_link = t_fwd >= t_tr ? link_fwd : link_tr;
        }
        double extra_fwd = 0, extra_tr = 0;
        const collective::Coflow fwd = collective::alltoallv_flows(net_.topology(), bytes, false, extra_fwd);
        const collective::Coflow tr = collective::alltoallv_flows(net_.topology(), bytes, true, extra_tr);
        for (const auto& a : a2a_[l])
          if (serves(a.task)) flow_->assign(a.task, a.transposed ? tr : fwd, a.transposed ? extra_tr : extra_fwd);
      } else {
        // Analytic tier: each coflow's link loads, shared with whatever runs beside it.
        const auto t = net_.alltoallv_loads_both(bytes, loads_, loads_tr_);
        const int id_fwd = coflow_->define(loads_);
        const int id_tr = coflow_->define(loads_tr_);
        if (std::max(t.fwd, t.tr) > worst_a2a) {
          worst_a2a = std::max(t.fwd, t.tr);
          res.bottleneck_link = t.fwd >= t.tr ? t.link_fwd : t.link_tr;
        }
        for (const auto& a : a2a_[l])
          if (serves(a.task)) coflow_->assign(a.task, a.transposed ? id_tr : id_fwd);
      }
    }
    // Placement-level communication is the iteration's; FasterMoE's shadows (broadcast, reduce,
    // copies) are decided per forward call and so come from their micro-batch's plan.
    const bool shadow_mb = opt_.shadow && per_mb;
    auto sparse_plan = [&](engine::TaskId t) -> const LayerPlan& { return shadow_mb ? p.micro[mb_of(t)] : p; };
    // Materialized copies: parameters copied into the expert buffer, their gradients out.
    const double grad_ratio = m.precision.grad_bytes / m.precision.param_bytes;
    auto copy_time = [&](double bytes) { return bytes > 0 ? cc.memory_copy(Bytes(bytes)).value() : 0.0; };
    for (size_t i = 0; i < copy_in_[l].size(); ++i) {
      const auto& cb = sparse_plan(copy_in_[l][i]).copy_bytes;
      graph_.set_duration(copy_in_[l][i], Seconds(cb.empty() ? 0.0 : copy_time(cb[i % n_])));
    }
    for (size_t i = 0; i < copy_out_[l].size(); ++i) {
      const auto& cb = sparse_plan(copy_out_[l][i]).copy_bytes;
      graph_.set_duration(copy_out_[l][i], Seconds(cb.empty() ? 0.0 : copy_time(cb[i % n_] * grad_ratio)));
    }
    if (flow_) {
      for (auto t : spag_[l]) flow_->assign(t, sparse_plan(t).spag_flows, sparse_plan(t).spag_latency);
      for (auto t : sprs_[l]) flow_->assign(t, sparse_plan(t).sprs_flows, sparse_plan(t).sprs_latency);
      for (auto t : calib_[l]) flow_->assign(t, p.calibration_flows, p.calibration_latency);
    } else {
      auto define = [&](collective::Coflow LayerPlan::*flows, double LayerPlan::*latency,
                        const std::vector<engine::TaskId>& tasks, bool per_task) {
        if (tasks.empty()) return;
        if (!per_task) {  // one coflow for every task of the layer
          net_.loads(p.*flows, p.*latency, loads_);
          const int id = coflow_->define(loads_);
          for (auto t : tasks) coflow_->assign(t, id);
          return;
        }
        for (auto t : tasks) {
          net_.loads(sparse_plan(t).*flows, sparse_plan(t).*latency, loads_);
          coflow_->assign(t, coflow_->define(loads_));
        }
      };
      define(&LayerPlan::spag_flows, &LayerPlan::spag_latency, spag_[l], shadow_mb);
      define(&LayerPlan::sprs_flows, &LayerPlan::sprs_latency, sprs_[l], shadow_mb);
      define(&LayerPlan::calibration_flows, &LayerPlan::calibration_latency, calib_[l], false);
    }
  }
}

IterationResult MoeIterationGraph::finish(const IterationExtras& extras, TimelineSink* timeline,
                                          std::span<const LayerPlan> plans) {
  const auto& cc = ctx_.compute;
  IterationResult res = std::move(res_);
  if (reshard_ != engine::kNoTask) {
    if (flow_) flow_->assign(reshard_, extras.reshard_flows);
    else {
      net_.loads(extras.reshard_flows, 0.0, loads_);
      coflow_->assign(reshard_, coflow_->define(loads_));
    }
  }
  if (coflow_) {
    const int block = coflow_->define(block_loads_), emb = coflow_->define(emb_loads_);
    const int expert = coflow_->define(expert_ar_loads_);
    for (const auto& d : dp_) {
      if (d.kind == DpKind::kReplica) continue;
      coflow_->assign(d.task, d.kind == DpKind::kEmbedding ? emb : d.kind == DpKind::kExpert ? expert : block);
    }
  }
  for (const auto& d : dp_) {
    if (d.kind != DpKind::kReplica) continue;
    if (plans.empty()) throw std::logic_error("MoeIterationGraph::finish: replica all-reduces need every layer's plan");
    const LayerPlan& p = plans[d.layer];
    if (flow_) {
      flow_->assign(d.task, p.replica_grad_flows, p.replica_grad_latency);
    } else {
      net_.loads(p.replica_grad_flows, p.replica_grad_latency, loads_);
      coflow_->assign(d.task, coflow_->define(loads_));
    }
  }
  for (int g = 0; g < n_; ++g)
    graph_.set_duration(optimizer_[g], Seconds(extras.optimizer_params.empty()
                                                   ? default_optimizer_time_
                                                   : cc.optimizer_step(extras.optimizer_params[g]).value()));
  engine::Simulation sim(graph_);
  if (flow_) sim.add_model(flow_.get());
  else sim.add_model(coflow_.get());
  sim.set_interference(ctx_.interference);
  sim.run();
  res.time = sim.makespan();
  breakdown(sim, mean_fwd_, mean_bwd_, res);
  if (timeline) emit(sim, *timeline);
  return res;
}

}  // namespace hs::strategy
