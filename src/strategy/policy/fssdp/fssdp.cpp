#include "strategy/policy/fssdp/fssdp.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <fmt/format.h>

#include "collective/sparse_plan.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/load_history.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "strategy/layer_plan.hpp"
#include "strategy/policy/fssdp/sharding.hpp"
#include "util/units.hpp"

namespace hs::strategy {

FssdpKnobs parse_fssdp_knobs(const KnobValues& v) {
  FssdpKnobs k;
  k.window = static_cast<int>(v.integer("window"));
  const std::string& od = v.text("overlap_degree");
  if (od == "formula") k.overlap_mode = OverlapMode::kFormula;
  else if (od == "best") k.overlap_mode = OverlapMode::kBest;
  else if (od != "hidden" && od != "auto") k.overlap_mode = OverlapMode::kFixed, k.overlap_degree = static_cast<int>(v.integer("overlap_degree"));
  if (!v.is_auto("memory_budget")) k.memory_budget = v.quantity("memory_budget", Dimension::kBytes);
  k.rematerialize = v.boolean("rematerialize");
  k.calibrate = v.boolean("calibrate");
  k.heterogeneous = v.boolean("heterogeneous");
  k.reshard_every = static_cast<int>(v.integer("reshard_every"));
  k.dispatch = v.text("dispatch") == "even" ? DispatchRule::kEven : DispatchRule::kTopology;
  k.broadcast = v.text("broadcast") == "direct" ? collective::BroadcastAlgo::kDirect : collective::BroadcastAlgo::kChain;
  k.single_queue = v.text("comm_queue") == "single";
  return k;
}

}  // namespace hs::strategy
