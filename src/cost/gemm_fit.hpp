// Fitting the expert-GEMM efficiency curve of the compute cost model (compute_cost.hpp) to measured
// times: eta(t) = eta_max * t / (t + t_half), where eta = FLOPs / (time x peak) for t tokens per
// expert. 1 / eta = 1 / eta_max + (t_half / eta_max) * (1 / t) is linear in 1 / t, so an ordinary
// least-squares line through the points (1 / t, 1 / eta) gives both parameters. Only rows where the
// GEMM is compute-bound should be fitted (few tokens per expert are weight-read bound, which the
// roofline's memory term models instead).
#pragma once

#include <optional>
#include <span>

namespace hs::cost {

struct GemmPoint {
  double tokens;
  double efficiency;  // measured FLOPs / (time x peak)
};

struct GemmFit {
  double eta_max;
  double t_half;
};

// Needs two or more points with distinct token counts, a positive intercept (a ceiling eta_max) and
// a non-negative slope (efficiency not falling with size); nullopt otherwise.
std::optional<GemmFit> fit_gemm_efficiency(std::span<const GemmPoint> points);

inline double gemm_efficiency(const GemmFit& f, double tokens) { return f.eta_max * tokens / (tokens + f.t_half); }

}  // namespace hs::cost
