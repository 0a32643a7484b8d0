// Kendall's tau between what the model predicts and what was measured: does the model order
// strategies, placements or layers as the hardware does? For n items with predicted p and measured m,
// a pair (i, j) is concordant when p and m order it the same way, discordant when opposite, and tied
// in p or m when equal there. tau-b = (C - D) / sqrt((n0 - Tp) (n0 - Tm)), n0 = n(n-1)/2, Tp and Tm
// the pairs tied in p and in m (Kendall 1945): 1 = the same order, -1 = reversed, 0 = unrelated;
// with no ties it is (C - D) / n0. Values within a relative `tie` of each other count as tied
// (timer noise should not decide an order). O(n^2): the lists compared are short (strategies,
// layers).
#pragma once

#include <optional>
#include <span>

namespace hs::calib {

struct RankAgreement {
  double tau = 0;
  int items = 0, concordant = 0, discordant = 0;
};

// nullopt when fewer than two items, or when every pair is tied in p or in m (tau undefined).
std::optional<RankAgreement> kendall_tau(std::span<const double> predicted, std::span<const double> measured,
                                         double tie = 0.0);

}  // namespace hs::calib
