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

// A communication pattern bound to tasks: its transfers (flow tier) or its coflow, defined once
// (analytic tier).
struct CommDef {
  collective::Coflow flows;
  double extra = 0;
  int id = -1;
  bool made = false;
};

enum Cls : uint8_t { kChunk, kTp, kPp, kDp, kA2a, kSparse, kOther };

}  // namespace

IterationResult LayoutIterationGraph::run(std::span<const LayerPlan> plans, const collective::Coflow& migrations) {
  const auto& m = ctx_.model;
  const auto& cc = ctx_.compute;
  const auto& L = layout_;
  const auto& topo = ctx_.topo;
  const int n = topo.num_gpus(), P = L.pp, M = m.grad_accum, S = L.stage_size(), V = L.vpp, VS = P * V;
  const double t = L.tp;
  engine::TaskGraph g;
  std::unique_ptr<network::FlowNetwork> flow;
  std::unique_ptr<network::CoflowNetwork> coflow;
  if (ctx_.flow_network) flow = std::make_unique<network::FlowNetwork>(topo, ctx_.flow_precision);
  else coflow = std::make_unique<network::CoflowNetwork>(topo);
  const engine::ModelId comm = 1;  // the id Simulation::add_model gives the network
  std::vector<engine::ResourceId> compute(n), a2a(n), dp(n), ppf(n), ppb(n), sparse(n);
  bool any_sparse = false;
  for (const LayerPlan& p : plans) any_sparse = any_sparse || !p.spag_flows.empty();
  for (int i = 0; i < n; ++i) {
    compute[i] = g.add_resource(fmt::format("gpu{}.compute", i), i);
    a2a[i] = g.add_resource(fmt::format("gpu{}.a2a", i), i);
    dp[i] = g.add_resource(fmt::format("gpu{}.dp", i), i);
    ppf[i] = g.add_resource(fmt::format("gpu{}.pp_fwd", i), i);
    ppb[i] = g.add_resource(fmt::format("gpu{}.pp_bwd", i), i);
    sparse[i] = any_sparse && !sparse_.single_queue ? g.add_resource(fmt::format("gpu{}.sparse", i), i) : a2a[i];
  }
  std::vector<Component> comp;
  std::vector<uint8_t> cls;
  std::vector<double> mean;  // expert tasks: the stage's mean, for the straggler split
  auto add = [&](std::span<const engine::ResourceId> res, double dur, Component c, Cls k, bool communication,
                 double mean_dur = -1) {
    const auto tag = static_cast<uint32_t>(comp.size());
    comp.push_back(c);
    cls.push_back(k);
    mean.push_back(mean_dur);
    const engine::TaskId id = g.add_task(res, Seconds(dur), tag, communication ? comm : engine::kFixedModel);
    g.set_activity(id, communication ? engine::Activity::kCommunication : engine::Activity::kCompute);
    return id;
  };
  collective::CoflowLoads loads, loads_tr;
  auto bind = [&](engine::TaskId task, CommDef& d) {
    if (flow) {
      flow->assign(task, d.flows, d.extra);
      return;
    }
    if (d.id < 0) {
      net_.loads(d.flows, d.extra, loads);
      d.id = coflow->define(loads);
    }
    coflow->assign(task, d.id);
  };
  auto slice = [](const std::vector<engine::ResourceId>& all, std::span<const int> gpus) {
    std::vector<engine::ResourceId> out;
    for (int x : gpus) out.push_back(all[x]);
    return out;
  };

  // Groups and their communication patterns.
  const double act = static_cast<double>(m.seq_len) * m.micro_batch * m.d_model * m.precision.activation_bytes;
  const auto tp_groups = L.tp_groups();  // index p * dp + d
  std::vector<CommDef> tp_gather(tp_groups.size()), tp_reduce(tp_groups.size());
  std::vector<std::vector<engine::ResourceId>> tp_res(tp_groups.size());
  for (size_t i = 0; i < tp_groups.size(); ++i) tp_res[i] = slice(compute, tp_groups[i]);
  auto tp_def = [&](size_t i, bool all_reduce) -> CommDef& {
    CommDef& d = all_reduce ? tp_reduce[i] : tp_gather[i];
    if (!d.made) {
      d.flows = collective::ring_flows(topo, tp_groups[i], act,
                                       all_reduce ? collective::RingOp::kAllReduce : collective::RingOp::kAllGather, d.extra);
      d.made = true;
    }
    return d;
  };
  std::vector<std::vector<int>> stage_gpus(P);
  std::vector<std::vector<engine::ResourceId>> st_a2a(P), st_dp(P), st_ppf(P), st_ppb(P), st_sparse(P);
  // Sends between virtual stages (v = chunk x P + stage; without interleaving v is the stage): the
  // forward of v goes to v + 1 (stage P - 1's chunk k to stage 0's chunk k + 1), its backward to v - 1.
  std::vector<CommDef> send_fwd(VS), send_bwd(VS);
  const double shard = act / t;  // sequence-parallel activation shard each GPU sends to the next stage
  for (int s = 0; s < P; ++s) {
    stage_gpus[s] = L.stage_gpus(s);
    st_a2a[s] = slice(a2a, stage_gpus[s]);
    st_dp[s] = slice(dp, stage_gpus[s]);
    st_ppf[s] = slice(ppf, stage_gpus[s]);
    st_ppb[s] = slice(ppb, stage_gpus[s]);
    st_sparse[s] = slice(sparse, stage_gpus[s]);
  }
  for (int v = 0; v < VS; ++v) {
    const int s = v % P;
    for (int x : stage_gpus[s]) {
      if (v + 1 < VS) send_fwd[v].flows.push_back({x, x + ((v + 1) % P - s) * S, shard});
      if (v > 0) send_bwd[v].flows.push_back({x, x + ((v - 1) % P - s) * S, shard});
    }
    send_fwd[v].made = send_bwd[v].made = true;
  }
  // MoE layers: stage, per-micro-batch expert durations and the all-to-alls.
  std::vector<int> moe_index(m.layers, -1);
  for (int i = 0; i < m.moe_layers(); ++i) moe_index[m.moe_layer_ids[i]] = i;
  const int LM = m.moe_layers();
  std::vector<std::vector<double>> ef(LM, std::vector<double>(n, 0.0)), eb(LM, std::vector<double>(n, 0.0));
  std::vector<double> ef_mean(LM, 0), eb_mean(LM, 0);
  std::vector<CommDef> disp(LM), comb(LM), spag(LM), sprs(LM);
  std::vector<double> scratch;
  for (int l = 0; l < LM; ++l) {
    const LayerPlan& p = plans[l];
    const int s = L.stage_of_block(m.moe_layer_ids[l], m.layers);
    for (int x : stage_gpus[s]) {
      scratch.assign(p.expert_tokens[x].begin(), p.expert_tokens[x].end());
      for (double& v : scratch) v /= M;
      ef[l][x] = cc.expert_forward(scratch).value();
      eb[l][x] = cc.expert_backward(scratch).value();
      ef_mean[l] += ef[l][x] / S;
      eb_mean[l] += eb[l][x] / S;
    }
    if (!p.spag_flows.empty()) {
      spag[l] = {p.spag_flows, p.spag_latency, -1, true};
      sprs[l] = {p.sprs_flows, p.sprs_latency, -1, true};
    }
    scratch.assign(p.dispatch_bytes.begin(), p.dispatch_bytes.end());
    for (double& v : scratch) v /= M;
    if (flow) {
      disp[l].flows = collective::alltoallv_flows(topo, scratch, false, disp[l].extra);
      comb[l].flows = collective::alltoallv_flows(topo, scratch, true, comb[l].extra);
    } else {
      net_.alltoallv_loads_both(scratch, loads, loads_tr);
      disp[l].id = coflow->define(loads);
      comb[l].id = coflow->define(loads_tr);
    }
  }

  const double attn_f = cc.attention_forward().value() / t, attn_b = cc.attention_backward().value() / t;
  const double ffn_f = cc.dense_ffn_forward().value() / t, ffn_b = cc.dense_ffn_backward().value() / t;
  const double tokens = static_cast<double>(m.tokens_per_micro_batch()) / t;
  const double router = cc.router_and_permute(tokens).value(), unperm = cc.unpermute(tokens).value();
  const double head_f = cc.head_forward().value() / t, head_b = cc.head_backward().value() / t;
  const double grad_ratio = m.precision.grad_bytes / m.precision.param_bytes;
  auto copy_time = [&](int l, int x, double ratio) {
    const auto& cb = plans[l].copy_bytes;
    return cb.empty() || cb[x] <= 0 ? 0.0 : cc.memory_copy(Bytes(cb[x] * ratio)).value();
  };

  // Dependencies on several tasks, each once (a TP collective is the last task of all its GPUs).
  auto depend = [&](std::vector<engine::TaskId>& preds, engine::TaskId id) {
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (engine::TaskId p : preds)
      if (p != engine::kNoTask) g.add_dependency(p, id);
  };
  // Per GPU: a task the next compute task must wait for (a received activation or gradient).
  std::vector<engine::TaskId> need(n, engine::kNoTask), last(n, engine::kNoTask);
  auto compute_task = [&](int x, double d, Component c, Cls k = kChunk, double mean_dur = -1) {
    const engine::TaskId id = add({&compute[x], 1}, d, c, k, false, mean_dur);
    if (need[x] != engine::kNoTask) g.add_dependency(need[x], id), need[x] = engine::kNoTask;
    last[x] = id;
    return id;
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
      bind(id, tp_def(i, all_reduce));
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
    if (flow) flow->assign(a, disp[l].flows, disp[l].extra);
    else coflow->assign(a, disp[l].id);
    const engine::TaskId gathered = forward ? pending_spag[l] : engine::kNoTask;
    const bool returns = !forward && spag[l].made && cur_mb + 1 == M;
    for (int x : stage_gpus[s]) {
      if (gathered != engine::kNoTask) {  // arrived copies into the expert buffer; the dispatch is not needed
        const engine::TaskId c = compute_task(x, copy_time(l, x, 1.0), Component::kMaterializeCopy);
        g.add_dependency(gathered, c);
      }
      need[x] = a;
      compute_task(x, forward ? ef[l][x] : eb[l][x], Component::kExpertCompute, kChunk,
                   forward ? ef_mean[l] : eb_mean[l]);
      if (returns) compute_task(x, copy_time(l, x, grad_ratio), Component::kMaterializeCopy);
    }
    if (forward) pending_spag[l] = engine::kNoTask;
    if (returns) {
      const engine::TaskId r = collective_after(s, st_sparse[s], Component::kExposedSprs, kSparse);
      bind(r, sprs[l]);
      stage_sprs[s].push_back(r);
    }
    const engine::TaskId c = collective_after(s, st_a2a[s], Component::kAllToAll, kA2a);
    if (flow) flow->assign(c, comb[l].flows, comb[l].extra);
    else coflow->assign(c, comb[l].id);
    for (int x : stage_gpus[s]) {
      need[x] = c;
      compute_task(x, forward ? unperm : router, Component::kRouting);
    }
  };
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
        // The layer's copies are gathered once per iteration, from when the attention before its
        // first forward starts (and its input has arrived).
        if (op.mb == 0 && moe_index[b] >= 0 && spag[moe_index[b]].made) {
          const engine::TaskId id = add(st_sparse[s], 0.0, Component::kExposedSpag, kSparse, true);
          std::vector<engine::TaskId> preds;
          for (int x : stage_gpus[s]) preds.push_back(last[x]), preds.push_back(need[x]);
          depend(preds, id);
          bind(id, spag[moe_index[b]]);
          pending_spag[moe_index[b]] = id;
        }
        sublayer(s, attn_f, Component::kAttention);
        if (moe_index[b] >= 0) moe(s, moe_index[b], true);
        else sublayer(s, ffn_f, Component::kAttention);
      }
      if (v == VS - 1) for (int x : stage_gpus[s]) compute_task(x, head_f, Component::kAttention);
      if (v + 1 < VS) {
        sent_f[v][op.mb] = collective_after(s, st_ppf[s], Component::kDenseAllReduce, kPp);
        bind(sent_f[v][op.mb], send_fwd[v]);
      }
      return;
    }
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
      sublayer(s, attn_b, Component::kAttention);
    }
    if (v > 0) {
      sent_b[v][op.mb] = collective_after(s, st_ppb[s], Component::kDenseAllReduce, kPp);
      bind(sent_b[v][op.mb], send_bwd[v]);
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
      CommDef d;
      d.flows = collective::concurrent_ring_flows(topo, groups, bytes, op, d.extra);
      const engine::TaskId id = collective_after(s, st_dp[s], Component::kDenseAllReduce, kDp);
      bind(id, d);
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
  if (!migrations.empty()) {
    CommDef d{migrations, 0.0, -1, true};
    const engine::TaskId id = add(a2a, 0.0, Component::kReshard, kOther, true);
    bind(id, d);
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
    if (mean[tag] >= 0 && d - mean[tag] > 1e-9 * d) {
      res.breakdown[static_cast<int>(Component::kStragglerWait)] += d - mean[tag];
      d = mean[tag];
    }
    res.breakdown[static_cast<int>(comp[tag])] += d;
    if (cls[tag] == kTp) stats_.tp_comm += d;
    if (cls[tag] == kPp) stats_.pp_comm += d;
    if (cls[tag] == kDp) stats_.dp_comm += d;
  }
  // The bubble: idle fraction of each stage's first GPU's compute stream until the pipeline drains.
  double flush = 0;
  for (engine::TaskId x = 0; x < g.num_tasks(); ++x)
    if (cls[g.tag(x)] == kChunk) flush = std::max(flush, sim.end_time(x));
  for (int s = 0; s < P && flush > 0; ++s) {
    double busy = 0;
    for (engine::TaskId x : g.queue(compute[stage_gpus[s].front()]))
      if (cls[g.tag(x)] == kChunk || cls[g.tag(x)] == kTp) busy += sim.end_time(x) - sim.start_time(x);
    stats_.bubble += (1 - busy / flush) / P;
  }
  return res;
}

}  // namespace hs::strategy
