#include "strategy/layout_strategy.hpp"

#include <fmt/format.h>

#include "cost/layout_memory.hpp"
#include "strategy/ep.hpp"
#include "strategy/layout_iteration.hpp"
#include "strategy/load_history.hpp"

namespace hs::strategy {

namespace {

// EP inside each stage: the GPUs of the stage that holds MoE layer l route its tokens (their
// trace rows, / tp: with sequence parallelism a GPU routes its s*b/tp tokens of the micro-batch),
// every other GPU routes none; experts are blocks of E/ep on each EP group of ep consecutive GPUs.
class LayoutExpertParallel final : public Strategy {
 public:
  LayoutExpertParallel(const Context& ctx, const workload::ParallelLayout& layout)
      : ctx_(ctx), layout_(layout), graph_(ctx, layout), plans_(ctx.model.moe_layers()) {
    for (int l = 0; l < ctx.model.moe_layers(); ++l)
      for (int s = 0; s < layout.pp; ++s) {
        const auto [first, last] = layout.stage_blocks(s, ctx.model.layers);
        if (ctx.model.moe_layer_ids[l] >= first && ctx.model.moe_layer_ids[l] < last) stage_.push_back(s);
      }
  }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const int n = ctx_.topo.num_gpus(), E = m.experts, L = m.moe_layers(), S = layout_.stage_size();
    const double token_bytes = m.d_model * m.precision.activation_bytes;
    std::vector<double> rows;
    for (int l = 0; l < L; ++l) {
      const auto counts = layer_counts(loads.total, l, n, E);
      rows.assign(static_cast<size_t>(n) * E, 0.0);
      const size_t lo = static_cast<size_t>(stage_[l]) * S * E, hi = lo + static_cast<size_t>(S) * E;
      for (size_t i = lo; i < hi; ++i) rows[i] = counts[i] / layout_.tp;
      route_ep_layer(rows.data(), n, E, layout_.ep, token_bytes, {}, plans_[l]);
    }
    IterationResult r = graph_.run(plans_);
    // Memory: the worst GPU of any stage, its routed tokens per micro-batch over its stage's layers.
    const double M = m.grad_accum;
    for (int s = 0; s < layout_.pp; ++s)
      for (int x : layout_.stage_gpus(s)) {
        double received = 0, largest = 0;
        for (int l = 0; l < L; ++l)
          if (stage_[l] == s) {
            received += plans_[l].received_tokens[x] / M;
            largest = std::max(largest, plans_[l].received_tokens[x] / M);
          }
        const auto mem = cost::layout_memory(m, layout_, s, received, largest);
        if (r.memory_gpu < 0 || mem.total() > r.memory.total()) r.memory = mem, r.memory_gpu = x;
      }
    return r;
  }

  std::vector<ResolvedSetting> resolved() const override { return layout_resolved(layout_, graph_.stats()); }

 private:
  const Context& ctx_;
  workload::ParallelLayout layout_;
  LayoutIterationGraph graph_;
  std::vector<LayerPlan> plans_;
  std::vector<int> stage_;  // [MoE layer] -> pipeline stage
};

}  // namespace

std::vector<ResolvedSetting> layout_resolved(const workload::ParallelLayout& layout, const LayoutStats& st) {
  return {resolved_text("layout", workload::describe(layout)), resolved_value("pp_bubble", st.bubble),
          resolved_value("tp_comm_on_path_ms", st.tp_comm * 1e3), resolved_value("pp_comm_on_path_ms", st.pp_comm * 1e3),
          resolved_value("dp_comm_on_path_ms", st.dp_comm * 1e3)};
}

std::unique_ptr<Strategy> make_layout_strategy(const StrategySpec& spec, const Context& ctx,
                                               const workload::ParallelLayout& layout) {
  if (spec.name == "fssdp") return make_layout_fssdp(spec, ctx, layout);
  if (spec.name != "ep")
    throw InputError({"--strategy", 0, 0}, spec.full,
                     fmt::format("strategy {} does not run under --layout yet (built: ep, fssdp)", spec.name));
  if (!spec.knobs.empty())
    throw InputError({"--strategy", 0, 0}, spec.full, "under --layout, EP's group size is the layout's ep: drop the knobs");
  return std::make_unique<LayoutExpertParallel>(ctx, layout);
}

}  // namespace hs::strategy
