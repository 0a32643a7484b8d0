#include <doctest/doctest.h>

#include <stdexcept>

#include "measure/permutation.hpp"

using namespace hs::measure;

TEST_CASE("permute groups tokens by expert, stably, and the inverse undoes it") {
  // Tokens 0..5 routed to experts 2 0 1 0 2 0: expert 0 gets tokens 1 3 5, expert 1 token 2,
  // expert 2 tokens 0 4, in token order within each.
  const Permutation p = permute_by_expert({2, 0, 1, 0, 2, 0}, 3);
  CHECK(p.offsets == std::vector<std::int64_t>{0, 3, 4, 6});
  CHECK(p.gather == std::vector<std::int32_t>{1, 3, 5, 2, 0, 4});
  for (std::size_t t = 0; t < 6; ++t) CHECK(p.gather[static_cast<std::size_t>(p.inverse[t])] == static_cast<std::int32_t>(t));
  CHECK_THROWS_AS(permute_by_expert({0, 3}, 3), std::invalid_argument);
}

TEST_CASE("routing is deterministic, in range and skewed towards low experts") {
  const auto a = route_tokens(65536, 8, 1);
  CHECK(a == route_tokens(65536, 8, 1));
  CHECK(a != route_tokens(65536, 8, 2));
  const Permutation p = permute_by_expert(a, 8);
  // expert e gets P(e/8 <= u^2 < (e+1)/8) = sqrt((e+1)/8) - sqrt(e/8): expert 0 sqrt(1/8) = 35.4%,
  // expert 7 1 - sqrt(7/8) = 6.5%; with 65,536 tokens (and u on a grid of 2^-14) the shares are within
  // 1.5 points of that.
  const double share0 = static_cast<double>(p.offsets[1]) / 65536, share7 = static_cast<double>(p.offsets[8] - p.offsets[7]) / 65536;
  CHECK(share0 > 0.354 - 0.015);
  CHECK(share0 < 0.354 + 0.015);
  CHECK(share7 > 0.065 - 0.015);
  CHECK(share7 < 0.065 + 0.015);
}
