#include <doctest/doctest.h>

#include <vector>

#include "util/largest_fitting.hpp"

using hs::util::largest_fitting;
using hs::util::largest_fitting_from;

TEST_CASE("largest_fitting: the last t of a monotone predicate, in O(log hi) calls, never fits(0)") {
  // fits(t) = t <= k: the answer is min(k, hi) for every k in [0, hi].
  for (int hi : {0, 1, 2, 7, 64, 1000})
    for (int k = 0; k <= hi; ++k) {
      std::vector<int> asked;
      const int got = largest_fitting(hi, [&](int t) { asked.push_back(t); return t <= k; });
      CHECK(got == k);
      for (int t : asked) CHECK(t > 0);  // fits(0) is the caller's precondition
      // One call at hi, then bisection of (0, hi): at most 1 + ceil(log2 hi) calls.
      int bound = 1;
      for (int span = hi; span > 1; span = (span + 1) / 2) ++bound;
      CHECK(static_cast<int>(asked.size()) <= bound);
    }
  // A negative hi (no room) is 0, without a call.
  CHECK(largest_fitting(-3, [](int) -> bool { throw 1; }) == 0);
}

TEST_CASE("largest_fitting_from: the same answer as bisection from any guess; 1 or 2 calls for an exact guess") {
  // fits(t) = t <= k: for every k and guess in [0, hi] (and guesses outside, clamped) the answer is k.
  for (int hi : {0, 1, 2, 7, 64, 200})
    for (int k = 0; k <= hi; ++k)
      for (int guess = -1; guess <= hi + 1; ++guess) {
        std::vector<int> asked;
        const int got = largest_fitting_from(hi, guess, [&](int t) { asked.push_back(t); return t <= k; });
        CHECK(got == k);
        for (int t : asked) CHECK(t > 0);
        CHECK(got == largest_fitting(hi, [&](int t) { return t <= k; }));
        // An exact guess: fits(k) (unless k = 0) and fits(k + 1) (unless k = hi): at most 2 calls.
        if (guess == k) CHECK(static_cast<int>(asked.size()) <= 2);
        // Distance d = |k - guess|: a doubling walk and a bisection, each O(log d), plus the first call.
        int d = k > guess ? k - guess : guess - k, bound = 3;
        for (int span = d; span > 0; span /= 2) bound += 2;
        CHECK(static_cast<int>(asked.size()) <= bound);
      }
}
