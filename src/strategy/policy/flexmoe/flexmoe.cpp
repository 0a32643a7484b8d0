#include "strategy/policy/flexmoe/flexmoe.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "collective/ring.hpp"
#include "collective/sparse_plan.hpp"
#include "strategy/policy/flexmoe/flexmoe_planner.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/load_history.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "strategy/layer_plan.hpp"

namespace hs::strategy {

std::vector<ResolvedSetting> flexmoe_resolved(int slots, const std::vector<int>& replicas_per_layer,
                                              const FlexMoeCounts& c) {
  return {resolved_value("slots_per_gpu", slots),        resolved_list("replicas_per_layer", replicas_per_layer),
          resolved_value("layer_replans", c.layers_replanned), resolved_value("placement_changes", c.changes),
          resolved_value("expands", c.expands),          resolved_value("shrinks", c.shrinks),
          resolved_value("migrations", c.migrations),    resolved_value("experts_moved", c.moved)};
}

FlexMoeKnobs flexmoe_knobs(const KnobValues& v) {
  FlexMoeKnobs k;
  k.reserve_slots = static_cast<int>(v.integer("reserve_slots"));
  k.period = static_cast<int>(v.integer("period"));
  k.window = static_cast<int>(v.integer("window"));
  k.trigger_pct = static_cast<int>(v.integer("trigger_pct"));
  k.dispatch = v.text("dispatch") == "topology" ? DispatchRule::kTopology : DispatchRule::kEven;
  return k;
}

ReplicaCosts replica_costs(const Context& ctx, collective::AnalyticNetwork& net, std::vector<int> gpus) {
  const auto& m = ctx.model;
  const double per_expert = cost::count_params(m).per_expert;
  const double state = per_expert * (m.precision.param_bytes + m.precision.master_bytes + m.precision.optimizer_bytes());
  const double grad = per_expert * m.precision.grad_bytes, ga = m.grad_accum;
  ReplicaCosts c;
  c.gpu_time = [&ctx, ga](const std::vector<double>& tokens) {
    std::vector<double> mb(tokens);
    for (double& t : mb) t /= ga;
    return (ctx.compute.expert_forward(mb).value() + ctx.compute.expert_backward(mb).value()) * ga;
  };
  c.move_time = [&net, gpus, state](int src, int dst) {
    return net.coflow_time(collective::Coflow{{gpus[src], gpus[dst], state}});
  };
  c.allreduce_time = [&net, gpus, grad](const std::vector<int>& group) {
    std::vector<int> global;
    for (int i : group) global.push_back(gpus[i]);
    return collective::ring_time(net, global, grad, collective::RingOp::kAllReduce);
  };
  return c;
}

}  // namespace hs::strategy
