// The end times of some tasks of a simulation that has run, in the order given (the network tests'
// helpers run coflows as tasks and return these).
#pragma once

#include <span>
#include <vector>

#include "engine/simulation.hpp"

namespace hs::test {

inline std::vector<double> end_times(const engine::Simulation& sim, std::span<const engine::TaskId> ids) {
  std::vector<double> out;
  out.reserve(ids.size());
  for (auto id : ids) out.push_back(sim.end_time(id));
  return out;
}

}  // namespace hs::test
