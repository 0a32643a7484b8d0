#include <doctest/doctest.h>

#include <vector>

#include "cost/gemm_fit.hpp"
#include "support/approx.hpp"

using namespace hs::cost;

TEST_CASE("the GEMM efficiency fit recovers eta_max and t_half from exact points") {
  // eta(t) = 0.8 t / (t + 100): 1/eta = 1.25 + 125 / t, a line in 1/t; least squares through exact
  // points returns eta_max = 1 / 1.25 = 0.8 and t_half = 125 / 1.25 = 100.
  std::vector<GemmPoint> pts;
  for (double t : {256.0, 512.0, 1024.0, 4096.0}) pts.push_back({t, 0.8 * t / (t + 100)});
  const auto f = fit_gemm_efficiency(pts);
  REQUIRE(f);
  CHECK(f->eta_max == doctest::Approx(0.8).epsilon(1e-12));
  CHECK(f->t_half == doctest::Approx(100).epsilon(1e-9));
  CHECK(gemm_efficiency(*f, 100) == hs::test::approx(0.4));
}

TEST_CASE("the GEMM efficiency fit refuses what it cannot determine") {
  // One token count (no slope), or points whose line has a non-positive intercept (efficiency
  // falling with size: no eta_max).
  std::vector<GemmPoint> one{{512, 0.6}, {512, 0.62}};
  CHECK_FALSE(fit_gemm_efficiency(one));
  std::vector<GemmPoint> falling{{256, 0.9}, {4096, 0.1}};
  CHECK_FALSE(fit_gemm_efficiency(falling));
  CHECK_FALSE(fit_gemm_efficiency(std::vector<GemmPoint>{}));
}
