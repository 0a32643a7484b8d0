// The expert GEMM cost (cost/compute_cost.hpp): the tile/wave model (the default) by hand; the
// efficiency curve (GemmModel::kCurve) counted once, the tile padding as a floor, the HBM roofline;
// and, for both, the properties the lower bound relies on.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cost/compute_cost.hpp"
#include "cost/gemm_fit.hpp"
#include "cost/gemm_tiles.hpp"
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
  cost::ComputeParams p;  // eta_max 0.8, t_half 48, tile 128
  p.gemm_model = cost::GemmModel::kCurve;
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
  cost::ComputeParams p;
  p.gemm_model = cost::GemmModel::kCurve;
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

TEST_CASE("expert GEMM, tile/wave model: one expert of 1024 tokens by hand") {
  const auto m = model();  // d 4096, f 8192, GeLU MLP (2 matrices); the GPU names no SMs: 132
  const cost::ComputeParams p;  // tiles 128 x 128, eta_tile 0.79, k_fill 272, 12.5 us per launch
  REQUIRE(p.gemm_model == cost::GemmModel::kTiles);
  const cost::ComputeCost cc(gpu(), m, p);
  // Up [1024 x 4096] x [4096 x 8192]: 8 x 64 = 512 tiles, ceil(512 / 132) = 4 waves, each
  //   2 x 128 x 128 x (4096 + 272) x 132 / (0.79 x 1e15) = 23.92 us: 95.66 us; its HBM traffic
  //   (weights 4096 x 8192 x 2 B + 1024 x (4096 + 8192) x 2 B = 92.3 MB at 0.85 x 3 TB/s = 36.2 us)
  //   does not bind.
  // Down [1024 x 8192] x [8192 x 4096]: 8 x 32 = 256 tiles, 2 waves of (8192 + 272): 2 x 46.34 us.
  // Two launches of 12.5 us: 213.3 us.
  const double w1 = 2.0 * 128 * 128 * (4096 + 272) * 132 / (0.79 * 1000e12);
  const double w2 = 2.0 * 128 * 128 * (8192 + 272) * 132 / (0.79 * 1000e12);
  const double expect = 4 * w1 + 2 * w2 + 2 * 12.5e-6;
  CHECK(expect == doctest::Approx(213.3e-6).epsilon(1e-3));
  const double got = cc.expert_forward_uniform(1024, 1).value() - cc.activation(1024, m.d_ffn, false, false).value();
  CHECK(got == doctest::Approx(expect).epsilon(1e-12));
  // Eight experts of 1024: 4096 + 2048 tiles, 32 + 16 waves; the same through expert_forward.
  const std::vector<double> eight(8, 1024);
  const double got8 = cc.expert_forward(eight).value() - cc.activation(8 * 1024, m.d_ffn, false, false).value();
  CHECK(got8 == doctest::Approx(32 * w1 + 16 * w2 + 2 * 12.5e-6).epsilon(1e-12));
  CHECK(cc.expert_forward_uniform(1024, 8).value() == doctest::Approx(cc.expert_forward(eight).value()).epsilon(1e-12));
  // No tokens, no launch.
  CHECK(cc.expert_forward({}).value() == 0);
  CHECK(cc.expert_backward({}).value() == 0);
}

// The tile model's launches as the groups they are (gemm_waves_time over {tiles, k} per problem
// with rows, in the rows' order), the form ComputeCost computed them in before it summed them
// without building groups: the reference for the test below.
double launch_by_groups(const cost::ComputeParams& p, int sms, double peak, double hbm, std::span<const double> rows,
                        double n, double k, bool weight_grad, double weight_bytes, double act_bytes) {
  std::vector<cost::TileGroup> groups;
  double problems = 0, all_rows = 0;
  for (double t : rows) {
    if (!(t > 0)) continue;
    groups.push_back(weight_grad ? cost::TileGroup{cost::gemm_tile_count(k, n, p.tiles), t}
                                 : cost::TileGroup{cost::gemm_tile_count(t, n, p.tiles), k});
    problems += 1, all_rows += t;
  }
  if (groups.empty()) return 0;
  const double compute = cost::gemm_waves_time(groups, sms, peak, p.tiles).value();
  return p.tiles.call.value() + std::max(compute, (problems * weight_bytes + all_rows * act_bytes) / (p.eta_mem * hbm));
}

TEST_CASE("property: the tile model's expert GEMMs equal, to the bit, their launches timed as groups of tiles") {
  // ComputeCost sums a forward launch's tiles at once (every problem has the same k: the waves do
  // not depend on the problems' order, and every sum is of integers) and sorts a weight gradient's
  // rows (every problem has the same tile count): the same doubles as gemm_waves_time over the
  // groups, for rows that are fractional, zero, repeated, or many (more than the inline buffer).
  const auto m = model();  // d 4096, f 8192, 2 matrices, bf16; 132 SMs
  const cost::ComputeParams p;
  const cost::ComputeCost cc(gpu(), m, p);
  const double d = m.d_model, f = m.d_ffn, pb = m.precision.param_bytes, ab = m.precision.activation_bytes;
  const double gb = m.precision.grad_bytes, peak = gpu().peak_flops.value(), hbm = gpu().hbm_bandwidth.value();
  std::mt19937 rng(33);
  for (int trial = 0; trial < 300; ++trial) {
    const int experts = std::uniform_int_distribution<int>(0, trial % 10 == 0 ? 700 : 80)(rng);
    std::vector<double> rows(experts);
    for (double& r : rows) {
      const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
      r = kind == 0 ? 0.0 : kind == 1 ? std::uniform_int_distribution<int>(1, 4000)(rng)
                                       : std::uniform_real_distribution<double>(0.01, 3000.0)(rng);
      if (kind == 3 && !rows.empty()) r = rows[0];  // repeated counts
    }
    // forward: up [rows x d] x [d x f], down [rows x f] x [f x d]; backward: each matrix's data
    // gradient and weight gradient (ComputeCost::tiled_mlp).
    const double fwd = launch_by_groups(p, 132, peak, hbm, rows, f, d, false, d * f * pb, (d + f) * ab) +
                       launch_by_groups(p, 132, peak, hbm, rows, d, f, false, f * d * pb, (f + d) * ab);
    const double bwd = (launch_by_groups(p, 132, peak, hbm, rows, d, f, false, d * f * pb, (d + f) * ab) +
                        launch_by_groups(p, 132, peak, hbm, rows, f, d, true, d * f * gb, (d + f) * ab)) +
                       (launch_by_groups(p, 132, peak, hbm, rows, f, d, false, f * d * pb, (f + d) * ab) +
                        launch_by_groups(p, 132, peak, hbm, rows, d, f, true, f * d * gb, (f + d) * ab));
    double all = 0;
    for (double t : rows) all += t;
    CHECK(cc.expert_forward(rows).value() == fwd + cc.activation(all, f, false, false).value());
    CHECK(cc.expert_backward(rows).value() == bwd + cc.activation(all, f, false, true).value());
  }
}

TEST_CASE("property: the expert GEMM is subadditive, gemm(x + y) <= gemm(x) + gemm(y) (the lower bound's premise)") {
  const auto m = model();
  for (const auto model_kind : {cost::GemmModel::kTiles, cost::GemmModel::kCurve}) {
    CAPTURE(static_cast<int>(model_kind));
    cost::ComputeParams p;
    p.gemm_model = model_kind;
    const cost::ComputeCost cc(gpu(), m, p);
    // The curve prices one grouped launch per pass (p.launch, forward 1, backward 2); the tile
    // model's launches are in its per-launch call time, paid only by launches with tokens.
    const double launch = model_kind == cost::GemmModel::kCurve ? p.launch.value() : 0.0;
    auto gemm = [&](std::span<const double> t, bool bwd) {
      double all = 0;
      for (double x : t) all += x;
      const double act = cc.activation(all, m.d_ffn, m.n_mats() == 3, bwd).value();  // the activation kernel, not the GEMM
      return bwd ? cc.expert_backward(t).value() - 2 * launch - act : cc.expert_forward(t).value() - launch - act;
    };
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(0, 3);
    for (int i = 0; i < 2000; ++i) {
      const double x = std::pow(10.0, u(rng)) - 0.9, y = std::pow(10.0, u(rng)) - 0.9, z = std::pow(10.0, u(rng)) - 0.9;
      const double xy = x + y;
      const std::vector<double> a{x, z}, b{y}, ab{xy, z};
      for (bool bwd : {false, true}) {
        // One expert's tokens split over two instances...
        CHECK(gemm(std::span<const double>(&xy, 1), bwd) <=
              (gemm(std::span<const double>(&x, 1), bwd) + gemm(std::span<const double>(&y, 1), bwd)) * (1 + 1e-12));
        // ...and beside another expert (one GPU's grouped launch against two GPUs').
        CHECK(gemm(ab, bwd) <= (gemm(a, bwd) + gemm(b, bwd)) * (1 + 1e-12));
      }
    }
  }
}
