#include "calib/gemm_tiles_fit.hpp"

#include <algorithm>
#include <cmath>

namespace hs::calib {

namespace {

// One launch of a row, with what does not depend on eta_tile, k_fill and call precomputed.
struct Launch {
  cost::WaveSums waves;
  double memory_s;
};

std::vector<Launch> launches(const GemmSuite& s, double t, const topology::GpuModel& gpu, int sms, double eta_mem,
                             const cost::GemmTileParams& p) {
  std::vector<Launch> out;
  for (int i = 0; i < s.mats; ++i) {
    const double k = i + 1 < s.mats ? s.d_model : s.d_ffn, n = i + 1 < s.mats ? s.d_ffn : s.d_model;
    const cost::TileGroup g{s.experts * cost::gemm_tile_count(t, n, p), k};
    const double bytes = s.experts * (k * n + t * (k + n)) * 2.0;
    out.push_back({cost::gemm_wave_sums(std::span<const cost::TileGroup>(&g, 1), sms),
                   bytes / (eta_mem * gpu.hbm_bandwidth.value())});
  }
  return out;
}

double seconds_of(const std::vector<Launch>& ls, double unit, const cost::GemmTileParams& p) {
  double s = 0;
  for (const auto& l : ls) s += p.call.value() + std::max((l.waves.k_sum + p.k_fill * l.waves.starts) * unit / p.eta_tile, l.memory_s);
  return s;
}

double unit_of(const topology::GpuModel& gpu, int sms, const cost::GemmTileParams& p) {
  return 2.0 * p.tile_m * p.tile_n * sms / gpu.peak_flops.value();
}

}  // namespace

GemmSuite gemm_suite(const Measured& m) {
  GemmSuite s;
  s.file = m.file;
  s.d_model = static_cast<double>(m.d_model), s.d_ffn = static_cast<double>(m.d_ffn);
  s.mats = m.mats;
  const bool batched = m.batched_experts > 0;
  s.experts = batched ? m.batched_experts : 1;
  s.rows = batched ? m.batched : m.rows;
  return s;
}

double tiled_suite_seconds(const GemmSuite& s, double tokens, const topology::GpuModel& gpu, int sms, double eta_mem,
                           const cost::GemmTileParams& p) {
  return seconds_of(launches(s, tokens, gpu, sms, eta_mem, p), unit_of(gpu, sms, p), p);
}

std::optional<GemmTilesCalibration> fit_gemm_tiles(std::span<const GemmSuite> suites, const topology::GpuModel& gpu, int sms,
                                                   double eta_mem, const cost::GemmTileParams& tiles) {
  struct Row {
    std::vector<Launch> ls;
    double measured;
  };
  std::vector<Row> fit;
  for (const auto& s : suites)
    for (size_t i = 0; i < s.rows.size(); i += 2)
      if (s.rows[i].tokens > 0 && s.rows[i].seconds > 0)
        fit.push_back({launches(s, s.rows[i].tokens, gpu, sms, eta_mem, tiles), s.rows[i].seconds});
  if (fit.size() < 3) return std::nullopt;
  const double unit = unit_of(gpu, sms, tiles);
  cost::GemmTileParams best = tiles, p = tiles;
  double best_obj = INFINITY;
  for (int e = 0; e <= 120; ++e)
    for (int kf = 0; kf <= 128; ++kf)
      for (int c = 0; c <= 80; ++c) {
        p.eta_tile = 0.40 + 0.005 * e, p.k_fill = 8.0 * kf, p.call = Seconds(0.5e-6 * c);
        double obj = 0;
        for (const auto& r : fit) {
          const double x = std::log(seconds_of(r.ls, unit, p) / r.measured);
          obj += x * x;
          if (obj >= best_obj) break;
        }
        if (obj < best_obj) best_obj = obj, best = p;
      }
  GemmTilesCalibration g;
  g.params = best;
  g.fit_rows = static_cast<int>(fit.size());
  std::vector<double> held_all;
  for (const auto& s : suites) {
    std::vector<double> held, all;
    for (size_t i = 0; i < s.rows.size(); ++i) {
      const auto& r = s.rows[i];
      if (!(r.tokens > 0) || !(r.seconds > 0)) continue;
      const double err = std::abs(tiled_suite_seconds(s, r.tokens, gpu, sms, eta_mem, best) - r.seconds) / r.seconds;
      all.push_back(err);
      if (i % 2 == 1) held.push_back(err), held_all.push_back(err);
    }
    g.files.push_back({s.file, upper_median(held), upper_median(all)});
  }
  g.held_rows = static_cast<int>(held_all.size());
  g.held_median_error = upper_median(held_all);
  return g;
}

}  // namespace hs::calib
