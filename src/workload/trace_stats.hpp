// Statistics of an expert-load trace (`hecate-sim trace stats`): how imbalanced and how stable the
// routing is, per MoE layer and overall (mean over layers), over the whole trace and over an early
// and a late window (first and last 10% of the records, at least one record each).
//
// Every statistic is computed on global per-expert counts (summed over sources) of one record and
// layer, then averaged over the window's records:
//   expert max/mean, CV (population s.d. / mean), Gini, top-1 share (busiest expert's fraction)
//   GPU max/mean, CV, Gini, top-1 share   — the same on GPU loads: with EP size N, GPU g holds the
//                                           contiguous expert block [g*E/N, (g+1)*E/N) (N <= E)
//   lag-1 / lag-10 correlation            — Pearson r between the expert-share vectors of records k
//                                           apart. k counts RECORDS: a sampled trace (SmartMoE keeps
//                                           every 10th iteration) has iteration lag k x stride, see
//                                           iteration_stride()
//   AR(1) of log-share                    — per expert, the Yule-Walker lag-1 coefficient of
//                                           x_r = log(share) over the window's records (a zero count
//                                           counts as half an assignment), averaged over experts
//                                           weighted by their mean share: experts that get almost no
//                                           tokens have log-shares made of sampling noise
//   log-share s.d.                        — per expert, the s.d. of x_r over the window, same weights
//                                           (hardware.md: ~0.10 late, ~0.67 early in the SmartMoE run)
//   source TV                             — per-source traces: total-variation distance
//                                           (1/2 sum |p_s - p|) between each source's expert
//                                           distribution and the global one, mean over sources
//   source max/mean                       — expert max/mean of each source's own counts, mean over
//                                           sources: what one GPU's micro-batch sees (larger than the
//                                           global max/mean under bias balancing, hardware.md)
// The references for what real training shows are in the design notes (hardware.md, second half).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "workload/trace.hpp"

namespace hs::workload {

struct LoadStats {
  double max_mean = 0, cv = 0, gini = 0, top1_share = 0;                  // expert level
  double gpu_max_mean = 0, gpu_cv = 0, gpu_gini = 0, gpu_top1_share = 0;  // GPU level (EP blocks)
  double lag1 = 0, lag10 = 0;          // NaN when the window is shorter than the lag + 1
  double ar1_log = 0, log_share_sd = 0;  // NaN for windows of fewer than 3 records
  double source_tv = 0;                // 0 for global traces
  double source_max_mean = 0;          // per-source expert max/mean, mean over sources (= max_mean if global)
};

struct WindowStats {
  std::string window;     // "all", "early", "late"
  int first = 0, last = 0;  // record range [first, last)
  LoadStats overall;      // mean over layers
  std::vector<LoadStats> layers;
};

struct TraceStats {
  int ep_size = 0;              // GPUs used for the GPU-level statistics (clamped to the experts)
  int64_t iteration_stride = 1; // median iteration step between consecutive records
  std::vector<WindowStats> windows;  // all, early, late
};

// ep_size: GPUs for the GPU-level statistics; values above the expert count are clamped to it.
TraceStats trace_stats(const Trace& t, int ep_size);

// Human-readable table (overall per window, then per layer over all records) and JSON.
std::string stats_table(const Trace& t, const TraceStats& s, const std::string& file);
std::string stats_json(const Trace& t, const TraceStats& s, const std::string& file);

// Building blocks, exposed for tests. Each returns 0 (or 1 for correlations of two constant
// vectors, which agree) rather than dividing by zero.
double gini_coefficient(std::vector<double> v);          // sum_i (2i - n + 1) x_(i) / (n sum x)
double coefficient_of_variation(std::span<const double> v);  // population s.d. / mean
double pearson(std::span<const double> a, std::span<const double> b);
// Yule-Walker lag-1 coefficient: sum_t (x_t - m)(x_{t-1} - m) / sum_t (x_t - m)^2, m = mean of x.
double ar1_coefficient(std::span<const double> x);
int64_t iteration_stride(const Trace& t);

}  // namespace hs::workload
