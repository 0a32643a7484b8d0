#include "strategy/layout_iteration.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "collective/all_to_all.hpp"
#include "collective/ring.hpp"
#include "cost/layout_memory.hpp"
#include "engine/simulation.hpp"
#include "strategy/path_breakdown.hpp"

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

// Gradient buckets of one model chunk (virtual stage), as Megatron-Core's _ParamAndGradBuffer forms
// them: the chunk's parameters in reverse order (the order backward produces their gradients),
// dense and expert parameters in separate buffers (DP and expert-DP groups), a bucket closed as soon
// as it holds `cap` parameters or more. Parameters are grouped into pieces whose gradients are
// complete at the same point of the backward: the LM head's tied embedding copy (after the head's
// backward), per block from the last one its routed experts (after the expert backward), its MLP
// side (after the MoE layer's or FFN's backward) and its attention (after the attention backward),
// then the embeddings (the end of the first chunk's backward). A piece is not split across buckets
// (Megatron splits at parameter boundaries: a block's pieces are few parameters each).
enum class Part : uint8_t { kHead, kExperts, kMlp, kAttention, kEmbedding };
struct GradPiece {
  int block;  // -1: the embeddings or the head's tied copy
  Part part;
  bool expert;
  double params;
  int bucket;   // in its buffer; bucket 0 is the first the backward fills
  bool closes;  // the bucket's last piece in backward order: its gradients are then complete
};
struct ChunkBuckets {
  std::vector<GradPiece> pieces;      // backward order
  std::vector<double> dense, expert;  // parameters per bucket
  const GradPiece* find(int block, Part part) const {
    for (const GradPiece& p : pieces)
      if (p.block == block && p.part == part) return &p;
    return nullptr;
  }
};

ChunkBuckets chunk_buckets(const workload::ModelSpec& m, const workload::ParallelLayout& L, int v, double cap) {
  ChunkBuckets cb;
  const int VS = L.pp * L.vpp;
  const auto [first, last] = L.chunk_blocks(v, m.layers);
  auto piece = [&](int block, Part part, bool expert, double params) {
    if (params > 0) cb.pieces.push_back({block, part, expert, params, 0, false});
  };
  if (v == VS - 1 && L.pp > 1) piece(-1, Part::kHead, false, cost::embedding_params(m, L, true));
  for (int b = last - 1; b >= first; --b) {
    const auto p = cost::block_params(m, L, b);
    piece(b, Part::kExperts, true, p.experts);
    piece(b, Part::kMlp, false, p.mlp);
    piece(b, Part::kAttention, false, p.attention);
  }
  if (v == 0) piece(-1, Part::kEmbedding, false, cost::embedding_params(m, L, false));
  for (bool expert : {false, true}) {
    std::vector<double>& sizes = expert ? cb.expert : cb.dense;
    double open = 0;
    GradPiece* prev = nullptr;
    for (GradPiece& p : cb.pieces) {
      if (p.expert != expert) continue;
      p.bucket = static_cast<int>(sizes.size());
      open += p.params;
      prev = &p;
      if (open >= cap) sizes.push_back(open), open = 0, p.closes = true;
    }
    if (open > 0) sizes.push_back(open), prev->closes = true;
  }
  return cb;
}

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
  labels_.clear();
  cls_.clear();
  mean_.clear();
  fixed_.clear();
  bindings_.clear();
  vars_.clear();
  engine::TaskGraph& g = g_;
  const engine::ModelId comm = 1;  // the id Simulation::add_model gives the network
  std::vector<engine::ResourceId> compute(n), a2a(n), dp(n), ppf(n), ppb(n), sparse(n);
  bool any_sparse = sparse_.shadow;
  for (int l = 0; l < LM; ++l) any_sparse = any_sparse || shape[l];
  for (int i = 0; i < n; ++i) {
    compute[i] = g.add_resource(fmt::format("gpu{}.compute", i), i);
    a2a[i] = g.add_resource(fmt::format("gpu{}.a2a", i), i);
    dp[i] = g.add_resource(fmt::format("gpu{}.dp", i), i);
    ppf[i] = g.add_resource(fmt::format("gpu{}.pp_fwd", i), i);
    ppb[i] = g.add_resource(fmt::format("gpu{}.pp_bwd", i), i);
    sparse[i] = any_sparse && !sparse_.single_queue ? g.add_resource(fmt::format("gpu{}.sparse", i), i) : a2a[i];
  }
  // Where the build is, for the tasks' labels.
  int cur_mb = 0;     // the micro-batch being emitted
  int cur_v = 0;      // the virtual stage being emitted
  int cur_block = -1, cur_bucket = -1;
  bool cur_expert = false;
  Pass cur_pass = Pass::kNone;
  auto add = [&](std::span<const engine::ResourceId> res, double dur, Component c, Cls k, bool communication, Op op) {
    const auto tag = static_cast<uint32_t>(comp_.size());
    comp_.push_back(c);
    labels_.push_back({op, cur_pass, cur_expert, static_cast<int16_t>(cur_block), static_cast<int16_t>(cur_mb),
                       static_cast<int16_t>(cur_v), static_cast<int16_t>(cur_bucket)});
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
  auto bind = [&](engine::TaskId task, Bind what, int index) { bindings_.push_back({task, what, index, cur_mb}); };
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
  std::vector<std::vector<engine::TaskId>> also(n);  // more such tasks (parameter all-gathers, reductions)
  auto compute_task = [&](int x, double d, Component c, Op op, Cls k = kChunk) {
    const engine::TaskId id = add({&compute[x], 1}, d, c, k, false, op);
    if (need[x] != engine::kNoTask) g.add_dependency(need[x], id), need[x] = engine::kNoTask;
    for (engine::TaskId p : also[x]) g.add_dependency(p, id);
    also[x].clear();
    last[x] = id;
    return id;
  };
  // A task whose duration run() sets from the loads.
  auto var_task = [&](int x, Var what, int l, Component c) {
    const Op op = what == Var::kCopyIn                                   ? Op::kCopyIn
                  : what == Var::kCopyOut                                ? Op::kCopyOut
                  : what == Var::kShadowFwd || what == Var::kShadowBwd ? Op::kShadowExperts
                                                                         : Op::kExperts;
    const engine::TaskId id = compute_task(x, 0.0, c, op);
    vars_.push_back({id, what, l, x, cur_mb});
  };
  auto tp_collective = [&](int s, bool all_reduce, Op op) {
    if (L.tp == 1) return;
    for (int d = 0; d < L.dp; ++d) {
      const size_t i = static_cast<size_t>(s) * L.dp + d;
      const engine::TaskId id = add(tp_res[i], 0.0, Component::kDenseAllReduce, kTp, true, op);
      std::vector<engine::TaskId> preds;
      for (int x : tp_groups[i]) {
        if (need[x] != engine::kNoTask) preds.push_back(need[x]), need[x] = engine::kNoTask;
        preds.insert(preds.end(), also[x].begin(), also[x].end());
        also[x].clear();
        last[x] = id;
      }
      depend(preds, id);
      bind(id, Bind::kFixed, tp_def(i, all_reduce));
    }
  };
  // One TP-split sublayer: with sp, all-gather -> compute -> reduce-scatter; else compute -> all-reduce.
  auto sublayer = [&](int s, double d, Component c, Op op) {
    if (L.sequence_parallel) tp_collective(s, false, Op::kTpAllGather);
    for (int x : stage_gpus[s]) compute_task(x, d, c, op);
    tp_collective(s, !L.sequence_parallel, L.sequence_parallel ? Op::kTpReduceScatter : Op::kTpAllReduce);
  };
  // A collective of stage s after the stage's GPUs' last tasks (or after `preds` when given).
  auto collective_after = [&](int s, const std::vector<engine::ResourceId>& res, Component c, Cls k, Op op,
                              std::vector<engine::TaskId> preds = {}) {
    const engine::TaskId id = add(res, 0.0, c, k, true, op);
    if (preds.empty())
      for (int x : stage_gpus[s]) preds.push_back(last[x]);
    depend(preds, id);
    return id;
  };
  // Data parallelism: each stage's DP and expert-DP groups, and with overlap_grad_reduce the
  // gradient buckets of every model chunk (virtual stage). Megatron-Core's DistributedDataParallel
  // buckets only the first pipeline stage's first model chunk ("data-parallel communication on
  // these stages is not on the critical path"); every other chunk is one bucket per buffer.
  const auto& pr = m.precision;
  const bool og = L.overlap_grad_reduce, opg = og && L.overlap_param_gather && L.distributed_optimizer;
  const auto reduce_op = L.distributed_optimizer ? collective::RingOp::kReduceScatter : collective::RingOp::kAllReduce;
  std::vector<std::vector<std::vector<int>>> dgroups(P), egroups(P);
  for (const auto& grp : L.dp_groups()) dgroups[L.pp_rank(grp.front())].push_back(grp);
  for (const auto& grp : L.edp_groups()) egroups[L.pp_rank(grp.front())].push_back(grp);
  std::vector<ChunkBuckets> buckets(og ? VS : 0);
  for (int v = 0; v < static_cast<int>(buckets.size()); ++v) {
    const bool bucketed = v == 0;  // stage 0's first chunk
    buckets[v] = chunk_buckets(m, L, v, bucketed ? static_cast<double>(L.bucket_size) : 1e300);
  }
  dense_buckets_ = og ? static_cast<int>(buckets[0].dense.size()) : 1;
  expert_buckets_ = og ? static_cast<int>(buckets[0].expert.size()) : 1;
  std::vector<std::vector<engine::TaskId>> ag_d(VS), ag_e(VS);  // [virtual stage][bucket] parameter all-gathers
  std::vector<std::vector<char>> waited_d(VS), waited_e(VS);
  std::vector<std::vector<engine::TaskId>> stage_rs(P), sprs_of(LM);
  dp_tasks_.clear();
  step_.assign(P, 0.0);
  auto dp_collective = [&](int s, bool expert, double bytes, collective::RingOp op, bool after, int bucket) {
    double extra = 0;
    auto flows = collective::concurrent_ring_flows(topo, expert ? egroups[s] : dgroups[s], bytes, op, extra);
    const Op label = op == collective::RingOp::kReduceScatter ? Op::kDpReduceScatter
                     : op == collective::RingOp::kAllGather   ? Op::kDpAllGather
                                                              : Op::kDpAllReduce;
    const int outer = cur_block;
    cur_expert = expert, cur_bucket = bucket, cur_block = -1;
    const engine::TaskId id = after ? collective_after(s, st_dp[s], Component::kDenseAllReduce, kDp, label)
                                    : add(st_dp[s], 0.0, Component::kDenseAllReduce, kDp, true, label);
    cur_expert = false, cur_bucket = -1, cur_block = outer;
    bind(id, Bind::kFixed, fixed(std::move(flows), extra));
    dp_tasks_.push_back({id, s});
    return id;
  };
  bool sync = false;  // the op is its chunk's last backward: gradients reduce as their buckets fill
  // overlap_param_gather: the first forward use of a bucket's parameters waits for its all-gather.
  auto use = [&](int block, Part part) {
    if (!opg) return;
    const GradPiece* p = buckets[cur_v].find(block, part);
    if (p == nullptr) return;
    char& w = (p->expert ? waited_e : waited_d)[cur_v][p->bucket];
    if (w) return;
    w = 1;
    const engine::TaskId ag = (p->expert ? ag_e : ag_d)[cur_v][p->bucket];
    for (int x : stage_gpus[cur_v % P]) also[x].push_back(ag);
  };
  // overlap_grad_reduce: when the last micro-batch's backward has produced a bucket's last
  // gradients, the bucket's reduce-scatter starts (after the stage's GPUs got there, on dp).
  auto ready = [&](int block, Part part) {
    if (!og || !sync) return;
    const ChunkBuckets& cb = buckets[cur_v];
    const GradPiece* p = cb.find(block, part);
    if (p == nullptr || !p->closes) return;
    const int s = cur_v % P;
    const double params = (p->expert ? cb.expert : cb.dense)[p->bucket];
    const engine::TaskId id = dp_collective(s, p->expert, params * pr.grad_bytes, reduce_op, true, p->bucket);
    if (p->expert)  // FSSDP: the copies' gradients have reached their owners (spRS) first
      for (const GradPiece& q : cb.pieces)
        if (q.expert && q.bucket == p->bucket)
          for (engine::TaskId r : sprs_of[moe_index[q.block]]) g.add_dependency(r, id);
    stage_rs[s].push_back(id);
  };
  // Sparse collectives: the spAG each MoE layer's next expert forward waits for, the stage's spRS
  // tasks (the expert-DP reduction waits for them) and the micro-batch being emitted.
  std::vector<engine::TaskId> pending_spag(LM, engine::kNoTask);
  std::vector<std::vector<engine::TaskId>> stage_sprs(P);
  auto moe = [&](int s, int l, bool forward) {
    for (int x : stage_gpus[s])
      compute_task(x, forward ? router : unperm, Component::kRouting, forward ? Op::kRouter : Op::kUnpermute);
    // FSSDP's calibration stage: the extra copies it settled after the gate of the first micro-batch
    // (on the sparse stream: before the dispatch with one queue); the expert GEMMs wait for them.
    engine::TaskId calib = engine::kNoTask;
    if (forward && cur_mb == 0 && shape[2 * LM + 1 + l]) {
      calib = collective_after(s, st_sparse[s], Component::kCalibrationSpag, kSparse, Op::kCalibration);
      bind(calib, Bind::kCalibration, l);
    }
    const engine::TaskId a = collective_after(s, st_a2a[s], Component::kAllToAll, kA2a, forward ? Op::kDispatch : Op::kCombine);
    // Dispatch, or in backward the combine's gradient, which travels the same way.
    bind(a, Bind::kDispatch, l);
    // FasterMoE: the shadows' broadcast follows the dispatch on its stream; backward, the shadows'
    // backward and gradient copy-out come first and their reduce gates the regular experts' backward.
    const bool shadows = sparse_.shadow;
    engine::TaskId bcast = engine::kNoTask, reduce = engine::kNoTask;
    if (shadows && forward) {
      bcast = collective_after(s, st_a2a[s], Component::kExposedSpag, kSparse, Op::kShadowBcast);
      bind(bcast, Bind::kSpag, l);
    }
    if (shadows && !forward) {
      for (int x : stage_gpus[s]) {
        var_task(x, Var::kShadowBwd, l, Component::kExpertCompute);
        var_task(x, Var::kCopyOut, l, Component::kMaterializeCopy);
      }
      reduce = collective_after(s, st_sparse[s], Component::kExposedSprs, kSparse, Op::kShadowReduce);
      bind(reduce, Bind::kSprs, l);
    }
    // Copies gathered for this pass (forward, or the backward's re-gathered ones) are copied in first.
    const engine::TaskId gathered = pending_spag[l];
    const bool returns = !forward && shape[l] && (sparse_.rematerialize || cur_mb + 1 == M);
    const bool replicas = !forward && shape[LM + 1 + l] && cur_mb + 1 == M;
    if (forward) use(m.moe_layer_ids[l], Part::kExperts);
    for (int x : stage_gpus[s]) {
      if (gathered != engine::kNoTask || calib != engine::kNoTask) {
        // Arrived copies (and calibration copies) into the expert buffer; the dispatch is not needed.
        var_task(x, Var::kCopyIn, l, Component::kMaterializeCopy);
        if (gathered != engine::kNoTask) g.add_dependency(gathered, last[x]);
        if (calib != engine::kNoTask) g.add_dependency(calib, last[x]);
      }
      need[x] = a;
      if (reduce != engine::kNoTask) also[x].push_back(reduce);
      var_task(x, forward ? Var::kExpertFwd : Var::kExpertBwd, l, Component::kExpertCompute);
      if (returns) var_task(x, Var::kCopyOut, l, Component::kMaterializeCopy);
    }
    pending_spag[l] = engine::kNoTask;
    std::vector<engine::TaskId> experts_done;  // what the combine waits for (the regular experts)
    if (bcast != engine::kNoTask) {
      for (int x : stage_gpus[s]) experts_done.push_back(last[x]);
      for (int x : stage_gpus[s]) {
        var_task(x, Var::kCopyIn, l, Component::kMaterializeCopy);
        g.add_dependency(bcast, last[x]);
        var_task(x, Var::kShadowFwd, l, Component::kExpertCompute);
      }
    }
    if (returns) {
      const engine::TaskId r = collective_after(s, st_sparse[s], Component::kExposedSprs, kSparse, Op::kSprs);
      bind(r, Bind::kSprs, l);
      stage_sprs[s].push_back(r);
      sprs_of[l].push_back(r);
    }
    if (replicas) {  // FlexMoE: the replicated experts' gradients, all-reduced among their holders
      const engine::TaskId r = collective_after(s, st_dp[s], Component::kDenseAllReduce, kDp, Op::kReplicaAllReduce);
      bind(r, Bind::kReplica, l);
      dp_tasks_.push_back({r, s});
      stage_sprs[s].push_back(r);
      sprs_of[l].push_back(r);
    }
    if (!forward) ready(m.moe_layer_ids[l], Part::kExperts);
    const engine::TaskId c = collective_after(s, st_a2a[s], Component::kAllToAll, kA2a, forward ? Op::kCombine : Op::kDispatch,
                                              std::move(experts_done));
    bind(c, Bind::kCombine, l);
    for (int x : stage_gpus[s]) {
      need[x] = c;
      compute_task(x, forward ? unperm : router, Component::kRouting, forward ? Op::kUnpermute : Op::kRouter);
    }
  };
  // The spAG of block b's copies, issued when the stage's GPUs reach it (the attention before the
  // layer, forward; the block above's attention backward or the op's start, backward).
  auto gather = [&](int s, int b) {
    const int outer = cur_block;
    cur_block = b;
    const engine::TaskId id = add(st_sparse[s], 0.0, Component::kExposedSpag, kSparse, true, Op::kSpag);
    cur_block = outer;
    std::vector<engine::TaskId> preds;
    for (int x : stage_gpus[s]) preds.push_back(last[x]), preds.push_back(need[x]);
    if (opg)  // the owners' experts must have been all-gathered after their update
      if (const GradPiece* p = buckets[cur_v].find(b, Part::kExperts)) preds.push_back(ag_e[cur_v][p->bucket]);
    depend(preds, id);
    bind(id, Bind::kSpag, moe_index[b]);
    pending_spag[moe_index[b]] = id;
  };
  auto gathers = [&](int b) { return moe_index[b] >= 0 && shape[moe_index[b]]; };
  std::vector<std::vector<engine::TaskId>> sent_f(VS, std::vector<engine::TaskId>(M, engine::kNoTask));
  std::vector<std::vector<engine::TaskId>> sent_b = sent_f;
  // One op of stage s: a micro-batch's forward or backward through one of its chunks; `final` is the
  // stage's last op, after which it reduces its gradients.
  auto emit = [&](int s, PipelineOp op, engine::TaskId recv, bool final, bool chunk_done) {
    for (int x : stage_gpus[s])
      if (recv != engine::kNoTask) need[x] = recv;
    cur_mb = op.mb;
    const int v = op.chunk * P + s;
    cur_v = v;
    cur_pass = op.forward ? Pass::kForward : Pass::kBackward;
    cur_block = -1;
    sync = chunk_done;
    const auto [first, lastb] = L.chunk_blocks(v, m.layers);
    if (op.forward) {
      use(-1, Part::kEmbedding);
      for (int b = first; b < lastb; ++b) {
        // The layer's copies are gathered once per iteration (every micro-batch with
        // re-materialization), from when the attention before its forward starts (and its input
        // has arrived).
        if ((op.mb == 0 || sparse_.rematerialize) && gathers(b)) gather(s, b);
        cur_block = b;
        use(b, Part::kAttention);
        sublayer(s, attn_f, Component::kAttention, Op::kAttention);
        use(b, Part::kMlp);
        if (moe_index[b] >= 0) moe(s, moe_index[b], true);
        else sublayer(s, ffn_f, Component::kAttention, Op::kDenseFfn);
      }
      cur_block = -1;
      use(-1, Part::kHead);
      if (v == VS - 1) for (int x : stage_gpus[s]) compute_task(x, head_f, Component::kAttention, Op::kHead);
      if (v + 1 < VS) {
        sent_f[v][op.mb] = collective_after(s, st_ppf[s], Component::kDenseAllReduce, kPp, Op::kPpSend);
        bind(sent_f[v][op.mb], Bind::kFixed, send_fwd[v]);
      }
      return;
    }
    const bool regather = sparse_.rematerialize;
    if (regather && gathers(lastb - 1)) gather(s, lastb - 1);
    if (v == VS - 1) for (int x : stage_gpus[s]) compute_task(x, head_b, Component::kAttention, Op::kHead);
    ready(-1, Part::kHead);
    for (int b = lastb - 1; b >= first; --b) {
      cur_block = b;
      // Recomputation before the block's backward (Megatron's --recompute-granularity): `full` runs
      // the block's forward again from its saved input, MoE dispatch and combine included; with
      // `selective` only the core attention is recomputed, which unfused (standard) attention pays
      // here as its forward (projections included: an upper side); FlashAttention's backward
      // recomputes its scores by design, already in attention_backward, so selective adds nothing.
      cur_pass = Pass::kRecompute;
      if (L.recompute == workload::Recompute::kFull) {
        sublayer(s, attn_f, Component::kAttention, Op::kAttention);
        if (moe_index[b] >= 0) moe(s, moe_index[b], true);
        else sublayer(s, ffn_f, Component::kAttention, Op::kDenseFfn);
      } else if (L.recompute == workload::Recompute::kSelective && m.attention == workload::AttentionImpl::kStandard) {
        for (int x : stage_gpus[s]) compute_task(x, attn_f, Component::kAttention, Op::kAttention);
      }
      cur_pass = Pass::kBackward;
      if (moe_index[b] >= 0) moe(s, moe_index[b], false);
      else sublayer(s, ffn_b, Component::kAttention, Op::kDenseFfn);
      ready(b, Part::kMlp);
      if (regather && b > first && gathers(b - 1)) gather(s, b - 1);  // beside this attention backward
      sublayer(s, attn_b, Component::kAttention, Op::kAttention);
      ready(b, Part::kAttention);
    }
    cur_block = -1;
    ready(-1, Part::kEmbedding);
    if (v > 0) {
      sent_b[v][op.mb] = collective_after(s, st_ppb[s], Component::kDenseAllReduce, kPp, Op::kPpSend);
      bind(sent_b[v][op.mb], Bind::kFixed, send_bwd[v]);
    }
    if (!final) return;
    // The stage's gradients: reduce-scatter (distributed optimizer) or all-reduce over (expert-)DP,
    // all at the end without overlap_grad_reduce (with it, ready() issued them bucket by bucket).
    const auto params = cost::stage_params(m, L, s);
    if (!og) {
      const engine::TaskId rs_d = dp_collective(s, false, params.dense * pr.grad_bytes, reduce_op, true, -1);
      const engine::TaskId rs_e = dp_collective(s, true, params.experts * pr.grad_bytes, reduce_op, true, -1);
      for (engine::TaskId r : stage_sprs[s]) g.add_dependency(r, rs_e);
      stage_rs[s] = {rs_e, rs_d};
    }
    // The optimizer steps once every reduction of the stage has finished (finish_grad_sync).
    const double step = L.distributed_optimizer ? params.dense / L.dp + params.experts / L.edp() : params.total();
    for (int x : stage_gpus[s]) {
      if (!stage_rs[s].empty()) {
        need[x] = stage_rs[s].front();
        also[x].assign(stage_rs[s].begin() + 1, stage_rs[s].end());
      }
      compute_task(x, 0.0, Component::kOptimizer, Op::kOptimizer, kOther);
      vars_.push_back({last[x], Var::kOptimizer, s, x, cur_mb});  // + the GPU's extra instances (run)
    }
    step_[s] = step;
    // The updated parameters: all-gathered now, or with overlap_param_gather at the next
    // iteration's start (below), beside its forward.
    if (L.distributed_optimizer && !opg) {
      dp_collective(s, false, params.dense * pr.param_bytes, collective::RingOp::kAllGather, true, -1);
      dp_collective(s, true, params.experts * pr.param_bytes, collective::RingOp::kAllGather, true, -1);
    }
  };
  // overlap_param_gather: the parameters the previous iteration's optimizer updated are all-gathered
  // from the iteration's start (Megatron-LM's default align_param_gather launches every stage's
  // all-gathers at once), every bucket of every chunk in the order the forward uses them, back to
  // back on the DP stream; use() makes each bucket's first forward use wait for its all-gather. The
  // iteration then ends with the optimizer step: in steady state the same period as an iteration
  // from the first forward to the last all-gather.
  if (opg)
    for (int s = 0; s < P; ++s)
      for (int k = 0; k < V; ++k) {
        const int v = k * P + s;
        cur_v = v;
        const ChunkBuckets& cb = buckets[v];
        ag_d[v].assign(cb.dense.size(), engine::kNoTask);
        ag_e[v].assign(cb.expert.size(), engine::kNoTask);
        waited_d[v].assign(cb.dense.size(), 0);
        waited_e[v].assign(cb.expert.size(), 0);
        for (auto p = cb.pieces.rbegin(); p != cb.pieces.rend(); ++p) {
          engine::TaskId& ag = (p->expert ? ag_e : ag_d)[v][p->bucket];
          if (ag != engine::kNoTask) continue;
          const double params = (p->expert ? cb.expert : cb.dense)[p->bucket];
          ag = dp_collective(s, p->expert, params * pr.param_bytes, collective::RingOp::kAllGather, false, p->bucket);
        }
      }
  // Migrations before anything computes (each GPU's first compute task waits for them).
  if (shape[LM]) {
    const engine::TaskId id = add(a2a, 0.0, Component::kReshard, kOther, true, Op::kMigration);
    bind(id, Bind::kMigration, 0);
    for (int x = 0; x < n; ++x) need[x] = id;
  }
  // Create every stage's ops in 1F1B order, in rounds: an op waits for the send it receives.
  std::vector<std::vector<PipelineOp>> ops(P);
  for (int s = 0; s < P; ++s) ops[s] = interleaved_1f1b(P, s, M, V);
  std::vector<size_t> next(P, 0);
  // Per op: whether it is the last backward of its model chunk on the stage (where the chunk's
  // gradients become complete).
  std::vector<std::vector<char>> chunk_done(P);
  for (int s = 0; s < P; ++s) {
    chunk_done[s].assign(ops[s].size(), 0);
    std::vector<char> seen(V, 0);
    for (size_t i = ops[s].size(); i-- > 0;)
      if (!ops[s][i].forward && !seen[ops[s][i].chunk]) seen[ops[s][i].chunk] = 1, chunk_done[s][i] = 1;
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < P; ++s)
      while (next[s] < ops[s].size()) {
        const PipelineOp op = ops[s][next[s]];
        const int v = op.chunk * P + s;
        engine::TaskId recv = engine::kNoTask;
        if (op.forward && v > 0 && (recv = sent_f[v - 1][op.mb]) == engine::kNoTask) break;
        if (!op.forward && v + 1 < VS && (recv = sent_b[v + 1][op.mb]) == engine::kNoTask) break;
        emit(s, op, recv, next[s] + 1 == ops[s].size(), chunk_done[s][next[s]]);
        ++next[s];
        progress = true;
      }
  }
  for (int s = 0; s < P; ++s)
    if (next[s] != ops[s].size()) throw std::logic_error("pipeline schedule did not complete");
  g.seal();
  prev_.build(g);
}

IterationResult LayoutIterationGraph::run(std::span<const LayerPlan> plans, const collective::Coflow& migrations,
                                          std::span<const double> extra_step_params, TimelineSink* timeline) {
  const auto& m = ctx_.model;
  const auto& cc = ctx_.compute;
  const auto& L = layout_;
  const auto& topo = ctx_.topo;
  const int n = topo.num_gpus(), P = L.pp, M = m.grad_accum, S = L.stage_size(), LM = m.moe_layers();
  std::vector<char> shape(3 * LM + 1);
  for (int l = 0; l < LM; ++l) shape[l] = !sparse_.shadow && !plans[l].spag_flows.empty();
  shape[LM] = !migrations.empty();
  for (int l = 0; l < LM; ++l) shape[LM + 1 + l] = !plans[l].replica_grad_flows.empty();
  for (int l = 0; l < LM; ++l) shape[2 * LM + 1 + l] = !plans[l].calibration_flows.empty();
  if (builds_ == 0 || shape != shape_) {
    build(shape);
    shape_ = std::move(shape);
  }
  engine::TaskGraph& g = g_;
  std::unique_ptr<network::FlowNetwork> flow;
  std::unique_ptr<network::CoflowNetwork> coflow;
  if (ctx_.flow_network) flow = std::make_unique<network::FlowNetwork>(topo, ctx_.flow_precision);
  else coflow = std::make_unique<network::CoflowNetwork>(topo);

  // This iteration's loads: per-micro-batch expert durations (and the stage's means), copies. A
  // layer's variants: one per micro-batch when its plan has them (a trace with a micro-batch axis:
  // each micro-batch routes its own counts), else one that every micro-batch runs (the iteration's
  // counts / grad_accum). Variant k of layer l is entry first[l] + k.
  std::vector<int> first(LM + 1, 0);
  for (int l = 0; l < LM; ++l) {
    const size_t mbs = plans[l].micro.size();
    if (mbs != 0 && mbs != static_cast<size_t>(M))
      throw std::logic_error(fmt::format("layer plan with {} micro-batches for grad_accum {}", mbs, M));
    first[l + 1] = first[l] + (mbs == 0 ? 1 : M);
  }
  const int VN = first[LM];
  auto variant = [&](int l, int mb) { return first[l] + (first[l + 1] - first[l] == 1 ? 0 : mb); };
  // The plan micro-batch mb of layer l runs (FasterMoE's shadows come with it).
  auto plan_of = [&](int l, int mb) -> const LayerPlan& { return plans[l].micro.empty() ? plans[l] : plans[l].micro[mb]; };
  std::vector<std::vector<double>> ef(VN, std::vector<double>(n, 0.0)), eb(VN, std::vector<double>(n, 0.0));
  std::vector<std::vector<double>> sf(sparse_.shadow ? VN : 0, std::vector<double>(n, 0.0)), sb = sf;  // shadows
  std::vector<double> ef_mean(VN, 0), eb_mean(VN, 0);
  std::vector<double> scratch;
  // Variant k of layer l: its plan and what its counts and bytes are divided by (a micro-batch's own
  // counts, or the iteration's / grad_accum), and its dispatch bytes so divided, into `scratch`.
  auto variant_plan = [&](int l, int k) -> const LayerPlan& {
    return first[l + 1] - first[l] > 1 ? plans[l].micro[k - first[l]] : plans[l];
  };
  auto variant_div = [&](int l) { return first[l + 1] - first[l] > 1 ? 1.0 : static_cast<double>(M); };
  auto variant_dispatch = [&](int l, int k) -> const std::vector<double>& {
    const std::vector<double>& b = variant_plan(l, k).dispatch_bytes;
    const double div = variant_div(l);
    scratch.resize(b.size());
    for (size_t i = 0; i < b.size(); ++i) scratch[i] = b[i] / div;
    return scratch;
  };
  std::vector<int> dispatch_id(VN, -1), combine_id(VN, -1);
  collective::CoflowLoads loads, loads_tr;
  double worst_a2a = -1;
  topology::LinkId bottleneck_link = -1;
  for (int l = 0; l < LM; ++l) {
    const int s = L.stage_of_block(m.moe_layer_ids[l], m.layers);
    for (int k = first[l]; k < first[l + 1]; ++k) {
      const LayerPlan& p = variant_plan(l, k);
      const double div = variant_div(l);
      for (int x : L.stage_gpus(s)) {
        if (!p.expert_fwd_seconds.empty()) {  // the bound's per-micro-batch floor, not the cost model
          ef[k][x] = p.expert_fwd_seconds[x];
          eb[k][x] = p.expert_bwd_seconds[x];
        } else {
          scratch.assign(p.expert_tokens[x].begin(), p.expert_tokens[x].end());
          for (double& v : scratch) v /= div;
          ef[k][x] = cc.expert_forward(scratch).value();
          eb[k][x] = cc.expert_backward(scratch).value();
        }
        ef_mean[k] += ef[k][x] / S;
        eb_mean[k] += eb[k][x] / S;
        // FasterMoE: the GPU's own tokens of the shadowed experts, their own grouped GEMM (none without).
        if (!sparse_.shadow || p.shadow_tokens.empty()) continue;
        scratch.assign(p.shadow_tokens[x].begin(), p.shadow_tokens[x].end());
        for (double& v : scratch) v /= div;
        if (std::any_of(scratch.begin(), scratch.end(), [](double v) { return v > 0; }))
          sf[k][x] = cc.expert_forward(scratch).value(), sb[k][x] = cc.expert_backward(scratch).value();
      }
      // The all-to-alls' coflows first, as they have always been defined; the slowest one alone
      // names the bottleneck link.
      if (!flow) {
        const auto times = net_.alltoallv_loads_both(variant_dispatch(l, k), loads, loads_tr);
        dispatch_id[k] = coflow->define(loads);
        combine_id[k] = coflow->define(loads_tr);
        if (std::max(times.fwd, times.tr) > worst_a2a) {
          worst_a2a = std::max(times.fwd, times.tr);
          bottleneck_link = times.fwd >= times.tr ? times.link_fwd : times.link_tr;
        }
      } else {
        const auto& bytes = variant_dispatch(l, k);
        const double t_fwd = net_.alltoallv_time(bytes, false);
        const auto link_fwd = net_.last_bottleneck();
        const double t_tr = net_.alltoallv_time(bytes, true);
        const auto link_tr = net_.last_bottleneck();
        if (std::max(t_fwd, t_tr) > worst_a2a) {
          worst_a2a = std::max(t_fwd, t_tr);
          bottleneck_link = t_fwd >= t_tr ? link_fwd : link_tr;
        }
      }
    }
  }
  const double grad_ratio = m.precision.grad_bytes / m.precision.param_bytes;
  for (const VarTask& v : vars_) {
    double d = 0;
    if (v.what == Var::kExpertFwd || v.what == Var::kExpertBwd) {
      const bool f = v.what == Var::kExpertFwd;
      const int k = variant(v.layer, v.mb);
      d = f ? ef[k][v.gpu] : eb[k][v.gpu];
      mean_[g.tag(v.task)] = f ? ef_mean[k] : eb_mean[k];
    } else if (v.what == Var::kOptimizer) {
      d = cc.optimizer_step(step_[v.layer] + (extra_step_params.empty() ? 0.0 : extra_step_params[v.gpu])).value();
    } else if (v.what == Var::kShadowFwd || v.what == Var::kShadowBwd) {
      const int k = variant(v.layer, v.mb);
      d = v.what == Var::kShadowFwd ? sf[k][v.gpu] : sb[k][v.gpu];
    } else {
      const auto& cb = (sparse_.shadow ? plan_of(v.layer, v.mb) : plans[v.layer]).copy_bytes;
      const double ratio = v.what == Var::kCopyIn ? 1.0 : grad_ratio;
      if (!cb.empty() && cb[v.gpu] > 0) d = cc.memory_copy(Bytes(cb[v.gpu] * ratio)).value();
    }
    g.set_duration(v.task, Seconds(d));
  }
  // Bind every communication task to this iteration's bytes, in the order the build met them.
  std::vector<collective::Coflow> a2a_flows(flow ? 2 * VN : 0);
  std::vector<double> a2a_extra(a2a_flows.size(), 0.0);
  if (flow)
    for (int l = 0; l < LM; ++l)
      for (int k = first[l]; k < first[l + 1]; ++k) {
        const std::vector<double>& bytes = variant_dispatch(l, k);
        a2a_flows[2 * k] = collective::alltoallv_flows(topo, bytes, false, a2a_extra[2 * k]);
        a2a_flows[2 * k + 1] = collective::alltoallv_flows(topo, bytes, true, a2a_extra[2 * k + 1]);
      }
  std::vector<int> fixed_id(fixed_.size(), -1);
  for (const Binding& b : bindings_) {
    const LayerPlan* p = b.what == Bind::kFixed || b.what == Bind::kMigration ? nullptr
                         : sparse_.shadow                                    ? &plan_of(b.index, b.mb)
                                                                             : &plans[b.index];
    if (b.what == Bind::kDispatch || b.what == Bind::kCombine) {
      const bool c = b.what == Bind::kCombine;
      const int k = variant(b.index, b.mb);
      if (flow) flow->assign(b.task, a2a_flows[2 * k + c], a2a_extra[2 * k + c]);
      else coflow->assign(b.task, c ? combine_id[k] : dispatch_id[k]);
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
    const collective::Coflow& flows = b.what == Bind::kSpag          ? p->spag_flows
                                      : b.what == Bind::kSprs         ? p->sprs_flows
                                      : b.what == Bind::kReplica      ? p->replica_grad_flows
                                      : b.what == Bind::kCalibration  ? p->calibration_flows
                                                                      : migrations;
    const double extra = b.what == Bind::kSpag         ? p->spag_latency
                         : b.what == Bind::kSprs        ? p->sprs_latency
                         : b.what == Bind::kReplica     ? p->replica_grad_latency
                         : b.what == Bind::kCalibration ? p->calibration_latency
                                                        : 0.0;
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
  res.bottleneck_link = bottleneck_link;
  stats_ = {};
  std::vector<int> expert_gpu(g.num_tasks(), -1);
  for (const VarTask& v : vars_)
    if (v.what == Var::kExpertFwd || v.what == Var::kExpertBwd) expert_gpu[v.task] = v.gpu;
  auto charge = [&](engine::TaskId x) {
    const uint32_t tag = g.tag(x);
    TaskCharge c;
    c.component = comp_[tag];
    c.communication = g.activity(x) == engine::Activity::kCommunication;
    // Communication that runs beside compute: the sparse collectives (spAG / spRS, FasterMoE's
    // broadcast and reduce) and the data-parallel reductions and gathers; not the calibration spAG,
    // which sits between the gate and the experts.
    c.overlappable = c.communication && (cls_[tag] == kSparse || cls_[tag] == kDp) && labels_[tag].op != Op::kCalibration;
    c.mean = mean_[tag];
    c.gpu = expert_gpu[x];
    return c;
  };
  walk_critical_path(g, sim, prev_, charge, n, res, [&](engine::TaskId x, double d) {
    const uint8_t k = cls_[g.tag(x)];
    if (k == kTp) stats_.tp_comm += d;
    if (k == kPp) stats_.pp_comm += d;
    if (k == kDp) stats_.dp_comm += d;
  });
  // Every DP collective's time, overlapped or not: the largest stage's sum.
  std::vector<double> dp_busy(P, 0.0);
  for (const auto& [x, s] : dp_tasks_) dp_busy[s] += sim.end_time(x) - sim.start_time(x);
  stats_.dp_comm_total = *std::max_element(dp_busy.begin(), dp_busy.end());
  stats_.dense_buckets = dense_buckets_;
  stats_.expert_buckets = expert_buckets_;
  // The bubble: the idle fraction of each stage's first GPU's compute stream until the pipeline
  // drains (its last forward / backward / TP task ends) that the schedule leaves. Idle time spent
  // waiting on the stage's own work (all-to-alls, DP and sparse collectives, its other GPUs'
  // compute) or on a stage-to-stage send is not bubble: those waits are their own components. A
  // wait is traced back from the task that ends it along the predecessors (dependencies and stream
  // order) that ended last: the time they cover while they are the stage's or sends is explained;
  // from the first task of another stage on, the rest of the wait is bubble, as is everything after
  // the stream's last pipeline task (the cool-down).
  auto busy_task = [&](engine::TaskId x) { return cls_[g.tag(x)] == kChunk || cls_[g.tag(x)] == kTp; };
  double flush = 0;
  for (engine::TaskId x = 0; x < g.num_tasks(); ++x)
    if (busy_task(x)) flush = std::max(flush, sim.end_time(x));
  auto held_by = [&](engine::TaskId x) {  // the predecessor that ended last (ties: the later task)
    engine::TaskId best = engine::kNoTask;
    auto consider = [&](engine::TaskId p) {
      if (best == engine::kNoTask || sim.end_time(p) > sim.end_time(best) ||
          (sim.end_time(p) == sim.end_time(best) && p > best))
        best = p;
    };
    for (engine::TaskId p : g.predecessors(x)) consider(p);
    for (uint32_t i = prev_.off[x]; i < prev_.off[x + 1]; ++i) consider(prev_.prev[i]);
    return best;
  };
  for (int s = 0; s < P && flush > 0; ++s) {
    auto own = [&](engine::TaskId x) {
      if (cls_[g.tag(x)] == kPp) return true;
      for (engine::ResourceId r : g.resources(x))
        if (g.device(r) >= 0 && L.pp_rank(g.device(r)) == s) return true;
      return false;
    };
    double idle = 0, free_from = 0, last_busy = 0;
    for (engine::TaskId x : g.queue(first_compute_[s])) {
      const double a = free_from;
      free_from = sim.end_time(x);
      if (!busy_task(x)) continue;
      last_busy = sim.end_time(x);
      double t = sim.start_time(x);  // [a, t): the part of the wait not yet explained
      engine::TaskId cur = x, p;
      while (t > a && (p = held_by(cur)) != engine::kNoTask && own(p)) {
        idle += std::max(0.0, t - std::max(a, sim.end_time(p)));  // nothing held it then
        t = std::min(t, std::max(a, sim.start_time(p)));
        cur = p;
      }
      idle += std::max(0.0, t - a);
    }
    idle += flush - last_busy;
    stats_.bubble += idle / flush / P;
  }
  if (timeline) emit_timeline(sim, plans, migrations, *timeline);
  return res;
}

}  // namespace hs::strategy
