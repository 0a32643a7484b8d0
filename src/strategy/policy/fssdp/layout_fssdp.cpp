// FSSDP under a parallel layout: each EP group of each pipeline stage is an FSSDP group. A run
// without --layout is the layout tp=1, pp=1, ep=N (one group: the Hecate paper's system).
//
// Per MoE layer l (held by stage s) and EP group k of s (ep consecutive GPUs), every iteration:
//   owners: the group's sharding of the layer's experts (group ids), EP's blocks of E / ep at
//     first; with heterogeneous sharding (`heterogeneous`) re-planned over the stage's layers
//     (strategy/policy/fssdp/sharding.hpp) once `window` iterations are known and then every `reshard_every`,
//     each layer kept with its owners unless the predicted time it saves over reshard_every
//     iterations beats moving its experts with their optimizer states (gate_reshard); moved
//     experts migrate on the critical path before the iteration (one coflow for every group);
//   prediction: the sliding-window mean of the group's own loads (its GPUs' trace rows, / tp);
//   overlap degree t (`overlap_degree`, overlap_degree.hpp), per layer and group: hidden = the
//     largest t whose spAG, planned over the group and timed as the graph runs it
//     (hidden_overlap_degree), fits in the attention forward before the layer (attention / tp);
//     formula = the paper's floor(T_attn x bw / expert_bytes); best = the t of least predicted
//     layer time (predicted_time: expert compute, all-to-alls, exposed spAG / spRS, copies,
//     interference) within the layer's slots; an integer fixes it. The formula's t is reported
//     beside the one chosen;
//   memory cap: each GPU's copy budget (memory_budget, or its memory less what the layout puts on
//     it: cost::layout_memory at a uniform load at first, then at the last iteration's, and its
//     NCCL buffers) water-filled over its stage's layers under the copies' lifetimes
//     (cost::copy_cap_level), as FSSDP does over the model's; with several micro-batches every
//     copy's gradient buffer lives from the first backward to the spRS after the last, so all of
//     them count at once (copy_peak); a layer cut below what it wanted plans t again within its slots;
//   materialize within the group (materialize on the group's ids, moved onto its GPUs by on_gpus),
//     dispatch topology-aware inside the group, spAG / spRS of the copies inside the group
//     (sparse_allgather / sparse_reduce_scatter with chain_channels) on the stage's sparse stream
//     (LayoutIterationGraph, LayoutSparse);
//   calibration stage (`calibrate`): after the gate, each group re-plans with the actual loads into
//     the free slots its memory cap leaves, and keeps the extended plan only when its predicted
//     layer time (slowest GPU's expert compute + all-to-alls) plus what the forward spAG's remainder
//     and the extra spAG leave exposed beyond the dispatch (all of it with one queue) beats the
//     current plan's; the extra copies travel in a calibration spAG after the router of the first
//     micro-batch (LayerPlan::calibration_flows) that the expert GEMMs wait for, not the dispatch.
// Re-materialization (`rematerialize`): copies gathered for every micro-batch's forward and again
// for its backward, gradients returned after each micro-batch's expert backward
// (LayoutSparse::rematerialize); the copies' buffers then follow cost::copy_buffer_peak's
// lifetimes over the stage's layers (under ZB-H1 / DualPipe with the gradient buffers of every
// layer whose W op has run: CopyLifetime::grads_pile_up), and the cap uses the same. Without it
// the same plan's memory under re-materialization's lifetimes is reported too
// (IterationResult::memory_rematerialized).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <fmt/format.h>

#include "collective/sparse_plan.hpp"
#include "collective/sparse_plan_cache.hpp"
#include "collective/sparse_time_tracker.hpp"
#include "cost/allocator_slack.hpp"
#include "cost/layout_memory.hpp"
#include "strategy/capacity.hpp"
#include "strategy/dispatch_memo.hpp"
#include "strategy/policy/fssdp/fssdp.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/graph/layout_iteration.hpp"
#include "strategy/layout_strategy.hpp"
#include "strategy/load_history.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "strategy/policy/fssdp/overlap_degree.hpp"
#include "strategy/policy/fssdp/sharding.hpp"
#include "util/diagnostics.hpp"
#include "util/largest_fitting.hpp"

namespace hs::strategy {

namespace {

// A sparse collective's transfers labelled with their chunk, for the plan snapshot: the collective
// built one chunk at a time (the simulator's coflow lists the chunks in this order). Chunk ids are
// `base` + expert.
void chunk_transfers(const collective::SparsePlacement& p, double bytes, const std::vector<int>& node_of,
                     collective::BroadcastAlgo algo, bool reduce, int base, std::vector<ChunkTransfer>& out) {
  collective::SparsePlacement one{{0}, {{}}};
  for (std::size_t e = 0; e < p.owner.size(); ++e) {
    if (p.replicas[e].empty()) continue;
    one.owner[0] = p.owner[e];
    one.replicas[0] = p.replicas[e];
    const auto c = reduce ? collective::sparse_reduce_scatter(one, bytes, node_of, algo)
                          : collective::sparse_allgather(one, bytes, node_of, algo);
    for (const auto& t : c) out.push_back({base + static_cast<int>(e), t.src, t.dst, t.bytes});
  }
}

// The copies of `q` that `p` does not hold (same owners).
collective::SparsePlacement added_copies(const collective::SparsePlacement& q, const collective::SparsePlacement& p) {
  collective::SparsePlacement extra{q.owner, std::vector<std::vector<int>>(q.owner.size())};
  for (size_t e = 0; e < q.owner.size(); ++e)
    std::set_difference(q.replicas[e].begin(), q.replicas[e].end(), p.replicas[e].begin(), p.replicas[e].end(),
                        std::back_inserter(extra.replicas[e]));
  return extra;
}

class LayoutFssdp final : public Strategy {
 public:
  LayoutFssdp(const Context& ctx, const workload::ParallelLayout& layout, FssdpKnobs k)
      : ctx_(ctx), layout_(layout), k_(k), graph_(ctx, layout, LayoutSparse{k.single_queue, k.rematerialize}),
        n_(ctx.topo.num_gpus()), L_(ctx.model.moe_layers()), E_(ctx.model.experts),
        G_(layout.stage_size() / layout.ep), plans_(L_), history_(G_, LoadHistory(L_, k.window)),
        wanted_t_(L_, std::vector<int>(G_, -1)) {
    const auto& m = ctx.model;
    // Memos where iterations repeat (a stateful run on a cycling trace); a record-only run is cached
    // by record by the runner, so its inputs never come back here.
    graph_.set_memo(!k.record_only);
    for (int l = 0; l < L_; ++l) stage_.push_back(layout.stage_of_block(m.moe_layer_ids[l], m.layers, m.mtp_layers));
    for (int g = 0; g < n_; ++g) node_of_.push_back(ctx.topo.node_of(g));
    // EP's blocks of E / ep (ep divides E) in every group and layer, until a re-shard.
    owners_.assign(G_, Owners(L_, homogeneous_owners(1, E_, layout.ep)[0]));
    const auto params = cost::count_params(m);
    expert_bytes_ = params.per_expert * m.precision.param_bytes;
    copy_grad_bytes_ = params.per_expert * m.precision.grad_bytes;
    state_bytes_ = params.per_expert * (m.precision.param_bytes + m.precision.master_bytes + m.precision.optimizer_bytes());
    channels_ = collective::chain_channels(ctx.topo);
    sparse_plans_.emplace(ctx.topo, node_of_, k_.broadcast, channels_);
    spag_times_.emplace(ctx.topo, node_of_, k_.broadcast, channels_, false);
    sprs_times_.emplace(ctx.topo, node_of_, k_.broadcast, channels_, true);
    // Each MoE layer's attention (a sliding window makes blocks differ); the paper's formula for
    // the resolved settings from the first MoE layer's, as one figure.
    for (int l = 0; l < L_; ++l) {
      window_.push_back(ctx.compute.attention_forward(m.moe_layer_ids[l]).value() / layout.tp);
      attention_backward_.push_back(ctx.compute.attention_backward(m.moe_layer_ids[l]).value() / layout.tp);
      formula_t_.push_back(formula_overlap_degree(window_[l], paper_bandwidth(ctx.topo), expert_bytes_, E_));
    }
    router_time_ = ctx.compute.router_and_permute(static_cast<double>(m.tokens_per_micro_batch()) / layout.tp).value();
    life_ = {k.rematerialize, !k.single_queue, layout.splits_backward()};
    gpu_memory_ = ctx.topo.gpu_model().memory.value();
    nccl_ = layout_nccl_bytes(ctx.topo, layout, true, false);
    for (int s = 0; s < layout.pp; ++s) stage_memory_.emplace_back(m, layout, s);
    // Before any iteration: every GPU computes the tokens it routes (s*b/tp x top_k per layer and
    // micro-batch), kept as an iteration's worth as set_memory keeps them (copy_budget divides by
    // grad_accum).
    const double routed = static_cast<double>(m.tokens_per_micro_batch()) / layout.tp * m.top_k * m.grad_accum;
    received_.assign(n_, 0.0);
    largest_.assign(n_, routed);
    for (int x = 0; x < n_; ++x) received_[x] = routed * static_cast<double>(held_layers(layout, stage_, x).size());
  }

  bool stateless() const override { return k_.record_only; }

  // Built on request from what simulate() kept, so simulating pays nothing for it.
  const PlanSnapshot* last_plan() const override {
    if (planned_iteration_ < 0) return nullptr;
    if (snapshot_.iteration != planned_iteration_) build_snapshot();
    return &snapshot_;
  }

  std::vector<ResolvedSetting> resolved() const override {
    auto r = layout_resolved(layout_, graph_.stats());
    r.push_back(resolved_value("fssdp_group_gpus", layout_.ep));
    r.push_back(resolved_text("overlap_degree_mode", overlap_mode_name(k_.overlap_mode)));
    r.push_back(resolved_list("overlap_degree", t_max_));
    r.push_back(resolved_value("overlap_degree_formula", formula_t_.front()));
    r.push_back(resolved_value("memory_capacity_m", cap_min_));
    r.push_back(resolved_list("copies_cut_by_memory", cut_));
    r.push_back(resolved_list("copies_per_layer", copies_));
    r.push_back(resolved_value("reshards", reshards_));
    r.push_back(resolved_value("experts_migrated", moved_));
    r.push_back(resolved_value("reshards_skipped", reshards_skipped_));
    r.push_back(resolved_value("reshard_layers_kept", layers_kept_));
    r.push_back(resolved_value("reshard_predicted_gain_ms", std::round(predicted_gain_ * 1e6) / 1e3));
    if (k_.calibrate) r.push_back(resolved_value("calibrations_accepted", calibrations_accepted_));
    r.push_back(resolved_text("comm_queue", k_.single_queue ? "single" : "separate"));
    r.push_back(resolved_text("rematerialize", k_.rematerialize ? "on" : "off"));
    return r;
  }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const int ep = layout_.ep;
    const double token_bytes = m.d_model * m.precision.activation_bytes;
    const TokenCapacity cap = token_capacity(m, layout_.tp);  // per replica group (strategy/capacity.hpp)
    // Per group and layer: the group's counts (ep x E, its GPUs' rows / tp) and their column sums.
    auto group_counts = [&](std::span<const double> all_layers, int l, int k, std::vector<double>& c,
                            std::vector<double>* sums) {
      const auto all = layer_counts(all_layers, l, n_, E_);
      c.assign(static_cast<size_t>(ep) * E_, 0.0);
      if (sums) sums->assign(E_, 0.0);
      for (int i = 0; i < ep; ++i)
        for (int e = 0; e < E_; ++e) {
          const double v = all[static_cast<size_t>(gpu(l, k, i)) * E_ + e] / layout_.tp;
          c[static_cast<size_t>(i) * E_ + e] = v;
          if (sums) (*sums)[e] += v;
        }
    };
    std::vector<std::vector<std::vector<double>>> counts(G_, std::vector<std::vector<double>>(L_));
    std::vector<std::vector<std::vector<double>>> actual(G_, std::vector<std::vector<double>>(L_));
    const std::span<const double> total = loads.total();
    for (int l = 0; l < L_; ++l)
      for (int k = 0; k < G_; ++k) group_counts(total, l, k, counts[k][l], &actual[k][l]);
    // What the calibration stage sees after the gate, where it runs: the iteration's loads, or with
    // micro-batches the first micro-batch's (the placement it settles then serves every
    // micro-batch), scaled by grad_accum to an iteration's worth so its estimates compare as without
    // micro-batches.
    std::vector<double> gate_scaled;
    if (k_.calibrate && !loads.micro.empty()) {
      gate_scaled.assign(loads.micro[0].begin(), loads.micro[0].end());
      for (double& c : gate_scaled) c *= static_cast<double>(loads.micro.size());
    }
    best_searches_.clear();
    plan_copies();
    collective::Coflow migrations;
    if (k_.heterogeneous && iteration_ >= k_.window && (iteration_ - k_.window) % k_.reshard_every == 0)
      reshard(migrations);
    t_max_.assign(L_, 0);
    copies_.assign(L_, 0);
    placed_.assign(L_, std::vector<collective::SparsePlacement>(G_));
    calibration_extra_.assign(L_, std::vector<collective::SparsePlacement>(G_));
    std::vector<double> gate_counts, gate_actual, c;
    for (int l = 0; l < L_; ++l) {
      LayerPlan& plan = plans_[l];
      plan.expert_tokens.assign(n_, {});
      plan.dispatch_bytes.assign(static_cast<size_t>(n_) * n_, 0.0);
      plan.received_tokens.assign(n_, 0.0);
      plan.routed_tokens = plan.dropped_tokens = 0;
      plan.copy_bytes.assign(n_, 0.0);
      plan.spag_flows.clear();
      plan.sprs_flows.clear();
      plan.calibration_flows.clear();
      plan.spag_latency = plan.sprs_latency = plan.calibration_latency = 0;
      plan.micro.resize(loads.micro.size());
      for (LayerPlan& q : plan.micro) {
        q.expert_tokens.assign(n_, {});
        q.dispatch_bytes.assign(static_cast<size_t>(n_) * n_, 0.0);
        q.received_tokens.assign(n_, 0.0);
        q.routed_tokens = q.dropped_tokens = 0;
      }
      for (int k = 0; k < G_; ++k) {
        const Group& grp = group_[l][k];
        const std::vector<double> predicted = history_[k].mean(l, E_);
        collective::SparsePlacement local = materialize(predicted, owners_[k][l], grp.node_of, grp.t, grp.slots);
        // Routes group counts (ep x E) under the iteration's copies into `into`.
        auto take = [&](DispatchResult&& d, LayerPlan& into) {
          for (int i = 0; i < ep; ++i) {
            const int x = grp.gpus[i];
            into.expert_tokens[x] = std::move(d.expert_tokens[i]);
            into.received_tokens[x] = d.received[i];
            for (int j = 0; j < ep; ++j)
              into.dispatch_bytes[static_cast<size_t>(x) * n_ + grp.gpus[j]] = d.bytes[static_cast<size_t>(i) * ep + j];
          }
          into.routed_tokens += d.routed, into.dropped_tokens += d.dropped;
        };
        auto route = [&](const std::vector<double>& cnt, LayerPlan& into, double cap_of_cnt) {
          DispatchResult d;
          if (k_.record_only) dispatch(cnt, ep, local, grp.node_of, k_.dispatch, token_bytes, d, cap_of_cnt);
          else dispatch_memo_.dispatch(cnt, ep, local, grp.node_of, k_.dispatch, token_bytes, d, cap_of_cnt);
          take(std::move(d), into);
        };
        // The forward spAG moves the predicted plan; calibration copies travel in their own task.
        const auto fwd = on_gpus(local, grp.gpus);
        const auto ag_plan = sparse_plans_->plan(fwd, expert_bytes_, false);
        const collective::Coflow& ag = ag_plan->flows;
        const double ag_latency = ag_plan->latency;
        bool routed = false;
        if (k_.calibrate) {
          if (gate_scaled.empty()) gate_counts = counts[k][l], gate_actual = actual[k][l];
          else group_counts(gate_scaled, l, k, gate_counts, &gate_actual);
          DispatchResult d;
          dispatch(gate_counts, ep, local, grp.node_of, k_.dispatch, token_bytes, d, cap.iteration());
          std::vector<int> free_slots(ep, 0);
          for (int i = 0; i < ep; ++i) free_slots[i] = calibration_room(grp.gpus[i], l, local, i);
          collective::SparsePlacement q = local;
          if (extend_placement(q, gate_actual, grp.node_of, std::max(grp.t, 1), free_slots) > 0) {
            DispatchResult dq;
            dispatch(gate_counts, ep, q, grp.node_of, k_.dispatch, token_bytes, dq, cap.iteration());
            collective::SparsePlacement extra = added_copies(q, local);
            const auto extra_global = on_gpus(extra, grp.gpus);
            auto extra_flows = collective::sparse_allgather(extra_global, expert_bytes_, node_of_, k_.broadcast, channels_);
            const double extra_latency = collective::sparse_finish(extra_flows, extra_global, ctx_.topo, node_of_,
                                                                   k_.broadcast, false, channels_);
            const double extra_spag = graph_.network().coflow_time(extra_flows) + extra_latency;
            // Both plans charged what they leave exposed: the forward spAG's remainder after the
            // attention and router, plus (calibrated) the extra spAG after it, beyond the dispatch
            // all-to-all they may overlap (nothing overlaps them when one queue serializes them).
            const double spag = graph_.network().coflow_time(ag) + ag_latency;
            const double rem = std::max(0.0, spag - window_[grp.layer] - router_time_);
            auto exposed = [&](double left, const DispatchResult& dr) {
              return k_.single_queue ? left : std::max(0.0, left - a2a_time(grp, dr.bytes, false));
            };
            if (layer_estimate(grp, dq) + exposed(rem + extra_spag, dq) < layer_estimate(grp, d) + exposed(rem, d)) {
              local = std::move(q);
              d = std::move(dq);
              plan.calibration_flows.insert(plan.calibration_flows.end(), extra_flows.begin(), extra_flows.end());
              plan.calibration_latency = std::max(plan.calibration_latency, extra_latency);
              calibration_extra_[l][k] = extra_global;
              ++calibrations_accepted_;
            }
          }
          if (gate_scaled.empty()) take(std::move(d), plan), routed = true;  // judged on the iteration's counts
        }
        if (!routed) route(counts[k][l], plan, cap.iteration());
        // A trace with a micro-batch axis: each micro-batch routes its own counts under the same copies.
        for (size_t mb = 0; mb < loads.micro.size(); ++mb) {
          group_counts(loads.micro[mb], l, k, c, nullptr);
          route(c, plan.micro[mb], cap.micro_batch);
        }
        const auto p = on_gpus(local, grp.gpus);
        for (const auto& r : p.replicas)
          for (int x : r) plan.copy_bytes[x] += expert_bytes_, ++copies_[l];
        t_max_[l] = std::max(t_max_[l], grp.t);
        // spRS returns the gradients of every copy, calibration ones included.
        const auto rs_plan = sparse_plans_->plan(p, expert_bytes_, true);
        const collective::Coflow& rs = rs_plan->flows;
        plan.spag_latency = std::max(plan.spag_latency, ag_latency);
        plan.sprs_latency = std::max(plan.sprs_latency, rs_plan->latency);
        plan.spag_flows.insert(plan.spag_flows.end(), ag.begin(), ag.end());
        plan.sprs_flows.insert(plan.sprs_flows.end(), rs.begin(), rs.end());
        placed_[l][k] = p;
      }
    }
    IterationResult r = graph_.run(plans_, migrations, {}, take_timeline());
    set_memory(r);
    for (int k = 0; k < G_; ++k) history_[k].push(actual[k]);
    planned_iteration_ = iteration_;
    ++iteration_;
    return r;
  }

  const std::vector<LayerPlan>& plans() const { return plans_; }

 private:
  struct Group {
    std::vector<int> gpus, node_of, slots;  // node_of, slots: the group's ids
    int t = 0;
    int layer = 0;  // the MoE layer
  };

  // The traffic of a group's spAG / spRS, for interference (engine/interference.hpp): network when
  // the group spans nodes (its copies may come from any owner in it), as the iteration graph finds
  // it from the transfers when some cross nodes.
  engine::Traffic traffic(const Group& grp) const {
    for (int x : grp.gpus)
      if (ctx_.topo.node_of(x) != ctx_.topo.node_of(grp.gpus.front())) return engine::Traffic::kNetwork;
    return engine::Traffic::kIntraNode;
  }

  // GPU i of EP group k of the stage holding MoE layer l.
  int gpu(int l, int k, int i) const { return stage_[l] * layout_.stage_size() + k * layout_.ep + i; }
  std::vector<int> group_gpus(int l, int k) const {
    std::vector<int> g(layout_.ep);
    for (int i = 0; i < layout_.ep; ++i) g[i] = gpu(l, k, i);
    return g;
  }
  std::vector<int> group_nodes(const std::vector<int>& gpus) const {
    std::vector<int> nodes;
    for (int x : gpus) nodes.push_back(node_of_[x]);
    return nodes;
  }

  // An all-to-all of the group (ep x ep bytes, group ids) timed alone on the network.
  double a2a_time(const Group& grp, const std::vector<double>& local, bool transposed) {
    const int ep = layout_.ep;
    scratch_.assign(static_cast<size_t>(n_) * n_, 0.0);
    for (int i = 0; i < ep; ++i)
      for (int j = 0; j < ep; ++j)
        scratch_[static_cast<size_t>(grp.gpus[i]) * n_ + grp.gpus[j]] = local[static_cast<size_t>(i) * ep + j];
    return graph_.network().alltoallv_time(scratch_, transposed);
  }

  // Predicted time of one layer's MoE part under a dispatch in a group: slowest GPU's expert
  // forward+backward plus two all-to-alls each way.
  double layer_estimate(const Group& grp, const DispatchResult& d) {
    return expert_worst(d) + 2 * a2a_time(grp, d.bytes, false) + 2 * a2a_time(grp, d.bytes, true);
  }
  // Its compute: the slowest GPU's expert forward + backward.
  double expert_worst(const DispatchResult& d) const {
    double worst = 0;
    for (int i = 0; i < layout_.ep; ++i) worst = std::max(worst, expert_time(d, i));
    return worst;
  }
  double expert_time(const DispatchResult& d, int i) const {  // group GPU i's
    return ctx_.compute.expert_forward(d.expert_tokens[i]).value() + ctx_.compute.expert_backward(d.expert_tokens[i]).value();
  }

  double copy_budget(int x) const {
    if (k_.memory_budget >= 0) return k_.memory_budget;
    const int s = layout_.pp_rank(x);
    const double M = ctx_.model.grad_accum;
    const auto mem = cost::layout_memory(ctx_.model, layout_, stage_memory_[s], received_[x] / M, largest_[x] / M);
    return gpu_memory_ - mem.total() - nccl_[x] -
           cost::allocator_slack_cut(gpu_memory_, nccl_[x] + mem.reserve, ctx_.model.allocator_slack);
  }

  // Layer's overlap degree in group `grp` for the predicted loads, its owners and per-GPU slots, as
  // `overlap_degree` asks (overlap_degree.hpp).
  // `guess` (hidden and best modes): where the search for t starts (the same t for any guess; a near
  // one is cheaper: util::largest_fitting_from, best_overlap_degree's pruning).
  int overlap_degree(const std::vector<double>& predicted, const std::vector<int>& owner, const Group& grp,
                     std::span<const int> slots, int guess = -1) {
    switch (k_.overlap_mode) {
      case OverlapMode::kFixed: return k_.overlap_degree;
      case OverlapMode::kFormula: return formula_t_[grp.layer];
      case OverlapMode::kBest: {
        for (const BestSearch& b : best_searches_)
          if (b.layer == grp.layer && b.gpus == grp.gpus && b.predicted == predicted && b.owner == owner &&
              std::equal(slots.begin(), slots.end(), b.slots.begin(), b.slots.end()))
            return b.t;
        const int t = best_overlap_degree(
            E_, [&](int t, double beat) { return predicted_time(grp, predicted, owner, slots, t, true, beat); }, guess);
        best_searches_.push_back({grp.layer, grp.gpus, predicted, owner, {slots.begin(), slots.end()}, t});
        return t;
      }
      case OverlapMode::kHidden: break;
    }
    const SpagSetting s{grp.gpus, slots, expert_bytes_, k_.broadcast, ctx_.interference.communication_slowdown(traffic(grp)),
                        &*sparse_plans_};
    return hidden_overlap_degree(predicted, owner, s, graph_.network(), window_[grp.layer], guess);
  }

  // Predicted time of layer's MoE part in group `grp` with `t` copies planned within `slots`: the
  // predicted loads split evenly over the group's sources, materialized and dispatched as simulate()
  // does, timed by layer_estimate. With `sparse`, plus what the copies add (times the micro-batches
  // with re-materialization, which gathers and returns them for each): the spAG's part beyond the
  // attention forward and router (and, on a stream of its own, the dispatch it may overlap); the
  // spRS's (with re-materialization also the next layer's spAG, issued behind it) beyond the
  // attention backward and router; the busiest GPU's copy-in and gradient copy-out; and the
  // attention slowed by the interference of the collectives beside it (engine::Interference: the
  // attention cell and the communication cell of the group's traffic kind, as the engine applies them).
  // `beat` (the overlap-degree search's least time so far): as soon as a lower bound of the time
  // exceeds it, that bound is returned instead. The time is (compute + 2 x dispatch + 2 x combine)
  // + added, all terms >= 0, and floating-point rounding is monotone, so it is at least `added`
  // alone (before the dispatch; with a separate queue leaving out the spAG's exposure, which needs
  // the dispatch's all-to-all), then at least (w + 2 x dispatch + 2 x combine) + added with w the
  // slowest expert compute among the GPUs timed so far (0 before the first; the GPUs that receive
  // the most tokens first, the max being the same in any order).
  double predicted_time(const Group& grp, const std::vector<double>& predicted, const std::vector<int>& owners,
                        std::span<const int> slots, int t, bool sparse,
                        double beat = std::numeric_limits<double>::infinity()) {
    const int ep = layout_.ep;
    const auto p = materialize(predicted, owners, grp.node_of, t, slots);
    DispatchResult d;
    auto dispatch_predicted = [&](DispatchResult& into) {
      const double token_bytes = ctx_.model.d_model * ctx_.model.precision.activation_bytes;
      std::vector<double> counts(static_cast<size_t>(ep) * E_);
      for (int i = 0; i < ep; ++i)
        for (int e = 0; e < E_; ++e) counts[static_cast<size_t>(i) * E_ + e] = predicted[e] / ep;
      dispatch(counts, ep, p, grp.node_of, k_.dispatch, token_bytes, into);
    };
    auto base = [&] { return dispatch_predicted(d), layer_estimate(grp, d); };
    if (!sparse) return base();
    // On the topology's GPUs (a group of GPUs 0..ep-1 keeps its ids: replicas are sorted already).
    bool same_ids = true;
    for (int i = 0; i < ep; ++i) same_ids = same_ids && grp.gpus[i] == i;
    collective::SparsePlacement moved;
    if (!same_ids) moved = on_gpus(p, grp.gpus);
    const collective::SparsePlacement& on = same_ids ? p : moved;
    auto& net = graph_.network();
    const engine::Traffic kind = traffic(grp);
    const double slow = ctx_.interference.communication_slowdown(kind);
    const double spag = spag_times_->time(on, expert_bytes_, *sparse_plans_, net) * (1 + slow);
    if (spag == 0) return base();
    const double sprs = sprs_times_->time(on, expert_bytes_, *sparse_plans_, net) * (1 + slow);
    const double window = window_[grp.layer], attention_backward = attention_backward_[grp.layer];
    const double bwd = sprs + (k_.rematerialize ? spag : 0);
    double most = 0;  // the most copies on one GPU
    std::vector<double> held(ep, 0);
    for (const auto& r : p.replicas)
      for (int i : r) most = std::max(most, ++held[i]);
    const auto& cc = ctx_.compute;
    const double copies = (k_.rematerialize ? 2 : 1) * cc.memory_copy(Bytes(most * expert_bytes_)).value() +
                          cc.memory_copy(Bytes(most * copy_grad_bytes_)).value();
    const double interference = ctx_.interference.compute_slowdown(engine::KernelClass::kAttention, kind) *
                                (std::min(spag, window) + std::min(bwd, attention_backward));
    const double times = k_.rematerialize ? ctx_.model.grad_accum : 1;
    auto added = [&](double fwd_window) {
      return times * (std::max(0.0, spag - fwd_window) + std::max(0.0, bwd - attention_backward - router_time_) +
                      copies + interference);
    };
    // The spAG's window: the attention forward and router, and on a stream of its own the dispatch.
    const double bound = added(k_.single_queue ? window + router_time_ : std::numeric_limits<double>::infinity());
    if (bound > beat) return bound;
    dispatch_predicted(d);
    const double a2a = a2a_time(grp, d.bytes, false), combine = a2a_time(grp, d.bytes, true);
    const double copies_added = k_.single_queue ? bound : added(window + router_time_ + a2a);
    std::vector<int> order(ep);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int i, int j) { return d.received[i] > d.received[j]; });
    double worst = 0;
    for (int timed = 0;; ++timed) {
      const double time = worst + 2 * a2a + 2 * combine + copies_added;  // layer_estimate + added once all are timed
      if (timed == ep || time > beat) return time;
      worst = std::max(worst, expert_time(d, order[timed]));
    }
  }

  // FSSDP's memory cap inside each group: the overlap degree each layer wants with no memory limit,
  // the copies that plan puts on each GPU, the cap level per GPU over its stage's layers
  // (cost::copy_cap_level), the slots min(wanted, level), and t planned again for a layer cut (one
  // left no slot anywhere keeps the t it wanted: no copy is made whatever t is).
  void plan_copies() {
    const int ep = layout_.ep;
    group_.assign(L_, std::vector<Group>(G_));
    std::vector<double> budget(n_);
    bool room = false;  // some GPU can hold one copy and its gradient buffer
    for (int x = 0; x < n_; ++x) {
      budget[x] = copy_budget(x);
      room = room || budget[x] >= expert_bytes_ + copy_grad_bytes_;
    }
    std::vector<std::vector<double>> wanted(n_, std::vector<double>(L_, 0.0));  // [gpu][layer]
    for (int l = 0; l < L_; ++l)
      for (int k = 0; k < G_; ++k) {
        Group& grp = group_[l][k];
        grp.layer = l;
        grp.gpus = group_gpus(l, k);
        grp.node_of = group_nodes(grp.gpus);
        const auto predicted = history_[k].mean(l, E_);
        grp.t = overlap_degree(predicted, owners_[k][l], grp, std::vector<int>(ep, room ? E_ : 0), wanted_t_[l][k]);
        wanted_t_[l][k] = grp.t;  // the next iteration's search starts here
        const auto p = materialize(predicted, owners_[k][l], grp.node_of, grp.t, E_);
        for (const auto& r : p.replicas)
          for (int i : r) wanted[grp.gpus[i]][l] += 1;
      }
    level_.assign(n_, E_);
    for (int x = 0; x < n_; ++x) {
      std::vector<double> demand;  // the copies of the layers x holds (DualPipe: both pieces'), in order
      for (const auto [l, y] : held_layers(layout_, stage_, x)) demand.push_back(wanted[y][l]);
      level_[x] = all_copies_at_once()
                      ? cost::copy_cap_level(demand, budget[x], expert_bytes_ + copy_grad_bytes_, 0, {}, E_)
                      : cost::copy_cap_level(demand, budget[x], expert_bytes_, copy_grad_bytes_, life_, E_);
    }
    cap_min_ = *std::min_element(level_.begin(), level_.end());
    cut_.assign(L_, 0);
    for (int l = 0; l < L_; ++l)
      for (int k = 0; k < G_; ++k) {
        Group& grp = group_[l][k];
        int cut = 0;
        for (int x : grp.gpus) {
          grp.slots.push_back(std::min(static_cast<int>(wanted[x][l]), level_[x]));
          cut += static_cast<int>(wanted[x][l]) - grp.slots.back();
        }
        cut_[l] += cut;
        if (cut > 0 && std::any_of(grp.slots.begin(), grp.slots.end(), [](int s) { return s > 0; }))
          grp.t = overlap_degree(history_[k].mean(l, E_), owners_[k][l], grp, grp.slots, grp.t);
      }
  }

  // Several micro-batches without re-materialization: spRS runs after the last micro-batch's
  // backward, so every copy's gradient buffer accumulates from the first backward on and, at the
  // stage's last backward, every layer's copies and gradients are resident at once.
  bool all_copies_at_once() const { return ctx_.model.grad_accum > 1 && !k_.rematerialize; }

  // The copies' buffers at their peak. One micro-batch, or with re-materialization:
  // cost::copy_buffer_peak's lifetimes over the stage's layers; else all at once (above).
  cost::CopyPeak copy_peak(std::span<const double> copies, const cost::CopyLifetime& life) const {
    if (!all_copies_at_once() || life.rematerialize) return cost::copy_buffer_peak(copies, expert_bytes_, copy_grad_bytes_, life);
    const double all = std::accumulate(copies.begin(), copies.end(), 0.0);
    return {all * expert_bytes_, all * copy_grad_bytes_};
  }

  // Copies the calibration stage may add to layer l on GPU x (group id i) beyond `p`: up to the cap
  // level, and within the copy budget with the stage's layers before l as planned and those after
  // at their slots.
  int calibration_room(int x, int l, const collective::SparsePlacement& p, int i) const {
    double have = 0;
    for (const auto& r : p.replicas) have += static_cast<double>(std::count(r.begin(), r.end(), i));
    std::vector<double> copies;
    int at = -1;
    // x's group in its stage (a mirrored GPU's is the same: ParallelLayout::mirror_rank keeps the place).
    const int k = (x % layout_.stage_size()) / layout_.ep;
    for (const auto [j, y] : held_layers(layout_, stage_, x)) {
      if (j == l) at = static_cast<int>(copies.size());
      copies.push_back(j < l ? plans_[j].copy_bytes[y] / expert_bytes_ : static_cast<double>(group_[j][k].slots[i]));
    }
    const double budget = copy_budget(x);
    auto fits = [&](int extra) {
      copies[at] = have + extra;
      return copy_peak(copies, life_).total() <= budget;
    };
    if (!fits(0)) return 0;
    return util::largest_fitting(std::max(0, level_[x] - static_cast<int>(have)), fits);
  }

  // Heterogeneous re-sharding, per pipeline stage and EP group over the stage's layers: the owners
  // strategy/policy/fssdp/sharding.hpp plans for the predicted loads, each layer's move gated by what it pays
  // back (gate_reshard); every group's moves (parameters and optimizer state of each moved expert)
  // in one coflow before the iteration.
  void reshard(collective::Coflow& moves) {
    bool any = false;
    for (int s = 0; s < layout_.pp; ++s) {
      std::vector<int> layers;
      for (int l = 0; l < L_; ++l)
        if (stage_[l] == s) layers.push_back(l);
      if (layers.empty()) continue;
      for (int k = 0; k < G_; ++k) {
        const int nl = static_cast<int>(layers.size());
        std::vector<std::vector<double>> predicted(nl);
        std::vector<int> over(nl);
        Owners current(nl);
        for (int i = 0; i < nl; ++i) {
          const int l = layers[i];
          predicted[i] = history_[k].mean(l, E_);
          // Overlappable = experts that will actually be materialized: top-min(t, m) per layer.
          over[i] = std::min({group_[l][k].t, cap_min_, E_});
          current[i] = owners_[k][l];
        }
        const Group& grp = group_[layers[0]][k];
        Owners next = heterogeneous_owners(predicted, over, grp.node_of, &current);
        gate_reshard(layers, k, predicted, current, next);
        const size_t before = moves.size();
        for (int i = 0; i < nl; ++i) {
          migration(layers[i], k, current[i], next[i], moves);
          owners_[k][layers[i]] = std::move(next[i]);
        }
        if (moves.size() > before) any = true;
      }
    }
    if (!any) return;
    moved_ += static_cast<int>(moves.size());
    ++reshards_;
    plan_copies();  // the cap and the overlap degrees under the new owners
  }

  // Layer l's moves in group k from `from` to `to` owners (group ids): each moved expert's
  // parameters and optimizer state.
  void migration(int l, int k, const std::vector<int>& from, const std::vector<int>& to, collective::Coflow& moves) const {
    for (int e = 0; e < E_; ++e)
      if (to[e] != from[e]) moves.push_back({gpu(l, k, from[e]), gpu(l, k, to[e]), state_bytes_});
  }

  // Predicted MoE time of one layer under an ownership in group k: the plan materialization would
  // make from the predicted loads (split evenly over the group's sources), dispatched and timed as
  // layer_estimate does; the mean of the plan at the layer's overlap degree t and at t - 1 (the
  // automatic t of a layer moves by one between iterations as the prediction drifts, and the expert
  // at the boundary then goes unreplicated: a placement judged at t alone was predicted 1.4
  // ms/iteration faster and ran 1.8 ms/iteration slower on gpt-moe-s / dgx-h100-4node).
  double predicted_layer_time(int l, int k, const std::vector<double>& predicted, const std::vector<int>& owners) {
    const Group& grp = group_[l][k];
    const std::vector<int> slots(layout_.ep, cap_min_);
    const int t = overlap_degree(predicted, owners, grp, slots, grp.t);
    double sum = 0;
    int n = 0;
    for (int tt = std::max(0, t - 1); tt <= t; ++tt, ++n) sum += predicted_time(grp, predicted, owners, slots, tt, false);
    return sum / n;
  }

  // Cost/benefit gate of a re-shard of group k over `layers` (its stage's): a layer takes its new
  // owners only when the predicted time it saves per iteration, over the reshard_every iterations the
  // placement will serve, beats moving its experts with their optimizer states (timed alone). Layers
  // are reverted to their current owners worst ratio first, as long as every GPU's slot count stays
  // within its capacity; when what is left does not pay for itself, nothing moves.
  void gate_reshard(const std::vector<int>& layers, int k, const std::vector<std::vector<double>>& predicted,
                    const Owners& current, Owners& next) {
    const int nl = static_cast<int>(layers.size()), ep = layout_.ep;
    const auto cap = slot_capacity(nl, E_, ep);
    std::vector<int> count(ep, 0);
    for (int i = 0; i < nl; ++i)
      for (int e = 0; e < E_; ++e) ++count[next[i][e]];
    struct Layer { int i; double gain, cost; };
    std::vector<Layer> changed;
    double gain_total = 0;
    for (int i = 0; i < nl; ++i) {
      if (next[i] == current[i]) continue;
      collective::Coflow moves;
      migration(layers[i], k, current[i], next[i], moves);
      const double gain = predicted_layer_time(layers[i], k, predicted[i], current[i]) -
                          predicted_layer_time(layers[i], k, predicted[i], next[i]);
      changed.push_back({i, gain, graph_.network().coflow_time(moves)});
    }
    // Worst first: lowest gain over the placement's lifetime per unit of migration time.
    std::stable_sort(changed.begin(), changed.end(), [&](const Layer& a, const Layer& b) {
      return a.gain * b.cost < b.gain * a.cost;
    });
    for (const Layer& x : changed) {
      if (x.gain * k_.reshard_every > x.cost) {
        gain_total += x.gain;
        continue;
      }
      std::vector<int> after = count;
      for (int e = 0; e < E_; ++e) --after[next[x.i][e]], ++after[current[x.i][e]];
      bool fits = true;
      for (int g = 0; g < ep; ++g) fits = fits && after[g] <= cap[g];
      if (!fits) {
        gain_total += x.gain;
        continue;
      }
      count = std::move(after);
      next[x.i] = current[x.i];
      ++layers_kept_;
    }
    double cost_total = 0;
    {
      collective::Coflow moves;
      for (int i = 0; i < nl; ++i) migration(layers[i], k, current[i], next[i], moves);
      if (!moves.empty()) cost_total = graph_.network().coflow_time(moves);
    }
    if (gain_total * k_.reshard_every <= cost_total) {  // what is left does not pay for itself
      for (int i = 0; i < nl; ++i)
        if (next[i] != current[i]) ++layers_kept_;
      next = current;
      ++reshards_skipped_;
      return;
    }
    predicted_gain_ += gain_total;
  }

  // The worst GPU: the layout's memory (routed tokens per micro-batch over its held layers) and
  // NCCL buffers plus its copies' buffers at their peak; without re-materialization also the same
  // plan under re-materialization's lifetimes, for the verdict. Keeps the most routed tokens so far
  // for the next cap.
  void set_memory(IterationResult& r) {
    const double M = ctx_.model.grad_accum;
    IterationResult alt;
    const cost::CopyLifetime remat{true, life_.grads_overlap_next, life_.grads_pile_up};
    std::vector<char> moves(L_);
    for (int l = 0; l < L_; ++l) moves[l] = layer_moves_tokens(plans_[l], n_);
    for (int s = 0; s < layout_.pp; ++s)
      for (int x : layout_.stage_gpus(s)) {
        double received = 0, largest = 0, moved = 0;
        bool a2a = false;  // some layer of the stage issues an all-to-all (FSDP's never do)
        std::vector<double> copies;
        for (const auto [l, y] : held_layers(layout_, stage_, x)) {  // DualPipe: its mirror's copies too
          received += plans_[l].received_tokens[y];
          largest = std::max(largest, plans_[l].received_tokens[y]);
          if (moves[l]) moved = std::max(moved, plans_[l].received_tokens[y]), a2a = true;
          copies.push_back(plans_[l].copy_bytes[y] / expert_bytes_);
        }
        auto mem = cost::layout_memory(ctx_.model, layout_, stage_memory_[s], received / M, moved / M);
        if (!a2a) mem.comm_buffers = 0;
        mem.nccl = nccl_[x];
        auto with = [&](const cost::CopyLifetime& life) {
          const cost::CopyPeak peak = copy_peak(copies, life);
          cost::MemoryBreakdown b = mem;
          b.copy_params = peak.params;
          b.copy_grads = peak.grads;
          cost::add_allocator_slack(b, ctx_.model.allocator_slack);
          return b;
        };
        const auto own = with(life_);
        if (r.memory_gpu < 0 || own.total() > r.memory.total()) r.memory = own, r.memory_gpu = x;
        if (!k_.rematerialize) {
          const auto other = with(remat);
          if (alt.memory_gpu < 0 || other.total() > alt.memory.total()) alt.memory = other, alt.memory_gpu = x;
        }
        // The most seen so far: the next iteration routes its own loads, which the copies planned
        // before it must fit beside (a copy sized on the last iteration's tokens alone overflowed
        // DeepSeek-V3's stage 0 by 2 GiB when the next routed 9.5% more there).
        received_[x] = std::max(received_[x], received);
        largest_[x] = std::max(largest_[x], largest);
      }
    if (!k_.rematerialize) r.memory_rematerialized = alt.memory;
  }

  // The plan as executable data: chunk k * E + e is expert e of the layer's EP group k (of its
  // stage); one group: the expert's id.
  void build_snapshot() const {
    snapshot_.layers.assign(L_, {});
    for (int l = 0; l < L_; ++l) {
      LayerPlanSnapshot& s = snapshot_.layers[l];
      s.chunk_bytes = expert_bytes_;
      s.broadcast = k_.broadcast;
      for (int k = 0; k < G_; ++k) {
        const collective::SparsePlacement& p = placed_[l][k];
        const collective::SparsePlacement& extra = calibration_extra_[l][k];
        const int base = k * E_;
        s.owner.insert(s.owner.end(), p.owner.begin(), p.owner.end());
        s.replicas.insert(s.replicas.end(), p.replicas.begin(), p.replicas.end());
        if (extra.owner.empty()) {
          chunk_transfers(p, expert_bytes_, node_of_, k_.broadcast, false, base, s.spag);
        } else {  // the forward spAG moved the predicted placement: the final one less the extra copies
          chunk_transfers(added_copies(p, extra), expert_bytes_, node_of_, k_.broadcast, false, base, s.spag);
          chunk_transfers(extra, expert_bytes_, node_of_, k_.broadcast, false, base, s.spag);
        }
      }
      for (int k = 0; k < G_; ++k)
        chunk_transfers(placed_[l][k], expert_bytes_, node_of_, k_.broadcast, true, k * E_, s.sprs);
      s.dispatch_bytes = plans_[l].dispatch_bytes;
    }
    snapshot_.iteration = planned_iteration_;
  }

  const Context& ctx_;
  workload::ParallelLayout layout_;
  FssdpKnobs k_;
  LayoutIterationGraph graph_;
  DispatchMemo dispatch_memo_;  // the routing of counts and placements that come back
  int n_, L_, E_, G_;  // G_: EP groups per stage
  std::vector<LayerPlan> plans_;
  std::vector<LoadHistory> history_;  // [group of a stage]: the loads of its GPUs, per layer
  std::vector<int> stage_;            // [MoE layer] -> pipeline stage
  std::vector<double> nccl_;          // [gpu] NCCL buffers: the layout's communicators
  std::vector<cost::StageMemory> stage_memory_;  // [stage] what layout_memory reads of it alone
  std::vector<int> node_of_;
  std::vector<Owners> owners_;        // [group of a stage][layer][expert] -> owner (group id)
  double expert_bytes_ = 0, copy_grad_bytes_ = 0, state_bytes_ = 0, gpu_memory_ = 0;
  std::vector<double> window_;              // per MoE layer: its attention forward, / tp (the spAG's window)
  std::vector<double> attention_backward_;  // per MoE layer: the window of the spRS (and re-materialization's spAG), / tp
  double router_time_ = 0;  // router + permute of a micro-batch's tokens, before the dispatch
  std::vector<int> formula_t_;  // per MoE layer: the paper's floor(T_attn x bw / expert bytes)
  int channels_ = 1;
  std::optional<collective::SparsePlanCache> sparse_plans_;  // spAG / spRS plans by placement
  // predicted_time's spAG / spRS times, updated from the last placement it timed (the search for t
  // asks for placements a few experts apart): the cache's times, exactly.
  std::optional<collective::SparseTimeTracker> spag_times_, sprs_times_;
  cost::CopyLifetime life_;
  std::vector<double> received_, largest_;  // [gpu] routed tokens per iteration over its held layers, the
                                            // most seen so far: total, largest layer
  std::vector<std::vector<Group>> group_;   // [layer][group] this iteration's plan inputs
  std::vector<int> level_;                  // [gpu] this iteration's cap level
  std::vector<int> t_max_, copies_, cut_;
  std::vector<std::vector<int>> wanted_t_;  // [layer][group] the last t wanted without a memory cut
  // This iteration's searches for the best t (overlap_degree=best), by their inputs: a re-shard's
  // gate asks for a layer's t under its current owners and the cap planned after it asks again (a
  // search is a function of the layer, group, loads, owners and slots; cleared every iteration).
  struct BestSearch {
    int layer;
    std::vector<int> gpus;
    std::vector<double> predicted;
    std::vector<int> owner, slots;
    int t;
  };
  std::vector<BestSearch> best_searches_;
  int cap_min_ = 0;
  int iteration_ = 0, reshards_ = 0, moved_ = 0, reshards_skipped_ = 0, layers_kept_ = 0, calibrations_accepted_ = 0;
  double predicted_gain_ = 0;  // summed over re-shards: predicted MoE time saved per iteration
  std::vector<double> scratch_;
  // What the last simulate() planned, per layer and group (GPU ids): the final placement and the
  // copies the calibration stage added to it (empty when none); last_plan()'s cache.
  std::vector<std::vector<collective::SparsePlacement>> placed_, calibration_extra_;
  int planned_iteration_ = -1;
  mutable PlanSnapshot snapshot_;  // a strategy object is used by one thread at a time
};

}  // namespace

std::unique_ptr<Strategy> make_layout_fssdp(const StrategySpec& spec, const Context& ctx,
                                            const workload::ParallelLayout& layout) {
  return std::make_unique<LayoutFssdp>(ctx, layout, parse_fssdp_knobs(KnobValues(spec)));
}

std::unique_ptr<Strategy> make_layout_fsdp(const StrategySpec& spec, const Context& ctx,
                                           const workload::ParallelLayout& layout) {
  // FSDP of experts inside each EP group: FSSDP with every expert materialized on every GPU of the
  // group and no memory limit, so tokens stay on their GPU; FSDP prefetches its all-gathers on a
  // stream of its own. `rematerialize` is FSDP's reshard-after-forward (PyTorch FSDP's FULL_SHARD
  // default): the experts gathered again for every micro-batch's forward and backward, gradients
  // reduce-scattered after each.
  FssdpKnobs k;
  k.overlap_mode = OverlapMode::kFixed;
  k.overlap_degree = ctx.model.experts;
  k.memory_budget = 1e6 * 1024.0 * 1024 * 1024 * 1024;  // no memory limit (1,000,000 TiB)
  k.heterogeneous = false;
  k.single_queue = false;  // FSDP prefetches its all-gathers on a stream of their own
  k.rematerialize = KnobValues(spec).boolean("rematerialize");
  k.record_only = true;
  return std::make_unique<LayoutFssdp>(ctx, layout, k);
}

const std::vector<LayerPlan>* layout_fssdp_plans(const Strategy& s) {
  const auto* f = dynamic_cast<const LayoutFssdp*>(&s);
  return f ? &f->plans() : nullptr;
}

}  // namespace hs::strategy
