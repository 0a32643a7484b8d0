// The construction of LayoutIterationGraph's task graph (strategy/graph/layout_iteration.hpp says
// what the graph is), as a class with named steps: the streams of every GPU, the TP groups and the
// stage-to-stage sends, the compute durations, the data-parallel groups and gradient buckets, and
// then the schedule, op by op (pipeline_op: a micro-batch's forward or backward through one model
// chunk of a stage), each op made of the named steps tp_sublayer (attention or a dense FFN between
// its TP collectives), moe_layer (router, dispatch, experts, combine; FSSDP's copies and FasterMoE's
// shadows), sparse_gather (an MoE layer's spAG), the pipeline sends and, after a stage's last op,
// its data-parallel reduction and optimizer step. Tasks are created in an order consistent with
// every dependency; the graph's task ids, and so the simulation, follow that order.
#include <algorithm>
#include <coroutine>
#include <fmt/format.h>
#include <map>
#include <tuple>

#include "collective/all_reduce.hpp"
#include "collective/ring.hpp"
#include "cost/layout_memory.hpp"
#include "strategy/graph/layout_iteration.hpp"

namespace hs::strategy {

namespace {

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

ChunkBuckets chunk_buckets(const workload::ModelSpec& m, const workload::ParallelLayout& L, int v, int stage, double cap) {
  ChunkBuckets cb;
  const int VS = L.pieces();  // v: the model piece
  const auto [first, last] = L.chunk_blocks(v, m.layers, m.mtp_layers);
  auto piece = [&](int block, Part part, bool expert, double params) {
    if (params > 0) cb.pieces.push_back({block, part, expert, params, 0, false});
  };
  // The output head (untied), or the tied copy of the embedding on a stage without it (none where
  // the stage holds the embeddings: one tensor whose gradient completes with the first piece's).
  if (v == VS - 1) piece(-1, Part::kHead, false, cost::head_params(m, L, stage));
  for (int b = last - 1; b >= first; --b) {
    const auto p = cost::block_params(m, L, b);
    piece(b, Part::kExperts, true, p.experts);
    piece(b, Part::kMlp, false, p.mlp);
    piece(b, Part::kAttention, false, p.attention);
  }
  if (v == 0) piece(-1, Part::kEmbedding, false, cost::embedding_params(m, L));
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

// The emission of a model chunk's tasks as a coroutine that suspends where its next compute task
// would wait for its own communication (an all-to-all): a pipeline op runs it to the end; DualPipe's
// overlapped pair resumes the forward's and the backward's in turn, so that each one's compute is
// issued on the stream while the other's all-to-all is in flight (arXiv 2412.19437, Fig. 4).
class Steps {
 public:
  struct promise_type {
    Steps get_return_object() { return Steps(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(bool) noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { throw; }
  };
  explicit Steps(std::coroutine_handle<promise_type> h) : h_(h) {}
  Steps(Steps&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Steps(const Steps&) = delete;
  Steps& operator=(const Steps&) = delete;
  Steps& operator=(Steps&&) = delete;
  ~Steps() {
    if (h_) h_.destroy();
  }
  // Runs to the next suspension; false once finished.
  bool next() {
    if (h_.done()) return false;
    h_.resume();
    return !h_.done();
  }
  void finish() {
    while (next()) {
    }
  }

 private:
  std::coroutine_handle<promise_type> h_;
};

// Which part of a backward an op computes (PipelineOp::split / weight).
enum class BwdPart : uint8_t { kFull, kInput, kWeight };

}  // namespace

class LayoutIterationGraph::Builder {
 public:
  Builder(LayoutIterationGraph& graph, const std::vector<char>& shape)
      : graph_(graph), m(graph.ctx_.model), cc(graph.ctx_.compute), L(graph.layout_), topo(graph.ctx_.topo), n(topo.num_gpus()),
        P(L.pp), M(m.grad_accum), V(L.stage_chunks()), VS(P * V), S(L.stage_size()), LM(m.moe_layers()), t(L.tp),
        shape(shape), g(graph.g_), net(graph.net_), sparse_(graph.sparse_), comp_(graph.comp_), labels_(graph.labels_),
        cls_(graph.cls_), mean_(graph.mean_), fixed_(graph.fixed_), bindings_(graph.bindings_), vars_(graph.vars_),
        first_compute_(graph.first_compute_), dp_tasks_(graph.dp_tasks_), step_(graph.step_),
        dense_buckets_(graph.dense_buckets_), expert_buckets_(graph.expert_buckets_), pr(m.precision) {}

  // Every step, in the order their tasks are created.
  void build() {
    streams();
    groups_and_sends();
    durations();
    data_parallel();
    parameter_gathers();
    migrations();
    schedule();
  }

 private:
  // Per GPU: compute (kernels and the TP collectives that block them), a2a, dp, pp_fwd, pp_bwd and,
  // with sparse collectives on a queue of their own, sparse.
  void streams() {
    for (auto* r : {&compute, &a2a, &dp, &ppf, &ppb, &sparse}) r->assign(n, 0);
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
  }

  // TP groups and their collectives, each stage's GPUs and streams, the sends between virtual stages.
  void groups_and_sends() {
    act = static_cast<double>(m.seq_len) * m.micro_batch * m.d_model * m.precision.activation_bytes;
    tp_groups = L.tp_groups();  // index p * dp + d
    tp_gather.assign(tp_groups.size(), -1), tp_reduce.assign(tp_groups.size(), -1);  // FixedComm indices
    tp_res.assign(tp_groups.size(), {});
    for (size_t i = 0; i < tp_groups.size(); ++i) tp_res[i] = slice(compute, tp_groups[i]);
    stage_gpus.assign(P, {});
    for (auto* r : {&st_a2a, &st_dp, &st_ppf, &st_ppb, &st_sparse, &pair_dp}) r->assign(P, {});
    first_compute_.assign(P, 0);
    // Sends between slots (v = chunk x P + stage; without interleaving v is the stage): the forward
    // of v goes to the slot of the next piece in its micro-batches' direction (next_slot: v + 1,
    // stage P - 1's chunk k to stage 0's chunk k + 1; DualPipe's chunk 1 towards stage 0), its
    // backward to prev_slot.
    send_fwd.assign(VS, 0), send_bwd.assign(VS, 0);
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
    // The DP streams of the stages holding the same pieces (DualPipe: the stage and its mirror),
    // which their data-parallel collectives occupy together.
    for (int s = 0; s < P; ++s)
      for (int q : L.copy_stages(s)) pair_dp[s].insert(pair_dp[s].end(), st_dp[q].begin(), st_dp[q].end());
    for (int v = 0; v < VS; ++v) {
      const int s = v % P;
      collective::Coflow f, b;
      for (int x : stage_gpus[s]) {
        if (next_slot(v) >= 0) f.push_back({x, x + (next_slot(v) % P - s) * S, shard});
        if (prev_slot(v) >= 0) b.push_back({x, x + (prev_slot(v) % P - s) * S, shard});
      }
      send_fwd[v] = fixed(std::move(f), 0.0);
      send_bwd[v] = fixed(std::move(b), 0.0);
    }
    moe_index.assign(m.blocks(), -1);
    for (int i = 0; i < LM; ++i) moe_index[m.moe_layer_ids[i]] = i;
  }

  // Durations that no load changes (per micro-batch, / tp), and every GPU's dependencies state.
  void durations() {
    attn_f.assign(m.blocks(), 0), attn_b.assign(m.blocks(), 0);
    for (int b = 0; b < m.blocks(); ++b)
      attn_f[b] = cc.attention_forward(b).value() / t, attn_b[b] = cc.attention_backward(b).value() / t;
    ffn_f = cc.dense_ffn_forward().value() / t, ffn_b = cc.dense_ffn_backward().value() / t;
    const double tokens = static_cast<double>(m.tokens_per_micro_batch()) / t;
    router = cc.router_and_permute(tokens).value(), unperm = cc.unpermute(tokens).value();
    head_f = cc.head_forward().value() / t, head_b = cc.head_backward().value() / t;
    // The split of a backward into B (input gradients) and W (weight gradients), for ZB-H1 and
    // DualPipe: a GEMM's backward is its data-gradient and weight-gradient GEMMs, of equal FLOPs
    // (2 t k n each), so the dense FFN, the LM head and the experts (run()) give half to each; the
    // attention block's W is its projections' weight gradients alone (ComputeCost::
    // attention_weight_grad), the core attention and the norms having no weights.
    attn_w = cc.attention_weight_grad().value() / t, ffn_w = ffn_b / 2, head_w = head_b / 2;
    // An MTP module's norms and projection (the projection split over TP like the head; its TP
    // collectives are not modelled).
    mtp_f = cc.mtp_forward().value() / t, mtp_b = cc.mtp_backward().value() / t, mtp_w = cc.mtp_weight_grad().value() / t;
    need.assign(n, engine::kNoTask), last.assign(n, engine::kNoTask);
    also.assign(n, {});
  }

    // Data parallelism: each stage's DP and expert-DP groups (DualPipe: listed with the lower stage
    // of a mirrored pair, both copies' ranks in each), and with overlap_grad_reduce the gradient
    // buckets of every model chunk (virtual stage). Megatron-Core's DistributedDataParallel buckets
    // only the first model piece ("data-parallel communication on these stages is not on the
    // critical path"); every other chunk is one bucket per buffer.
  void data_parallel() {
    og = L.overlap_grad_reduce, opg = og && L.overlap_param_gather && L.distributed_optimizer;
    reduce_op = L.distributed_optimizer ? collective::RingOp::kReduceScatter : collective::RingOp::kAllReduce;
    dgroups.assign(P, {}), egroups.assign(P, {});
    for (const auto& grp : L.dp_groups()) dgroups[L.pp_rank(grp.front())].push_back(grp);
    for (const auto& grp : L.edp_groups()) egroups[L.pp_rank(grp.front())].push_back(grp);
    buckets.assign(og ? VS : 0, {});
    for (int v = 0; v < static_cast<int>(buckets.size()); ++v) {
      const bool bucketed = piece(v) == 0;  // stage 0's first chunk (DualPipe: and its mirror's copy)
      buckets[v] = chunk_buckets(m, L, piece(v), v % P, bucketed ? static_cast<double>(L.bucket_size) : 1e300);
    }
    dense_buckets_ = og ? static_cast<int>(buckets[0].dense.size()) : 1;
    expert_buckets_ = og ? static_cast<int>(buckets[0].expert.size()) : 1;
    ag_d.assign(VS, {}), ag_e.assign(VS, {});  // [virtual stage][bucket] parameter all-gathers
    waited_d.assign(VS, {}), waited_e.assign(VS, {});
    stage_rs.assign(P, {}), sprs_of.assign(LM, {});
    half_ready.clear();
    dp_tasks_.clear();
    step_.assign(P, 0.0);
    pending_spag.assign(2 * LM, engine::kNoTask);
    stage_sprs.assign(P, {});
    sent_f.assign(VS, std::vector<engine::TaskId>(M, engine::kNoTask));
    sent_b = sent_f;
  }

    // overlap_param_gather: the parameters the previous iteration's optimizer updated are all-gathered
    // from the iteration's start (Megatron-LM's default align_param_gather launches every stage's
    // all-gathers at once), every bucket of every chunk in the order the forward uses them, back to
    // back on the DP stream; use() makes each bucket's first forward use wait for its all-gather. The
    // iteration then ends with the optimizer step: in steady state the same period as an iteration
    // from the first forward to the last all-gather.
  void parameter_gathers() {
    if (opg)
      for (int s = 0; s < P; ++s)
        for (int k = 0; k < V; ++k) {
          const int v = k * P + s;
          cur_v = v;
          const ChunkBuckets& cb = buckets[v];
          // DualPipe: the mirror's copy of the piece (its other chunk) was gathered with it.
          const int twin = (1 - k) * P + (P - 1 - s);
          if (dual() && s > P - 1 - s) {
            ag_d[v] = ag_d[twin], ag_e[v] = ag_e[twin];
            waited_d[v].assign(cb.dense.size(), 0), waited_e[v].assign(cb.expert.size(), 0);
            continue;
          }
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
  }

    // Migrations before anything computes (each GPU's first compute task waits for them).
  void migrations() {
    if (shape[LM]) {
      const engine::TaskId id = add(a2a, 0.0, Component::kReshard, kOther, true, Op::kMigration);
      bind(id, Bind::kMigration, 0);
      for (int x = 0; x < n; ++x) need[x] = id;
    }
  }

    // Create every stage's ops in its schedule's order (pipeline_ops), in rounds: an op waits for the
    // send it receives; DualPipe's overlapped pair for both of its sends, as DualPipe commits both
    // receives before the pair computes (dualpipe.py, _forward_backward_chunk).
  void schedule() {
    std::vector<std::vector<PipelineOp>> ops(P);
    for (int s = 0; s < P; ++s) ops[s] = pipeline_ops(L, s, M);
    std::vector<size_t> next(P, 0);
    // Per op: whether it completes its model chunk's gradients on the stage (the chunk's last
    // backward, or its last W when that backward was split).
    std::vector<std::vector<char>> chunk_done(P);
    for (int s = 0; s < P; ++s) {
      chunk_done[s].assign(ops[s].size(), 0);
      std::vector<char> seen(V, 0);
      for (size_t i = ops[s].size(); i-- > 0;) {
        const PipelineOp& o = ops[s][i];
        if (!o.forward && !o.split && !seen[o.chunk]) seen[o.chunk] = 1, chunk_done[s][i] = 1;
      }
    }
    // The send an op receives (kNoTask: none needed), or false when it has not been created yet.
    auto received = [&](int s, const PipelineOp& op, engine::TaskId& recv) {
      recv = engine::kNoTask;
      const int v = op.chunk * P + s;
      if (op.weight) return true;
      if (op.forward && prev_slot(v) >= 0) recv = sent_f[prev_slot(v)][op.mb];
      else if (!op.forward && next_slot(v) >= 0) recv = sent_b[next_slot(v)][op.mb];
      else return true;
      return recv != engine::kNoTask;
    };
    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < P; ++s)
        while (next[s] < ops[s].size()) {
          const size_t i = next[s];
          const PipelineOp op = ops[s][i];
          engine::TaskId recv = engine::kNoTask, recv2 = engine::kNoTask;
          if (!received(s, op, recv)) break;
          if (op.paired) {
            if (!received(s, ops[s][i + 1], recv2)) break;
            pair_ops(s, op, ops[s][i + 1], recv, recv2, i + 2 == ops[s].size() && !dual(), chunk_done[s][i + 1]);
            next[s] += 2;
          } else {
            pipeline_op(s, op, recv, i + 1 == ops[s].size() && !dual(), chunk_done[s][i]);
            ++next[s];
          }
          progress = true;
        }
    }
    for (int s = 0; s < P; ++s)
      if (next[s] != ops[s].size()) throw std::logic_error("pipeline schedule did not complete");
    if (!dual()) return;
    // DualPipe: stage s and its mirror pp - 1 - s hold the same two pieces, so each copy's gradients
    // must be the sum of both (deepseek-ai/DualPipe, examples/example_dualpipe.py adds the mirror's
    // gradients to each copy). The two copies are two more data-parallel replicas of each piece:
    // their DP groups hold both stages' ranks (ParallelLayout::dp_groups), and one reduction per
    // pair sums and shards them, once both stages have finished (or, with overlap_grad_reduce,
    // bucket by bucket as both copies complete it: ready()).
    for (int s = 0; s < P; ++s)
      if (L.dp_owner_stage(s) == s) dp_reduction(s);
  }

  bool dual() const { return L.schedule == workload::Schedule::kDualPipe; }
  // A layer's copies live on each stage holding its piece (DualPipe: the layer's stage for micro-batches
  // 0 .. M/2 - 1, its mirror for M/2 .. M - 1): the first and last micro-batch of mb's copy, and where
  // that copy's pending spAG is kept.
  int copy_first_mb(int mb) const { return dual() && mb >= M / 2 ? M / 2 : 0; }
  bool copy_last_mb(int mb) const { return mb + 1 == (dual() && mb < M / 2 ? M / 2 : M); }
  engine::TaskId& pending(int l) { return pending_spag[dual() && cur_mb >= M / 2 ? LM + l : l]; }

  // Slots (v = chunk x P + stage): the model piece each runs and its neighbours along its
  // micro-batches' path (-1 at the ends: LayoutIterationGraph::prev_slot / next_slot).
  int piece(int v) const { return L.piece_of(v % P, v / P); }
  int prev_slot(int v) const { return graph_.prev_slot(v); }
  int next_slot(int v) const { return graph_.next_slot(v); }

  // A task on `res` (its label from where the build is); run() binds communication to bytes.
  engine::TaskId add(std::span<const engine::ResourceId> res, double dur, Component c, Cls k, bool communication,
                     Op op) {
    const auto tag = static_cast<uint32_t>(comp_.size());
    comp_.push_back(c);
    labels_.push_back({op, cur_pass, cur_expert, static_cast<int16_t>(cur_block), static_cast<int16_t>(cur_mb),
                       static_cast<int16_t>(cur_v), static_cast<int16_t>(cur_bucket)});
    cls_.push_back(k);
    mean_.push_back(-1);
    const engine::TaskId id = g.add_task(res, Seconds(dur), tag, communication ? comm : engine::kFixedModel);
    g.set_activity(id, communication ? engine::Activity::kCommunication : engine::Activity::kCompute);
    if (!communication) g.set_kernel_class(id, kernel_class(op));  // communication: its traffic, at run()
    return id;
  }

  // What bounds a compute op's kernels, for interference (engine/interference.hpp): the attention
  // block as attention; the dense FFN, the experts' grouped GEMMs and the LM head as GEMMs; router
  // and permutes, copies of materialized experts and the optimizer step as memory-bound.
  static engine::KernelClass kernel_class(Op op) {
    switch (op) {
      case Op::kAttention: return engine::KernelClass::kAttention;
      case Op::kDenseFfn:
      case Op::kExperts:
      case Op::kShadowExperts:
      case Op::kMtpProjection:
      case Op::kHead: return engine::KernelClass::kGemm;
      default: return engine::KernelClass::kMemoryBound;
    }
  }

  int fixed(collective::Coflow flows, double extra) {
    fixed_.push_back({std::move(flows), extra, {}, false});
    return static_cast<int>(fixed_.size()) - 1;
  }

  void bind(engine::TaskId task, Bind what, int index) { bindings_.push_back({task, what, index, cur_mb}); }

  static std::vector<engine::ResourceId> slice(const std::vector<engine::ResourceId>& all, std::span<const int> gpus) {
    std::vector<engine::ResourceId> out;
    for (int x : gpus) out.push_back(all[x]);
    return out;
  }

  int tp_def(size_t i, bool all_reduce) {
    int& d = all_reduce ? tp_reduce[i] : tp_gather[i];
    if (d < 0) {
      double extra = 0;
      auto flows = collective::ring_flows(topo, tp_groups[i], act,
                                          all_reduce ? collective::RingOp::kAllReduce : collective::RingOp::kAllGather, extra);
      d = fixed(std::move(flows), extra);
    }
    return d;
  }

  // Dependencies on several tasks, each once (a TP collective is the last task of all its GPUs).
  void depend(std::vector<engine::TaskId>& preds, engine::TaskId id) {
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (engine::TaskId p : preds)
      if (p != engine::kNoTask) g.add_dependency(p, id);
  }

  engine::TaskId compute_task(int x, double d, Component c, Op op, Cls k = kChunk) {
    const engine::TaskId id = add({&compute[x], 1}, d, c, k, false, op);
    if (need[x] != engine::kNoTask) g.add_dependency(need[x], id), need[x] = engine::kNoTask;
    for (engine::TaskId p : also[x]) g.add_dependency(p, id);
    also[x].clear();
    last[x] = id;
    return id;
  }

  // A task whose duration run() sets from the loads.
  void var_task(int x, Var what, int l, Component c) {
    const Op op = what == Var::kCopyIn                                   ? Op::kCopyIn
                  : what == Var::kCopyOut                                ? Op::kCopyOut
                  : what == Var::kShadowFwd || what == Var::kShadowBwd ? Op::kShadowExperts
                                                                         : Op::kExperts;
    const engine::TaskId id = compute_task(x, 0.0, c, op);
    vars_.push_back({id, what, l, x, cur_mb});
  }

  void tp_collective(int s, bool all_reduce, Op op) {
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
  }

  // One TP-split sublayer: with sp, all-gather -> compute -> reduce-scatter; else compute -> all-reduce.
  void tp_sublayer(int s, double d, Component c, Op op) {
    if (L.sequence_parallel) tp_collective(s, false, Op::kTpAllGather);
    for (int x : stage_gpus[s]) compute_task(x, d, c, op);
    tp_collective(s, !L.sequence_parallel, L.sequence_parallel ? Op::kTpReduceScatter : Op::kTpAllReduce);
  }

  // A collective of stage s after the stage's GPUs' last tasks (or after `preds` when given).
  engine::TaskId collective_after(int s, const std::vector<engine::ResourceId>& res, Component c, Cls k, Op op,
                                  std::vector<engine::TaskId> preds = {}) {
    const engine::TaskId id = add(res, 0.0, c, k, true, op);
    if (preds.empty())
      for (int x : stage_gpus[s]) preds.push_back(last[x]);
    depend(preds, id);
    return id;
  }

  // A data-parallel collective of stage s over every (expert-)DP group of the stage at once, as
  // rings (NCCL runs reduce-scatter and all-gather as rings on multi-GPU nodes). An all-reduce over
  // the stage's one DP group (tp = 1 without the distributed optimizer: every run without --layout,
  // DDP) runs the algorithm and protocol NCCL's tuner picks (collective/all_reduce.hpp: tree, ring,
  // NVLS...): a large group all-reduces by tree, not by a ring of thousands of steps. Several groups
  // at once keep rings (planning hundreds of groups costs more than the build: not built yet).
  // Under DualPipe the groups span stage s and its mirror (ParallelLayout::dp_groups): the
  // collective occupies both stages' DP streams and, `after` them, waits for both stages' GPUs (or
  // for `preds` when given).
  engine::TaskId dp_collective(int s, bool expert, double bytes, collective::RingOp op, bool after, int bucket,
                               std::vector<engine::TaskId> preds = {}) {
    s = L.dp_owner_stage(s);
    double extra = 0;
    const auto& groups = expert ? egroups[s] : dgroups[s];
    collective::Coflow flows;
    if (op == collective::RingOp::kAllReduce && groups.size() == 1 && groups[0].size() > 1) {
      // Gradient buckets are mostly of one size: each size is planned once.
      auto [it, fresh] = all_reduce_plans.try_emplace({s, expert, bytes});
      if (fresh) it->second = collective::plan_all_reduce(net, groups[0], bytes);
      flows = it->second.flows;
      extra = it->second.extra_latency;
    }
    if (flows.empty()) flows = collective::concurrent_ring_flows(topo, groups, bytes, op, extra);
    const Op label = op == collective::RingOp::kReduceScatter ? Op::kDpReduceScatter
                     : op == collective::RingOp::kAllGather   ? Op::kDpAllGather
                                                              : Op::kDpAllReduce;
    const int outer = cur_block;
    cur_expert = expert, cur_bucket = bucket, cur_block = -1;
    if (after && preds.empty())
      for (int q : L.copy_stages(s))
        for (int x : stage_gpus[q]) preds.push_back(last[x]);
    const engine::TaskId id = after ? collective_after(s, pair_dp[s], Component::kDenseAllReduce, kDp, label, std::move(preds))
                                    : add(pair_dp[s], 0.0, Component::kDenseAllReduce, kDp, true, label);
    cur_expert = false, cur_bucket = -1, cur_block = outer;
    bind(id, Bind::kFixed, fixed(std::move(flows), extra));
    for (int q : L.copy_stages(s)) dp_tasks_.push_back({id, q});
    return id;
  }

  // overlap_param_gather: the first forward use of a bucket's parameters waits for its all-gather.
  void use(int block, Part part) {
    if (!opg) return;
    const GradPiece* p = buckets[cur_v].find(block, part);
    if (p == nullptr) return;
    char& w = (p->expert ? waited_e : waited_d)[cur_v][p->bucket];
    if (w) return;
    w = 1;
    const engine::TaskId ag = (p->expert ? ag_e : ag_d)[cur_v][p->bucket];
    for (int x : stage_gpus[cur_v % P]) also[x].push_back(ag);
  }

  // overlap_grad_reduce: when the last micro-batch's backward has produced a bucket's last
  // gradients, the bucket's reduce-scatter starts (after the stage's GPUs got there, on dp). Under
  // DualPipe the bucket's two copies complete on two stages: the reduction waits for both.
  void ready(int block, Part part) {
    if (!og || !sync) return;
    const ChunkBuckets& cb = buckets[cur_v];
    const GradPiece* p = cb.find(block, part);
    if (p == nullptr || !p->closes) return;
    int s = cur_v % P;
    std::vector<engine::TaskId> preds;
    for (int x : stage_gpus[s]) preds.push_back(last[x]);
    if (dual()) {
      const auto key = std::make_tuple(piece(cur_v), p->expert, p->bucket);
      auto [it, first] = half_ready.try_emplace(key, preds);
      if (first) return;  // the other copy's stage completes it
      preds.insert(preds.end(), it->second.begin(), it->second.end());
      half_ready.erase(it);
      s = L.dp_owner_stage(s);
    }
    const double params = (p->expert ? cb.expert : cb.dense)[p->bucket];
    const engine::TaskId id = dp_collective(s, p->expert, params * pr.grad_bytes, reduce_op, true, p->bucket, std::move(preds));
    if (p->expert)  // FSSDP: the copies' gradients have reached their owners (spRS) first
      for (const GradPiece& q : cb.pieces)
        if (q.expert && q.bucket == p->bucket)
          for (engine::TaskId r : sprs_of[moe_index[q.block]]) g.add_dependency(r, id);
    stage_rs[s].push_back(id);
  }

  Steps moe_layer(int s, int l, bool forward, BwdPart part = BwdPart::kFull) {
    for (int x : stage_gpus[s])
      compute_task(x, forward ? router : unperm, Component::kRouting, forward ? Op::kRouter : Op::kUnpermute);
    // FSSDP's calibration stage: the extra copies it settled after the gate of the first micro-batch
    // (on the sparse stream: before the dispatch with one queue); the expert GEMMs wait for them.
    engine::TaskId calib = engine::kNoTask;
    if (forward && cur_pass == Pass::kForward && cur_mb == copy_first_mb(cur_mb) && shape[2 * LM + 1 + l]) {
      calib = collective_after(s, st_sparse[s], Component::kCalibrationSpag, kSparse, Op::kCalibration);
      bind(calib, Bind::kCalibration, l);
    }
    const engine::TaskId a = collective_after(s, st_a2a[s], Component::kAllToAll, kA2a, forward ? Op::kDispatch : Op::kCombine);
    // Dispatch, or in backward the combine's gradient, which travels the same way.
    bind(a, Bind::kDispatch, l);
    co_yield true;  // the experts wait for it
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
    // A split backward (B) leaves the experts' weight gradients to its W op, which returns them.
    const engine::TaskId gathered = pending(l);
    const bool returns = !forward && part == BwdPart::kFull && returns_copies(l);
    const bool replicas = !forward && part == BwdPart::kFull && reduces_replicas(l);
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
      var_task(x, forward ? Var::kExpertFwd : part == BwdPart::kInput ? Var::kExpertBwdInput : Var::kExpertBwd, l,
               Component::kExpertCompute);
      if (returns) var_task(x, Var::kCopyOut, l, Component::kMaterializeCopy);
    }
    pending(l) = engine::kNoTask;
    std::vector<engine::TaskId> experts_done;  // what the combine waits for (the regular experts)
    if (bcast != engine::kNoTask) {
      for (int x : stage_gpus[s]) experts_done.push_back(last[x]);
      for (int x : stage_gpus[s]) {
        var_task(x, Var::kCopyIn, l, Component::kMaterializeCopy);
        g.add_dependency(bcast, last[x]);
        var_task(x, Var::kShadowFwd, l, Component::kExpertCompute);
      }
    }
    if (replicas) reduce_replicas(s, l);
    const engine::TaskId c = collective_after(s, st_a2a[s], Component::kAllToAll, kA2a, forward ? Op::kCombine : Op::kDispatch,
                                              std::move(experts_done));
    bind(c, Bind::kCombine, l);
    co_yield true;  // the unpermute (router backward) waits for it
    // The copies' gradients back to their owners (spRS) after the experts' backward and their
    // copy-out, issued after the layer's backward all-to-all, as the Hecate runtime orders its one
    // queue (arXiv 2502.02581, Fig. 6: spRS hides behind the attention backward that follows): with
    // comm_queue=single the all-to-all never waits for the spRS.
    if (returns) sparse_reduce(s, l);
    if (!forward && part == BwdPart::kFull) ready(m.moe_layer_ids[l], Part::kExperts);
    for (int x : stage_gpus[s]) {
      need[x] = c;
      compute_task(x, forward ? unperm : router, Component::kRouting, forward ? Op::kUnpermute : Op::kRouter);
    }
  }

  // Whether this backward of layer l (micro-batch cur_mb) returns its copies' gradients (each
  // micro-batch's with re-materialization, else its copy's last micro-batch's) and all-reduces
  // FlexMoE's replicas (its copy's last).
  bool returns_copies(int l) const { return shape[l] && (sparse_.rematerialize || copy_last_mb(cur_mb)); }
  bool reduces_replicas(int l) const { return shape[LM + 1 + l] && copy_last_mb(cur_mb); }

  // The copies' gradients back to their owners (spRS), after the stage's GPUs copied them out.
  void sparse_reduce(int s, int l) {
    const engine::TaskId r = collective_after(s, st_sparse[s], Component::kExposedSprs, kSparse, Op::kSprs);
    bind(r, Bind::kSprs, l);
    stage_sprs[s].push_back(r);
    sprs_of[l].push_back(r);
  }

  // FlexMoE: the replicated experts' gradients, all-reduced among their holders.
  void reduce_replicas(int s, int l) {
    const engine::TaskId r = collective_after(s, st_dp[s], Component::kDenseAllReduce, kDp, Op::kReplicaAllReduce);
    bind(r, Bind::kReplica, l);
    dp_tasks_.push_back({r, s});
    stage_sprs[s].push_back(r);
    sprs_of[l].push_back(r);
  }

  // The spAG of block b's copies, issued when the stage's GPUs reach it (the attention before the
  // layer, forward; the block above's attention backward or the op's start, backward).
  void sparse_gather(int s, int b) {
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
    pending(moe_index[b]) = id;
  }

  bool gathers(int b) { return moe_index[b] >= 0 && shape[moe_index[b]]; }

  // One op of stage s: a micro-batch's forward, backward (whole, B or W) through one of its chunks;
  // `final` is the stage's last op, after which it reduces its gradients.
  void pipeline_op(int s, PipelineOp op, engine::TaskId recv, bool final, bool chunk_done) {
    Steps steps = op_steps(s, op, recv, chunk_done);
    steps.finish();
    if (final) dp_reduction(s);
  }

  // DualPipe's overlapped forward and backward chunks (two micro-batches of the two directions):
  // both receive first, then their tasks are issued in turn, each chunk up to where it waits for
  // its own all-to-all, so that the compute stream runs one chunk while the other's dispatch or
  // combine (and the pipeline sends, on their own streams) is in flight (arXiv 2412.19437 §3.2.1,
  // Fig. 4). Each chunk keeps its own dependency state (a lane); the stream order interleaves them.
  void pair_ops(int s, PipelineOp f, PipelineOp b, engine::TaskId recv_f, engine::TaskId recv_b, bool final,
                bool chunk_done) {
    Lane other = lane();
    Steps fs = op_steps(s, f, recv_f, false);
    for (int x : stage_gpus[s])
      if (recv_b != engine::kNoTask) also[x].push_back(recv_b);  // the pair starts once both arrived
    bool f_live = true, b_live = true;
    f_live = fs.next();
    swap_lane(other);
    for (int x : stage_gpus[s])
      if (recv_f != engine::kNoTask) also[x].push_back(recv_f);
    Steps bs = op_steps(s, b, recv_b, chunk_done);
    b_live = bs.next();
    while (f_live || b_live) {
      swap_lane(other);  // to the forward's
      if (f_live) f_live = fs.next();
      swap_lane(other);  // to the backward's
      if (b_live) b_live = bs.next();
    }
    // The backward's state continues; the stage's last tasks are the later of the two lanes'.
    for (int x : stage_gpus[s]) last[x] = std::max(last[x], other.last[x]);
    if (final) dp_reduction(s);
  }

  // Where the build is for one chunk in flight: the GPUs' dependency state and the labels.
  struct Lane {
    std::vector<engine::TaskId> need, last;
    std::vector<std::vector<engine::TaskId>> also;
    int mb = 0, v = 0, block = -1;
    Pass pass = Pass::kNone;
    bool sync = false;
  };
  Lane lane() const { return {need, last, also, cur_mb, cur_v, cur_block, cur_pass, sync}; }
  void swap_lane(Lane& o) {
    std::swap(need, o.need), std::swap(last, o.last), std::swap(also, o.also);
    std::swap(cur_mb, o.mb), std::swap(cur_v, o.v), std::swap(cur_block, o.block), std::swap(cur_pass, o.pass);
    std::swap(sync, o.sync);
  }

  // The op's tasks, its sends included, as a coroutine (Steps).
  Steps op_steps(int s, PipelineOp op, engine::TaskId recv, bool chunk_done) {
    for (int x : stage_gpus[s])
      if (recv != engine::kNoTask) need[x] = recv;
    cur_mb = op.mb;
    const int v = op.chunk * P + s;
    cur_v = v;
    cur_pass = op.forward ? Pass::kForward : op.weight ? Pass::kWeightGrad : Pass::kBackward;
    cur_block = -1;
    sync = chunk_done;
    if (op.forward) {
      for (Steps st = forward_chunk(s, v, op.mb); st.next();) co_yield true;
      if (next_slot(v) >= 0) pp_send(s, v, op.mb, true);
      co_return;
    }
    const BwdPart part = op.weight ? BwdPart::kWeight : op.split ? BwdPart::kInput : BwdPart::kFull;
    for (Steps st = backward_chunk(s, v, part); st.next();) co_yield true;
    if (part != BwdPart::kWeight && prev_slot(v) >= 0) pp_send(s, v, op.mb, false);
  }

  // A micro-batch's forward through slot v (stage s): each block's attention and MoE layer or
  // dense FFN, the LM head on the last piece.
  Steps forward_chunk(int s, int v, int mb) {
    const auto [first, lastb] = L.chunk_blocks(piece(v), m.layers, m.mtp_layers);
    use(-1, Part::kEmbedding);
    for (int b = first; b < lastb; ++b) {
      // The layer's copies are gathered once per iteration (every micro-batch with
      // re-materialization), from when the attention before its forward starts (and its input
      // has arrived).
      if ((mb == copy_first_mb(mb) || sparse_.rematerialize) && gathers(b)) sparse_gather(s, b);
      cur_block = b;
      use(b, Part::kAttention);
      // An MTP module: its norms and projection before its block, its pass through the shared head
      // after it.
      if (m.is_mtp(b)) for (int x : stage_gpus[s]) compute_task(x, mtp_f, Component::kAttention, Op::kMtpProjection);
      tp_sublayer(s, attn_f[b], Component::kAttention, Op::kAttention);
      use(b, Part::kMlp);
      if (moe_index[b] >= 0)
        for (Steps st = moe_layer(s, moe_index[b], true); st.next();) co_yield true;
      else tp_sublayer(s, ffn_f, Component::kAttention, Op::kDenseFfn);
      if (m.is_mtp(b)) for (int x : stage_gpus[s]) compute_task(x, head_f, Component::kAttention, Op::kHead);
    }
    cur_block = -1;
    use(-1, Part::kHead);
    if (piece(v) == L.pieces() - 1)
      for (int x : stage_gpus[s]) compute_task(x, head_f, Component::kAttention, Op::kHead);
  }

  // A micro-batch's backward through slot v (stage s), blocks in reverse, with recomputation and,
  // on the chunk's last backward, the gradient buckets as they fill. `part`: the whole backward,
  // only its input gradients (B: recomputation, TP collectives and all-to-alls come with it) or only
  // its weight gradients (W: each block's weight-gradient GEMMs, no communication).
  Steps backward_chunk(int s, int v, BwdPart part) {
    const auto [first, lastb] = L.chunk_blocks(piece(v), m.layers, m.mtp_layers);
    const bool last_piece = piece(v) == L.pieces() - 1;
    if (part == BwdPart::kWeight) {
      if (last_piece) for (int x : stage_gpus[s]) compute_task(x, head_w, Component::kAttention, Op::kHead);
      ready(-1, Part::kHead);
      for (int b = lastb - 1; b >= first; --b) {
        cur_block = b;
        if (m.is_mtp(b)) for (int x : stage_gpus[s]) compute_task(x, head_w, Component::kAttention, Op::kHead);
        if (const int l = moe_index[b]; l >= 0) {
          // The experts' weight gradients, then (as a whole backward does) the copies' returned and
          // the replicas' reduced.
          const bool returns = returns_copies(l);
          for (int x : stage_gpus[s]) {
            var_task(x, Var::kExpertW, l, Component::kExpertCompute);
            if (returns) var_task(x, Var::kCopyOut, l, Component::kMaterializeCopy);
          }
          if (reduces_replicas(l)) reduce_replicas(s, l);
          if (returns) sparse_reduce(s, l);
          ready(b, Part::kExperts);
        } else {
          for (int x : stage_gpus[s]) compute_task(x, ffn_w, Component::kAttention, Op::kDenseFfn);
        }
        ready(b, Part::kMlp);
        for (int x : stage_gpus[s]) compute_task(x, attn_w, Component::kAttention, Op::kAttention);
        if (m.is_mtp(b)) for (int x : stage_gpus[s]) compute_task(x, mtp_w, Component::kAttention, Op::kMtpProjection);
        ready(b, Part::kAttention);
      }
      cur_block = -1;
      ready(-1, Part::kEmbedding);
      co_return;
    }
    const bool input_only = part == BwdPart::kInput;
    const bool regather = sparse_.rematerialize;
    if (regather && gathers(lastb - 1)) sparse_gather(s, lastb - 1);
    if (last_piece)
      for (int x : stage_gpus[s]) compute_task(x, input_only ? head_b - head_w : head_b, Component::kAttention, Op::kHead);
    if (!input_only) ready(-1, Part::kHead);
    for (int b = lastb - 1; b >= first; --b) {
      cur_block = b;
      // Recomputation before the block's backward (Megatron's --recompute-granularity): `full` runs
      // the block's forward again from its saved input, MoE dispatch and combine included; with
      // `selective` only the core attention is recomputed, which unfused (standard) attention pays
      // here as its forward (projections included: an upper side); FlashAttention's backward
      // recomputes its scores by design, already in attention_backward, so selective adds nothing.
      if (m.is_mtp(b))  // the MTP module's head pass first: its loss starts the module's backward
        for (int x : stage_gpus[s]) compute_task(x, input_only ? head_b - head_w : head_b, Component::kAttention, Op::kHead);
      cur_pass = Pass::kRecompute;
      if (L.recompute == workload::Recompute::kFull) {
        if (m.is_mtp(b)) for (int x : stage_gpus[s]) compute_task(x, mtp_f, Component::kAttention, Op::kMtpProjection);
        tp_sublayer(s, attn_f[b], Component::kAttention, Op::kAttention);
        if (moe_index[b] >= 0)
          for (Steps st = moe_layer(s, moe_index[b], true); st.next();) co_yield true;
        else tp_sublayer(s, ffn_f, Component::kAttention, Op::kDenseFfn);
      } else if (L.recompute == workload::Recompute::kSelective && m.attention == workload::AttentionImpl::kStandard) {
        for (int x : stage_gpus[s]) compute_task(x, attn_f[b], Component::kAttention, Op::kAttention);
      }
      cur_pass = Pass::kBackward;
      if (moe_index[b] >= 0)
        for (Steps st = moe_layer(s, moe_index[b], false, part); st.next();) co_yield true;
      else tp_sublayer(s, input_only ? ffn_b - ffn_w : ffn_b, Component::kAttention, Op::kDenseFfn);
      if (!input_only) ready(b, Part::kMlp);
      if (regather && b > first && gathers(b - 1)) sparse_gather(s, b - 1);  // beside this attention backward
      tp_sublayer(s, input_only ? attn_b[b] - attn_w : attn_b[b], Component::kAttention, Op::kAttention);
      if (m.is_mtp(b))
        for (int x : stage_gpus[s]) compute_task(x, input_only ? mtp_b - mtp_w : mtp_b, Component::kAttention, Op::kMtpProjection);
      if (!input_only) ready(b, Part::kAttention);
    }
    cur_block = -1;
    if (!input_only) ready(-1, Part::kEmbedding);
  }

  // The activations (forward) or their gradients (backward) of micro-batch mb to the next (previous)
  // virtual stage, on the stage's pp_fwd (pp_bwd) streams.
  void pp_send(int s, int v, int mb, bool forward) {
    engine::TaskId& sent = forward ? sent_f[v][mb] : sent_b[v][mb];
    sent = collective_after(s, forward ? st_ppf[s] : st_ppb[s], Component::kDenseAllReduce, kPp, Op::kPpSend);
    bind(sent, Bind::kFixed, forward ? send_fwd[v] : send_bwd[v]);
  }

  // After stage s's last op (DualPipe: after both of a mirrored pair's, s the lower one): its
  // gradients reduce-scattered (distributed optimizer) or all-reduced over (expert-)DP, all at the
  // end without overlap_grad_reduce (with it, ready() issued them bucket by bucket), the optimizer
  // step once every reduction has finished (finish_grad_sync), and the updated parameters
  // all-gathered (or, with overlap_param_gather, at the next iteration's start, beside its forward).
  void dp_reduction(int s) {
    const auto params = cost::stage_params(m, L, s);
    if (!og) {
      const engine::TaskId rs_d = dp_collective(s, false, params.dense * pr.grad_bytes, reduce_op, true, -1);
      const engine::TaskId rs_e = dp_collective(s, true, params.experts * pr.grad_bytes, reduce_op, true, -1);
      for (int q : L.copy_stages(s))
        for (engine::TaskId r : stage_sprs[q]) g.add_dependency(r, rs_e);
      stage_rs[s] = {rs_e, rs_d};
    }
    const double step = cost::optimizer_shard_params(L, params);  // the GPU's shard
    for (int q : L.copy_stages(s)) {
      for (int x : stage_gpus[q]) {
        if (!stage_rs[s].empty()) {
          need[x] = stage_rs[s].front();
          also[x].assign(stage_rs[s].begin() + 1, stage_rs[s].end());
        }
        compute_task(x, 0.0, Component::kOptimizer, Op::kOptimizer, kOther);
        vars_.push_back({last[x], Var::kOptimizer, q, x, cur_mb});  // + the GPU's extra instances (run)
      }
      step_[q] = step;
    }
    if (L.distributed_optimizer && !opg) {
      dp_collective(s, false, params.dense * pr.param_bytes, collective::RingOp::kAllGather, true, -1);
      dp_collective(s, true, params.experts * pr.param_bytes, collective::RingOp::kAllGather, true, -1);
    }
  }

  const LayoutIterationGraph& graph_;
  const workload::ModelSpec& m;
  const cost::ComputeCost& cc;
  const workload::ParallelLayout& L;
  const topology::Topology& topo;
  const int n, P, M, V, VS, S, LM;
  const double t;
  const std::vector<char>& shape;  // the graph's shape (LayoutIterationGraph::run)
  engine::TaskGraph& g;
  collective::AnalyticNetwork& net;  // the graph's, for NCCL's choice of algorithm (dp_collective)
  // The graph's members the build fills.
  const LayoutSparse& sparse_;
  std::vector<Component>& comp_;
  std::vector<Label>& labels_;
  std::vector<uint8_t>& cls_;
  std::vector<double>& mean_;
  std::vector<FixedComm>& fixed_;
  std::vector<Binding>& bindings_;
  std::vector<VarTask>& vars_;
  std::vector<engine::ResourceId>& first_compute_;
  std::vector<std::pair<engine::TaskId, int>>& dp_tasks_;
  std::vector<double>& step_;
  int& dense_buckets_;
  int& expert_buckets_;
  const workload::Precision& pr;
  static constexpr engine::ModelId comm = 1;  // the id Simulation::add_model gives the network

  std::vector<engine::ResourceId> compute, a2a, dp, ppf, ppb, sparse;  // [gpu] streams
  // Where the build is, for the tasks' labels.
  int cur_mb = 0;     // the micro-batch being emitted
  int cur_v = 0;      // the virtual stage being emitted
  int cur_block = -1, cur_bucket = -1;
  bool cur_expert = false;
  Pass cur_pass = Pass::kNone;
  double act = 0;  // the s x b x h activation of a micro-batch
  std::vector<std::vector<int>> tp_groups;
  std::vector<int> tp_gather, tp_reduce;  // [TP group] FixedComm indices, -1 until defined
  std::vector<std::vector<engine::ResourceId>> tp_res;
  std::vector<std::vector<int>> stage_gpus;
  std::vector<std::vector<engine::ResourceId>> st_a2a, st_dp, st_ppf, st_ppb, st_sparse;  // [stage] streams
  std::vector<std::vector<engine::ResourceId>> pair_dp;  // [stage] the DP streams of the stages holding its pieces
  std::vector<int> send_fwd, send_bwd;  // [virtual stage] FixedComm indices
  std::vector<int> moe_index;           // [block] -> MoE layer, -1
  std::vector<double> attn_f, attn_b;  // per block: a sliding window makes them differ
  double ffn_f = 0, ffn_b = 0, router = 0, unperm = 0, head_f = 0, head_b = 0;
  double attn_w = 0, ffn_w = 0, head_w = 0;  // the weight-gradient parts of the backwards (W)
  double mtp_f = 0, mtp_b = 0, mtp_w = 0;    // an MTP module's norms and projection (ComputeCost::mtp_forward)
  // Per GPU: a task the next compute task must wait for (a received activation or gradient), its
  // last task, and more tasks to wait for (parameter all-gathers, reductions).
  std::vector<engine::TaskId> need, last;
  std::vector<std::vector<engine::TaskId>> also;
  bool og = false, opg = false;  // overlap_grad_reduce; overlap_param_gather (with dist_opt)
  collective::RingOp reduce_op = collective::RingOp::kAllReduce;
  std::vector<std::vector<std::vector<int>>> dgroups, egroups;  // [stage] DP, expert-DP groups
  std::vector<ChunkBuckets> buckets;                             // [virtual stage]
  std::vector<std::vector<engine::TaskId>> ag_d, ag_e;           // [virtual stage][bucket] parameter all-gathers
  std::vector<std::vector<char>> waited_d, waited_e;
  std::vector<std::vector<engine::TaskId>> stage_rs, sprs_of;    // [stage] reductions; [MoE layer] spRS
  bool sync = false;  // the op is its chunk's last backward: gradients reduce as their buckets fill
  // DualPipe with overlap_grad_reduce: (piece, expert buffer, bucket) -> the tasks the first of its
  // two copies completed it after, until the other copy completes it too.
  std::map<std::tuple<int, bool, int>, std::vector<engine::TaskId>> half_ready;
  // Sparse collectives: the spAG each MoE layer's next expert forward waits for, the stage's spRS
  // tasks (the expert-DP reduction waits for them).
  std::vector<engine::TaskId> pending_spag;
  std::vector<std::vector<engine::TaskId>> stage_sprs;
  std::vector<std::vector<engine::TaskId>> sent_f, sent_b;  // [virtual stage][micro-batch] sends
  // NCCL's plans of single-group DP all-reduces: (stage, expert buffer, bytes) -> plan.
  std::map<std::tuple<int, bool, double>, collective::AllReducePlan> all_reduce_plans;
};

void LayoutIterationGraph::build(const std::vector<char>& shape) {
  ++builds_;
  g_ = engine::TaskGraph();
  comp_.clear();
  labels_.clear();
  cls_.clear();
  mean_.clear();
  fixed_.clear();
  bindings_.clear();
  vars_.clear();
  Builder(*this, shape).build();
  g_.seal();
  prev_.build(g_);
}

}  // namespace hs::strategy
