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
#include "strategy/layer_plan.hpp"
#include "strategy/sharding.hpp"
#include "util/units.hpp"

namespace hs::strategy {

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

}  // namespace hs::strategy
