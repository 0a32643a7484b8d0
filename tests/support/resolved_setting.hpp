// What a strategy's automatic knobs resolved to (Strategy::resolved()), for the strategy tests.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "strategy/strategy.hpp"

namespace hs::test {

// The JSON text of resolved setting `key`; a test failure (and "missing") when the strategy has none.
inline std::string resolved_json(const strategy::Strategy& s, const std::string& key) {
  for (const auto& r : s.resolved())
    if (r.key == key) return r.json;
  FAIL_CHECK("no resolved setting " << key);
  return "missing";
}

}  // namespace hs::test
