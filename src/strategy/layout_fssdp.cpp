// FSSDP under a parallel layout: each EP group of each pipeline stage is an FSSDP group.
//
// Per MoE layer l (held by stage s) and EP group k of s (ep consecutive GPUs), every iteration:
//   owners: the group's EP sharding, expert e on the group's GPU e / (E / ep) (what EP holds);
//   prediction: the sliding-window mean of the group's own loads (its GPUs' trace rows, / tp);
//   overlap degree t: the knob, or the largest t whose spAG, planned over the group and timed on
//     the network (plan_group_overlap_degree), fits in the attention forward before the layer
//     (attention / tp);
//   memory cap: each GPU's copy budget (memory_budget, or its memory less what the layout puts on
//     it: cost::layout_memory at a uniform load at first, then at the last iteration's) water-filled
//     over its stage's layers under the copies' lifetimes (cost::copy_cap_level), as FSSDP does over
//     the model's; with several micro-batches every copy's gradient buffer lives from the first
//     backward to the spRS after the last, so all of them count at once (copy_peak); a layer cut
//     below what it wanted plans t again within its slots;
//   materialize within the group (materialize on the group's ids, moved onto its GPUs by on_gpus),
//     dispatch topology-aware inside the group, spAG / spRS of the copies inside the group
//     (sparse_allgather / sparse_reduce_scatter with chain_channels) on the stage's sparse stream
//     (LayoutIterationGraph, LayoutSparse).
// Re-materialization (`rematerialize`): copies gathered for every micro-batch's forward and again
// for its backward, gradients returned after each micro-batch's expert backward
// (LayoutSparse::rematerialize); the copies' buffers then follow cost::copy_buffer_peak's
// lifetimes over the stage's layers, and the cap uses the same.
// Off under a layout: heterogeneous re-sharding and calibration (their knobs are refused, naming the
// knob).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <fmt/format.h>

#include "collective/sparse_plan.hpp"
#include "cost/layout_memory.hpp"
#include "strategy/fssdp.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/layout_iteration.hpp"
#include "strategy/layout_strategy.hpp"
#include "strategy/load_history.hpp"
#include "strategy/materialization.hpp"
#include "strategy/sharding.hpp"
#include "util/diagnostics.hpp"

namespace hs::strategy {

namespace {

class LayoutFssdp final : public Strategy {
 public:
  LayoutFssdp(const Context& ctx, const workload::ParallelLayout& layout, FssdpKnobs k)
      : ctx_(ctx), layout_(layout), k_(k), graph_(ctx, layout, LayoutSparse{k.single_queue, k.rematerialize}),
        n_(ctx.topo.num_gpus()), L_(ctx.model.moe_layers()), E_(ctx.model.experts),
        G_(layout.stage_size() / layout.ep), plans_(L_), history_(G_, LoadHistory(L_, k.window)) {
    const auto& m = ctx.model;
    for (int l = 0; l < L_; ++l) stage_.push_back(layout.stage_of_block(m.moe_layer_ids[l], m.layers));
    for (int g = 0; g < n_; ++g) node_of_.push_back(ctx.topo.node_of(g));
    owner_ = homogeneous_owners(1, E_, layout.ep)[0];  // EP's blocks of E / ep (ep divides E)
    const auto params = cost::count_params(m);
    expert_bytes_ = params.per_expert * m.precision.param_bytes;
    copy_grad_bytes_ = params.per_expert * m.precision.grad_bytes;
    channels_ = collective::chain_channels(ctx.topo);
    window_ = ctx.compute.attention_forward().value() / layout.tp;
    life_ = {k.rematerialize, !k.single_queue};
    gpu_memory_ = ctx.topo.gpu_model().memory.value();
    nccl_ = layout_nccl_bytes(ctx.topo, layout, true, false);
    // Before any iteration: every GPU computes the tokens it routes (s*b/tp x top_k per layer).
    const double routed = static_cast<double>(m.tokens_per_micro_batch()) / layout.tp * m.top_k;
    received_.assign(n_, 0.0);
    largest_.assign(n_, routed);
    for (int l = 0; l < L_; ++l)
      for (int x : layout.stage_gpus(stage_[l])) received_[x] += routed;
  }

  bool stateless() const override { return false; }

  std::vector<ResolvedSetting> resolved() const override {
    auto r = layout_resolved(layout_, graph_.stats());
    r.push_back(resolved_value("fssdp_group_gpus", layout_.ep));
    r.push_back(resolved_list("overlap_degree", t_max_));
    r.push_back(resolved_value("memory_capacity_m", cap_min_));
    r.push_back(resolved_list("copies_cut_by_memory", cut_));
    r.push_back(resolved_list("copies_per_layer", copies_));
    r.push_back(resolved_text("comm_queue", k_.single_queue ? "single" : "separate"));
    r.push_back(resolved_text("rematerialize", k_.rematerialize ? "on" : "off"));
    return r;
  }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const int ep = layout_.ep;
    const double token_bytes = m.d_model * m.precision.activation_bytes;
    // Per group and layer: the group's counts (ep x E, its GPUs' rows / tp) and their column sums.
    std::vector<std::vector<std::vector<double>>> counts(G_, std::vector<std::vector<double>>(L_));
    std::vector<std::vector<std::vector<double>>> actual(G_, std::vector<std::vector<double>>(L_));
    for (int l = 0; l < L_; ++l) {
      const auto all = loads.layer(l, n_, E_);
      for (int k = 0; k < G_; ++k) {
        auto& c = counts[k][l];
        c.assign(static_cast<size_t>(ep) * E_, 0.0);
        actual[k][l].assign(E_, 0.0);
        for (int i = 0; i < ep; ++i)
          for (int e = 0; e < E_; ++e) {
            const double v = all[static_cast<size_t>(gpu(l, k, i)) * E_ + e] / layout_.tp;
            c[static_cast<size_t>(i) * E_ + e] = v;
            actual[k][l][e] += v;
          }
      }
    }
    plan_copies();
    t_max_.assign(L_, 0);
    copies_.assign(L_, 0);
    for (int l = 0; l < L_; ++l) {
      LayerPlan& plan = plans_[l];
      plan.expert_tokens.assign(n_, {});
      plan.dispatch_bytes.assign(static_cast<size_t>(n_) * n_, 0.0);
      plan.received_tokens.assign(n_, 0.0);
      plan.copy_bytes.assign(n_, 0.0);
      plan.spag_flows.clear();
      plan.sprs_flows.clear();
      plan.spag_latency = plan.sprs_latency = 0;
      plan.micro.resize(loads.micro.size());
      for (LayerPlan& q : plan.micro) {
        q.expert_tokens.assign(n_, {});
        q.dispatch_bytes.assign(static_cast<size_t>(n_) * n_, 0.0);
        q.received_tokens.assign(n_, 0.0);
      }
      for (int k = 0; k < G_; ++k) {
        const Group& grp = group_[l][k];
        const std::vector<double> predicted = history_[k].mean(l, E_);
        const auto local = materialize(predicted, owner_, grp.node_of, grp.t, grp.slots);
        // Routes the group's counts (ep x E) under the iteration's copies into `into`.
        auto route = [&](const std::vector<double>& c, LayerPlan& into) {
          DispatchResult d;
          dispatch(c, ep, local, grp.node_of, k_.dispatch, token_bytes, d);
          for (int i = 0; i < ep; ++i) {
            const int x = grp.gpus[i];
            into.expert_tokens[x] = std::move(d.expert_tokens[i]);
            into.received_tokens[x] = d.received[i];
            for (int j = 0; j < ep; ++j)
              into.dispatch_bytes[static_cast<size_t>(x) * n_ + grp.gpus[j]] = d.bytes[static_cast<size_t>(i) * ep + j];
          }
        };
        route(counts[k][l], plan);
        // A trace with a micro-batch axis: each micro-batch routes its own counts under the same copies.
        for (size_t mb = 0; mb < loads.micro.size(); ++mb) {
          const auto all = layer_counts(loads.micro[mb], l, n_, E_);
          std::vector<double> c(static_cast<size_t>(ep) * E_);
          for (int i = 0; i < ep; ++i)
            for (int e = 0; e < E_; ++e) c[static_cast<size_t>(i) * E_ + e] = all[static_cast<size_t>(gpu(l, k, i)) * E_ + e] / layout_.tp;
          route(c, plan.micro[mb]);
        }
        const auto p = on_gpus(local, grp.gpus);
        for (const auto& r : p.replicas)
          for (int x : r) plan.copy_bytes[x] += expert_bytes_, ++copies_[l];
        t_max_[l] = std::max(t_max_[l], grp.t);
        auto ag = collective::sparse_allgather(p, expert_bytes_, node_of_, k_.broadcast, channels_);
        auto rs = collective::sparse_reduce_scatter(p, expert_bytes_, node_of_, k_.broadcast, channels_);
        plan.spag_latency = std::max(plan.spag_latency,
                                     collective::sparse_finish(ag, p, ctx_.topo, node_of_, k_.broadcast, false, channels_));
        plan.sprs_latency = std::max(plan.sprs_latency,
                                     collective::sparse_finish(rs, p, ctx_.topo, node_of_, k_.broadcast, true, channels_));
        plan.spag_flows.insert(plan.spag_flows.end(), ag.begin(), ag.end());
        plan.sprs_flows.insert(plan.sprs_flows.end(), rs.begin(), rs.end());
      }
    }
    IterationResult r = graph_.run(plans_, {}, {}, take_timeline());
    set_memory(r);
    for (int k = 0; k < G_; ++k) history_[k].push(actual[k]);
    return r;
  }

  const std::vector<LayerPlan>& plans() const { return plans_; }

 private:
  struct Group {
    std::vector<int> gpus, node_of, slots;  // node_of, slots: the group's ids
    int t = 0;
  };

  // GPU i of EP group k of the stage holding MoE layer l.
  int gpu(int l, int k, int i) const { return stage_[l] * layout_.stage_size() + k * layout_.ep + i; }

  double copy_budget(int x) const {
    if (k_.memory_budget >= 0) return k_.memory_budget;
    const int s = layout_.pp_rank(x);
    const double M = ctx_.model.grad_accum;
    return gpu_memory_ - cost::layout_memory(ctx_.model, layout_, s, received_[x] / M, largest_[x] / M).total() - nccl_[x];
  }

  int overlap_degree(const std::vector<double>& predicted, const Group& grp, std::span<const int> slots) {
    if (k_.overlap_degree >= 0) return k_.overlap_degree;
    return plan_group_overlap_degree(predicted, owner_, grp.gpus, slots, expert_bytes_, k_.broadcast, graph_.network(),
                                     window_);
  }

  // FSSDP's plan_copies inside each group: the overlap degree each layer wants with no memory
  // limit, the copies that plan puts on each GPU, the cap level per GPU over its stage's layers
  // (cost::copy_cap_level), the slots min(wanted, level), and t planned again for a layer cut.
  void plan_copies() {
    const int ep = layout_.ep;
    group_.assign(L_, std::vector<Group>(G_));
    std::vector<double> budget(n_);
    bool room = false;
    for (int x = 0; x < n_; ++x) {
      budget[x] = copy_budget(x);
      room = room || budget[x] >= expert_bytes_ + copy_grad_bytes_;
    }
    std::vector<std::vector<double>> wanted(n_, std::vector<double>(L_, 0.0));  // [gpu][layer]
    for (int l = 0; l < L_; ++l)
      for (int k = 0; k < G_; ++k) {
        Group& grp = group_[l][k];
        for (int i = 0; i < ep; ++i) grp.gpus.push_back(gpu(l, k, i));
        for (int x : grp.gpus) grp.node_of.push_back(node_of_[x]);
        const auto predicted = history_[k].mean(l, E_);
        grp.t = overlap_degree(predicted, grp, std::vector<int>(ep, room ? E_ : 0));
        const auto p = materialize(predicted, owner_, grp.node_of, grp.t, E_);
        for (const auto& r : p.replicas)
          for (int i : r) wanted[grp.gpus[i]][l] += 1;
      }
    std::vector<int> level(n_, E_);
    for (int x = 0; x < n_; ++x) {
      std::vector<double> demand;  // the copies of x's stage's layers, in order
      for (int l = 0; l < L_; ++l)
        if (stage_[l] == layout_.pp_rank(x)) demand.push_back(wanted[x][l]);
      level[x] = ctx_.model.grad_accum > 1 && !k_.rematerialize
                     ? cost::copy_cap_level(demand, budget[x], expert_bytes_ + copy_grad_bytes_, 0, {}, E_)
                     : cost::copy_cap_level(demand, budget[x], expert_bytes_, copy_grad_bytes_, life_, E_);
    }
    cap_min_ = *std::min_element(level.begin(), level.end());
    cut_.assign(L_, 0);
    for (int l = 0; l < L_; ++l)
      for (int k = 0; k < G_; ++k) {
        Group& grp = group_[l][k];
        int cut = 0;
        for (int x : grp.gpus) {
          grp.slots.push_back(std::min(static_cast<int>(wanted[x][l]), level[x]));
          cut += static_cast<int>(wanted[x][l]) - grp.slots.back();
        }
        cut_[l] += cut;
        if (cut > 0 && std::any_of(grp.slots.begin(), grp.slots.end(), [](int s) { return s > 0; }))
          grp.t = overlap_degree(history_[k].mean(l, E_), grp, grp.slots);
      }
  }

  // The copies' buffers at their peak. One micro-batch: cost::copy_buffer_peak's lifetimes (copies
  // from their forward to their backward, one layer's gradient buffers at a time). Several: spRS
  // runs after the last micro-batch's backward, so every copy's gradient buffer accumulates from
  // the first backward on and, at the stage's last backward, every layer's copies and gradients are
  // resident (the cap above uses the same: params + gradients per copy, all layers at once).
  // With re-materialization every micro-batch gathers and returns its copies, so the lifetimes are
  // copy_buffer_peak's whatever the micro-batches: the layer in use and the one being gathered, one
  // layer's gradient buffers (and the one above's while its spRS drains) at a time.
  cost::CopyPeak copy_peak(std::span<const double> copies) const {
    if (ctx_.model.grad_accum == 1 || k_.rematerialize) return cost::copy_buffer_peak(copies, expert_bytes_, copy_grad_bytes_, life_);
    const double all = std::accumulate(copies.begin(), copies.end(), 0.0);
    return {all * expert_bytes_, all * copy_grad_bytes_};
  }

  // The worst GPU: the layout's memory (routed tokens per micro-batch over its stage's layers) plus
  // its copies' buffers at their peak (cost::copy_buffer_peak over the stage's layers, kept from
  // the first forward to the last backward). Keeps the routed tokens for the next cap.
  void set_memory(IterationResult& r) {
    const double M = ctx_.model.grad_accum;
    for (int s = 0; s < layout_.pp; ++s)
      for (int x : layout_.stage_gpus(s)) {
        double received = 0, largest = 0;
        std::vector<double> copies;
        for (int l = 0; l < L_; ++l)
          if (stage_[l] == s) {
            received += plans_[l].received_tokens[x];
            largest = std::max(largest, plans_[l].received_tokens[x]);
            copies.push_back(plans_[l].copy_bytes[x] / expert_bytes_);
          }
        auto mem = cost::layout_memory(ctx_.model, layout_, s, received / M, largest / M);
        mem.nccl = nccl_[x];
        const cost::CopyPeak peak = copy_peak(copies);
        mem.copy_params = peak.params;
        mem.copy_grads = peak.grads;
        if (r.memory_gpu < 0 || mem.total() > r.memory.total()) r.memory = mem, r.memory_gpu = x;
        received_[x] = received;
        largest_[x] = largest;
      }
  }

  const Context& ctx_;
  workload::ParallelLayout layout_;
  FssdpKnobs k_;
  LayoutIterationGraph graph_;
  int n_, L_, E_, G_;  // G_: EP groups per stage
  std::vector<LayerPlan> plans_;
  std::vector<LoadHistory> history_;  // [group of a stage]: the loads of its GPUs, per layer
  std::vector<int> stage_;            // [MoE layer] -> pipeline stage
  std::vector<double> nccl_;          // [gpu] NCCL buffers: the layout's communicators
  std::vector<int> node_of_, owner_;  // owner_: [expert] -> GPU of its group (group ids)
  double expert_bytes_ = 0, copy_grad_bytes_ = 0, window_ = 0, gpu_memory_ = 0;
  int channels_ = 1;
  cost::CopyLifetime life_;
  std::vector<double> received_, largest_;  // [gpu] routed tokens per iteration: stage total, largest layer
  std::vector<std::vector<Group>> group_;   // [layer][group] this iteration's plan inputs
  std::vector<int> t_max_, copies_, cut_;
  int cap_min_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_layout_fssdp(const StrategySpec& spec, const Context& ctx,
                                            const workload::ParallelLayout& layout) {
  const FssdpKnobs k = parse_fssdp_knobs(spec.knobs);
  auto refuse = [&](const char* knob, const char* why) {
    throw InputError({"--strategy", 0, 0}, spec.full,
                     fmt::format("fssdp:{} is not built under --layout yet ({})", knob, why));
  };
  if (k.calibrate) refuse("calibrate", "no calibration stage inside a stage's groups");
  if (spec.knobs.count("heterogeneous") && k.heterogeneous)
    refuse("heterogeneous", "owners are the EP group's sharding; heterogeneous=false is the default here");
  if (spec.knobs.count("reshard_every")) refuse("reshard_every", "no re-sharding under a layout");
  return std::make_unique<LayoutFssdp>(ctx, layout, k);
}

std::unique_ptr<Strategy> make_layout_fsdp(const StrategySpec& spec, const Context& ctx,
                                           const workload::ParallelLayout& layout) {
  // FSDP of experts inside each EP group: FSSDP with every expert materialized on every GPU of the
  // group and no memory limit (make_fsdp's knobs), so tokens stay on their GPU. FSDP's
  // reshard-after-forward (`rematerialize`: the experts gathered again for every micro-batch's
  // forward and backward, gradients reduce-scattered after each) is off by default here, where
  // without a layout it is on: a layout's runs keep the gathered experts from the first forward to
  // the last backward unless asked.
  const bool remat = knob_bool(spec.knobs, "fsdp", "rematerialize", false);
  const FssdpKnobs k = parse_fssdp_knobs({{"overlap_degree", std::to_string(ctx.model.experts)},
                                          {"memory_budget", "1000000TiB"},
                                          {"heterogeneous", "false"},
                                          {"comm_queue", "separate"},
                                          {"rematerialize", remat ? "true" : "false"}});
  return std::make_unique<LayoutFssdp>(ctx, layout, k);
}

const std::vector<LayerPlan>* layout_fssdp_plans(const Strategy& s) {
  const auto* f = dynamic_cast<const LayoutFssdp*>(&s);
  return f ? &f->plans() : nullptr;
}

}  // namespace hs::strategy
