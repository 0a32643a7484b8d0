// Approximate equality for the unit tests: relative 1e-9 unless a test states its own tolerance.
// doctest's Approx(x) accepts |a - x| < 1.2e-5 x (1 + max(|a|, |x|)): an absolute floor of 1.2e-5,
// so on times in seconds it let ~12 us through (a hand-worked latency term could be wrong and the
// test still pass). approx() keeps only a negligible absolute floor (1e-30), so 0 == approx(0).
#pragma once

#include <doctest/doctest.h>

namespace hs::test {

inline doctest::Approx approx(double value, double relative = 1e-9) {
  return doctest::Approx(value).epsilon(relative).scale(1e-30);
}

}  // namespace hs::test
