// FasterMoE's dynamic shadowing under a parallel layout: each EP group of each pipeline stage
// shadows on its own, as `fastermoe` does over its EP groups (strategy/policy/fastermoe/fastermoe.hpp).
//
// Per MoE layer l (held by stage s), micro-batch and EP group k of s (ep consecutive GPUs, experts
// in EP's blocks of E / ep):
//   policy: FastMoE's (ShadowPlanner, fastermoe_shadow_policy) on the group's counts of the
//     micro-batch (its GPUs' trace rows / tp, each micro-batch its own with a trace that records
//     them, else the iteration's / grad_accum): experts by count, the next shadowed while
//     3 comp B + 4 feat B + shadows x broadcast keeps falling;
//   routing: EP's inside the group, a shadowed expert's tokens computed on their own GPU;
//   forward: after the dispatch the shadows' parameters are broadcast from their owner to the
//     group's other GPUs (chains, on the all-to-all stream, beside the owners' expert GEMMs); each GPU
//     copies them into its expert buffer and computes its tokens of them; the combine waits for the
//     regular experts only (LayoutSparse::shadow);
//   backward: the shadows' backward and gradient copy-out first, their reduce to the owners on the
//     sparse stream, which the regular experts' backward waits for.
// The stage's groups share one task per collective (as their all-to-alls do).
// Memory: the layout's, plus on each GPU the shadow parameters of its stage's layers, held from a
// micro-batch's forward to its backward: the micro-batch that holds the most, times the micro-batches
// the stage keeps in flight (cost::in_flight_micro_batches), and one expert's gradient (copy_grads)
// while a shadow's backward runs. NCCL buffers are not counted under a layout (as for every strategy).
// Knobs as `fastermoe`'s; ep_size, when given, must be the layout's ep (the group).
#include <fmt/format.h>

#include "cost/layout_memory.hpp"
#include "strategy/policy/fastermoe/fastermoe.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/graph/layout_iteration.hpp"
#include "strategy/layout_strategy.hpp"
#include "strategy/load_history.hpp"
#include "util/diagnostics.hpp"

namespace hs::strategy {

namespace {

class LayoutFasterMoe final : public Strategy {
 public:
  LayoutFasterMoe(const Context& ctx, const workload::ParallelLayout& layout, const FasterMoeKnobs& k)
      : ctx_(ctx), layout_(layout), trigger_(k.trigger),
        graph_(ctx, layout, LayoutSparse{false, false, k.trigger}), n_(ctx.topo.num_gpus()),
        L_(ctx.model.moe_layers()), E_(ctx.model.experts), plans_(L_),
        shadows_(ctx, k, layout.ep, static_cast<double>(ctx.model.tokens_per_micro_batch()) / layout.tp),
        shadowed_(L_, 0), shadowed_max_(L_, 0) {
    for (int l = 0; l < L_; ++l) stage_.push_back(layout.stage_of_block(ctx.model.moe_layer_ids[l], ctx.model.layers, ctx.model.mtp_layers));
    for (int x = 0; x < n_; ++x) shadow_rings_[x] -= nccl_[x];
  }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const int groups = n_ / layout_.ep;
    const int variants = loads.micro.empty() ? 1 : static_cast<int>(loads.micro.size());
    // Shadow parameters a GPU of each group (all stages' groups) keeps from a micro-batch's forward
    // to its backward, over its stage's layers, per variant.
    std::vector<std::vector<double>> held(variants, std::vector<double>(groups, 0.0));
    std::vector<double> rows;
    auto routed = [&](std::span<const double> counts, int l) { return stage_rows(layout_, stage_[l], counts, n_, E_, rows); };
    for (int l = 0; l < L_; ++l) {
      LayerPlan& p = plans_[l];
      if (loads.micro.empty()) {
        shadowed_[l] = shadows_.plan(routed(loads.layer(l, n_, E_), l), m.grad_accum, p, held[0]);
        p.micro.clear();
      } else {
        p.micro.resize(variants);
        for (int mb = 0; mb < variants; ++mb) {  // shadowed_ ends as the last micro-batch's
          shadowed_[l] = shadows_.plan(routed(layer_counts(loads.micro[mb], l, n_, E_), l), 1, p.micro[mb], held[mb]);
          shadowed_max_[l] = std::max(shadowed_max_[l], shadowed_[l]);
        }
        shadows_.sum_routing(p);
      }
      shadowed_max_[l] = std::max(shadowed_max_[l], shadowed_[l]);
    }
    IterationResult r = graph_.run(plans_, {}, {}, take_timeline());
    // Per GPU, the most over variants: its group's, and under DualPipe its mirror's group's too (it
    // holds the second copy of the mirrored stage's layers, and their shadows).
    std::vector<double> most(n_, 0.0);
    for (const auto& h : held)
      for (int x = 0; x < n_; ++x) {
        const int y = layout_.mirror_rank(x);
        most[x] = std::max(most[x], h[x / layout_.ep] + (y != x ? h[y / layout_.ep] : 0.0));
      }
    set_layout_memory(m, layout_, stage_, plans_, nccl_, r, 0, [&](int x, cost::MemoryBreakdown& b) {
      const double shadow = most[x];
      b.copy_params = shadow * cost::in_flight_micro_batches(layout_, layout_.pp_rank(x), m.grad_accum);
      b.copy_grads = shadow > 0 ? shadows_.grad_bytes() : 0.0;
      if (shadow > 0) b.nccl += shadow_rings_[x];
    });
    return r;
  }

  std::vector<ResolvedSetting> resolved() const override {
    auto r = layout_resolved(layout_, graph_.stats());
    r.push_back(resolved_text("trigger", trigger_ ? "on" : "off"));
    r.push_back(resolved_value("ep_size", layout_.ep));
    for (auto& x : shadows_.resolved_model()) r.push_back(std::move(x));
    if (trigger_) {
      r.push_back(resolved_list("shadowed_per_layer", shadowed_));
      r.push_back(resolved_list("shadowed_max_per_layer", shadowed_max_));
    }
    return r;
  }

 private:
  const Context& ctx_;
  workload::ParallelLayout layout_;
  bool trigger_;
  LayoutIterationGraph graph_;
  int n_, L_, E_;
  std::vector<LayerPlan> plans_;
  ShadowPlanner shadows_;
  std::vector<int> stage_;                    // [MoE layer] -> pipeline stage
  // [gpu] NCCL buffers: the layout's communicators, and the EP group's rings a group that shadows
  // opens for its broadcasts and reduces (as without a layout).
  std::vector<double> nccl_ = layout_nccl_bytes(ctx_.topo, layout_, true, false);
  std::vector<double> shadow_rings_ = layout_nccl_bytes(ctx_.topo, layout_, true, true);
  std::vector<int> shadowed_, shadowed_max_;  // [layer] shadows over the stage's groups: last, most
};

}  // namespace

std::unique_ptr<Strategy> make_layout_fastermoe(const StrategySpec& spec, const Context& ctx,
                                                const workload::ParallelLayout& layout) {
  check_ep_size_knob(spec, layout);
  return std::make_unique<LayoutFasterMoe>(ctx, layout, parse_fastermoe_knobs(KnobValues(spec)));
}

}  // namespace hs::strategy
