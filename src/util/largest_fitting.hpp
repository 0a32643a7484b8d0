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

}  // namespace hs::util
