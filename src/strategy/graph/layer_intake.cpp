// LayoutIterationGraph::take_layer: a MoE layer's plan digested into what run() binds and times,
// so that a policy may route layer after layer into one dispatch matrix (layout_iteration.hpp).
#include <algorithm>
#include <cassert>
#include <fmt/format.h>
#include <stdexcept>

#include "collective/all_to_all.hpp"
#include "strategy/deepep_dispatch.hpp"
#include "strategy/graph/layout_iteration.hpp"
#include "strategy/graph/traffic_kind.hpp"

namespace hs::strategy {

namespace {
// Every non-zero entry of the n x n matrix lies in the block [lo, hi) x [lo, hi) (checked in
// builds with assertions: take_layer reads that block alone).
[[maybe_unused]] bool block_holds_all(const std::vector<double>& m, int n, int lo, int hi) {
  for (int x = 0; x < n; ++x)
    for (int y = 0; y < n; ++y)
      if (m[static_cast<size_t>(x) * n + y] != 0 && (x < lo || x >= hi || y < lo || y >= hi)) return false;
  return true;
}
}  // namespace

void LayoutIterationGraph::open_iteration() {
  if (open_) return;
  open_ = true;
  // One network per iteration, as its coflows and transfers are this iteration's.
  flow_.reset();
  coflow_.reset();
  if (ctx_.flow_network) flow_ = std::make_unique<network::FlowNetwork>(ctx_.topo, ctx_.flow_precision);
  else coflow_ = std::make_unique<network::CoflowNetwork>(ctx_.topo);
  taken_.resize(ctx_.model.moe_layers());
  for (auto& t : taken_) t.clear();
  worst_a2a_ = -1;
  bottleneck_link_ = -1;
}

collective::AnalyticNetwork::PairTimes LayoutIterationGraph::define_a2a(const std::vector<double>& matrix,
                                                                        const LayerPlan& p, std::pair<int, int> block,
                                                                        A2aPair& out) {
  collective::AnalyticNetwork::PairTimes times;
  if (layout_.dispatcher == workload::Dispatcher::kDeepEp) {
    // DeepEP's dispatch: coflows from the distinct-token estimate of the assignment bytes
    // (strategy/deepep_dispatch.hpp), on either tier.
    const int n = ctx_.topo.num_gpus();
    if (!deepep_) deepep_ = std::make_unique<DeepEpMatrix>(ctx_.topo);
    std::vector<int> experts_on(n, 0);
    for (int x = 0; x < n && x < static_cast<int>(p.expert_tokens.size()); ++x)
      experts_on[x] = static_cast<int>(p.expert_tokens[x].size());
    const auto& m = ctx_.model;
    estimate_deepep(matrix, experts_on, m.top_k,
                    deepep_node_limit(m.route_groups, m.max_nodes, layout_.ep, ctx_.topo.gpus_in_node(0)), *deepep_,
                    block);
    double extra = 0;
    collective::Coflow fwd = deepep_->flows(false, extra), tr = deepep_->flows(true, extra);
    collective::CoflowLoads loads, loads_tr;
    times.fwd = net_.loads(fwd, extra, loads);
    times.link_fwd = net_.last_bottleneck();
    times.tr = net_.loads(tr, extra, loads_tr);
    times.link_tr = net_.last_bottleneck();
    out.traffic = traffic_of(ctx_.topo, fwd);
    if (coflow_) {
      out.dispatch_id = coflow_->define(std::move(loads));
      out.combine_id = coflow_->define(std::move(loads_tr));
    } else {
      out.flows[0] = std::move(fwd), out.flows[1] = std::move(tr);
      out.extra[0] = out.extra[1] = extra;
    }
    return times;
  }
  if (coflow_) {  // NCCL's all-to-all-v
    // The same matrix as a layer met before: its loads (a2a_memo_).
    const bool memo = memo_on_ && ctx_.topo.num_gpus() <= kA2aMemoGpus;
    if (memo) {
      a2a_key_.clear();
      a2a_key_.add(std::span<const double>(matrix));
      if (const A2aLoads* h = a2a_memo_.find(a2a_key_)) {
        out.traffic = h->traffic;
        out.dispatch_id = coflow_->define(h->fwd);
        out.combine_id = coflow_->define(h->tr);
        return h->times;
      }
    }
    out.traffic = matrix_traffic(ctx_.topo, matrix);
    collective::CoflowLoads loads, loads_tr;
    times = net_.alltoallv_loads_both(matrix, loads, loads_tr, block);
    if (memo) {
      const size_t held = (loads.links.capacity() + loads_tr.links.capacity()) * sizeof(network::LinkLoad);
      a2a_memo_.insert(a2a_key_, A2aLoads{times, loads, loads_tr, out.traffic}, held);
    }
    out.dispatch_id = coflow_->define(std::move(loads));
    out.combine_id = coflow_->define(std::move(loads_tr));
  } else {
    out.traffic = matrix_traffic(ctx_.topo, matrix);
    times.fwd = net_.alltoallv_time(matrix, false, block);
    times.link_fwd = net_.last_bottleneck();
    times.tr = net_.alltoallv_time(matrix, true, block);
    times.link_tr = net_.last_bottleneck();
    out.flows[0] = collective::alltoallv_flows(ctx_.topo, matrix, false, out.extra[0]);
    out.flows[1] = collective::alltoallv_flows(ctx_.topo, matrix, true, out.extra[1]);
  }
  return times;
}

void LayoutIterationGraph::expert_seconds(std::span<const double> tokens, double& fwd, double& bwd) {
  if (!memo_on_) {
    fwd = ctx_.compute.expert_forward(tokens).value(), bwd = ctx_.compute.expert_backward(tokens).value();
    return;
  }
  expert_key_.clear();
  expert_key_.add(tokens);
  if (const auto* h = expert_memo_.find(expert_key_)) {
    fwd = h->first, bwd = h->second;
    return;
  }
  fwd = ctx_.compute.expert_forward(tokens).value(), bwd = ctx_.compute.expert_backward(tokens).value();
  expert_memo_.insert(expert_key_, {fwd, bwd});
}

void LayoutIterationGraph::take_layer(int l, const LayerPlan& plan, bool for_timeline) {
  open_iteration();
  const auto& m = ctx_.model;
  const int n = ctx_.topo.num_gpus(), M = m.grad_accum, S = layout_.stage_size();
  const size_t mbs = plan.micro.size();
  if (mbs != 0 && mbs != static_cast<size_t>(M))
    throw std::logic_error(fmt::format("layer plan with {} micro-batches for grad_accum {}", mbs, M));
  if (!taken_[l].empty()) throw std::logic_error(fmt::format("MoE layer {} taken twice in one iteration", l));
  // Variants: one per micro-batch when the plan has them (a trace with a micro-batch axis: each
  // micro-batch routes its own counts, not divided), else one that every micro-batch runs (the
  // iteration's counts / grad_accum).
  const int V = mbs == 0 ? 1 : M;
  const double div = mbs == 0 ? static_cast<double>(M) : 1.0;
  const int s = layout_.stage_of_block(m.moe_layer_ids[l], m.layers, m.mtp_layers);
  const bool dual = layout_.schedule == workload::Schedule::kDualPipe;
  std::vector<double> scratch;
  // The stage's GPUs are [lo, hi): every non-zero entry of a plan's dispatch matrix lies in that
  // block (a layer's tokens never leave its stage), and DualPipe's mirrored matrix in the block of
  // the mirror stage [mlo, mhi) (mirror_rank keeps the order).
  const int lo = s * S, hi = lo + S;
  const int mlo = layout_.mirror_rank(lo), mhi = mlo + S;
  const size_t nn = static_cast<size_t>(n) * n;
  if (div != 1.0 && scaled_bytes_.size() != nn) scaled_bytes_.assign(nn, 0.0);
  if (dual && mirror_bytes_.size() != nn) mirror_bytes_.assign(nn, 0.0);
  const auto clear_block = [n](std::vector<double>& v, int b, int e) {
    for (int x = b; x < e; ++x) std::fill_n(v.begin() + static_cast<ptrdiff_t>(x) * n + b, e - b, 0.0);
  };
  taken_[l].resize(V);
  for (int k = 0; k < V; ++k) {
    const LayerPlan& p = mbs == 0 ? plan : plan.micro[k];
    TakenVariant& t = taken_[l][k];
    t.ef.assign(n, 0.0);
    t.eb.assign(n, 0.0);
    t.sf.assign(sparse_.shadow ? n : 0, 0.0);
    t.sb.assign(sparse_.shadow ? n : 0, 0.0);
    t.ef_mean = t.eb_mean = 0;
    for (int x : layout_.stage_gpus(s)) {
      if (!p.expert_fwd_seconds.empty()) {  // the bound's per-micro-batch floor, not the cost model
        t.ef[x] = p.expert_fwd_seconds[x];
        t.eb[x] = p.expert_bwd_seconds[x];
      } else {
        scratch.assign(p.expert_tokens[x].begin(), p.expert_tokens[x].end());
        for (double& v : scratch) v /= div;
        expert_seconds(scratch, t.ef[x], t.eb[x]);
      }
      t.ef_mean += t.ef[x] / S;
      t.eb_mean += t.eb[x] / S;
      // FasterMoE: the GPU's own tokens of the shadowed experts, their own grouped GEMM (none without).
      if (!sparse_.shadow || p.shadow_tokens.empty()) continue;
      scratch.assign(p.shadow_tokens[x].begin(), p.shadow_tokens[x].end());
      for (double& v : scratch) v /= div;
      if (std::any_of(scratch.begin(), scratch.end(), [](double v) { return v > 0; }))
        expert_seconds(scratch, t.sf[x], t.sb[x]);
    }
    // DualPipe: the mirror stage's GPUs hold the same experts in the same places and run the
    // micro-batches fed from stage P - 1 (the graph's tasks there read these entries).
    if (dual)
      for (int x : layout_.stage_gpus(s)) {
        const int y = layout_.mirror_rank(x);
        t.ef[y] = t.ef[x], t.eb[y] = t.eb[x];
        if (!t.sf.empty()) t.sf[y] = t.sf[x], t.sb[y] = t.sb[x];  // FasterMoE's shadows there too
      }
    // The dispatch's bytes for one micro-batch (the plan's own, or / grad_accum).
    const std::vector<double>* bytes = &p.dispatch_bytes;
    assert(block_holds_all(p.dispatch_bytes, n, lo, hi));
    if (div != 1.0) {  // the block's entries; the rest of scaled_bytes_ stays 0 (= 0 / div)
      for (int x = lo; x < hi; ++x)
        for (int y = lo; y < hi; ++y)
          scaled_bytes_[static_cast<size_t>(x) * n + y] = p.dispatch_bytes[static_cast<size_t>(x) * n + y] / div;
      bytes = &scaled_bytes_;
    }
    // The all-to-alls (the combine runs the matrix transposed), DualPipe's mirrored pair first; the
    // slowest one alone names the bottleneck link.
    if (dual) {  // the same matrix between the mirrors of its GPUs
      for (int x = lo; x < hi; ++x)
        for (int y = lo; y < hi; ++y)
          mirror_bytes_[static_cast<size_t>(layout_.mirror_rank(x)) * n + layout_.mirror_rank(y)] = (*bytes)[static_cast<size_t>(x) * n + y];
      define_a2a(mirror_bytes_, p, {mlo, mhi}, t.mirror);
      clear_block(mirror_bytes_, mlo, mhi);
    }
    const auto times = define_a2a(*bytes, p, {lo, hi}, t.a2a);
    if (div != 1.0) clear_block(scaled_bytes_, lo, hi);
    const double t_fwd = times.fwd, t_tr = times.tr;
    const topology::LinkId link_fwd = times.link_fwd, link_tr = times.link_tr;
    if (std::max(t_fwd, t_tr) > worst_a2a_) {
      worst_a2a_ = std::max(t_fwd, t_tr);
      bottleneck_link_ = t_fwd >= t_tr ? link_fwd : link_tr;
    }
    // Every GPU's dispatch bytes sent and received (the combine's are the other way round), summed
    // in the order of the matrix's rows, then / grad_accum as the variant's bytes are.
    t.sent.clear();
    t.received.clear();
    if (!for_timeline) continue;
    t.sent.assign(n, 0.0);
    t.received.assign(n, 0.0);
    const std::vector<double>& b = p.dispatch_bytes;
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        t.sent[y] += b[static_cast<size_t>(y) * n + x];
        t.received[x] += b[static_cast<size_t>(y) * n + x];
      }
    if (div != 1.0)
      for (int x = 0; x < n; ++x) t.sent[x] /= div, t.received[x] /= div;
    if (dual)  // the mirrored all-to-alls move the same bytes between the mirrors
      for (int x = lo; x < hi; ++x) t.sent[layout_.mirror_rank(x)] = t.sent[x], t.received[layout_.mirror_rank(x)] = t.received[x];
  }
}

}  // namespace hs::strategy
