// Statistics of an expert-load trace (`hecate-sim trace stats`): how imbalanced and how stable the
// routing is, per MoE layer and overall, over the whole trace and an early / late window (first and
// last 10% of the records).
//   expert max/mean, CV (s.d./mean), Gini, top-1 share   — of global per-expert counts, averaged over records
//   GPU max/mean                                          — experts in contiguous blocks of E/ep_size per GPU
//   lag-1 / lag-10 correlation                            — Pearson r between the share vectors of records
//                                                           k apart (k in records: mind a sampled trace's stride)
//   AR(1) of log-share                                    — per expert, lag-1 autocorrelation of
//                                                           log(share) over records, averaged over experts
//   source distance                                       — total-variation distance between a source's
//                                                           expert distribution and the global one, mean
#pragma once

#include <string>
#include <vector>

#include "workload/trace.hpp"

namespace hs::workload {

struct LoadStats {
  double max_mean = 0, cv = 0, gini = 0, top1_share = 0, gpu_max_mean = 0;
  double lag1 = 0, lag10 = 0, ar1_log = 0, source_tv = 0;
};

struct WindowStats {
  std::string window;               // "all", "early", "late"
  int first = 0, last = 0;          // record range [first, last)
  LoadStats overall;                // mean over layers
  std::vector<LoadStats> layers;
};

std::vector<WindowStats> trace_stats(const Trace& t, int ep_size);
double gini_coefficient(std::vector<double> v);
double pearson(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace hs::workload
