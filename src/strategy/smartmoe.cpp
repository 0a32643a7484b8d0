#include "strategy/smartmoe.hpp"

#include <algorithm>
#include <deque>
#include <fmt/format.h>
#include <numeric>

#include "collective/sparse_plan.hpp"
#include "strategy/fssdp.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/load_history.hpp"
#include "strategy/materialization.hpp"
#include "strategy/moe_iteration.hpp"
#include "strategy/sharding.hpp"

namespace hs::strategy {

std::vector<int> lpt_placement(const std::vector<double>& pred, int gpus, int slots, int rotate) {
  const int E = static_cast<int>(pred.size());
  std::vector<int> order(E), placement(E, 0);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return pred[a] > pred[b]; });
  std::vector<double> gpu_load(gpus, 0.0);
  std::vector<int> used(gpus, 0);
  for (int e : order) {
    int best = -1;
    // Ties go to GPUs in an order rotated by `rotate` (the layer), so one GPU does not collect every
    // layer's hottest expert (and its activations).
    for (int k = 0; k < gpus; ++k) {
      const int g = (k + rotate) % gpus;
      if (used[g] < slots && (best < 0 || gpu_load[g] < gpu_load[best])) best = g;
    }
    placement[e] = best;
    ++used[best];
    gpu_load[best] += pred[e];
  }
  return placement;
}

namespace {

class SmartMoe final : public Strategy {
 public:
  SmartMoe(const Context& ctx, int period, int window)
      : ctx_(ctx), n_(ctx.topo.num_gpus()), L_(ctx.model.moe_layers()), E_(ctx.model.experts), period_(period),
        graph_(ctx, options(ctx)), plans_(L_), history_(L_, window) {
    const auto& m = ctx.model;
    params_ = cost::count_params(m);
    state_bytes_ = params_.per_expert * (m.precision.param_bytes + m.precision.master_bytes + m.precision.optimizer_bytes());
    owners_ = homogeneous_owners(L_, E_, n_);
    for (int g = 0; g < n_; ++g) node_of_.push_back(ctx.topo.node_of(g));
    static_ = owned_state(m, balanced_owned_params(m, n_));
    nccl_ = ep_nccl_bytes(ctx.topo, n_, false);
  }

  static MoeGraphOptions options(const Context& ctx) {
    MoeGraphOptions o;
    o.migrations = true;
    o.optimizer_params_per_gpu = balanced_owned_params(ctx.model, ctx.topo.num_gpus());
    return o;
  }

  bool stateless() const override { return false; }

  IterationResult simulate(const IterationCounts& loads) override {
    const auto& m = ctx_.model;
    const auto actual = global_loads(loads.total(), L_, n_, E_);
    IterationExtras extras;
    if (iteration_ > 0 && iteration_ % period_ == 0) {
      collective::Coflow moves;
      Owners next = owners_;
      const int slots = E_ / n_;
      for (int l = 0; l < L_; ++l) {
        next[l] = lpt_placement(history_.mean(l, E_), n_, slots, l);
        for (int e = 0; e < E_; ++e)
          if (next[l][e] != owners_[l][e]) moves.push_back({owners_[l][e], next[l][e], state_bytes_});
      }
      if (!moves.empty()) {
        ++replans_;
        moved_ += static_cast<int>(moves.size());
        extras.reshard = graph_.network().coflow_time(moves);
        extras.reshard_flows = std::move(moves);
        owners_ = std::move(next);
      }
    }
    const double token_bytes = m.d_model * m.precision.activation_bytes;
    for (int l = 0; l < L_; ++l) {
      // The placement holds for the whole iteration; every micro-batch is routed through it.
      const collective::SparsePlacement p{owners_[l], std::vector<std::vector<int>>(E_)};
      auto route = [&](std::span<const double> counts, LayerPlan& plan) {
        DispatchResult d;
        dispatch(counts, n_, p, node_of_, DispatchRule::kTopology, token_bytes, d);
        take_dispatch(std::move(d), plan);
      };
      route(loads.layer(l, n_, E_), plans_[l]);
      route_micro_batches(loads, l, n_, E_, plans_[l], route);
    }
    IterationResult r = graph_.run(plans_, extras, take_timeline());
    set_worst_memory(r, plans_, n_, m, static_, nccl_);
    history_.push(actual);
    ++iteration_;
    return r;
  }

  std::vector<ResolvedSetting> resolved() const override {
    return {resolved_value("placement_changes", replans_), resolved_value("experts_moved", moved_),
            resolved_text("dense_allreduce", graph_.dense_allreduce_algo())};
  }

 private:
  int replans_ = 0, moved_ = 0;
  const Context& ctx_;
  int n_, L_, E_, period_;
  MoeIterationGraph graph_;
  std::vector<LayerPlan> plans_;
  LoadHistory history_;
  cost::ParamCounts params_;
  double state_bytes_ = 0;
  Owners owners_;
  std::vector<int> node_of_;
  cost::MemoryBreakdown static_;
  std::vector<double> nccl_;  // per GPU
  int iteration_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_smartmoe(const Context& ctx, const std::map<std::string, std::string>& knobs) {
  const int n = ctx.topo.num_gpus(), e = ctx.model.experts;
  if (e % n != 0 || e / n < 2)
    throw InputError({"--strategy", 0, 0}, "smartmoe",
                     fmt::format("SmartMoE swaps experts between GPUs and needs at least 2 experts per GPU in equal "
                                 "numbers: {} experts on {} GPUs", e, n));
  const int period = static_cast<int>(knob_int(knobs, "smartmoe", "period", 10, 1, 1 << 30));
  const int window = static_cast<int>(knob_int(knobs, "smartmoe", "window", 5, 1, 100000));
  return std::make_unique<SmartMoe>(ctx, period, window);
}

std::unique_ptr<Strategy> make_fsdp(const Context& ctx, const std::map<std::string, std::string>& knobs) {
  const bool rm = knob_bool(knobs, "fsdp", "rematerialize", true);
  return make_fssdp(ctx, {{"overlap_degree", std::to_string(ctx.model.experts)},
                          {"memory_budget", "1000000TiB"},
                          {"heterogeneous", "false"},
                          {"comm_queue", "separate"},  // FSDP prefetches its all-gathers on a stream of their own
                          {"rematerialize", rm ? "true" : "false"}});
}

}  // namespace hs::strategy
