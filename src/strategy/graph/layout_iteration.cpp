#include "strategy/graph/layout_iteration.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "collective/all_to_all.hpp"
#include "collective/ring.hpp"
#include "cost/layout_memory.hpp"
#include "engine/simulation.hpp"
#include "strategy/deepep_dispatch.hpp"
#include "strategy/graph/path_breakdown.hpp"
#include "strategy/graph/traffic_kind.hpp"

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

std::vector<PipelineOp> zb_h1(int stages, int stage, int micro_batches) {
  std::vector<PipelineOp> ops;
  int w = 0;  // W passes issued
  for (const PipelineOp& op : one_f_one_b(stages, stage, micro_batches)) {
    if (op.forward) {
      ops.push_back(op);
      continue;
    }
    ops.push_back({false, op.mb, 0, true, false, false});
    if (op.mb - w >= stage) ops.push_back({false, w++, 0, false, true, false});
  }
  while (w < micro_batches) ops.push_back({false, w++, 0, false, true, false});
  return ops;
}

std::vector<PipelineOp> dualpipe(int stages, int stage, int micro_batches) {
  const int h = stages / 2, r = std::min(stage, stages - 1 - stage), half = micro_batches / 2;
  const bool second = stage >= h, middle = stage == h - 1 || stage == h;
  int fwd[2] = {0, 0}, bwd[2] = {0, 0};
  std::vector<PipelineOp> ops, deferred;  // deferred: B's whose W is still to run, oldest first
  size_t next_w = 0;
  auto chunk = [&](int phase) { return phase ^ (second ? 1 : 0); };
  auto f = [&](int phase, bool paired = false) {
    const int c = chunk(phase);
    ops.push_back({true, c * half + fwd[c]++, c, false, false, paired});
  };
  auto b = [&](int phase, bool split = false) {
    const int c = chunk(phase);
    ops.push_back({false, c * half + bwd[c]++, c, split, false, false});
    if (split) deferred.push_back(ops.back());
  };
  auto w = [&] {
    const PipelineOp& d = deferred.at(next_w++);
    ops.push_back({false, d.mb, d.chunk, false, true, false});
  };
  for (int i = 0; i < 2 * (h - r - 1); ++i) f(0);        // step 1: nF0
  for (int i = 0; i < r + 1; ++i) f(0), f(1);            // step 2: nF0F1
  for (int i = 0; i < h - r - 1; ++i) b(1, true), w(), f(1);  // step 3: nB1W1F1
  for (int i = 0; i < half - stages + r + 1; ++i) {      // step 4: nF0B1F1B0
    f(0, !(i == 0 && middle)), b(1);
    f(1, true), b(0);
  }
  for (int i = 0; i < h - r - 1; ++i) b(1), f(1, true), b(0);  // step 5: nB1F1B0
  bool zb = false;                                       // step 6: nB1B0, the later half split
  for (int i = 0; i < r + 1; ++i) {
    if (i == (r + 1) / 2 && r % 2 == 1) zb = true;
    b(1, zb);
    if (i == (r + 1) / 2 && r % 2 == 0) zb = true;
    b(0, zb);
  }
  for (int i = 0; i < h - r - 1; ++i) w(), b(0, true);   // step 7: nWB0
  while (next_w < deferred.size()) w();                  // step 8: nW
  return ops;
}

std::vector<PipelineOp> pipeline_ops(const workload::ParallelLayout& l, int stage, int micro_batches) {
  switch (l.schedule) {
    case workload::Schedule::kZbH1: return zb_h1(l.pp, stage, micro_batches);
    case workload::Schedule::kDualPipe: return dualpipe(l.pp, stage, micro_batches);
    default: return interleaved_1f1b(l.pp, stage, micro_batches, l.vpp);
  }
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

int LayoutIterationGraph::prev_slot(int v) const {
  const int P = layout_.pp, s = v % P;
  if (layout_.schedule != workload::Schedule::kDualPipe) return v - 1;
  return v < P ? (s > 0 ? v - 1 : -1) : (s + 1 < P ? v + 1 : -1);
}

int LayoutIterationGraph::next_slot(int v) const {
  const int P = layout_.pp, s = v % P;
  if (layout_.schedule != workload::Schedule::kDualPipe) return v + 1 < P * layout_.stage_chunks() ? v + 1 : -1;
  return v < P ? (s + 1 < P ? v + 1 : -1) : (s > 0 ? v - 1 : -1);
}

LayoutIterationGraph::LayoutIterationGraph(const Context& ctx, const workload::ParallelLayout& layout,
                                           LayoutSparse sparse)
    : ctx_(ctx), layout_(layout), sparse_(sparse), net_(ctx.topo) {}


IterationResult LayoutIterationGraph::run(std::span<const LayerPlan> plans, const collective::Coflow& migrations,
                                          std::span<const double> extra_step_params, TimelineSink* timeline) {
  const auto& m = ctx_.model;
  const auto& cc = ctx_.compute;
  const auto& L = layout_;
  const auto& topo = ctx_.topo;
  const int n = topo.num_gpus(), P = L.pp, LM = m.moe_layers(), M = m.grad_accum;
  // DualPipe: the micro-batches fed from stage P - 1 (mb >= M/2) run every layer on the mirror of its
  // stage, P - 1 - s; take_layer gives the mirrored GPUs the plan's expert work and defines the
  // all-to-alls between them.
  const bool dual = L.schedule == workload::Schedule::kDualPipe;
  auto expert_var = [](Var w) {
    return w == Var::kExpertFwd || w == Var::kExpertBwd || w == Var::kExpertBwdInput || w == Var::kExpertW;
  };
  std::vector<char> shape(3 * LM + 1);
  for (int l = 0; l < LM; ++l) shape[l] = !sparse_.shadow && !plans[l].spag_flows.empty();
  shape[LM] = !migrations.empty();
  for (int l = 0; l < LM; ++l) shape[LM + 1 + l] = !plans[l].replica_grad_flows.empty();
  for (int l = 0; l < LM; ++l) shape[2 * LM + 1 + l] = !plans[l].calibration_flows.empty();
  use_shape(shape);
  engine::TaskGraph& g = g_;
  // This iteration's loads: every layer not streamed in already (take_layer) is taken now.
  open_iteration();
  for (int l = 0; l < LM; ++l)
    if (taken_[l].empty()) take_layer(l, plans[l], timeline != nullptr);
  network::FlowNetwork* flow = flow_.get();
  network::CoflowNetwork* coflow = coflow_.get();
  // Variant of layer l that micro-batch mb runs (its own, or the one every micro-batch runs).
  auto variant = [&](int l, int mb) -> const TakenVariant& { return taken_[l][taken_[l].size() == 1 ? 0 : mb]; };
  // The plan micro-batch mb of layer l runs (FasterMoE's shadows come with it).
  auto plan_of = [&](int l, int mb) -> const LayerPlan& { return plans[l].micro.empty() ? plans[l] : plans[l].micro[mb]; };
  const double grad_ratio = m.precision.grad_bytes / m.precision.param_bytes;
  for (const VarTask& v : vars_) {
    double d = 0;
    if (expert_var(v.what)) {
      const bool f = v.what == Var::kExpertFwd;
      const TakenVariant& k = variant(v.layer, v.mb);
      // The B and W halves of a split backward: the grouped GEMM's data- and weight-gradient
      // GEMMs, of equal FLOPs (iteration_builder.cpp, durations()).
      const double share = v.what == Var::kExpertBwdInput || v.what == Var::kExpertW ? 0.5 : 1.0;
      d = share * (f ? k.ef[v.gpu] : k.eb[v.gpu]);
      mean_[g.tag(v.task)] = share * (f ? k.ef_mean : k.eb_mean);
    } else if (v.what == Var::kOptimizer) {
      d = cc.optimizer_step(step_[v.layer] + (extra_step_params.empty() ? 0.0 : extra_step_params[v.gpu])).value();
    } else if (v.what == Var::kShadowFwd || v.what == Var::kShadowBwd) {
      const TakenVariant& k = variant(v.layer, v.mb);
      d = v.what == Var::kShadowFwd ? k.sf[v.gpu] : k.sb[v.gpu];
    } else {
      const auto& cb = (sparse_.shadow ? plan_of(v.layer, v.mb) : plans[v.layer]).copy_bytes;
      const double ratio = v.what == Var::kCopyIn ? 1.0 : grad_ratio;
      // DualPipe's second direction copies on the mirror what its counterpart copies on the layer's stage.
      const int x = dual && v.mb >= M / 2 ? L.mirror_rank(v.gpu) : v.gpu;
      if (!cb.empty() && cb[x] > 0) d = cc.memory_copy(Bytes(cb[x] * ratio)).value();
    }
    g.set_duration(v.task, Seconds(d));
  }
  // Bind every communication task to this iteration's bytes, in the order the build met them. The
  // flow tier reads them in place (assign_view): the plans, the taken variants and fixed_ hold
  // them through sim.run() below, and every binding is bound again before the next run.
  std::vector<int> fixed_id(fixed_.size(), -1);
  // DualPipe: the micro-batches fed from stage P - 1 run a layer's sparse collectives between the
  // mirrors of the plan's GPUs (the mirrored stage holds the same experts and copies), and
  // migrations move both copies of the experts.
  mirrored_.clear();
  auto append_mirrored = [&](const collective::Coflow& flows, collective::Coflow& out) {
    for (const auto& f : flows) out.push_back({L.mirror_rank(f.src), L.mirror_rank(f.dst), f.bytes});
  };
  auto mirror = [&](const collective::Coflow& flows, std::tuple<int, int, int> key) -> const collective::Coflow& {
    auto [it, fresh] = mirrored_.try_emplace(key);
    if (fresh) append_mirrored(flows, it->second);
    return it->second;
  };
  const collective::Coflow* moved = &migrations;
  if (dual && !migrations.empty()) {  // the plan's moves, then the same on the mirrored stage
    collective::Coflow& both = mirrored_[{static_cast<int>(Bind::kMigration), -1, -1}];
    both = migrations;
    append_mirrored(migrations, both);
    moved = &both;
  }
  bound_.assign(bindings_.size(), nullptr);
  for (size_t i = 0; i < bindings_.size(); ++i) {
    const Binding& b = bindings_[i];
    const LayerPlan* p = b.what == Bind::kFixed || b.what == Bind::kMigration ? nullptr
                         : sparse_.shadow                                    ? &plan_of(b.index, b.mb)
                                                                             : &plans[b.index];
    if (b.what == Bind::kDispatch || b.what == Bind::kCombine) {
      const bool c = b.what == Bind::kCombine;
      const TakenVariant& k = variant(b.index, b.mb);
      const A2aPair& a = dual && b.mb >= M / 2 ? k.mirror : k.a2a;
      g.set_traffic(b.task, a.traffic);
      if (flow) flow->assign_view(b.task, a.flows[c], a.extra[c]);
      else coflow->assign(b.task, c ? a.combine_id : a.dispatch_id);
      continue;
    }
    if (b.what == Bind::kFixed) {
      FixedComm& d = fixed_[b.index];
      if (!d.traffic_known) d.traffic = traffic_of(topo, d.flows), d.traffic_known = true;
      g.set_traffic(b.task, d.traffic);
      if (flow) {
        flow->assign_view(b.task, d.flows, d.extra);
        continue;
      }
      if (fixed_id[b.index] < 0) {
        if (!d.loaded) net_.loads(d.flows, d.extra, d.loads), d.loaded = true;
        fixed_id[b.index] = coflow->define(d.loads);
      }
      coflow->assign(b.task, fixed_id[b.index]);
      continue;
    }
    const collective::Coflow& planned = b.what == Bind::kSpag          ? p->spag_flows
                                        : b.what == Bind::kSprs         ? p->sprs_flows
                                        : b.what == Bind::kReplica      ? p->replica_grad_flows
                                        : b.what == Bind::kCalibration  ? p->calibration_flows
                                                                        : *moved;
    const bool mirrored = dual && p && b.mb >= M / 2;
    const collective::Coflow& flows =
        mirrored ? mirror(planned, {static_cast<int>(b.what), b.index, sparse_.shadow ? b.mb : -1}) : planned;
    bound_[i] = &flows;
    const double extra = b.what == Bind::kSpag         ? p->spag_latency
                         : b.what == Bind::kSprs        ? p->sprs_latency
                         : b.what == Bind::kReplica     ? p->replica_grad_latency
                         : b.what == Bind::kCalibration ? p->calibration_latency
                                                        : 0.0;
    g.set_traffic(b.task, traffic_of(topo, flows));
    if (flow) {
      flow->assign_view(b.task, flows, extra);
      continue;
    }
    // Loaded once per iteration, and not at all when the same transfers come back (SparseLoads).
    SparseLoads& memo = sparse_loads_[{static_cast<int>(b.what), p ? b.index : -1,
                                       sparse_.shadow ? b.mb : mirrored ? -2 : -1}];
    if (memo.run != runs_) {
      if (!memo.kept || memo.extra != extra || memo.flows != flows) {
        memo.kept = flows.size() <= SparseLoads::kKeep;
        memo.flows.clear();
        if (memo.kept) memo.flows = flows;
        memo.extra = extra;
        net_.loads(flows, extra, memo.loads);
      }
      memo.id = coflow->define(memo.loads);
      memo.run = runs_;
    }
    coflow->assign(b.task, memo.id);
  }
  ++runs_;
  open_ = false;  // the next take_layer starts the next iteration
  IterationResult res;
  res.bottleneck_link = bottleneck_link_;
  // The same simulation inputs as an earlier run (run_memo_): its outcome, without simulating.
  const bool memo = memo_on_ && coflow && !timeline;
  if (memo) {
    memo_key_.clear();
    memo_key_.add_bytes(shape_.data(), shape_.size());
    const engine::TaskId tasks = g.num_tasks();
    memo_key_.add(static_cast<uint64_t>(tasks));
    for (engine::TaskId x = 0; x < tasks; ++x) memo_key_.add(g.duration(x).value());
    std::vector<uint8_t>& kinds = memo_kinds_;
    kinds.resize(tasks);
    for (engine::TaskId x = 0; x < tasks; ++x) kinds[x] = static_cast<uint8_t>(g.kernel_class(x));
    memo_key_.add_bytes(kinds.data(), kinds.size());
    memo_key_.add(mean_);
    coflow->append_key(memo_key_);
    if (const RunOutcome* o = run_memo_.find(memo_key_)) {
      res.time = o->time;
      res.breakdown = o->breakdown;
      res.hidden_comm = o->hidden_comm;
      res.bottleneck_gpu = o->bottleneck_gpu;
      stats_ = o->stats;
      finish_result(plans, res);
      return res;
    }
  }
  // One Simulation of the graph, kept from run to run (its per-task buffers are reused).
  if (!sim_ || sim_graph_ != &g) sim_ = std::make_unique<engine::Simulation>(g), sim_graph_ = &g;
  engine::Simulation& sim = *sim_;
  sim.clear_models();
  if (flow) sim.add_model(flow);
  else sim.add_model(coflow);
  sim.set_interference(ctx_.interference);
  sim.run();

  res.time = sim.makespan();
  stats_ = {};
  std::vector<int> expert_gpu(g.num_tasks(), -1);
  for (const VarTask& v : vars_)
    if (expert_var(v.what)) expert_gpu[v.task] = v.gpu;
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
    // Its stage (a mirrored pair's DP collective: the lower stage's, whose streams come first).
    if (c.overlappable) c.group = L.pp_rank(g.device(g.resources(x).front()));
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
  // Stage 0's phases: each chunk task on its first GPU's compute stream to the op of its schedule it
  // belongs to (pass, micro-batch, chunk), the optimizer step and other tasks to none. Only
  // reported with a pipeline (layout_resolved), so not computed without one (every run without
  // --layout, each iteration).
  if (P > 1) {
    const std::vector<PipelineOp> ops = pipeline_ops(L, 0, M);
    std::map<std::tuple<int, int, int>, int> op_of;  // (F 0 / B 1 / W 2, micro-batch, chunk) -> op
    for (int i = 0; i < static_cast<int>(ops.size()); ++i)
      op_of[{ops[i].weight ? 2 : ops[i].forward ? 0 : 1, ops[i].mb, ops[i].chunk}] = i;
    std::vector<OpTaskSpan> spans;
    for (engine::TaskId x : g.queue(first_compute_[0])) {
      const Label& lb = labels_[g.tag(x)];
      int op = -1;
      if (lb.pass != Pass::kNone && busy_task(x)) {  // a chunk's compute or TP collective, not the optimizer
        const int kind = lb.pass == Pass::kForward ? 0 : lb.pass == Pass::kWeightGrad ? 2 : 1;
        auto it = op_of.find({kind, lb.mb, lb.chunk / P});
        if (it != op_of.end()) op = it->second;
      }
      spans.push_back({sim.start_time(x), sim.end_time(x), op});
    }
    stats_.phases = pipeline_phases(ops, spans, res.time);
  }
  if (memo) run_memo_.insert(memo_key_, RunOutcome{res.time, res.breakdown, res.hidden_comm, res.bottleneck_gpu, stats_});
  finish_result(plans, res);
  if (timeline) emit_timeline(sim, plans, *timeline);
  return res;
}

void LayoutIterationGraph::finish_result(std::span<const LayerPlan> plans, IterationResult& res) const {
  if (!ctx_.model.capacity_factor) return;
  // Token dropping (strategy/capacity.hpp): each layer's tally, its micro-batches' summed.
  const int LM = ctx_.model.moe_layers();
  res.routed_tokens.assign(LM, 0.0);
  res.dropped_tokens.assign(LM, 0.0);
  for (int l = 0; l < LM; ++l) {
    if (plans[l].micro.empty()) {
      res.routed_tokens[l] = plans[l].routed_tokens, res.dropped_tokens[l] = plans[l].dropped_tokens;
      continue;
    }
    for (const LayerPlan& p : plans[l].micro)
      res.routed_tokens[l] += p.routed_tokens, res.dropped_tokens[l] += p.dropped_tokens;
  }
}

}  // namespace hs::strategy
