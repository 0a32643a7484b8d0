#include "strategy/fssdp.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <fmt/format.h>

#include "collective/sparse_plan.hpp"
#include "strategy/knobs.hpp"
#include "strategy/load_history.hpp"
#include "strategy/materialization.hpp"
#include "strategy/moe_iteration.hpp"
#include "strategy/sharding.hpp"
#include "util/units.hpp"

namespace hs::strategy {

namespace {

struct FssdpKnobs {
  int window = 5;
  int overlap_degree = -1;       // -1 = auto
  double memory_budget = -1;     // bytes for materialization buffers; -1 = auto (free memory)
  bool rematerialize = false;
  bool calibrate = false;
  bool heterogeneous = true;
  int reshard_every = 100;
  DispatchRule dispatch = DispatchRule::kTopology;
  collective::BroadcastAlgo broadcast = collective::BroadcastAlgo::kChain;
  bool single_queue = true;      // comm_queue=single: sparse collectives share the all-to-all's queue
};

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
    owners_ = homogeneous_owners(L_, E_, n_);
    t_window_ = ctx.compute.attention_forward().value();
    bw_ = sparse_bandwidth(ctx.topo);
    formula_t_ = static_cast<int>(std::floor(t_window_ * bw_ / expert_bytes_));
    router_time_ = ctx.compute.router_and_permute(static_cast<double>(m.tokens_per_micro_batch())).value();
    // Memory capacity m: free memory after owned shards (balanced: L*E/N experts), dense state,
    // uniform-load activations and the reserve, divided by one copy's params + grads.
    const double per_copy = params_.per_expert * (m.precision.param_bytes + m.precision.grad_bytes);
    double free_bytes = k.memory_budget;
    if (free_bytes < 0) {
      const double owned = static_cast<double>(L_) * E_ / n_ * params_.per_expert + params_.dense;
      const double used = owned * m.precision.state_bytes_per_param() +
                          cost::activation_bytes(m, static_cast<double>(m.tokens_per_micro_batch()) * m.top_k * L_) +
                          cost::kRuntimeReserveBytes;
      free_bytes = std::max(0.0, ctx.topo.gpu_model().memory.value() - used);
    }
    const double copies = free_bytes / per_copy / (k.rematerialize ? 1.0 : static_cast<double>(L_));
    m_cap_ = static_cast<int>(std::min<double>(E_, std::floor(copies)));
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
    r.push_back(resolved_value("memory_capacity_m", m_cap_));
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
    const auto actual = global_loads(loads.total, L_, n_, E_);
    // What the calibration stage sees after the gate, where it runs: the iteration's loads, or with
    // micro-batches the first micro-batch's (the placement it settles then serves every micro-batch),
    // scaled by grad_accum to an iteration's worth so its estimates compare as without micro-batches.
    std::vector<double> gate_counts;
    if (k_.calibrate && !loads.micro.empty()) {
      gate_counts.assign(loads.micro[0].begin(), loads.micro[0].end());
      for (double& c : gate_counts) c *= static_cast<double>(loads.micro.size());
    }
    const std::span<const double> gate = gate_counts.empty() ? loads.total : std::span<const double>(gate_counts);
    const auto gate_global = gate_counts.empty() ? std::vector<std::vector<double>>{} : global_loads(gate, L_, n_, E_);
    const auto& gate_actual = gate_counts.empty() ? actual : gate_global;
    std::vector<std::vector<double>> predicted(L_);
    for (int l = 0; l < L_; ++l) predicted[l] = history_.mean(l, E_);
    IterationExtras extras;
    // Heterogeneous re-sharding: first once the prediction window is full (loads are known), then
    // every R iterations after that.
    if (k_.heterogeneous && iteration_ >= k_.window && (iteration_ - k_.window) % k_.reshard_every == 0) {
      // Overlappable = experts that will actually be materialized: top-min(t, m) per layer.
      std::vector<int> over(L_);
      for (int l = 0; l < L_; ++l) over[l] = std::min({overlap_degree(l, predicted[l]), m_cap_, E_});
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
      }
    }
    std::vector<double> owned(n_, 0.0);
    for (int l = 0; l < L_; ++l)
      for (int e = 0; e < E_; ++e) owned[owners_[l][e]] += 1;
    std::vector<double> buffer_copies(n_, 0.0), max_layer_copies(n_, 0.0);
    resolved_t_.assign(L_, 0);
    copies_.assign(L_, 0);
    placed_.resize(L_);
    calibration_extra_.resize(L_);
    for (int l = 0; l < L_; ++l) {
      const int t = overlap_degree(l, predicted[l]);
      resolved_t_[l] = t;
      collective::SparsePlacement p = materialize(predicted[l], owners_[l], node_of_, t, m_cap_);
      const auto seen = layer_counts(gate, l, n_, E_);  // the counts the calibration judges by
      DispatchResult d;
      dispatch(seen, n_, p, node_of_, k_.dispatch, token_bytes, d);
      LayerPlan& plan = plans_[l];
      // The forward spAG moves the predicted plan; calibration copies travel in their own task.
      plan.spag_flows = collective::sparse_allgather(p, expert_bytes_, node_of_, k_.broadcast);
      plan.spag = graph_.network().coflow_time(plan.spag_flows);
      calibration_extra_[l] = {};
      plan.calibration_spag = 0;
      plan.calibration_flows.clear();
      if (k_.calibrate) {
        // Remaining free slots per GPU after the predicted plan.
        std::vector<int> free_slots(n_, m_cap_);
        for (int e = 0; e < E_; ++e)
          for (int g : p.replicas[e]) --free_slots[g];
        collective::SparsePlacement q = p;
        if (extend_placement(q, gate_actual[l], node_of_, std::max(t, 1), free_slots) > 0) {
          DispatchResult dq;
          dispatch(seen, n_, q, node_of_, k_.dispatch, token_bytes, dq);
          collective::SparsePlacement extra{q.owner, std::vector<std::vector<int>>(E_)};
          for (int e = 0; e < E_; ++e)
            std::set_difference(q.replicas[e].begin(), q.replicas[e].end(), p.replicas[e].begin(), p.replicas[e].end(),
                                std::back_inserter(extra.replicas[e]));
          auto extra_flows = collective::sparse_allgather(extra, expert_bytes_, node_of_, k_.broadcast);
          const double extra_spag = graph_.network().coflow_time(extra_flows);
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
      else route(layer_counts(loads.total, l, n_, E_), plan);
      route_micro_batches(loads, l, n_, E_, plan, route);
      // spRS returns the gradients of every copy, calibration ones included.
      plan.sprs_flows = collective::sparse_reduce_scatter(p, expert_bytes_, node_of_, k_.broadcast);
      plan.sprs = graph_.network().coflow_time(plan.sprs_flows);
      std::vector<double> per_layer(n_, 0.0);
      for (int e = 0; e < E_; ++e)
        for (int g : p.replicas[e]) per_layer[g] += 1;
      plan.copy_bytes.assign(n_, 0.0);
      for (int g = 0; g < n_; ++g) plan.copy_bytes[g] = per_layer[g] * expert_bytes_;
      copies_[l] = static_cast<int>(std::accumulate(per_layer.begin(), per_layer.end(), 0.0));
      for (int g = 0; g < n_; ++g) {
        buffer_copies[g] += per_layer[g];
        max_layer_copies[g] = std::max(max_layer_copies[g], per_layer[g]);
      }
      placed_[l] = std::move(p);  // for last_plan()
    }
    for (int g = 0; g < n_; ++g) owned[g] = params_.dense + owned[g] * params_.per_expert;
    extras.optimizer_params = owned;
    IterationResult r = graph_.run(plans_, extras, take_timeline());
    // Memory of the worst GPU.
    const double per_copy = params_.per_expert * (m.precision.param_bytes + m.precision.grad_bytes);
    double worst = -1;
    for (int g = 0; g < n_; ++g) {
      cost::MemoryBreakdown mb = owned_state(m, owned[g]);
      mb.buffers = (k_.rematerialize ? max_layer_copies[g] : buffer_copies[g]) * per_copy;
      double recv = 0;
      for (int l = 0; l < L_; ++l) recv += plans_[l].received_tokens[g];
      mb.activations = cost::activation_bytes(m, recv / m.grad_accum);
      if (mb.total() > worst) worst = mb.total(), r.memory = mb, r.memory_gpu = g;
    }
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

  // Overlap degree of layer l: the knob, or (auto) strategy/materialization.hpp's plan_overlap_degree
  // against the attention forward that precedes the layer.
  int overlap_degree(int l, const std::vector<double>& predicted) { return overlap_degree(predicted, owners_[l]); }
  int overlap_degree(const std::vector<double>& predicted, const std::vector<int>& owners) {
    if (k_.overlap_degree >= 0) return k_.overlap_degree;
    return plan_overlap_degree(predicted, owners, node_of_, m_cap_, expert_bytes_, k_.broadcast, graph_.network(),
                               t_window_);
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
    const int t = overlap_degree(predicted, owners);
    double sum = 0;
    int k = 0;
    for (int tt = std::max(0, t - 1); tt <= t; ++tt, ++k) {
      DispatchResult d;
      dispatch(counts, n_, materialize(predicted, owners, node_of_, tt, m_cap_), node_of_, k_.dispatch, token_bytes, d);
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
  int m_cap_ = 0;
  std::vector<int> resolved_t_, copies_;
  int moved_ = 0;
  std::vector<int> node_of_;
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

std::unique_ptr<Strategy> make_fssdp(const Context& ctx, const std::map<std::string, std::string>& knobs) {
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
  return std::make_unique<Fssdp>(ctx, k);
}

}  // namespace hs::strategy
