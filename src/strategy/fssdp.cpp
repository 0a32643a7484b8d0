#include "strategy/fssdp.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <fmt/format.h>

#include "collective/sparse_plan.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/load_history.hpp"
#include "strategy/materialization.hpp"
#include "strategy/moe_iteration.hpp"
#include "strategy/sharding.hpp"
#include "util/units.hpp"

namespace hs::strategy {

namespace {

// Bandwidth relevant to spAG (see header). A chain broadcast enters every node once, so t copies
// cost t x expert bytes on each node's network links: the inter-node figure is the node's total
// NIC bandwidth. It is used when it is much lower (> 2x) than a GPU's intra-node bandwidth.
double sparse_bandwidth(const topology::Topology& t) {
  const int n = t.num_gpus();
  if (n < 2) return 1.0;
  double intra = 0;
  if (t.gpus_in_node(0) > 1) intra = t.route_bandwidth(t.node_gpus(0)[0], t.node_gpus(0)[1]).value();
  if (t.num_nodes() < 2) return intra;
  double egress = 0;  // node 0's NIC links toward the fabric
  for (const auto& l : t.links()) {
    const auto& from = t.vertices()[l.from];
    const auto& to = t.vertices()[l.to];
    if (from.kind == topology::VertexKind::kNic && from.node == 0 && to.kind == topology::VertexKind::kSwitch &&
        to.node != 0)
      egress += l.bandwidth.value();
  }
  if (egress == 0) egress = t.route_bandwidth(t.node_gpus(0)[0], t.node_gpus(1)[0]).value();
  if (intra == 0 || intra > 2 * egress) return egress;
  return intra;
}

// A sparse collective's transfers labelled with their chunk, for the plan snapshot: the collective
// built one chunk at a time (the simulator's coflow lists the chunks in this order).
void chunk_transfers(const collective::SparsePlacement& p, double bytes, const std::vector<int>& node_of,
                     collective::BroadcastAlgo algo, bool reduce, std::vector<ChunkTransfer>& out) {
  collective::SparsePlacement one{{0}, {{}}};
  for (std::size_t e = 0; e < p.owner.size(); ++e) {
    if (p.replicas[e].empty()) continue;
    one.owner[0] = p.owner[e];
    one.replicas[0] = p.replicas[e];
    const auto c = reduce ? collective::sparse_reduce_scatter(one, bytes, node_of, algo)
                          : collective::sparse_allgather(one, bytes, node_of, algo);
    for (const auto& t : c) out.push_back({static_cast<int>(e), t.src, t.dst, t.bytes});
  }
}

class Fssdp final : public Strategy {
 public:
  Fssdp(const Context& ctx, FssdpKnobs k)
      : ctx_(ctx), k_(k), n_(ctx.topo.num_gpus()), L_(ctx.model.moe_layers()), E_(ctx.model.experts),
        graph_(ctx, options(ctx, k)), plans_(L_), history_(L_, k.window) {
    const auto& m = ctx.model;
    params_ = cost::count_params(m);
    expert_bytes_ = params_.per_expert * m.precision.param_bytes;
    state_bytes_ = params_.per_expert * (m.precision.param_bytes + m.precision.master_bytes + m.precision.optimizer_bytes());
    for (int g = 0; g < n_; ++g) node_of_.push_back(ctx.topo.node_of(g));
    channels_ = collective::chain_channels(ctx.topo);
    owners_ = homogeneous_owners(L_, E_, n_);
    t_window_ = ctx.compute.attention_forward().value();
    bw_ = sparse_bandwidth(ctx.topo);
    formula_t_ = static_cast<int>(std::floor(t_window_ * bw_ / expert_bytes_));
    router_time_ = ctx.compute.router_and_permute(static_cast<double>(m.tokens_per_micro_batch())).value();
    // The memory cap on copies (plan_copies) leaves room for what every GPU holds anyway: its owned
    // state, NCCL's buffers, the reserve, and its activations and all-to-all buffers, at first those
    // of a uniform load (each GPU computes the tokens it routes), then the last iteration's.
    copy_grad_bytes_ = params_.per_expert * m.precision.grad_bytes;
    life_ = {k.rematerialize, !k.single_queue};
    gpu_memory_ = ctx.topo.gpu_model().memory.value();
    nccl_ = world_nccl_bytes(ctx.topo, true);
    const double routed = static_cast<double>(m.tokens_per_micro_batch()) * m.top_k;
    uniform_resident_ = cost::activation_bytes(m, routed * L_) + 2 * routed * m.d_model * m.precision.activation_bytes;
    resident_.assign(n_, uniform_resident_);
  }

  static MoeGraphOptions options(const Context& ctx, const FssdpKnobs& k) {
    MoeGraphOptions o;
    o.sparse = true;
    o.rematerialize = k.rematerialize;
    o.calibration = k.calibrate;
    o.single_queue = k.single_queue;
    o.optimizer_params_per_gpu = balanced_owned_params(ctx.model, ctx.topo.num_gpus());
    return o;
  }

  bool stateless() const override { return false; }
  // Built on request from what simulate() kept (placements moved, not copied), so simulating pays
  // nothing for it: the dispatch matrices alone are n x n per layer.
  const PlanSnapshot* last_plan() const override {
    if (planned_iteration_ < 0) return nullptr;
    if (snapshot_.iteration != planned_iteration_) build_snapshot();
    return &snapshot_;
  }

  std::vector<ResolvedSetting> resolved() const override {
    std::vector<ResolvedSetting> r;
    r.push_back(resolved_list("overlap_degree", resolved_t_));
    r.push_back(resolved_value("overlap_degree_formula", formula_t_));
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
    r.push_back(resolved_text("dense_allreduce", graph_.dense_allreduce_algo()));
    return r;
  }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const double token_bytes = m.d_model * m.precision.activation_bytes;
    // Actual global loads of this iteration, and the prediction: sliding-window mean (uniform before
    // any history).
    const auto actual = global_loads(loads.total(), L_, n_, E_);
    // What the calibration stage sees after the gate, where it runs: the iteration's loads, or with
    // micro-batches the first micro-batch's (the placement it settles then serves every micro-batch),
    // scaled by grad_accum to an iteration's worth so its estimates compare as without micro-batches.
    std::vector<double> gate_counts;
    if (k_.calibrate && !loads.micro.empty()) {
      gate_counts.assign(loads.micro[0].begin(), loads.micro[0].end());
      for (double& c : gate_counts) c *= static_cast<double>(loads.micro.size());
    }
    const std::span<const double> gate = gate_counts.empty() ? loads.total() : std::span<const double>(gate_counts);
    const auto gate_global = gate_counts.empty() ? std::vector<std::vector<double>>{} : global_loads(gate, L_, n_, E_);
    const auto& gate_actual = gate_counts.empty() ? actual : gate_global;
    std::vector<std::vector<double>> predicted(L_);
    for (int l = 0; l < L_; ++l) predicted[l] = history_.mean(l, E_);
    IterationExtras extras;
    plan_copies(predicted);
    // Heterogeneous re-sharding: first once the prediction window is full (loads are known), then
    // every R iterations after that.
    if (k_.heterogeneous && iteration_ >= k_.window && (iteration_ - k_.window) % k_.reshard_every == 0) {
      // Overlappable = experts that will actually be materialized: top-min(t, m) per layer.
      std::vector<int> over(L_);
      for (int l = 0; l < L_; ++l) over[l] = std::min({resolved_t_[l], cap_min_, E_});
      Owners next = heterogeneous_owners(predicted, over, node_of_, &owners_);
      gate_reshard(predicted, next);
      collective::Coflow moves;
      for (int l = 0; l < L_; ++l) migration(l, next, moves);
      if (!moves.empty()) {
        extras.reshard = graph_.network().coflow_time(moves);
        moved_ += static_cast<int>(moves.size());
        extras.reshard_flows = moves;
        owners_ = std::move(next);
        ++reshards_;
        plan_copies(predicted);  // the cap and the overlap degrees under the new owners
      }
    }
    std::vector<double> owned(n_, 0.0);
    for (int l = 0; l < L_; ++l)
      for (int e = 0; e < E_; ++e) owned[owners_[l][e]] += 1;
    copies_.assign(L_, 0);
    placed_.resize(L_);
    calibration_extra_.resize(L_);
    for (int l = 0; l < L_; ++l) {
      const int t = resolved_t_[l];
      collective::SparsePlacement p = materialize(predicted[l], owners_[l], node_of_, t, slots_[l]);
      const auto seen = layer_counts(gate, l, n_, E_);  // the counts the calibration judges by
      DispatchResult d;
      dispatch(seen, n_, p, node_of_, k_.dispatch, token_bytes, d);
      LayerPlan& plan = plans_[l];
      // The forward spAG moves the predicted plan; calibration copies travel in their own task.
      plan.spag_flows = collective::sparse_allgather(p, expert_bytes_, node_of_, k_.broadcast, channels_);
      plan.spag_latency =
          collective::sparse_finish(plan.spag_flows, p, ctx_.topo, node_of_, k_.broadcast, false, channels_);
      plan.spag = graph_.network().coflow_time(plan.spag_flows) + plan.spag_latency;
      calibration_extra_[l] = {};
      plan.calibration_spag = 0;
      plan.calibration_latency = 0;
      plan.calibration_flows.clear();
      if (k_.calibrate) {
        // Room per GPU after the predicted plan, within the memory cap.
        std::vector<int> free_slots(n_, 0);
        for (int g = 0; g < n_; ++g) free_slots[g] = calibration_room(g, l, p);
        collective::SparsePlacement q = p;
        if (extend_placement(q, gate_actual[l], node_of_, std::max(t, 1), free_slots) > 0) {
          DispatchResult dq;
          dispatch(seen, n_, q, node_of_, k_.dispatch, token_bytes, dq);
          collective::SparsePlacement extra{q.owner, std::vector<std::vector<int>>(E_)};
          for (int e = 0; e < E_; ++e)
            std::set_difference(q.replicas[e].begin(), q.replicas[e].end(), p.replicas[e].begin(), p.replicas[e].end(),
                                std::back_inserter(extra.replicas[e]));
          auto extra_flows = collective::sparse_allgather(extra, expert_bytes_, node_of_, k_.broadcast, channels_);
          const double extra_latency =
              collective::sparse_finish(extra_flows, extra, ctx_.topo, node_of_, k_.broadcast, false, channels_);
          const double extra_spag = graph_.network().coflow_time(extra_flows) + extra_latency;
          // Both plans charged what they leave exposed: the forward spAG's remainder after the
          // attention and router, plus (calibrated) the extra spAG after it, beyond the dispatch
          // all-to-all they may overlap (nothing overlaps them when one queue serializes them).
          const double rem = std::max(0.0, plan.spag - t_window_ - router_time_);
          auto exposed = [&](double spag_left, const DispatchResult& dr) {
            return k_.single_queue ? spag_left
                                   : std::max(0.0, spag_left - graph_.network().alltoallv_time(dr.bytes, false));
          };
          if (layer_estimate(dq) + exposed(rem + extra_spag, dq) < layer_estimate(d) + exposed(rem, d)) {
            p = std::move(q);
            d = std::move(dq);
            plan.calibration_spag = extra_spag;
            plan.calibration_flows = std::move(extra_flows);
            plan.calibration_latency = extra_latency;
            calibration_extra_[l] = std::move(extra);
            ++calibrations_accepted_;
          }
        }
      }
      // The placement serves the whole iteration: its tokens, and every micro-batch's, routed through it.
      auto route = [&](std::span<const double> counts, LayerPlan& out) {
        DispatchResult r;
        dispatch(counts, n_, p, node_of_, k_.dispatch, token_bytes, r);
        take_dispatch(std::move(r), out);
      };
      if (gate_counts.empty()) take_dispatch(std::move(d), plan);  // judged on the iteration's counts: already routed
      else route(loads.layer(l, n_, E_), plan);
      route_micro_batches(loads, l, n_, E_, plan, route);
      // spRS returns the gradients of every copy, calibration ones included.
      plan.sprs_flows = collective::sparse_reduce_scatter(p, expert_bytes_, node_of_, k_.broadcast, channels_);
      plan.sprs_latency =
          collective::sparse_finish(plan.sprs_flows, p, ctx_.topo, node_of_, k_.broadcast, true, channels_);
      plan.sprs = graph_.network().coflow_time(plan.sprs_flows) + plan.sprs_latency;
      std::vector<double> per_layer(n_, 0.0);
      for (int e = 0; e < E_; ++e)
        for (int g : p.replicas[e]) per_layer[g] += 1;
      plan.copy_bytes.assign(n_, 0.0);
      for (int g = 0; g < n_; ++g) plan.copy_bytes[g] = per_layer[g] * expert_bytes_;
      copies_[l] = static_cast<int>(std::accumulate(per_layer.begin(), per_layer.end(), 0.0));
      placed_[l] = std::move(p);  // for last_plan()
    }
    for (int g = 0; g < n_; ++g) owned[g] = params_.dense + owned[g] * params_.per_expert;
    extras.optimizer_params = owned;
    IterationResult r = graph_.run(plans_, extras, take_timeline());
    set_memory(r, owned);
    history_.push(actual);  // for the next prediction
    planned_iteration_ = iteration_;
    ++iteration_;
    return r;
  }

 private:
  // Predicted time of one layer's MoE part under a dispatch: slowest GPU's expert forward+backward
  // plus two all-to-alls each way.
  double layer_estimate(const DispatchResult& d) {
    double worst = 0;
    for (int g = 0; g < n_; ++g)
      worst = std::max(worst, ctx_.compute.expert_forward(d.expert_tokens[g]).value() +
                                  ctx_.compute.expert_backward(d.expert_tokens[g]).value());
    return worst + 2 * graph_.network().alltoallv_time(d.bytes, false) + 2 * graph_.network().alltoallv_time(d.bytes, true);
  }

  // Overlap degree of a layer: the knob, or (auto) strategy/materialization.hpp's
  // plan_overlap_degree against the attention forward that precedes the layer, for a plan within
  // `slots` copies per GPU.
  int overlap_degree(const std::vector<double>& predicted, const std::vector<int>& owners, std::span<const int> slots) {
    if (k_.overlap_degree >= 0) return k_.overlap_degree;
    return plan_overlap_degree(predicted, owners, node_of_, slots, expert_bytes_, k_.broadcast, graph_.network(),
                               t_window_);
  }
  int overlap_degree(const std::vector<double>& predicted, const std::vector<int>& owners, int m) {
    return overlap_degree(predicted, owners, std::vector<int>(n_, m));
  }

  // Bytes GPU g may give to copy buffers (params + gradient buffers at their peak): the
  // memory_budget knob, or its memory less what it holds anyway.
  double copy_budget(int g, double owned_experts) const {
    if (k_.memory_budget >= 0) return k_.memory_budget;
    const double owned = (params_.dense + owned_experts * params_.per_expert) * ctx_.model.precision.state_bytes_per_param();
    return gpu_memory_ - owned - resident_[g] - nccl_[g] - cost::kRuntimeReserveBytes;
  }

  // The memory cap of this iteration, per GPU and layer (FSSDP's m, heterogeneous): every layer's
  // plan at its overlap degree with no memory limit gives the copies it wants on each GPU; per GPU
  // the largest level such that every layer keeping min(wanted, level) copies fits in the GPU's
  // copy budget under the copies' lifetimes (cost::copy_cap_level); a layer cut below what it
  // wanted plans its overlap degree again within the cut (one left no slot keeps its t). Fills resolved_t_, level_, slots_, cut_.
  void plan_copies(const std::vector<std::vector<double>>& predicted) {
    std::vector<double> owned(n_, 0.0), budget(n_);
    for (const auto& layer : owners_)
      for (int g : layer) owned[g] += 1;
    bool room = false;  // some GPU can hold one copy and its gradient buffer
    for (int g = 0; g < n_; ++g) {
      budget[g] = copy_budget(g, owned[g]);
      room = room || budget[g] >= expert_bytes_ + copy_grad_bytes_;
    }
    // Without room anywhere the overlap degree is planned for no copies (timing full-replication
    // plans for nothing costs as much as the rest of the iteration on a large cluster).
    std::vector<std::vector<double>> wanted(n_, std::vector<double>(L_, 0.0));  // [gpu][layer]
    resolved_t_.assign(L_, 0);
    for (int l = 0; l < L_; ++l) {
      resolved_t_[l] = overlap_degree(predicted[l], owners_[l], room ? E_ : 0);
      const auto p = materialize(predicted[l], owners_[l], node_of_, resolved_t_[l], E_);
      for (const auto& r : p.replicas)
        for (int g : r) wanted[g][l] += 1;
    }
    level_.assign(n_, E_);
    for (int g = 0; g < n_; ++g)
      level_[g] = cost::copy_cap_level(wanted[g], budget[g], expert_bytes_, copy_grad_bytes_, life_, E_);
    cap_min_ = *std::min_element(level_.begin(), level_.end());
    slots_.assign(L_, std::vector<int>(n_, 0));
    cut_.assign(L_, 0);
    for (int l = 0; l < L_; ++l) {
      for (int g = 0; g < n_; ++g) {
        slots_[l][g] = std::min(static_cast<int>(wanted[g][l]), level_[g]);
        cut_[l] += static_cast<int>(wanted[g][l]) - slots_[l][g];
      }
      // With no slot anywhere no copy is made whatever t is: the layer keeps the t it wanted.
      if (cut_[l] > 0 && std::any_of(slots_[l].begin(), slots_[l].end(), [](int s) { return s > 0; }))
        resolved_t_[l] = overlap_degree(predicted[l], owners_[l], slots_[l]);
    }
  }

  // Copies the calibration stage may add to layer l on GPU g beyond `p`: up to the cap level, and
  // within the copy budget with the layers before l as planned and those after at their slots.
  int calibration_room(int g, int l, const collective::SparsePlacement& p) const {
    double have = 0, owned = 0;
    for (const auto& r : p.replicas) have += std::count(r.begin(), r.end(), g);
    for (const auto& layer : owners_) owned += static_cast<double>(std::count(layer.begin(), layer.end(), g));
    std::vector<double> copies(L_);
    for (int j = 0; j < L_; ++j)
      copies[j] = j < l ? plans_[j].copy_bytes[g] / expert_bytes_ : static_cast<double>(slots_[j][g]);
    const double budget = copy_budget(g, owned);
    auto fits = [&](int extra) {
      copies[l] = have + extra;
      return cost::copy_buffer_peak(copies, expert_bytes_, copy_grad_bytes_, life_).total() <= budget;
    };
    int lo = 0, hi = std::max(0, level_[g] - static_cast<int>(have));
    if (!fits(0)) return 0;
    if (fits(hi)) return hi;
    while (hi - lo > 1) {  // fits(lo), !fits(hi)
      const int mid = lo + (hi - lo) / 2;
      if (fits(mid)) lo = mid;
      else hi = mid;
    }
    return lo;
  }

  // Memory of every GPU (the worst kept): owned state, NCCL, the copies each layer placed on it
  // with their lifetimes, activations and all-to-all buffers; without re-materialization also the
  // same plan under re-materialization's lifetimes, for the verdict. Updates resident_ for the
  // next iteration's cap.
  void set_memory(IterationResult& r, const std::vector<double>& owned_params) {
    const auto& m = ctx_.model;
    std::vector<double> copies(L_);
    auto base = [&](int g, const cost::CopyLifetime& life) {
      cost::MemoryBreakdown b = owned_state(m, owned_params[g]);
      b.nccl = nccl_[g];
      for (int l = 0; l < L_; ++l) copies[l] = plans_[l].copy_bytes[g] / expert_bytes_;
      const cost::CopyPeak peak = cost::copy_buffer_peak(copies, expert_bytes_, copy_grad_bytes_, life);
      b.copy_params = peak.params;
      b.copy_grads = peak.grads;
      return b;
    };
    set_worst_memory(r, plans_, n_, m, [&](int g) { return base(g, life_); });
    if (!k_.rematerialize) {
      IterationResult alt;
      set_worst_memory(alt, plans_, n_, m, [&](int g) { return base(g, {true, life_.grads_overlap_next}); });
      r.memory_rematerialized = alt.memory;
    }
    const std::vector<double> a2a = a2a_buffer_bytes(plans_, n_, m.grad_accum);
    for (int g = 0; g < n_; ++g) {
      double recv = 0;
      for (const auto& p : plans_) recv += p.received_tokens[g];
      resident_[g] = std::max(uniform_resident_, cost::activation_bytes(m, recv / m.grad_accum) + a2a[g]);
    }
  }

  // Layer l's moves from the current owners to `next`: each expert's parameters and optimizer state.
  void migration(int l, const Owners& next, collective::Coflow& moves) const {
    for (int e = 0; e < E_; ++e)
      if (next[l][e] != owners_[l][e]) moves.push_back({owners_[l][e], next[l][e], state_bytes_});
  }

  // Predicted MoE time of one layer under an ownership: the plan materialization would make from
  // the predicted loads (split evenly over sources), dispatched and timed as layer_estimate does;
  // the mean of the plan at the layer's overlap degree t and at t - 1. The automatic t of a layer
  // moves by one between iterations as the prediction drifts (on gpt-moe-s / dgx-h100-4node 4 of
  // 12 layers changed t from iteration 5 to 6), and the expert at the boundary then goes
  // unreplicated: a placement judged at t alone was predicted 1.4 ms/iteration faster and ran
  // 1.8 ms/iteration slower.
  double predicted_layer_time(const std::vector<double>& predicted, const std::vector<int>& owners) {
    const double token_bytes = ctx_.model.d_model * ctx_.model.precision.activation_bytes;
    std::vector<double> counts(static_cast<size_t>(n_) * E_);
    for (int g = 0; g < n_; ++g)
      for (int e = 0; e < E_; ++e) counts[static_cast<size_t>(g) * E_ + e] = predicted[e] / n_;
    const int t = overlap_degree(predicted, owners, cap_min_);
    double sum = 0;
    int k = 0;
    for (int tt = std::max(0, t - 1); tt <= t; ++tt, ++k) {
      DispatchResult d;
      dispatch(counts, n_, materialize(predicted, owners, node_of_, tt, cap_min_), node_of_, k_.dispatch, token_bytes, d);
      sum += layer_estimate(d);
    }
    return sum / k;
  }

  // Cost/benefit gate of a re-shard, per layer: a layer takes its new owners only when the predicted
  // time it saves per iteration, over the reshard_every iterations the placement will serve, beats
  // moving its experts with their optimizer states (timed alone). Layers are reverted to their
  // current owners worst ratio first, as long as every GPU's slot count stays within its capacity.
  void gate_reshard(const std::vector<std::vector<double>>& predicted, Owners& next) {
    const auto cap = slot_capacity(L_, E_, n_);
    std::vector<int> count(n_, 0);
    for (int l = 0; l < L_; ++l)
      for (int e = 0; e < E_; ++e) ++count[next[l][e]];
    struct Layer { int l; double gain, cost; };
    std::vector<Layer> layers;
    double gain_total = 0;
    for (int l = 0; l < L_; ++l) {
      if (next[l] == owners_[l]) continue;
      collective::Coflow moves;
      migration(l, next, moves);
      const double gain = predicted_layer_time(predicted[l], owners_[l]) - predicted_layer_time(predicted[l], next[l]);
      layers.push_back({l, gain, graph_.network().coflow_time(moves)});
    }
    // Worst first: lowest gain over the placement's lifetime per unit of migration time.
    std::stable_sort(layers.begin(), layers.end(), [&](const Layer& a, const Layer& b) {
      return a.gain * b.cost < b.gain * a.cost;
    });
    for (const Layer& x : layers) {
      if (x.gain * k_.reshard_every > x.cost) {
        gain_total += x.gain;
        continue;
      }
      std::vector<int> after = count;
      for (int e = 0; e < E_; ++e) --after[next[x.l][e]], ++after[owners_[x.l][e]];
      bool fits = true;
      for (int g = 0; g < n_; ++g) fits = fits && after[g] <= cap[g];
      if (!fits) {
        gain_total += x.gain;
        continue;
      }
      count = std::move(after);
      next[x.l] = owners_[x.l];
      ++layers_kept_;
    }
    double cost_total = 0;
    {
      collective::Coflow moves;
      for (int l = 0; l < L_; ++l) migration(l, next, moves);
      if (!moves.empty()) cost_total = graph_.network().coflow_time(moves);
    }
    if (gain_total * k_.reshard_every <= cost_total) {  // what is left does not pay for itself
      for (int l = 0; l < L_; ++l)
        if (next[l] != owners_[l]) ++layers_kept_;
      next = owners_;
      ++reshards_skipped_;
      return;
    }
    predicted_gain_ += gain_total;
  }

  const Context& ctx_;
  FssdpKnobs k_;
  int n_, L_, E_;
  MoeIterationGraph graph_;
  std::vector<LayerPlan> plans_;
  LoadHistory history_;
  cost::ParamCounts params_;
  double expert_bytes_ = 0, state_bytes_ = 0, bw_ = 0;
  double t_window_ = 0;      // attention forward: what the forward spAG hides behind
  double router_time_ = 0;   // router + permute after it, before the dispatch
  int formula_t_ = 0;        // the paper's floor(T_attn x bw / expert bytes), for comparison
  // Memory: one copy's gradient buffer, the copies' lifetimes, the GPU's memory, per GPU NCCL
  // buffers and the activations + all-to-all buffers the cap leaves room for (uniform load at first).
  double copy_grad_bytes_ = 0, gpu_memory_ = 0, uniform_resident_ = 0;
  cost::CopyLifetime life_;
  std::vector<double> nccl_, resident_;
  // This iteration's memory cap (plan_copies): per GPU the level, per layer the slots per GPU and
  // the copies it cut from the plan; the smallest level.
  std::vector<int> level_;
  std::vector<std::vector<int>> slots_;
  std::vector<int> cut_;
  int cap_min_ = 0;
  std::vector<int> resolved_t_, copies_;
  int moved_ = 0;
  std::vector<int> node_of_;
  int channels_ = 1;  // chains spanning nodes: collective::chain_channels
  Owners owners_;
  int iteration_ = 0, reshards_ = 0, calibrations_accepted_ = 0, layers_kept_ = 0, reshards_skipped_ = 0;
  double predicted_gain_ = 0;  // summed over re-shards: predicted MoE time saved per iteration
  // What the last simulate() planned, per layer: the final placement and the copies the calibration
  // stage added to it (empty when none), whose spAG follows the forward one; last_plan()'s cache.
  std::vector<collective::SparsePlacement> placed_, calibration_extra_;
  int planned_iteration_ = -1;
  mutable PlanSnapshot snapshot_;  // a strategy object is used by one thread at a time

  void build_snapshot() const {
    snapshot_.layers.assign(L_, {});
    for (int l = 0; l < L_; ++l) {
      const collective::SparsePlacement& p = placed_[l];
      const collective::SparsePlacement& extra = calibration_extra_[l];
      LayerPlanSnapshot& s = snapshot_.layers[l];
      s.chunk_bytes = expert_bytes_;
      s.broadcast = k_.broadcast;
      s.owner = p.owner;
      s.replicas = p.replicas;
      if (extra.owner.empty()) {
        chunk_transfers(p, expert_bytes_, node_of_, k_.broadcast, false, s.spag);
      } else {  // the forward spAG moved the predicted placement: the final one less the extra copies
        collective::SparsePlacement forward{p.owner, std::vector<std::vector<int>>(E_)};
        for (int e = 0; e < E_; ++e)
          std::set_difference(p.replicas[e].begin(), p.replicas[e].end(), extra.replicas[e].begin(),
                              extra.replicas[e].end(), std::back_inserter(forward.replicas[e]));
        chunk_transfers(forward, expert_bytes_, node_of_, k_.broadcast, false, s.spag);
        chunk_transfers(extra, expert_bytes_, node_of_, k_.broadcast, false, s.spag);
      }
      chunk_transfers(p, expert_bytes_, node_of_, k_.broadcast, true, s.sprs);
      s.dispatch_bytes = plans_[l].dispatch_bytes;
    }
    snapshot_.iteration = planned_iteration_;
  }
};

}  // namespace

FssdpKnobs parse_fssdp_knobs(const std::map<std::string, std::string>& knobs) {
  FssdpKnobs k;
  k.window = static_cast<int>(knob_int(knobs, "fssdp", "window", 5, 1, 100000));
  auto od = knobs.find("overlap_degree");
  if (od != knobs.end() && od->second != "auto")
    k.overlap_degree = static_cast<int>(knob_int(knobs, "fssdp", "overlap_degree", 0, 0, 1 << 20));
  auto mb = knobs.find("memory_budget");
  if (mb != knobs.end() && mb->second != "auto") {
    auto v = parse_quantity(mb->second, Dimension::kBytes);
    if (!v)
      throw InputError({"--strategy", 0, 0}, "fssdp:memory_budget",
                       fmt::format("expected auto or a size such as 8GiB, got '{}'", mb->second));
    k.memory_budget = *v;
  }
  k.rematerialize = knob_bool(knobs, "fssdp", "rematerialize", false);
  k.calibrate = knob_bool(knobs, "fssdp", "calibrate", false);
  k.heterogeneous = knob_bool(knobs, "fssdp", "heterogeneous", true);
  k.reshard_every = static_cast<int>(knob_int(knobs, "fssdp", "reshard_every", 100, 1, 1 << 30));
  k.dispatch = knob_choice(knobs, "fssdp", "dispatch", "topology", {"topology", "even"}) == "even" ? DispatchRule::kEven
                                                                                                   : DispatchRule::kTopology;
  k.broadcast = knob_choice(knobs, "fssdp", "broadcast", "chain", {"chain", "direct"}) == "direct"
                    ? collective::BroadcastAlgo::kDirect
                    : collective::BroadcastAlgo::kChain;
  k.single_queue = knob_choice(knobs, "fssdp", "comm_queue", "single", {"single", "separate"}) == "single";
  return k;
}

std::unique_ptr<Strategy> make_fssdp(const Context& ctx, const std::map<std::string, std::string>& knobs) {
  return std::make_unique<Fssdp>(ctx, parse_fssdp_knobs(knobs));
}

}  // namespace hs::strategy
