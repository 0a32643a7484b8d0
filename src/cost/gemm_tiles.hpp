// The tile/wave GEMM model (docs/model.md §3): how long one GEMM launch takes on a GPU of `sms`
// streaming multiprocessors, from how cuBLAS / CUTLASS run it on Hopper and Ampere. A GEMM (or a
// grouped GEMM: several independent problems of one launch, one per expert) is cut into output tiles
// of tile_m x tile_n, one per CTA; each SM runs one CTA at a time, so the tiles run in waves of `sms`.
// A tile of inner length k costs
//     tile_time(k) = 2 tile_m tile_n (k + k_fill) / (eta_tile x peak / sms),
// i.e. every SM streams its tile's MMAs at eta_tile of its share of the peak, after a pipeline fill
// (the K loop's prologue and the epilogue's store) worth k_fill more elements of K: a short-K GEMM
// (a small d_model, or a weight gradient over few tokens, whose K is the tokens) is less efficient.
// Tiles sorted longest first run in waves of `sms`, a wave as long as its longest tile:
//     compute = sum over waves w of tile_time(k of the first tile of w)
// which for T equal tiles is ceil(T / sms) x tile_time(k): the wave quantization, efficiency
// T / (ceil(T / sms) x sms). A launch also costs a fixed `call` time (launch, the first wave's ramp,
// the last one's tail), and the time is a roofline with the HBM traffic (the caller's):
//     launch time = call + max(compute, bytes / (eta_mem x hbm_bw)).
// The partial tiles of a problem (m or n not a multiple of the tile) are computed whole: t tokens
// are ceil(t / tile_m) tile rows.
//
// Parameters (ComputeParams::tiles; fitted per GPU by `calibrate`, calib/gemm_tiles_fit.hpp):
//   tile_m x tile_n = 128 x 128: one of the two CTA tiles Hopper bf16 GEMMs use (cuBLAS / CUTLASS
//     sm90 kernels run 128 x 128 and 128 x 256 output tiles); fitted to the data below with each,
//     128 x 128 fits better (mean squared log error 0.0101 against 0.0116 for 128 x 256 with its
//     own eta_tile 0.81, k_fill 288, call 7 us; both on a coarser grid than calibrate's).
//   eta_tile 0.79, k_fill 272, call 12.5 us: fitted jointly to the four H100 SXM5 shapes of
//     validation/results/h100-sxm5-80gb (8 experts in one strided-batched cuBLAS call per weight
//     matrix, 16-8192 tokens per expert) on every other row, least squares of log(model/measured);
//     README.md there gives the held-out errors. Not fitted to any training throughput.
// Subadditive over a split of the tiles (the lower bound's premise, strategy/policy/bound): the sum
// over waves is the integral over u of ceil(N(u) / sms) x unit, N(u) the tiles longer than u, and
// ceil(a + b) <= ceil(a) + ceil(b). Splitting one weight gradient's K (an expert's tokens over two
// GPUs) is not a split of tiles; the property tests check that case (expert_gemm_test.cpp,
// bound_test.cpp) rather than prove it.
#pragma once

#include <cmath>
#include <span>
#include <vector>

#include "util/units.hpp"

namespace hs::cost {

struct GemmTileParams {
  int tile_m = 128;        // CTA output tile rows (tokens)
  int tile_n = 128;        // CTA output tile columns
  double eta_tile = 0.79;  // an SM's tensor-core throughput while it runs a tile, fraction of its peak share
  double k_fill = 272;     // per-tile pipeline fill and epilogue, in elements of K
  Seconds call{12.5e-6};   // fixed time per GEMM launch
};

// `tiles` output tiles of inner length k (one problem of a grouped launch, or part of one).
struct TileGroup {
  double tiles;
  double k;
};

// Output tiles of an m x n problem: ceil(m / tile_m) x ceil(n / tile_n); 0 when m or n <= 0.
// Inline: grouped launches count one problem per expert.
inline double gemm_tile_count(double m, double n, const GemmTileParams& p) {
  if (!(m > 0) || !(n > 0)) return 0;
  return std::ceil(m / p.tile_m) * std::ceil(n / p.tile_n);
}

// The waves of one launch over `groups` (any order) on `sms` SMs: how many (starts) and the sum of
// their longest tiles' k (k_sum); the waves take (k_sum + k_fill x starts) x 2 tile_m tile_n sms /
// (eta_tile x peak). Independent of eta_tile and k_fill, so a fit computes them once per row.
struct WaveSums {
  double starts = 0, k_sum = 0;
};
WaveSums gemm_wave_sums(std::span<const TileGroup> groups, int sms);
// gemm_wave_sums' count, group by group, for groups given already in its order (longest k first):
// a caller that has them sorted (equal tile counts, rows sorted) need not build TileGroups.
class WaveCounter {
 public:
  explicit WaveCounter(int sms) : sms_(sms) {}
  // A group holding tile positions [c, c + tiles) starts ceil((c + tiles) / sms) - ceil(c / sms)
  // waves (ceil(c / sms) is the previous group's quotient, divided once).
  void add(double tiles, double k) {
    const double through = std::ceil((c_ + tiles) / sms_);
    const double starts = through - before_;
    sums_.starts += starts;
    sums_.k_sum += starts * k;
    c_ += tiles;
    before_ = through;
  }
  const WaveSums& sums() const { return sums_; }

 private:
  int sms_;
  WaveSums sums_;
  double c_ = 0, before_ = 0;
};

// Seconds of the waves of one launch over `groups` (any order) on `sms` SMs of `peak` FLOP/s, with
// no fixed call time and no memory roofline: sum over waves of the wave's longest tile.
Seconds gemm_waves_time(std::span<const TileGroup> groups, int sms, double peak, const GemmTileParams& p);
// The same from the waves' sums.
Seconds gemm_waves_time(const WaveSums& w, int sms, double peak, const GemmTileParams& p);

// Compute-only efficiency of one m x n x k problem on its own: useful FLOPs / (waves time x peak).
double gemm_tile_efficiency(double m, double n, double k, int sms, const GemmTileParams& p);

}  // namespace hs::cost
