// The timeline of an iteration under a parallel layout (LayoutIterationGraph::run with a sink): one
// event per task per GPU stream it occupied, named after what the task is ("fwd mb3 block 5
// attention", "dispatch fwd block 5 mb3", "pp send mb3 -> stage 1", "dp reduce-scatter bucket 2",
// "spAG block 4"), its category the breakdown component it is charged to, and args: the stage, the
// micro-batch, the block, the bytes the GPU sends in a communication task, the gradient bucket, the
// receiving stage of a send.
// GPUs shown: every GPU with up to kAllGpus GPUs, else each stage's first GPU (its TP / DP / EP
// peers run the same schedule; the collectives they share show on it).
#include <fmt/format.h>
#include <stdexcept>

#include "strategy/graph/layout_iteration.hpp"

namespace hs::strategy {

namespace {

constexpr int kAllGpus = 16;

// Bytes GPU x sends in a coflow.
double sent(const collective::Coflow& flows, int x) {
  double b = 0;
  for (const collective::Transfer& f : flows)
    if (f.src == x) b += f.bytes;
  return b;
}

const char* pass_name(bool forward, bool recompute) { return recompute ? "recompute" : forward ? "fwd" : "bwd"; }

}  // namespace

std::string LayoutIterationGraph::task_name(const Label& l) const {
  const int P = layout_.pp;
  const bool fwd = l.pass == Pass::kForward, rec = l.pass == Pass::kRecompute;
  const char* pass = l.pass == Pass::kWeightGrad ? "wgrad" : pass_name(fwd, rec);
  const bool remat = sparse_.rematerialize;
  // Compute: "<pass> mb<m> block <b> <what>"; communication of a block: "<what> <pass> block <b> mb<m>".
  auto work = [&](const char* what) { return fmt::format("{} mb{} block {} {}", pass, l.mb, l.block, what); };
  auto comm = [&](const char* what) { return fmt::format("{} {} block {} mb{}", what, pass, l.block, l.mb); };
  auto dp = [&](const char* what) {
    const char* buffer = l.expert ? "expert-dp" : "dp";
    return l.bucket < 0 ? fmt::format("{} {}", buffer, what) : fmt::format("{} {} bucket {}", buffer, what, l.bucket);
  };
  switch (l.op) {
    case Op::kAttention: return work("attention");
    case Op::kDenseFfn: return work("ffn");
    case Op::kRouter: return work("router+permute");
    case Op::kUnpermute: return work("unpermute");
    case Op::kExperts: return work("experts");
    case Op::kShadowExperts: return work("shadow experts");
    case Op::kCopyIn: return work("copy-in");
    case Op::kCopyOut: return work("grad copy-out");
    case Op::kHead:
      return l.block >= 0 ? fmt::format("{} mb{} block {} mtp lm head", pass, l.mb, l.block)
                          : fmt::format("{} mb{} lm head", pass, l.mb);
    case Op::kMtpProjection: return work("mtp norms+projection");
    case Op::kOptimizer: return "optimizer step";
    case Op::kTpAllGather: return comm("tp all-gather");
    case Op::kTpReduceScatter: return comm("tp reduce-scatter");
    case Op::kTpAllReduce: return comm("tp all-reduce");
    case Op::kDispatch: return comm("dispatch");
    case Op::kCombine: return comm("combine");
    case Op::kShadowBcast: return comm("shadow broadcast");
    case Op::kShadowReduce: return comm("shadow grad reduce");
    case Op::kSpag: return remat ? comm("spAG") : fmt::format("spAG block {}", l.block);
    case Op::kSprs: return remat ? comm("spRS") : fmt::format("spRS block {}", l.block);
    case Op::kReplicaAllReduce: return fmt::format("replica grad all-reduce block {}", l.block);
    case Op::kPpSend: {
      const int to = fwd ? next_slot(l.chunk) : prev_slot(l.chunk);  // virtual stage (slot)
      return layout_.stage_chunks() == 1 ? fmt::format("pp send{} mb{} -> stage {}", fwd ? "" : " grad", l.mb, to % P)
                              : fmt::format("pp send{} mb{} -> stage {} chunk {}", fwd ? "" : " grad", l.mb, to % P, to / P);
    }
    case Op::kDpReduceScatter: return dp("reduce-scatter");
    case Op::kDpAllReduce: return dp("all-reduce");
    case Op::kDpAllGather: return dp("all-gather");
    case Op::kMigration: return "expert migration";
    case Op::kCalibration: return fmt::format("calibration spAG block {}", l.block);
  }
  return "?";
}

void LayoutIterationGraph::emit_timeline(const engine::Simulation& sim, std::span<const LayerPlan> plans,
                                         TimelineSink& sink) const {
  const auto& L = layout_;
  const int n = ctx_.topo.num_gpus(), P = L.pp;
  std::vector<char> shown(n, n <= kAllGpus);
  for (int s = 0; s < P; ++s) shown[L.stage_gpus(s).front()] = 1;
  std::vector<int> binding(g_.num_tasks(), -1);
  for (size_t i = 0; i < bindings_.size(); ++i) binding[bindings_[i].task] = static_cast<int>(i);
  // Bytes GPU x sends in communication task t, as run() bound it.
  auto bytes = [&](engine::TaskId t, int x) {
    const Binding& b = bindings_[binding[t]];
    if (b.what == Bind::kFixed) return sent(fixed_[b.index].flows, x);
    if (b.what == Bind::kDispatch || b.what == Bind::kCombine) {  // the combine runs the matrix transposed
      const TakenVariant& v = taken_[b.index][plans[b.index].micro.empty() ? 0 : b.mb];
      if (v.sent.empty()) throw std::logic_error("timeline asked of a MoE layer taken without its bytes");
      return b.what == Bind::kDispatch ? v.sent[x] : v.received[x];
    }
    return sent(*bound_[binding[t]], x);  // sparse collectives and migrations, as run() bound them
  };
  for (engine::TaskId t = 0; t < g_.num_tasks(); ++t) {
    const uint32_t tag = g_.tag(t);
    const Label& l = labels_[tag];
    TimelineEvent ev;
    ev.name = task_name(l);
    ev.category = component_name(comp_[tag]);
    ev.start = sim.start_time(t);
    ev.end = sim.end_time(t);
    const bool per_mb = l.pass != Pass::kNone && l.op != Op::kOptimizer && l.op != Op::kDpReduceScatter &&
                        l.op != Op::kDpAllReduce && l.op != Op::kDpAllGather && l.op != Op::kReplicaAllReduce &&
                        l.op != Op::kMigration &&
                        ((l.op != Op::kSpag && l.op != Op::kSprs) || sparse_.rematerialize);
    for (engine::ResourceId r : g_.resources(t)) {
      const int x = g_.device(r);
      if (!shown[x]) continue;
      const std::string& rn = g_.resource_name(r);  // "gpu<N>.<stream>"
      ev.gpu = x;
      ev.stream = rn.substr(rn.find('.') + 1);
      ev.args.clear();
      ev.args.emplace_back("stage", L.pp_rank(x));
      if (L.stage_chunks() > 1) ev.args.emplace_back("chunk", l.chunk / P);
      if (per_mb) ev.args.emplace_back("mb", l.mb);
      if (l.block >= 0) ev.args.emplace_back("block", l.block);
      if (l.op == Op::kPpSend)
        ev.args.emplace_back("to_stage", (l.pass == Pass::kForward ? next_slot(l.chunk) : prev_slot(l.chunk)) % P);
      if (l.bucket >= 0) ev.args.emplace_back("bucket", l.bucket);
      if (binding[t] >= 0) ev.args.emplace_back("bytes", bytes(t, x));
      sink.event(ev);
    }
  }
}

}  // namespace hs::strategy
