// Trace statistics against hand-computed values.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "workload/trace_stats.hpp"
#include "support/approx.hpp"

using namespace hs::workload;

TEST_CASE("Gini: equal loads 0; one of n holds everything (n-1)/n; a hand-sorted case") {
  CHECK(gini_coefficient({1, 1, 1, 1}) == hs::test::approx(0));
  CHECK(gini_coefficient({0, 0, 0, 1}) == hs::test::approx(0.75));
  // {1, 2, 3, 4}: sum_i (2i - 3) x_i = -3 -2 + 3 + 12 = 10 over n sum = 4 x 10 = 40 -> 0.25.
  CHECK(gini_coefficient({4, 1, 3, 2}) == hs::test::approx(0.25));
  CHECK(gini_coefficient({0, 0}) == 0);
}

TEST_CASE("CV: population s.d. over mean") {
  // {4, 2, 1, 1}: mean 2, variance (4 + 0 + 1 + 1) / 4 = 1.5 -> CV sqrt(1.5) / 2 = 0.6124.
  const std::vector<double> v{4, 2, 1, 1};
  CHECK(coefficient_of_variation(v) == hs::test::approx(std::sqrt(1.5) / 2));
  const std::vector<double> flat{3, 3, 3};
  CHECK(coefficient_of_variation(flat) == 0);
}

TEST_CASE("Pearson correlation") {
  const std::vector<double> a{1, 2, 3}, b{2, 4, 6}, c{3, 2, 1}, d{1, 3, 2};
  CHECK(pearson(a, b) == hs::test::approx(1));
  CHECK(pearson(a, c) == hs::test::approx(-1));
  // a - 2 = {-1, 0, 1}, d - 2 = {-1, 1, 0}: sum of products 1, sums of squares 2 and 2 -> 0.5.
  CHECK(pearson(a, d) == hs::test::approx(0.5));
}

TEST_CASE("AR(1) coefficient, Yule-Walker") {
  // {1, -1, 1, -1}: mean 0, sum x_t x_{t-1} = -3, sum x_t^2 = 4 -> -0.75.
  const std::vector<double> alt{1, -1, 1, -1};
  CHECK(ar1_coefficient(alt) == hs::test::approx(-0.75));
  // {1, 2, 3, 4, 5}: deviations {-2,-1,0,1,2}: products 2 + 0 + 0 + 2 = 4 over 10 -> 0.4.
  const std::vector<double> ramp{1, 2, 3, 4, 5};
  CHECK(ar1_coefficient(ramp) == hs::test::approx(0.4));
  // A long simulated AR(1) with phi 0.8 recovers it (deterministic sequence: x_t = 0.8 x_{t-1} + e_t
  // with e_t a fixed pseudo-random +-1 pattern).
  std::vector<double> x{0};
  unsigned state = 12345;
  for (int i = 0; i < 20000; ++i) {
    state = state * 1103515245u + 12345u;
    x.push_back(0.8 * x.back() + (((state >> 16) & 1) ? 1.0 : -1.0));
  }
  CHECK(ar1_coefficient(x) == doctest::Approx(0.8).epsilon(0.02));
}

TEST_CASE("trace statistics of a tiny trace: expert and GPU level, per-source distance, stride") {
  // One layer, 4 experts, 2 sources of 4 tokens, top-1. Source counts [3, 1, 0, 0] and [1, 1, 1, 1]:
  // global [4, 2, 1, 1], sum 8, mean 2 -> max/mean 2, CV sqrt(1.5)/2, top-1 share 0.5.
  // EP 2: GPU loads [6, 2], mean 4 -> max/mean 1.5, CV 0.5, Gini (-1 x 2 + 1 x 6) / (2 x 8) = 0.25.
  // TV: source 0 [.75, .25, 0, 0] vs global [.5, .25, .125, .125] -> (.25 + 0 + .125 + .125)/2 = .25;
  //     source 1 [.25 x 4] -> (.25 + 0 + .125 + .125)/2 = .25; mean 0.25.
  // Source max/mean: 3/1 and 1/1 -> 2.
  Trace t;
  t.moe_layers = 1, t.experts = 4, t.top_k = 1, t.sources = 2, t.tokens_per_source = 4;
  t.records.push_back({0, {3, 1, 0, 0, 1, 1, 1, 1}});
  t.records.push_back({10, {3, 1, 0, 0, 1, 1, 1, 1}});
  t.records.push_back({20, {3, 1, 0, 0, 1, 1, 1, 1}});
  auto st = trace_stats(t, 2);
  CHECK(st.iteration_stride == 10);
  CHECK(st.ep_size == 2);
  const auto& s = st.windows[0].overall;
  CHECK(s.max_mean == hs::test::approx(2));
  CHECK(s.cv == hs::test::approx(std::sqrt(1.5) / 2));
  CHECK(s.top1_share == hs::test::approx(0.5));
  CHECK(s.gpu_max_mean == hs::test::approx(1.5));
  CHECK(s.gpu_cv == hs::test::approx(0.5));
  CHECK(s.gpu_gini == hs::test::approx(0.25));
  CHECK(s.gpu_top1_share == hs::test::approx(0.75));
  CHECK(s.source_tv == hs::test::approx(0.25));
  CHECK(s.source_max_mean == hs::test::approx(2));
  CHECK(s.lag1 == hs::test::approx(1));   // identical records
  CHECK(std::isnan(s.lag10));            // too few records
  CHECK(s.ar1_log == hs::test::approx(1));  // constant log-shares: perfectly persistent
  CHECK(s.log_share_sd == hs::test::approx(0));
  // EP larger than the experts is clamped.
  CHECK(trace_stats(t, 64).ep_size == 4);
  // Windows: 3 records -> early [0, 1), late [2, 3).
  CHECK(st.windows[1].last == 1);
  CHECK(st.windows[2].first == 2);
  CHECK(std::isnan(st.windows[1].overall.ar1_log));
  // Both renderings name the stride.
  CHECK(stats_table(t, st, "t.json").find("one record every 10 iterations") != std::string::npos);
  CHECK(stats_json(t, st, "t.json").find("\"iteration_stride\": 10") != std::string::npos);
}
