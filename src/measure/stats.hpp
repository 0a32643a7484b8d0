// Summaries of repeated timings: the median and the spread (minimum, quartiles, maximum) over
// iterations, and the per-iteration time of a multi-rank operation, which is the slowest rank's
// (an operation is done when every rank is).
#pragma once

#include <vector>

namespace hs::measure {

struct Summary {
  int n = 0;
  double median = 0, min = 0, p25 = 0, p75 = 0, max = 0;
};

// Quantile q of the sorted samples by linear interpolation between closest ranks (numpy's default:
// position q * (n - 1)); the median of an even count is the mean of the middle two. Throws
// std::invalid_argument on no samples.
Summary summarize(std::vector<double> samples);

// per_rank[r][i]: rank r's time of iteration i (every rank the same count). Returns, per iteration,
// the maximum over ranks. Throws std::invalid_argument on ragged input.
std::vector<double> slowest_rank(const std::vector<std::vector<double>>& per_rank);

}  // namespace hs::measure
