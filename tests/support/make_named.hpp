// Builds a registered strategy from its name and knobs as `run` does without --layout
// (strategy::make_strategy: the registry's check, then the default layout).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "strategy/strategy.hpp"

namespace hs::test {

inline std::unique_ptr<strategy::Strategy> make_named(const std::string& name, const strategy::Context& ctx,
                                                      const std::map<std::string, std::string>& knobs) {
  strategy::StrategySpec spec;
  spec.name = name;
  spec.knobs = knobs;
  spec.full = name;
  for (const auto& [k, v] : knobs) spec.full += ":" + k + "=" + v;
  return strategy::make_strategy(spec, ctx);
}

}  // namespace hs::test
