// The largest integer in [0, hi] for which a monotone predicate holds (true up to some point, false
// after it), by bisection: O(log hi) calls. Precondition: fits(0) holds (it is not called).
#pragma once

namespace hs::util {

template <class Fits>
int largest_fitting(int hi, Fits&& fits) {
  if (hi <= 0 || fits(hi)) return hi < 0 ? 0 : hi;
  int lo = 0;
  while (hi - lo > 1) {  // fits(lo), !fits(hi)
    const int mid = lo + (hi - lo) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

// The same answer for a monotone predicate, searched outwards from `guess` (clamped to [0, hi]):
// fits(guess) first, then steps of 1, 2, 4, ... up (or down) to the first change, then bisection
// between the last two steps. With the answer at distance d from the guess it costs
// O(1 + log d) calls: 1 when guess = 0 is the answer, 2 for another exact guess (FSSDP's overlap
// degree guesses the last iteration's, which rarely moves). fits(0) holds and is not called.
template <class Fits>
int largest_fitting_from(int hi, int guess, Fits&& fits) {
  if (hi <= 0) return 0;
  guess = guess < 0 ? 0 : (guess > hi ? hi : guess);
  int lo = 0, bad = hi + 1;  // fits(lo); !fits(bad) (bad = hi + 1: none known)
  if (guess == 0 || fits(guess)) {
    lo = guess;
    for (int step = 1; lo < hi; step *= 2) {
      const int next = lo + step < hi ? lo + step : hi;
      if (!fits(next)) {
        bad = next;
        break;
      }
      lo = next;
    }
    if (bad > hi) return lo;  // lo = hi fits
  } else {
    bad = guess;
    for (int step = 1;; step *= 2) {
      const int next = guess - step;
      if (next <= 0) break;  // lo = 0 fits
      if (fits(next)) {
        lo = next;
        break;
      }
      bad = next;
    }
  }
  while (bad - lo > 1) {  // fits(lo), !fits(bad)
    const int mid = lo + (bad - lo) / 2;
    if (fits(mid)) lo = mid;
    else bad = mid;
  }
  return lo;
}

}  // namespace hs::util
