#include "cost/gemm_tiles.hpp"

#include <algorithm>
#include <cmath>

namespace hs::cost {

WaveSums gemm_wave_sums(std::span<const TileGroup> groups, int sms) {
  std::vector<TileGroup> g;
  g.reserve(groups.size());
  for (const auto& x : groups)
    if (x.tiles > 0) g.push_back(x);
  std::sort(g.begin(), g.end(), [](const TileGroup& a, const TileGroup& b) { return a.k > b.k; });
  // Tiles at positions 0, sms, 2 sms, ... (longest first) start the waves (WaveCounter).
  WaveCounter w(sms);
  for (const auto& x : g) w.add(x.tiles, x.k);
  return w.sums();
}

Seconds gemm_waves_time(std::span<const TileGroup> groups, int sms, double peak, const GemmTileParams& p) {
  return gemm_waves_time(gemm_wave_sums(groups, sms), sms, peak, p);
}

Seconds gemm_waves_time(const WaveSums& w, int sms, double peak, const GemmTileParams& p) {
  return Seconds((w.k_sum + p.k_fill * w.starts) * 2.0 * p.tile_m * p.tile_n * sms / (p.eta_tile * peak));
}

double gemm_tile_efficiency(double m, double n, double k, int sms, const GemmTileParams& p) {
  const TileGroup g{gemm_tile_count(m, n, p), k};
  const double t = gemm_waves_time(std::span<const TileGroup>(&g, 1), sms, 1.0, p).value();
  return t > 0 ? 2.0 * m * n * k / t : 0.0;
}

}  // namespace hs::cost
