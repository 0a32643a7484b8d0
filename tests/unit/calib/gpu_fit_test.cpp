#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "calib/memory_fit.hpp"
#include "calib/overlap_fit.hpp"
#include "calib/rank_agreement.hpp"
#include "support/approx.hpp"
#include "util/rng.hpp"

using namespace hs;
using hs::test::approx;

TEST_CASE("memory-bound kernels: eta_mem and launch recovered from times the model's formula gives, with noise") {
  // time = 2 bytes / (eta hbm) + launch with eta = 0.62, launch = 7 us, hbm = 3.35 TB/s; sizes from
  // 1 MiB to 1 GiB (a 1024x span), 2% multiplicative noise. Rows 0, 2, ... fitted, 1, 3, ... held out.
  const double hbm = 3.35e12, eta = 0.62, launch = 7e-6;
  Rng rng(7);
  std::vector<calib::MemoryKernelRow> rows;
  for (int i = 0; i < 12; ++i) {
    const double bytes = double(1 << 20) * double(1 << (i % 11));
    const double t = 2 * bytes / (eta * hbm) + launch;
    rows.push_back({"pack_shards", bytes, t * (1 + 0.02 * (2 * rng.uniform() - 1))});
  }
  const auto f = calib::fit_memory_kernels(rows, hbm, 0.85, 5e-6);
  REQUIRE(f.has_value());
  CHECK(f->fit_rows == 6);
  CHECK(f->held_rows == 6);
  CHECK(f->eta_mem == approx(eta, 0.03));
  REQUIRE(f->launch_s.has_value());
  CHECK(*f->launch_s == approx(launch, 0.3));  // the launch is a small part of the larger rows: looser
  CHECK(f->held_median_error < 0.05);  // the noise alone is up to 2%, the fitted line adds a little
  CHECK(f->held_median_error_default > 0.2);  // 0.85 vs 0.62: the defaults are ~27% fast
}

TEST_CASE("memory-bound kernels of one size: eta_mem from the median rate, the launch kept") {
  // Two rows of 256 MiB at 1 ms and 1.1 ms, launch kept at 5 us: eta = 2 x 256 MiB / ((t - 5us) x hbm),
  // median of the two (the upper one of an even count): t = 1.1 ms -> 536870912 / (1.095e-3 x 1e12) = 0.4903.
  std::vector<calib::MemoryKernelRow> rows{{"permute_tokens", 268435456, 1e-3}, {"unpermute_tokens", 268435456, 1.1e-3}};
  const auto f = calib::fit_memory_kernels(rows, 1e12, 0.85, 5e-6);
  REQUIRE(f.has_value());
  CHECK_FALSE(f->launch_s.has_value());
  CHECK(f->held_rows == 0);
  CHECK(f->eta_mem == approx(536870912.0 / (1.095e-3 * 1e12), 1e-9));
  CHECK_FALSE(calib::fit_memory_kernels({}, 1e12, 0.85, 5e-6).has_value());
}

TEST_CASE("overlap: the NCCL row is preferred, then the SM-sharing copy kernel; below 1 counts as none") {
  using hs::engine::KernelClass;
  using hs::engine::Traffic;
  // GEMM 1.0 ms alone, 1.2 ms beside the copy kernel: compute slowdown 0.2; copy 2.0 -> 2.1: 0.05.
  // A copy on one GPU stays inside it: the intra-node (nvlink) cells.
  std::vector<calib::OverlapRow> rows{{"copy_engine", 1 << 28, 1e-3, 1.01e-3, 2e-3, 2e-3},
                                      {"copy_kernel", 1 << 28, 1e-3, 1.2e-3, 2e-3, 2.1e-3}};
  auto f = calib::fit_overlap(rows, 1, 1, 8);
  REQUIRE(f.has_value());
  CHECK(f->from == "copy_kernel");
  CHECK(f->traffic == Traffic::kIntraNode);
  CHECK(f->compute_slowdown == approx(0.2));
  CHECK(f->communication_slowdown == approx(0.05));
  rows.push_back({"nccl_all_reduce", 1 << 28, 1e-3, 1.15e-3, 2e-3, 1.9e-3});  // faster together: noise, 0
  // 16 ranks on 2 nodes: the all-reduce crosses the network; it sets the (gemm, network) cell and
  // the network communication cell, nothing else.
  f = calib::fit_overlap(rows, 16, 2, 8);
  CHECK(f->from == "nccl_all_reduce");
  CHECK(f->traffic == Traffic::kNetwork);
  CHECK(f->compute_slowdown == approx(0.15));
  CHECK(f->communication_slowdown == 0);
  const auto cells = f->cells();
  REQUIRE(cells.compute[static_cast<int>(KernelClass::kGemm)][1].has_value());
  CHECK(*cells.compute[static_cast<int>(KernelClass::kGemm)][1] == approx(0.15));
  CHECK_FALSE(cells.compute[static_cast<int>(KernelClass::kGemm)][0].has_value());
  CHECK_FALSE(cells.compute[static_cast<int>(KernelClass::kAttention)][1].has_value());
  CHECK(cells.communication[1] == 0.0);
  CHECK_FALSE(cells.communication[0].has_value());
  // 8 ranks on one node: inside it. Nodes unknown (0): more ranks than a node's GPUs means several.
  CHECK(calib::fit_overlap(rows, 8, 1, 8)->traffic == Traffic::kIntraNode);
  CHECK(calib::fit_overlap(rows, 8, 0, 8)->traffic == Traffic::kIntraNode);
  CHECK(calib::fit_overlap(rows, 16, 0, 8)->traffic == Traffic::kNetwork);
  CHECK_FALSE(calib::fit_overlap(std::vector<calib::OverlapRow>{}, 1, 1, 8).has_value());
}

TEST_CASE("Kendall tau: same order 1, reversed -1, hand-counted pairs, ties") {
  const std::vector<double> a{1, 2, 3, 4};
  CHECK(calib::kendall_tau(a, std::vector<double>{10, 20, 30, 40})->tau == approx(1.0));
  CHECK(calib::kendall_tau(a, std::vector<double>{4, 3, 2, 1})->tau == approx(-1.0));
  // m = 1 3 2 4: pairs (1,2) C, (1,3) C, (1,4) C, (2,3) D, (2,4) C, (3,4) C -> (5 - 1) / 6.
  const auto t = calib::kendall_tau(a, std::vector<double>{1, 3, 2, 4});
  CHECK(t->concordant == 5);
  CHECK(t->discordant == 1);
  CHECK(t->tau == approx(4.0 / 6.0));
  // One tie in m (items 1 and 2 within 1%): C = 5, D = 0, Tm = 1: 5 / sqrt(6 x 5).
  CHECK(calib::kendall_tau(a, std::vector<double>{1, 2, 2.01, 4}, 0.01)->tau == approx(5.0 / std::sqrt(30.0)));
  CHECK_FALSE(calib::kendall_tau(std::vector<double>{1}, std::vector<double>{1}).has_value());
  CHECK_FALSE(calib::kendall_tau(std::vector<double>{1, 1}, std::vector<double>{1, 2}).has_value());
}

#include <cstdlib>
#include <string>

#include "calib/gemm_tiles_fit.hpp"

TEST_CASE("gemm tiles fit: eta_tile, k_fill and call recovered from times the model gives") {
  // Two shapes (gpt-moe-s-like and mixtral-like), 8 experts, tokens 16-8192 doubling; truth eta_tile
  // 0.70, k_fill 160, call 9 us, no noise: the grid (0.005, 8, 0.5 us) holds the truth exactly.
  topology::GpuModel gpu;
  gpu.peak_flops = FlopRate(989e12);
  gpu.hbm_bandwidth = Bandwidth(3.35e12);
  cost::GemmTileParams truth;
  truth.eta_tile = 0.70, truth.k_fill = 160, truth.call = Seconds(9e-6);
  std::vector<calib::GemmSuite> suites{{"s.json", 768, 1536, 2, 8, {}}, {"m.json", 4096, 14336, 3, 8, {}}};
  for (auto& s : suites)
    for (double t = 16; t <= 8192; t *= 2) s.rows.push_back({t, calib::tiled_suite_seconds(s, t, gpu, 132, 0.85, truth)});
  const auto f = calib::fit_gemm_tiles(suites, gpu, 132, 0.85, cost::GemmTileParams{});
  REQUIRE(f.has_value());
  CHECK(f->params.eta_tile == approx(0.70, 1e-9));
  CHECK(f->params.k_fill == approx(160, 1e-9));
  CHECK(f->params.call.value() == approx(9e-6, 1e-9));
  CHECK(f->fit_rows == 10);  // rows 0, 2, 4, 6, 8 of each
  CHECK(f->held_median_error < 1e-9);
}

TEST_CASE("gemm tiles fit: the cost model's defaults are the fit to the four H100 SXM5 shapes") {
  // validation/results/h100-sxm5-80gb at eta_mem 0.85 (ComputeParams' default) on 132 SMs with
  // 989 TFLOP/s and 3.35 TB/s (topologies/dgx-h100-1node.yaml): what GemmTileParams cites.
  const char* fixtures = std::getenv("HECATE_FIXTURES");
  REQUIRE(fixtures != nullptr);
  const std::string dir = std::string(fixtures) + "/../../validation/results/h100-sxm5-80gb/";
  std::vector<calib::GemmSuite> suites;
  for (const char* f : {"mixtral-8x7b.json", "deepseek-v3-like.json", "gpt-moe-l.json", "gpt-moe-s.json"})
    suites.push_back(calib::gemm_suite(calib::read_measured(dir + f)));
  topology::GpuModel gpu;
  gpu.peak_flops = FlopRate(989e12);
  gpu.hbm_bandwidth = Bandwidth(3.35e12);
  const auto f = calib::fit_gemm_tiles(suites, gpu, 132, 0.85, cost::GemmTileParams{});
  REQUIRE(f.has_value());
  const cost::GemmTileParams d;
  CHECK(f->params.eta_tile == approx(d.eta_tile, 1e-9));
  CHECK(f->params.k_fill == approx(d.k_fill, 1e-9));
  CHECK(f->params.call.value() == approx(d.call.value(), 1e-9));
  MESSAGE("held-out median |error| ", f->held_median_error);
}
