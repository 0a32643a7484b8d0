#include <doctest/doctest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "util/rng.hpp"
#include "util/sort_by_cap.hpp"

using namespace hs;

namespace {
using Pairs = std::vector<std::pair<double, int>>;

// sort_by_cap must give exactly std::sort's (cap, id) order.
void check_like_std_sort(Pairs v) {
  Pairs want = v, scratch;
  std::sort(want.begin(), want.end());
  sort_by_cap(v, scratch);
  CHECK(v == want);
}
}  // namespace

TEST_CASE("sort_by_cap: (cap, id) order, as std::sort gives it") {
  // Two caps (a collective's local and network rates), ids ascending: one bucket pass.
  Pairs two;
  for (int i = 0; i < 1000; ++i) two.push_back({i % 7 == 0 ? 2e11 : 2.5e10, i});
  check_like_std_sort(two);
  // Ids out of order within a cap (a component found by search): buckets sorted by id after.
  Rng rng(11);
  Pairs shuffled;
  for (int i = 0; i < 1000; ++i) shuffled.push_back({rng.uniform() < 0.5 ? 1.0 : 3.0, static_cast<int>(rng.uniform() * 1e6)});
  check_like_std_sort(shuffled);
  // 16 distinct caps still bucketed, 17 fall back to std::sort; empty and single inputs.
  Pairs sixteen, seventeen;
  for (int i = 0; i < 400; ++i) sixteen.push_back({static_cast<double>((i * 5) % 16), i});
  for (int i = 0; i < 400; ++i) seventeen.push_back({static_cast<double>((i * 5) % 17), i});
  check_like_std_sort(sixteen);
  check_like_std_sort(seventeen);
  check_like_std_sort({});
  check_like_std_sort({{4.0, 2}});
}
