#include "workload/trace_stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hs::workload {

double gini_coefficient(std::vector<double> v) {
  // G = sum_i (2i - n + 1) x_(i) / (n sum x), x sorted ascending (0-based i).
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size()), s = std::accumulate(v.begin(), v.end(), 0.0);
  if (s <= 0) return 0;
  double g = 0;
  for (size_t i = 0; i < v.size(); ++i) g += (2.0 * static_cast<double>(i) - n + 1) * v[i];
  return g / (n * s);
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n, mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 1.0;  // two flat distributions agree
}

namespace {

LoadStats layer_stats(const Trace& t, int l, int first, int last, int ep) {
  LoadStats s;
  const int E = t.experts;
  const int S = t.per_source() ? t.sources : 1;
  const int n = last - first;
  std::vector<std::vector<double>> shares(n, std::vector<double>(E));
  for (int r = first; r < last; ++r) {
    std::vector<double> v(E);
    for (int e = 0; e < E; ++e) v[e] = static_cast<double>(t.global_count(t.records[r], l, e));
    const double sum = std::accumulate(v.begin(), v.end(), 0.0), mean = sum / E;
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    s.max_mean += *std::max_element(v.begin(), v.end()) / mean;
    s.cv += std::sqrt(var / E) / mean;
    s.gini += gini_coefficient(v);
    s.top1_share += *std::max_element(v.begin(), v.end()) / sum;
    const int per = std::max(1, E / ep);
    double gmax = 0;
    for (int g = 0; g * per < E; ++g) gmax = std::max(gmax, std::accumulate(v.begin() + g * per, v.begin() + std::min(E, (g + 1) * per), 0.0));
    s.gpu_max_mean += gmax / (sum / ((E + per - 1) / per));
    for (int e = 0; e < E; ++e) shares[r - first][e] = v[e] / sum;
    if (t.per_source()) {
      double tv = 0;
      for (int src = 0; src < S; ++src) {
        const uint32_t* c = t.records[r].counts.data() + (static_cast<size_t>(l) * S + src) * E;
        const double ss = std::accumulate(c, c + E, 0.0);
        double d = 0;
        for (int e = 0; e < E; ++e) d += std::fabs(c[e] / ss - v[e] / sum);
        tv += d / 2;
      }
      s.source_tv += tv / S;
    }
  }
  s.max_mean /= n, s.cv /= n, s.gini /= n, s.top1_share /= n, s.gpu_max_mean /= n, s.source_tv /= n;
  auto lag = [&](int k) {
    if (n <= k) return std::nan("");
    double c = 0;
    for (int r = k; r < n; ++r) c += pearson(shares[r], shares[r - k]);
    return c / (n - k);
  };
  s.lag1 = lag(1);
  s.lag10 = lag(10);
  if (n > 2) {
    double ar = 0;
    for (int e = 0; e < E; ++e) {
      std::vector<double> x(n), y(n - 1), z(n - 1);
      for (int r = 0; r < n; ++r) x[r] = std::log(std::max(shares[r][e], 1e-9));
      for (int r = 1; r < n; ++r) y[r - 1] = x[r], z[r - 1] = x[r - 1];
      ar += pearson(y, z);
    }
    s.ar1_log = ar / E;
  } else {
    s.ar1_log = std::nan("");
  }
  return s;
}

}  // namespace

std::vector<WindowStats> trace_stats(const Trace& t, int ep_size) {
  const int R = static_cast<int>(t.records.size());
  const int w = std::max(1, R / 10);
  std::vector<WindowStats> out{{"all", 0, R, {}, {}}, {"early", 0, w, {}, {}}, {"late", R - w, R, {}, {}}};
  for (auto& win : out) {
    for (int l = 0; l < t.moe_layers; ++l) win.layers.push_back(layer_stats(t, l, win.first, win.last, ep_size));
    auto avg = [&](double LoadStats::*f) {
      double s = 0;
      for (const auto& x : win.layers) s += x.*f;
      return s / static_cast<double>(win.layers.size());
    };
    for (auto f : {&LoadStats::max_mean, &LoadStats::cv, &LoadStats::gini, &LoadStats::top1_share, &LoadStats::gpu_max_mean,
                   &LoadStats::lag1, &LoadStats::lag10, &LoadStats::ar1_log, &LoadStats::source_tv})
      win.overall.*f = avg(f);
  }
  return out;
}

}  // namespace hs::workload
