// The tile/wave GEMM model (cost/gemm_tiles.hpp) by hand, and its properties the lower bound needs.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cost/gemm_tiles.hpp"

using namespace hs;

TEST_CASE("gemm tiles: tile count, waves and wave quantization by hand") {
  const cost::GemmTileParams p;  // 128 x 128 tiles, eta_tile 0.79, k_fill 272
  // 8 experts x 300 tokens x n 1536: ceil(300/128) = 3 tile rows x ceil(1536/128) = 12 tile columns
  // = 36 tiles per expert, 288 in all; on 132 SMs ceil(288/132) = 3 waves, wave-quantization
  // efficiency 288 / (3 x 132) = 0.727.
  CHECK(cost::gemm_tile_count(300, 1536, p) == 36);
  CHECK(cost::gemm_tile_count(0, 1536, p) == 0);
  CHECK(cost::gemm_tile_count(0.25, 100, p) == 1);  // a partial tile is computed whole
  const std::vector<cost::TileGroup> g(8, cost::TileGroup{36, 768});
  const cost::WaveSums w = cost::gemm_wave_sums(g, 132);
  CHECK(w.starts == 3);
  CHECK(w.k_sum == 3 * 768);
  // Each wave: one tile per SM of 2 x 128 x 128 x (768 + 272) FLOPs at 0.79 x peak / 132 per SM;
  // peak 1e15: 2 x 16384 x 1040 x 132 / 0.79e15 = 5.6942 us a wave, 17.08 us for three.
  const double wave = 2.0 * 128 * 128 * (768 + 272) * 132 / (0.79 * 1e15);
  CHECK(wave == doctest::Approx(5.6942e-6).epsilon(1e-4));
  CHECK(cost::gemm_waves_time(g, 132, 1e15, p).value() == doctest::Approx(3 * wave).epsilon(1e-12));
  // One more expert: 324 tiles, still 3 waves, the same time.
  const std::vector<cost::TileGroup> g9(9, cost::TileGroup{36, 768});
  CHECK(cost::gemm_waves_time(g9, 132, 1e15, p).value() == doctest::Approx(3 * wave).epsilon(1e-12));
  // Efficiency of one 1024 x 1024 x 4096 GEMM: 64 tiles, one wave on 132 SMs:
  // 2 x 1024^2 x 4096 / (1 x 2 x 16384 x (4096 + 272) x 132 / 0.79) = 0.79 x 64/132 x 4096/4368 = 0.3592.
  CHECK(cost::gemm_tile_efficiency(1024, 1024, 4096, 132, p) == doctest::Approx(0.79 * 64 / 132 * 4096 / 4368).epsilon(1e-12));
}

TEST_CASE("gemm tiles: unequal inner lengths run longest first, a wave as long as its longest tile") {
  cost::GemmTileParams p;
  p.k_fill = 0;
  // 2 SMs; tiles of k 100, 100 and 1 (sorted): wave 1 = {100, 100}, wave 2 = {1}: k_sum 101.
  const std::vector<cost::TileGroup> g{{1, 1}, {2, 100}};
  const cost::WaveSums w = cost::gemm_wave_sums(g, 2);
  CHECK(w.starts == 2);
  CHECK(w.k_sum == 101);
}

TEST_CASE("property: the waves are subadditive over a split of the tiles (the lower bound's premise)") {
  const cost::GemmTileParams p;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> tiles(0, 400), k(1, 9000), groups(1, 6);
  auto draw = [&] {
    std::vector<cost::TileGroup> g(static_cast<size_t>(groups(rng)));
    for (auto& x : g) x = {static_cast<double>(tiles(rng)), static_cast<double>(k(rng))};
    return g;
  };
  for (int i = 0; i < 3000; ++i) {
    const auto a = draw(), b = draw();
    std::vector<cost::TileGroup> u = a;
    u.insert(u.end(), b.begin(), b.end());
    const double ta = cost::gemm_waves_time(a, 132, 1e15, p).value(), tb = cost::gemm_waves_time(b, 132, 1e15, p).value();
    CHECK(cost::gemm_waves_time(u, 132, 1e15, p).value() <= (ta + tb) * (1 + 1e-12));
  }
}
