#include <doctest/doctest.h>

#include <stdexcept>

#include "measure/stats.hpp"
#include "support/approx.hpp"

using namespace hs::measure;
using hs::test::approx;

TEST_CASE("median and quartiles interpolate between closest ranks") {
  // Sorted 1 2 3 4: median at position 1.5 -> 2.5; p25 at 0.75 -> 1.75; p75 at 2.25 -> 3.25.
  const Summary s = summarize({4, 1, 3, 2});
  CHECK(s.n == 4);
  CHECK(s.median == approx(2.5));
  CHECK(s.p25 == approx(1.75));
  CHECK(s.p75 == approx(3.25));
  CHECK(s.min == approx(1));
  CHECK(s.max == approx(4));
  // Odd count: the middle element.
  CHECK(summarize({5e-6, 1e-6, 3e-6}).median == approx(3e-6));
  // One sample: everything is it.
  const Summary one = summarize({7e-6});
  CHECK(one.p25 == approx(7e-6));
  CHECK(one.max == approx(7e-6));
  CHECK_THROWS_AS(summarize({}), std::invalid_argument);
}

TEST_CASE("an iteration lasts as long as its slowest rank") {
  // Rank 0: 1 5 2, rank 1: 3 4 2 -> 3 5 2.
  CHECK(slowest_rank({{1, 5, 2}, {3, 4, 2}}) == std::vector<double>{3, 5, 2});
  CHECK_THROWS_AS(slowest_rank({{1, 2}, {1}}), std::invalid_argument);
}
