// A random solver flow's elements for the solver's property tests: 1-4 draws of a link among nl (a
// repeated link dropped), each with consumption coefficient 1 or, three times in ten, 0.5.
#pragma once

#include <cstdint>
#include <vector>

#include "solver/max_min_solver.hpp"
#include "util/rng.hpp"

namespace hs::test {

inline std::vector<solver::Element> random_elements(Rng& rng, int nl) {
  std::vector<solver::Element> e;
  const int n = 1 + static_cast<int>(rng.below(4));
  for (int j = 0; j < n; ++j) {
    const int l = static_cast<int>(rng.below(static_cast<uint64_t>(nl)));
    bool dup = false;
    for (const auto& x : e) dup |= x.link == l;
    if (!dup) e.push_back({l, rng.uniform() < 0.3 ? 0.5 : 1.0});
  }
  return e;
}

}  // namespace hs::test
