#include "strategy/layout_iteration.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "collective/all_to_all.hpp"
#include "collective/ring.hpp"
#include "cost/layout_memory.hpp"
#include "engine/simulation.hpp"

namespace hs::strategy {

std::vector<PipelineOp> one_f_one_b(int stages, int stage, int micro_batches) {
  const int warm = std::min(stages - stage - 1, micro_batches);
  std::vector<PipelineOp> ops;
  int f = 0, b = 0;
  for (; f < warm; ++f) ops.push_back({true, f});
  while (f < micro_batches) {
    ops.push_back({true, f++});
    ops.push_back({false, b++});
  }
  while (b < micro_batches) ops.push_back({false, b++});
  return ops;
}

std::vector<PipelineOp> interleaved_1f1b(int stages, int stage, int micro_batches, int chunks) {
  if (chunks == 1) return one_f_one_b(stages, stage, micro_batches);
  const int total = micro_batches * chunks, group = stages * chunks;
  // Megatron-LM, core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving:
  // with m == pp every forward runs first; else (pp - s - 1) x 2 + (vpp - 1) x pp warm-up forwards.
  const int warm = micro_batches == stages ? total : std::min((stages - stage - 1) * 2 + (chunks - 1) * stages, total);
  auto op = [&](int k, bool forward) {
    const int c = (k % group) / stages;  // model chunk of the k-th forward; backwards run them in reverse
    return PipelineOp{forward, (k / group) * stages + k % stages, forward ? c : chunks - 1 - c};
  };
  std::vector<PipelineOp> ops;
  for (int k = 0; k < warm; ++k) ops.push_back(op(k, true));
  for (int k = 0; k < total - warm; ++k) {
    ops.push_back(op(warm + k, true));
    ops.push_back(op(k, false));
  }
  for (int k = total - warm; k < total; ++k) ops.push_back(op(k, false));
  return ops;
}

TpTraffic tp_traffic(const workload::ModelSpec& m, const workload::ParallelLayout& l, bool moe_block) {
  TpTraffic t;
  if (l.tp == 1) return t;
  t.payload = static_cast<double>(m.seq_len) * m.micro_batch * m.d_model * m.precision.activation_bytes;
  const int sublayers = moe_block ? 1 : 2;  // attention (+ dense FFN); an MoE layer's experts are not TP-split
  t.all_reduce = !l.sequence_parallel;
  t.collectives = l.sequence_parallel ? 2 * sublayers : sublayers;
  const double share = static_cast<double>(l.tp - 1) / l.tp;
  t.sent_per_gpu = t.collectives * t.payload * share * (t.all_reduce ? 2.0 : 1.0);
  return t;
}

LayoutIterationGraph::LayoutIterationGraph(const Context& ctx, const workload::ParallelLayout& layout,
                                           LayoutSparse sparse)
    : ctx_(ctx), layout_(layout), sparse_(sparse), net_(ctx.topo) {}

namespace {

enum Cls : uint8_t { kChunk, kTp, kPp, kDp, kA2a, kSparse, kOther };

}  // namespace

void LayoutIterationGraph::build(const std::vector<char>& shape) {
  const auto& m = ctx_.model;
  const auto& cc = ctx_.compute;
  const auto& L = layout_;
  const auto& topo = ctx_.topo;
  const int n = topo.num_gpus(), P = L.pp, M = m.grad_accum, V = L.vpp, VS = P * V, S = L.stage_size();
  const int LM = m.moe_layers();
  const double t = L.tp;
  ++builds_;
  g_ = engine::TaskGraph();
  comp_.clear();
  cls_.clear();
  mean_.clear();
  fixed_.clear();
  bindings_.clear();
  vars_.clear();
  engine::TaskGraph& g = g_;
  const engine::ModelId comm = 1;  // the id Simulation::add_model gives the network
  std::vector<engine::ResourceId> compute(n), a2a(n), dp(n), ppf(n), ppb(n), sparse(n);
  bool any_sparse = false;
  for (int l = 0; l < LM; ++l) any_sparse = any_sparse || shape[l];
  for (int i = 0; i < n; ++i) {
    compute[i] = g.add_resource(fmt::format("gpu{}.compute", i), i);
    a2a[i] = g.add_resource(fmt::format("gpu{}.a2a", i), i);
    dp[i] = g.add_resource(fmt::format("gpu{}.dp", i), i);
    ppf[i] = g.add_resource(fmt::format("gpu{}.pp_fwd", i), i);
    ppb[i] = g.add_resource(fmt::format("gpu{}.pp_bwd", i), i);
    sparse[i] = any_sparse && !sparse_.single_queue ? g.add_resource(fmt::format("gpu{}.sparse", i), i) : a2a[i];
  }
  auto add = [&](std::span<const engine::ResourceId> res, double dur, Component c, Cls k, bool communication) {
    const auto tag = static_cast<uint32_t>(comp_.size());
    comp_.push_back(c);
    cls_.push_back(k);
    mean_.push_back(-1);
    const engine::TaskId id = g.add_task(res, Seconds(dur), tag, communication ? comm : engine::kFixedModel);
    g.set_activity(id, communication ? engine::Activity::kCommunication : engine::Activity::kCompute);
    return id;
  };
  auto fixed = [&](collective::Coflow flows, double extra) {
    fixed_.push_back({std::move(flows), extra, {}, false});
    return static_cast<int>(fixed_.size()) - 1;
  };
  auto bind = [&](engine::TaskId task, Bind what, int index) { bindings_.push_back({task, what, index}); };
  auto slice = [](const std::vector<engine::ResourceId>& all, std::span<const int> gpus) {
    std::vector<engine::ResourceId> out;
    for (int x : gpus) out.push_back(all[x]);
    return out;
  };

  // Groups and their communication patterns.
  const double act = static_cast<double>(m.seq_len) * m.micro_batch * m.d_model * m.precision.activation_bytes;
  const auto tp_groups = L.tp_groups();  // index p * dp + d
  std::vector<int> tp_gather(tp_groups.size(), -1), tp_reduce(tp_groups.size(), -1);  // FixedComm indices
  std::vector<std::vector<engine::ResourceId>> tp_res(tp_groups.size());
  for (size_t i = 0; i < tp_groups.size(); ++i) tp_res[i] = slice(compute, tp_groups[i]);
  auto tp_def = [&](size_t i, bool all_reduce) {
    int& d = all_reduce ? tp_reduce[i] : tp_gather[i];
    if (d < 0) {
      double extra = 0;
      auto flows = collective::ring_flows(topo, tp_groups[i], act,
                                          all_reduce ? collective::RingOp::kAllReduce : collective::RingOp::kAllGather, extra);
      d = fixed(std::move(flows), extra);
    }
    return d;
  };
  std::vector<std::vector<int>> stage_gpus(P);
  std::vector<std::vector<engine::ResourceId>> st_a2a(P), st_dp(P), st_ppf(P), st_ppb(P), st_sparse(P);
  first_compute_.assign(P, 0);
  // Sends between virtual stages (v = chunk x P + stage; without interleaving v is the stage): the
  // forward of v goes to v + 1 (stage P - 1's chunk k to stage 0's chunk k + 1), its backward to v - 1.
  std::vector<int> send_fwd(VS), send_bwd(VS);
  const double shard = act / t;  // sequence-parallel activation shard each GPU sends to the next stage
  for (int s = 0; s < P; ++s) {
    stage_gpus[s] = L.stage_gpus(s);
    st_a2a[s] = slice(a2a, stage_gpus[s]);
    st_dp[s] = slice(dp, stage_gpus[s]);
    st_ppf[s] = slice(ppf, stage_gpus[s]);
    st_ppb[s] = slice(ppb, stage_gpus[s]);
    st_sparse[s] = slice(sparse, stage_gpus[s]);
    first_compute_[s] = compute[stage_gpus[s].front()];
  }
  for (int v = 0; v < VS; ++v) {
    const int s = v % P;
    collective::Coflow f, b;
    for (int x : stage_gpus[s]) {
      if (v + 1 < VS) f.push_back({x, x + ((v + 1) % P - s) * S, shard});
      if (v > 0) b.push_back({x, x + ((v - 1) % P - s) * S, shard});
    }
    send_fwd[v] = fixed(std::move(f), 0.0);
    send_bwd[v] = fixed(std::move(b), 0.0);
  }
  std::vector<int> moe_index(m.layers, -1);
  for (int i = 0; i < LM; ++i) moe_index[m.moe_layer_ids[i]] = i;

  const double attn_f = cc.attention_forward().value() / t, attn_b = cc.attention_backward().value() / t;
  const double ffn_f = cc.dense_ffn_forward().value() / t, ffn_b = cc.dense_ffn_backward().value() / t;
  const double tokens = static_cast<double>(m.tokens_per_micro_batch()) / t;
  const double router = cc.router_and_permute(tokens).value(), unperm = cc.unpermute(tokens).value();
  const double head_f = cc.head_forward().value() / t, head_b = cc.head_backward().value() / t;

  // Dependencies on several tasks, each once (a TP collective is the last task of all its GPUs).
  auto depend = [&](std::vector<engine::TaskId>& preds, engine::TaskId id) {
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (engine::TaskId p : preds)
      if (p != engine::kNoTask) g.add_dependency(p, id);
  };
  // Per GPU: a task the next compute task must wait for (a received activation or gradient).
  std::vector<engine::TaskId> need(n, engine::kNoTask), last(n, engine::kNoTask);
  auto compute_task = [&](int x, double d, Component c, Cls k = kChunk) {
    const engine::TaskId id = add({&compute[x], 1}, d, c, k, false);
    if (need[x] != engine::kNoTask) g.add_dependency(need[x], id), need[x] = engine::kNoTask;
    last[x] = id;
    return id;
  };
  // A task whose duration run() sets from the loads.
  auto var_task = [&](int x, Var what, int l, Component c) {
    const engine::TaskId id = compute_task(x, 0.0, c);
    vars_.push_back({id, what, l, x});
  };
  auto tp_collective = [&](int s, bool all_reduce) {
    if (L.tp == 1) return;
    for (int d = 0; d < L.dp; ++d) {
      const size_t i = static_cast<size_t>(s) * L.dp + d;
      const engine::TaskId id = add(tp_res[i], 0.0, Component::kDenseAllReduce, kTp, true);
      std::vector<engine::TaskId> preds;
      for (int x : tp_groups[i]) {
        if (need[x] != engine::kNoTask) preds.push_back(need[x]), need[x] = engine::kNoTask;
        last[x] = id;
      }
      depend(preds, id);
      bind(id, Bind::kFixed, tp_def(i, all_reduce));
    }
  };
  // One TP-split sublayer: with sp, all-gather -> compute -> reduce-scatter; else compute -> all-reduce.
  auto sublayer = [&](int s, double d, Component c) {
    if (L.sequence_parallel) tp_collective(s, false);
    for (int x : stage_gpus[s]) compute_task(x, d, c);
    tp_collective(s, !L.sequence_parallel);
  };
  auto collective_after = [&](int s, const std::vector<engine::ResourceId>& res, Component c, Cls k) {
    const engine::TaskId id = add(res, 0.0, c, k, true);
    std::vector<engine::TaskId> preds;
    for (int x : stage_gpus[s]) preds.push_back(last[x]);
    depend(preds, id);
    return id;
  };
  // Sparse collectives: the spAG each MoE layer's next expert forward waits for, the stage's spRS
  // tasks (the expert-DP reduction waits for them) and the micro-batch being emitted.
  std::vector<engine::TaskId> pending_spag(LM, engine::kNoTask);
  std::vector<std::vector<engine::TaskId>> stage_sprs(P);
  int cur_mb = 0;
  auto moe = [&](int s, int l, bool forward) {
    for (int x : stage_gpus[s])
      compute_task(x, forward ? router : unperm, Component::kRouting);
    const engine::TaskId a = collective_after(s, st_a2a[s], Component::kAllToAll, kA2a);
    // Dispatch, or in backward the combine's gradient, which travels the same way.
    bind(a, Bind::kDispatch, l);
    // Copies gathered for this pass (forward, or the backward's re-gathered ones) are copied in first.
    const engine::TaskId gathered = pending_spag[l];
    const bool returns = !forward && shape[l] && (sparse_.rematerialize || cur_mb + 1 == M);
    for (int x : stage_gpus[s]) {
      if (gathered != engine::kNoTask) {  // arrived copies into the expert buffer; the dispatch is not needed
        var_task(x, Var::kCopyIn, l, Component::kMaterializeCopy);
        g.add_dependency(gathered, last[x]);
      }
      need[x] = a;
      var_task(x, forward ? Var::kExpertFwd : Var::kExpertBwd, l, Component::kExpertCompute);
      if (returns) var_task(x, Var::kCopyOut, l, Component::kMaterializeCopy);
    }
    pending_spag[l] = engine::kNoTask;
    if (returns) {
      const engine::TaskId r = collective_after(s, st_sparse[s], Component::kExposedSprs, kSparse);
      bind(r, Bind::kSprs, l);
      stage_sprs[s].push_back(r);
    }
    const engine::TaskId c = collective_after(s, st_a2a[s], Component::kAllToAll, kA2a);
    bind(c, Bind::kCombine, l);
    for (int x : stage_gpus[s]) {
      need[x] = c;
      compute_task(x, forward ? unperm : router, Component::kRouting);
    }
  };
  // The spAG of block b's copies, issued when the stage's GPUs reach it (the attention before the
  // layer, forward; the block above's attention backward or the op's start, backward).
  auto gather = [&](int s, int b) {
    const engine::TaskId id = add(st_sparse[s], 0.0, Component::kExposedSpag, kSparse, true);
    std::vector<engine::TaskId> preds;
    for (int x : stage_gpus[s]) preds.push_back(last[x]), preds.push_back(need[x]);
    depend(preds, id);
    bind(id, Bind::kSpag, moe_index[b]);
    pending_spag[moe_index[b]] = id;
  };
  auto gathers = [&](int b) { return moe_index[b] >= 0 && shape[moe_index[b]]; };
  std::vector<std::vector<engine::TaskId>> sent_f(VS, std::vector<engine::TaskId>(M, engine::kNoTask));
  std::vector<std::vector<engine::TaskId>> sent_b = sent_f;
  // One op of stage s: a micro-batch's forward or backward through one of its chunks; `final` is the
  // stage's last op, after which it reduces its gradients.
  auto emit = [&](int s, PipelineOp op, engine::TaskId recv, bool final) {
    for (int x : stage_gpus[s])
      if (recv != engine::kNoTask) need[x] = recv;
    cur_mb = op.mb;
    const int v = op.chunk * P + s;
    const auto [first, lastb] = L.chunk_blocks(v, m.layers);
    if (op.forward) {
      for (int b = first; b < lastb; ++b) {
        // The layer's copies are gathered once per iteration (every micro-batch with
        // re-materialization), from when the attention before its forward starts (and its input
        // has arrived).
        if ((op.mb == 0 || sparse_.rematerialize) && gathers(b)) gather(s, b);
        sublayer(s, attn_f, Component::kAttention);
        if (moe_index[b] >= 0) moe(s, moe_index[b], true);
        else sublayer(s, ffn_f, Component::kAttention);
      }
      if (v == VS - 1) for (int x : stage_gpus[s]) compute_task(x, head_f, Component::kAttention);
      if (v + 1 < VS) {
        sent_f[v][op.mb] = collective_after(s, st_ppf[s], Component::kDenseAllReduce, kPp);
        bind(sent_f[v][op.mb], Bind::kFixed, send_fwd[v]);
      }
      return;
    }
    const bool regather = sparse_.rematerialize;
    if (regather && gathers(lastb - 1)) gather(s, lastb - 1);
    if (v == VS - 1) for (int x : stage_gpus[s]) compute_task(x, head_b, Component::kAttention);
    for (int b = lastb - 1; b >= first; --b) {
      // Recomputation before the block's backward (Megatron's --recompute-granularity): `full` runs
      // the block's forward again from its saved input, MoE dispatch and combine included; with
      // `selective` only the core attention is recomputed, which unfused (standard) attention pays
      // here as its forward (projections included: an upper side); FlashAttention's backward
      // recomputes its scores by design, already in attention_backward, so selective adds nothing.
      if (L.recompute == workload::Recompute::kFull) {
        sublayer(s, attn_f, Component::kAttention);
        if (moe_index[b] >= 0) moe(s, moe_index[b], true);
        else sublayer(s, ffn_f, Component::kAttention);
      } else if (L.recompute == workload::Recompute::kSelective && m.attention == workload::AttentionImpl::kStandard) {
        for (int x : stage_gpus[s]) compute_task(x, attn_f, Component::kAttention);
      }
      if (moe_index[b] >= 0) moe(s, moe_index[b], false);
      else sublayer(s, ffn_b, Component::kAttention);
      if (regather && b > first && gathers(b - 1)) gather(s, b - 1);  // beside this attention backward
      sublayer(s, attn_b, Component::kAttention);
    }
    if (v > 0) {
      sent_b[v][op.mb] = collective_after(s, st_ppb[s], Component::kDenseAllReduce, kPp);
      bind(sent_b[v][op.mb], Bind::kFixed, send_bwd[v]);
    }
    if (!final) return;
    // The stage's gradients: reduce-scatter (distributed optimizer) or all-reduce over (expert-)DP.
    const auto params = cost::stage_params(m, L, s);
    const auto& pr = m.precision;
    std::vector<std::vector<int>> dgroups, egroups;
    for (const auto& grp : L.dp_groups())
      if (L.pp_rank(grp.front()) == s) dgroups.push_back(grp);
    for (const auto& grp : L.edp_groups())
      if (L.pp_rank(grp.front()) == s) egroups.push_back(grp);
    const auto reduce_op = L.distributed_optimizer ? collective::RingOp::kReduceScatter : collective::RingOp::kAllReduce;
    auto dp_task = [&](const std::vector<std::vector<int>>& groups, double bytes, collective::RingOp op) {
      double extra = 0;
      auto flows = collective::concurrent_ring_flows(topo, groups, bytes, op, extra);
      const engine::TaskId id = collective_after(s, st_dp[s], Component::kDenseAllReduce, kDp);
      bind(id, Bind::kFixed, fixed(std::move(flows), extra));
      return id;
    };
    const engine::TaskId rs_d = dp_task(dgroups, params.dense * pr.grad_bytes, reduce_op);
    const engine::TaskId rs_e = dp_task(egroups, params.experts * pr.grad_bytes, reduce_op);
    for (engine::TaskId r : stage_sprs[s]) g.add_dependency(r, rs_e);
    const double step = L.distributed_optimizer ? params.dense / L.dp + params.experts / L.edp() : params.total();
    for (int x : stage_gpus[s]) {
      need[x] = rs_e;
      const engine::TaskId o = compute_task(x, cc.optimizer_step(step).value(), Component::kOptimizer, kOther);
      g.add_dependency(rs_d, o);
    }
    if (L.distributed_optimizer) {
      dp_task(dgroups, params.dense * pr.param_bytes, collective::RingOp::kAllGather);
      dp_task(egroups, params.experts * pr.param_bytes, collective::RingOp::kAllGather);
    }
  };
  // Migrations before anything computes (each GPU's first compute task waits for them).
  if (shape[LM]) {
    const engine::TaskId id = add(a2a, 0.0, Component::kReshard, kOther, true);
    bind(id, Bind::kMigration, 0);
    for (int x = 0; x < n; ++x) need[x] = id;
  }
  // Create every stage's ops in 1F1B order, in rounds: an op waits for the send it receives.
  std::vector<std::vector<PipelineOp>> ops(P);
  for (int s = 0; s < P; ++s) ops[s] = interleaved_1f1b(P, s, M, V);
  std::vector<size_t> next(P, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < P; ++s)
      while (next[s] < ops[s].size()) {
        const PipelineOp op = ops[s][next[s]];
        const int v = op.chunk * P + s;
        engine::TaskId recv = engine::kNoTask;
        if (op.forward && v > 0 && (recv = sent_f[v - 1][op.mb]) == engine::kNoTask) break;
        if (!op.forward && v + 1 < VS && (recv = sent_b[v + 1][op.mb]) == engine::kNoTask) break;
        emit(s, op, recv, next[s] + 1 == ops[s].size());
        ++next[s];
        progress = true;
      }
  }
  for (int s = 0; s < P; ++s)
    if (next[s] != ops[s].size()) throw std::logic_error("pipeline schedule did not complete");
  g.seal();
}

IterationResult LayoutIterationGraph::run(std::span<const LayerPlan> plans, const collective::Coflow& migrations) {
  const auto& m = ctx_.model;
  const auto& cc = ctx_.compute;
  const auto& L = layout_;
  const auto& topo = ctx_.topo;
  const int n = topo.num_gpus(), P = L.pp, M = m.grad_accum, S = L.stage_size(), LM = m.moe_layers();
  std::vector<char> shape(LM + 1);
  for (int l = 0; l < LM; ++l) shape[l] = !plans[l].spag_flows.empty();
  shape[LM] = !migrations.empty();
  if (builds_ == 0 || shape != shape_) {
    build(shape);
    shape_ = std::move(shape);
  }
  engine::TaskGraph& g = g_;
  std::unique_ptr<network::FlowNetwork> flow;
  std::unique_ptr<network::CoflowNetwork> coflow;
  if (ctx_.flow_network) flow = std::make_unique<network::FlowNetwork>(topo, ctx_.flow_precision);
  else coflow = std::make_unique<network::CoflowNetwork>(topo);

  // This iteration's loads: per-micro-batch expert durations (and the stage's means), copies.
  std::vector<std::vector<double>> ef(LM, std::vector<double>(n, 0.0)), eb(LM, std::vector<double>(n, 0.0));
  std::vector<double> ef_mean(LM, 0), eb_mean(LM, 0);
  std::vector<double> scratch;
  std::vector<int> dispatch_id(LM, -1), combine_id(LM, -1);
  collective::CoflowLoads loads, loads_tr;
  for (int l = 0; l < LM; ++l) {
    const LayerPlan& p = plans[l];
    const int s = L.stage_of_block(m.moe_layer_ids[l], m.layers);
    for (int x : L.stage_gpus(s)) {
      if (!p.expert_fwd_seconds.empty()) {  // the bound's per-micro-batch floor, not the cost model
        ef[l][x] = p.expert_fwd_seconds[x];
        eb[l][x] = p.expert_bwd_seconds[x];
      } else {
        scratch.assign(p.expert_tokens[x].begin(), p.expert_tokens[x].end());
        for (double& v : scratch) v /= M;
        ef[l][x] = cc.expert_forward(scratch).value();
        eb[l][x] = cc.expert_backward(scratch).value();
      }
      ef_mean[l] += ef[l][x] / S;
      eb_mean[l] += eb[l][x] / S;
    }
    if (!flow) {  // the all-to-alls' coflows first, as they have always been defined
      scratch.assign(p.dispatch_bytes.begin(), p.dispatch_bytes.end());
      for (double& v : scratch) v /= M;
      net_.alltoallv_loads_both(scratch, loads, loads_tr);
      dispatch_id[l] = coflow->define(loads);
      combine_id[l] = coflow->define(loads_tr);
    }
  }
  const double grad_ratio = m.precision.grad_bytes / m.precision.param_bytes;
  for (const VarTask& v : vars_) {
    double d = 0;
    if (v.what == Var::kExpertFwd || v.what == Var::kExpertBwd) {
      const bool f = v.what == Var::kExpertFwd;
      d = f ? ef[v.layer][v.gpu] : eb[v.layer][v.gpu];
      mean_[g.tag(v.task)] = f ? ef_mean[v.layer] : eb_mean[v.layer];
    } else {
      const auto& cb = plans[v.layer].copy_bytes;
      const double ratio = v.what == Var::kCopyIn ? 1.0 : grad_ratio;
      if (!cb.empty() && cb[v.gpu] > 0) d = cc.memory_copy(Bytes(cb[v.gpu] * ratio)).value();
    }
    g.set_duration(v.task, Seconds(d));
  }
  // Bind every communication task to this iteration's bytes, in the order the build met them.
  std::vector<collective::Coflow> a2a_flows(flow ? 2 * LM : 0);
  std::vector<double> a2a_extra(a2a_flows.size(), 0.0);
  if (flow)
    for (int l = 0; l < LM; ++l) {
      scratch.assign(plans[l].dispatch_bytes.begin(), plans[l].dispatch_bytes.end());
      for (double& v : scratch) v /= M;
      a2a_flows[2 * l] = collective::alltoallv_flows(topo, scratch, false, a2a_extra[2 * l]);
      a2a_flows[2 * l + 1] = collective::alltoallv_flows(topo, scratch, true, a2a_extra[2 * l + 1]);
    }
  std::vector<int> fixed_id(fixed_.size(), -1);
  for (const Binding& b : bindings_) {
    const LayerPlan* p = b.what == Bind::kFixed || b.what == Bind::kMigration ? nullptr : &plans[b.index];
    if (b.what == Bind::kDispatch || b.what == Bind::kCombine) {
      const bool c = b.what == Bind::kCombine;
      if (flow) flow->assign(b.task, a2a_flows[2 * b.index + c], a2a_extra[2 * b.index + c]);
      else coflow->assign(b.task, c ? combine_id[b.index] : dispatch_id[b.index]);
      continue;
    }
    if (b.what == Bind::kFixed) {
      FixedComm& d = fixed_[b.index];
      if (flow) {
        flow->assign(b.task, d.flows, d.extra);
        continue;
      }
      if (fixed_id[b.index] < 0) {
        if (!d.loaded) net_.loads(d.flows, d.extra, d.loads), d.loaded = true;
        fixed_id[b.index] = coflow->define(d.loads);
      }
      coflow->assign(b.task, fixed_id[b.index]);
      continue;
    }
    const collective::Coflow& flows = b.what == Bind::kSpag ? p->spag_flows : b.what == Bind::kSprs ? p->sprs_flows : migrations;
    const double extra = b.what == Bind::kSpag ? p->spag_latency : b.what == Bind::kSprs ? p->sprs_latency : 0.0;
    if (flow) {
      flow->assign(b.task, flows, extra);
    } else {
      net_.loads(flows, extra, loads);
      coflow->assign(b.task, coflow->define(loads));
    }
  }
  engine::Simulation sim(g);
  if (flow) sim.add_model(flow.get());
  else sim.add_model(coflow.get());
  sim.set_interference(ctx_.interference);
  sim.run();

  IterationResult res;
  res.time = sim.makespan();
  stats_ = {};
  for (engine::TaskId x : sim.critical_path()) {
    const uint32_t tag = g.tag(x);
    double d = sim.end_time(x) - sim.start_time(x);
    if (mean_[tag] >= 0 && d - mean_[tag] > 1e-9 * d) {
      res.breakdown[static_cast<int>(Component::kStragglerWait)] += d - mean_[tag];
      d = mean_[tag];
    }
    res.breakdown[static_cast<int>(comp_[tag])] += d;
    if (cls_[tag] == kTp) stats_.tp_comm += d;
    if (cls_[tag] == kPp) stats_.pp_comm += d;
    if (cls_[tag] == kDp) stats_.dp_comm += d;
  }
  // The bubble: idle fraction of each stage's first GPU's compute stream until the pipeline drains.
  double flush = 0;
  for (engine::TaskId x = 0; x < g.num_tasks(); ++x)
    if (cls_[g.tag(x)] == kChunk) flush = std::max(flush, sim.end_time(x));
  for (int s = 0; s < P && flush > 0; ++s) {
    double busy = 0;
    for (engine::TaskId x : g.queue(first_compute_[s]))
      if (cls_[g.tag(x)] == kChunk || cls_[g.tag(x)] == kTp) busy += sim.end_time(x) - sim.start_time(x);
    stats_.bubble += (1 - busy / flush) / P;
  }
  return res;
}

}  // namespace hs::strategy
