#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "collective/sparse_plan.hpp"
#include "strategy/dispatch_memo.hpp"
#include "strategy/policy/fssdp/materialization.hpp"

using namespace hs::strategy;

TEST_CASE("DispatchMemo: every call, memoized or not, gives dispatch()'s result exactly") {
  // A random sequence over a few counts, placements, rules and capacities (so that inputs repeat, as
  // a stateful strategy's do on a cycling trace, and some differ from a stored one in one entry
  // only): each memoized result equals a fresh dispatch() field by field, bit for bit.
  const int n = 8, E = 6;
  const std::vector<int> node_of{0, 0, 0, 0, 1, 1, 1, 1};
  std::mt19937 rng(35);
  std::uniform_int_distribution<int> tokens(0, 50), gpu(0, n - 1), coin(0, 1);
  std::vector<std::vector<double>> counts;
  for (int k = 0; k < 3; ++k) {
    std::vector<double> c(static_cast<size_t>(n) * E);
    for (double& x : c) x = tokens(rng);
    counts.push_back(c);
    c[5] += 1;  // one entry apart
    counts.push_back(c);
  }
  std::vector<hs::collective::SparsePlacement> placements;
  for (int k = 0; k < 3; ++k) {
    hs::collective::SparsePlacement p{std::vector<int>(E), std::vector<std::vector<int>>(E)};
    for (int e = 0; e < E; ++e) {
      p.owner[e] = e % n;
      if (k > 0 && coin(rng))
        for (int g = 0; g < n; ++g)
          if (g != p.owner[e] && coin(rng)) p.replicas[e].push_back(g);
    }
    placements.push_back(p);
  }
  const double caps[] = {std::numeric_limits<double>::infinity(), 20.0};
  DispatchMemo memo;
  std::uniform_int_distribution<int> pick_c(0, static_cast<int>(counts.size()) - 1), pick_p(0, 2);
  for (int it = 0; it < 300; ++it) {
    const auto& c = counts[pick_c(rng)];
    const auto& p = placements[pick_p(rng)];
    const DispatchRule rule = coin(rng) ? DispatchRule::kTopology : DispatchRule::kEven;
    const double cap = caps[coin(rng)];
    DispatchResult a, b;
    memo.dispatch(c, n, p, node_of, rule, 2.0, a, cap);
    dispatch(c, n, p, node_of, rule, 2.0, b, cap);
    REQUIRE(a.expert_tokens.size() == b.expert_tokens.size());
    for (size_t g = 0; g < a.expert_tokens.size(); ++g) CHECK(a.expert_tokens[g] == b.expert_tokens[g]);
    CHECK(a.bytes == b.bytes);
    CHECK(a.received == b.received);
    CHECK(a.routed == b.routed);
    CHECK(a.dropped == b.dropped);
  }
  CHECK(memo.hits() > 200);  // at most 6 x 3 x 2 x 2 distinct inputs
}
