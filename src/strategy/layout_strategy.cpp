#include "strategy/layout_strategy.hpp"

#include <fmt/format.h>
#include <string>

#include "cost/allocator_slack.hpp"
#include "cost/layout_memory.hpp"
#include "strategy/capacity.hpp"
#include "strategy/policy/ep/ep.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/graph/layout_iteration.hpp"
#include "strategy/load_history.hpp"

namespace hs::strategy {

namespace {

// EP inside each stage: the GPUs of the stage that holds MoE layer l route its tokens (their
// trace rows, / tp: with sequence parallelism a GPU routes its s*b/tp tokens of the micro-batch;
// with a trace's micro-batch axis each micro-batch its own rows),
// every other GPU routes none; experts are blocks of E/ep on each EP group of ep consecutive GPUs.
// The oracle (balanced = true): the same, but every GPU of the stage computes the stage's mean load
// and every source sends an equal share of its assignments to each GPU of its EP group
// (balance_ep_layer over the stage's GPUs).
class LayoutExpertParallel final : public LayoutStrategyBase {
 public:
  LayoutExpertParallel(const Context& ctx, const workload::ParallelLayout& layout, bool balanced)
      : LayoutStrategyBase(ctx, layout), balanced_(balanced) {}

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const int n = ctx_.topo.num_gpus(), E = m.experts, L = m.moe_layers();
    const double token_bytes = m.d_model * m.precision.activation_bytes;
    const TokenCapacity capacity = token_capacity(m, layout_.tp);
    std::vector<double> rows;
    // Layer after layer into one dispatch matrix (a2a_): the graph takes each layer's all-to-alls
    // as soon as it is routed, so one n x n matrix lives instead of one per MoE layer.
    TimelineSink* timeline = take_timeline();
    moves_.resize(L);
    for (int l = 0; l < L; ++l) {
      plans_[l].dispatch_bytes.swap(a2a_);
      // `cap`: the capacity of `counts` (strategy/capacity.hpp), an iteration's or a micro-batch's.
      auto route = [&](std::span<const double> counts, LayerPlan& plan, double cap) {
        // One stage without TP (every run without --layout): every GPU routes its own rows, as given.
        const bool own = layout_.pp == 1 && layout_.tp == 1;
        const double* c = own ? counts.data() : stage_rows(layout_, stage_[l], counts, n, E, rows).data();
        plan.routed_tokens = plan.dropped_tokens = 0;
        if (!capacity.dropless()) {  // one instance of each expert per EP group: the GPU's own capacity
          if (own) rows.assign(counts.begin(), counts.end());
          const CapacityTally t = cut_to_capacity(rows, E, cap);
          plan.routed_tokens = t.routed, plan.dropped_tokens = t.dropped;
          c = rows.data();
        }
        // The oracle spreads the tokens EP keeps.
        if (balanced_)
          balance_ep_layer(c, n, E, layout_.ep, token_bytes, layout_.stage_gpus(stage_[l]), plan);
        else
          route_ep_layer(c, n, E, layout_.ep, token_bytes, {}, plan);
      };
      route(loads.layer(l, n, E), plans_[l], capacity.iteration());
      // A trace with a micro-batch axis: each micro-batch routes its own counts (none: cleared).
      route_micro_batches(loads, l, n, E, plans_[l],
                          [&](std::span<const double> counts, LayerPlan& plan) { route(counts, plan, capacity.micro_batch); });
      moves_[l] = layer_moves_tokens(plans_[l], n);
      graph_.take_layer(l, plans_[l], timeline != nullptr);
      plans_[l].dispatch_bytes.swap(a2a_);
    }
    IterationResult r = graph_.run(plans_, {}, {}, timeline);
    set_layout_memory(m, layout_, stage_, plans_, nccl_, r, 0, {}, moves_);
    return r;
  }

  std::vector<ResolvedSetting> resolved() const override { return layout_resolved(layout_, graph_.stats()); }

 private:
  bool balanced_;
  std::vector<double> a2a_;  // the dispatch matrix every layer is routed into in turn
  std::vector<char> moves_;  // [MoE layer] its all-to-all moves tokens between GPUs
};

}  // namespace

LayoutStrategyBase::LayoutStrategyBase(const Context& ctx, const workload::ParallelLayout& layout)
    : ctx_(ctx), layout_(layout), graph_(ctx, layout), plans_(ctx.model.moe_layers()),
      nccl_(layout_nccl_bytes(ctx.topo, layout, true, false)) {
  for (int l = 0; l < ctx.model.moe_layers(); ++l)
    stage_.push_back(layout.stage_of_block(ctx.model.moe_layer_ids[l], ctx.model.layers, ctx.model.mtp_layers));
}

std::span<const double> stage_rows(const workload::ParallelLayout& layout, int stage, std::span<const double> counts,
                                   int n, int E, std::vector<double>& rows) {
  rows.assign(static_cast<size_t>(n) * E, 0.0);
  const size_t lo = static_cast<size_t>(stage) * layout.stage_size() * E, hi = lo + static_cast<size_t>(layout.stage_size()) * E;
  for (size_t i = lo; i < hi; ++i) rows[i] = counts[i] / layout.tp;
  return rows;
}

std::vector<HeldLayer> held_layers(const workload::ParallelLayout& layout, std::span<const int> stage, int x) {
  const int s = layout.pp_rank(x), mirror = layout.pp - 1 - s;
  const bool dual = layout.piece_copies() == 2 && mirror != s;
  std::vector<HeldLayer> held;
  for (int l = 0; l < static_cast<int>(stage.size()); ++l) {
    if (stage[l] == s) held.push_back({l, x});
    else if (dual && stage[l] == mirror) held.push_back({l, layout.mirror_rank(x)});
  }
  return held;
}

void set_layout_memory(const workload::ModelSpec& m, const workload::ParallelLayout& layout,
                       const std::vector<int>& stage, std::span<const LayerPlan> plans, std::span<const double> nccl,
                       IterationResult& r, int reserve_slots,
                       const std::function<void(int x, cost::MemoryBreakdown&)>& add, std::span<const char> given) {
  const double M = m.grad_accum;
  const int n = static_cast<int>(nccl.size());
  std::vector<char> moves(given.begin(), given.end());
  if (given.empty()) {
    moves.resize(plans.size());
    for (size_t l = 0; l < plans.size(); ++l) moves[l] = layer_moves_tokens(plans[l], n);
  }
  for (int s = 0; s < layout.pp; ++s) {
    const cost::StageMemory terms(m, layout, s);  // once for the stage's GPUs
    for (int x : layout.stage_gpus(s)) {
      double received = 0, largest = 0, extra = 0;
      bool a2a = false;  // some layer of the stage issues an all-to-all
      for (const auto [l, y] : held_layers(layout, stage, x)) {
        extra += reserve_slots;
        received += plans[l].received_tokens[y] / M;
        if (moves[l]) largest = std::max(largest, plans[l].received_tokens[y] / M), a2a = true;
      }
      auto mem = cost::layout_memory(m, layout, terms, received, largest, extra);
      if (!a2a) mem.comm_buffers = 0;
      mem.nccl = nccl[x];
      if (add) add(x, mem);
      cost::add_allocator_slack(mem, m.allocator_slack);
      if (r.memory_gpu < 0 || mem.total() > r.memory.total()) r.memory = mem, r.memory_gpu = x;
    }
  }
}

std::vector<ResolvedSetting> layout_resolved(const workload::ParallelLayout& layout, const LayoutStats& st) {
  std::vector<ResolvedSetting> r = {
      resolved_text("layout", workload::describe(layout)), resolved_value("pp_bubble", st.bubble),
      resolved_value("tp_comm_on_path_ms", st.tp_comm * 1e3), resolved_value("pp_comm_on_path_ms", st.pp_comm * 1e3),
      resolved_value("dp_comm_on_path_ms", st.dp_comm * 1e3), resolved_value("dp_comm_ms", st.dp_comm_total * 1e3),
      resolved_text("dp_buckets", fmt::format("dense {}, expert {} (stage 0)", st.dense_buckets, st.expert_buckets))};
  if (layout.pp > 1)  // stage 0's compute stream by schedule op (graph/pipeline_phases.hpp)
    r.push_back(resolved_text(
        "pp_phases_ms", fmt::format("stage 0: 1F {:.2f}, 1B {:.2f}, 1W {:.2f}, 1F1B {:.2f}, bubble {:.2f}, after {:.2f}",
                                    st.phases.forward * 1e3, st.phases.backward * 1e3, st.phases.weight * 1e3,
                                    st.phases.paired * 1e3, st.phases.idle * 1e3, st.phases.after * 1e3)));
  return r;
}

std::unique_ptr<Strategy> make_layout_strategy(const StrategySpec& spec, const Context& ctx,
                                               const workload::ParallelLayout& layout) {
  return make_strategy(spec, ctx, layout);
}

void check_ep_size_knob(const StrategySpec& spec, const workload::ParallelLayout& layout) {
  auto it = spec.knobs.find("ep_size");
  if (it == spec.knobs.end() || it->second == "0" || std::stoi(it->second) == layout.ep) return;
  throw InputError({"--strategy", 0, 0}, spec.full + ".ep_size",
                   fmt::format("ep_size {} differs from the layout's ep {}: the EP group is the layout's ep "
                               "(drop ep_size or set ep in --layout)", it->second, layout.ep));
}

std::unique_ptr<Strategy> make_layout_ep(const StrategySpec& spec, const Context& ctx,
                                         const workload::ParallelLayout& layout) {
  check_ep_size_knob(spec, layout);
  return std::make_unique<LayoutExpertParallel>(ctx, layout, false);
}

std::unique_ptr<Strategy> make_layout_oracle(const StrategySpec& spec, const Context& ctx,
                                             const workload::ParallelLayout& layout) {
  check_ep_size_knob(spec, layout);
  return std::make_unique<LayoutExpertParallel>(ctx, layout, true);
}

}  // namespace hs::strategy
