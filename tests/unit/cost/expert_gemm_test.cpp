// The expert GEMM cost (cost/compute_cost.hpp): the efficiency curve counted once, the tile padding
// as a floor, the HBM roofline, and the properties the lower bound relies on.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>

#include "cost/compute_cost.hpp"
#include "cost/gemm_fit.hpp"
#include "workload/model_spec.hpp"

using namespace hs;

namespace {

// d_model 4096, d_ffn 8192: compute-bound from a few hundred tokens on this GPU.
workload::ModelSpec model() {
  return workload::load_model(R"(schema: hecate-sim/model@1
name: gemm
layers: 2
d_model: 4096
d_ffn: 8192
experts: 8
top_k: 2
heads: 32
seq_len: 1024
micro_batch: 2
)",
                              "gemm.yaml");
}

topology::GpuModel gpu() {
  topology::GpuModel g;
  g.model = "test";
  g.peak_flops = FlopRate(1000e12);
  g.hbm_bandwidth = Bandwidth(3e12);
  g.memory = Bytes(80e9);
  g.compute_capability = 9.0;
  return g;
}

}  // namespace

TEST_CASE("expert GEMM: useful FLOPs over time follow the fitted curve eta_max t / (t + t_half)") {
  const auto m = model();
  const cost::ComputeParams p;  // eta_max 0.8, t_half 48, tile 128
  const cost::ComputeCost cc(gpu(), m, p);
  const double per_token = 2.0 * m.d_model * m.d_ffn * m.n_mats();  // forward FLOPs per token
  const double launch = p.launch.value();
  // t = 1024 (a whole number of tiles, t + t_half > t_pad): compute = FLOPs(1024 + 48) / (0.8 peak).
  // Weights read: 4096 x 8192 x n_mats x 2 B = 64 MiB x n_mats / 3 TB/s x 0.85 ~ 26 us x n_mats,
  // below the ~36 us x n_mats of compute, so compute binds.
  const double t = 1024;
  const double expect = per_token * (t + 48) / (0.8 * 1000e12);
  // The activation kernel (ComputeCost::activation, memory-bound) follows the GEMM: taken out here.
  const double got = cc.expert_forward_uniform(t, 1).value() - launch - cc.activation(t, m.d_ffn, m.n_mats() == 3, false).value();
  CHECK(got == doctest::Approx(expect).epsilon(1e-12));
  // The efficiency `validate` measures (useful FLOPs / (time x peak)) is the fitted curve's.
  CHECK(per_token * t / (got * 1000e12) == doctest::Approx(cost::gemm_efficiency({0.8, 48}, t)).epsilon(1e-12));
}

TEST_CASE("expert GEMM: a sub-tile GEMM costs one tile at most, never diverging as tokens -> 0") {
  const auto m = model();
  const cost::ComputeParams p;
  const cost::ComputeCost cc(gpu(), m, p);
  const double launch = p.launch.value();
  auto gemm = [&](double t) {
    return cc.expert_forward_uniform(t, 1).value() - launch - cc.activation(t, m.d_ffn, m.n_mats() == 3, false).value();
  };
  // For 0 < t <= 80: t + t_half <= 128 = t_pad, so compute is one padded tile, FLOPs(128) / (0.8
  // peak); the weights' read may bind instead (memory term, independent of t to first order).
  const double tile = gemm(128 - 48);
  CHECK(gemm(0.25) <= tile);
  CHECK(gemm(1) <= tile);
  CHECK(gemm(0.25) > 0);
  CHECK(gemm(0) == 0);
  // Monotone in t.
  double prev = 0;
  for (double t = 0.25; t < 3000; t *= 1.37) {
    CHECK(gemm(t) >= prev);
    prev = gemm(t);
  }
}

TEST_CASE("property: the expert GEMM is subadditive, gemm(x + y) <= gemm(x) + gemm(y) (the lower bound's premise)") {
  const auto m = model();
  const cost::ComputeCost cc(gpu(), m, cost::ComputeParams{});
  const double launch = cost::ComputeParams{}.launch.value();
  auto gemm = [&](double t, bool bwd) {
    const double act = cc.activation(t, m.d_ffn, m.n_mats() == 3, bwd).value();  // the activation kernel, not the GEMM
    return bwd ? cc.expert_backward_uniform(t, 1).value() - 2 * launch - act
               : cc.expert_forward_uniform(t, 1).value() - launch - act;
  };
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 3);
  for (int i = 0; i < 2000; ++i) {
    const double x = std::pow(10.0, u(rng)) - 0.9, y = std::pow(10.0, u(rng)) - 0.9;
    for (bool bwd : {false, true}) CHECK(gemm(x + y, bwd) <= (gemm(x, bwd) + gemm(y, bwd)) * (1 + 1e-12));
  }
}
