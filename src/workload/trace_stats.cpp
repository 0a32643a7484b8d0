#include "workload/trace_stats.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

namespace hs::workload {

double gini_coefficient(std::vector<double> v) {
  // G = sum_i (2i - n + 1) x_(i) / (n sum x), x sorted ascending (0-based i): 0 when all equal,
  // (n-1)/n when one entry holds everything.
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size()), s = std::accumulate(v.begin(), v.end(), 0.0);
  if (s <= 0) return 0;
  double g = 0;
  for (size_t i = 0; i < v.size(); ++i) g += (2.0 * static_cast<double>(i) - n + 1) * v[i];
  return g / (n * s);
}

double coefficient_of_variation(std::span<const double> v) {
  if (v.empty()) return 0;
  const double n = static_cast<double>(v.size()), mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  if (mean <= 0) return 0;
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  return std::sqrt(var / n) / mean;
}

double pearson(std::span<const double> a, std::span<const double> b) {
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

double ar1_coefficient(std::span<const double> x) {
  if (x.size() < 2) return std::nan("");
  const double m = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  double num = 0, den = 0;
  for (size_t t = 0; t < x.size(); ++t) {
    den += (x[t] - m) * (x[t] - m);
    if (t > 0) num += (x[t] - m) * (x[t - 1] - m);
  }
  return den > 0 ? num / den : 1.0;  // a constant series is perfectly persistent
}

int64_t iteration_stride(const Trace& t) {
  if (t.records.size() < 2) return 1;
  std::vector<int64_t> d;
  for (size_t r = 1; r < t.records.size(); ++r) d.push_back(t.records[r].iter - t.records[r - 1].iter);
  std::nth_element(d.begin(), d.begin() + static_cast<ptrdiff_t>(d.size() / 2), d.end());
  return std::max<int64_t>(1, d[d.size() / 2]);
}

namespace {

// Max/mean, CV, Gini and top-1 share of one load vector, added to the four accumulators.
void add_imbalance(const std::vector<double>& v, double& max_mean, double& cv, double& gini, double& top1) {
  const double sum = std::accumulate(v.begin(), v.end(), 0.0);
  if (sum <= 0) return;
  const double mx = *std::max_element(v.begin(), v.end());
  max_mean += mx / (sum / static_cast<double>(v.size()));
  cv += coefficient_of_variation(v);
  gini += gini_coefficient(v);
  top1 += mx / sum;
}

LoadStats layer_stats(const Trace& t, int l, int first, int last, int ep) {
  LoadStats s;
  const int E = t.experts;
  const int S = t.per_source() ? t.sources : 1;
  const int n = last - first;
  std::vector<double> shares(static_cast<size_t>(n) * E), logs(static_cast<size_t>(n) * E);
  std::vector<double> v(E), gpu(ep);
  for (int r = first; r < last; ++r) {
    const TraceRecord& rec = t.records[r];
    for (int e = 0; e < E; ++e) v[e] = static_cast<double>(t.global_count(rec, l, e));
    const double sum = std::accumulate(v.begin(), v.end(), 0.0);
    add_imbalance(v, s.max_mean, s.cv, s.gini, s.top1_share);
    std::fill(gpu.begin(), gpu.end(), 0.0);
    for (int e = 0; e < E; ++e) gpu[static_cast<size_t>(static_cast<int64_t>(e) * ep / E)] += v[e];
    add_imbalance(gpu, s.gpu_max_mean, s.gpu_cv, s.gpu_gini, s.gpu_top1_share);
    for (int e = 0; e < E; ++e) {
      const size_t k = static_cast<size_t>(r - first) * E + e;
      shares[k] = sum > 0 ? v[e] / sum : 0;
      logs[k] = std::log(std::max(v[e], 0.5) / std::max(sum, 1.0));
    }
    if (!t.per_source() && sum > 0) s.source_max_mean += *std::max_element(v.begin(), v.end()) / (sum / E);
    if (t.per_source() && sum > 0) {
      double tv = 0, smm = 0;
      for (int src = 0; src < S; ++src) {
        const uint32_t* c = rec.counts.data() + (static_cast<size_t>(l) * S + src) * E;
        const double ss = std::accumulate(c, c + E, 0.0);
        if (ss <= 0) continue;
        double d = 0;
        uint32_t mx = 0;
        for (int e = 0; e < E; ++e) d += std::fabs(c[e] / ss - v[e] / sum), mx = std::max(mx, c[e]);
        tv += d / 2;
        smm += mx / (ss / E);
      }
      s.source_tv += tv / S;
      s.source_max_mean += smm / S;
    }
  }
  const double dn = n;
  for (double* f : {&s.max_mean, &s.cv, &s.gini, &s.top1_share, &s.gpu_max_mean, &s.gpu_cv, &s.gpu_gini,
                    &s.gpu_top1_share, &s.source_tv, &s.source_max_mean})
    *f /= dn;
  auto row = [&](int r) { return std::span<const double>(shares.data() + static_cast<size_t>(r) * E, E); };
  auto lag = [&](int k) {
    if (n <= k) return std::nan("");
    double c = 0;
    for (int r = k; r < n; ++r) c += pearson(row(r), row(r - k));
    return c / (n - k);
  };
  s.lag1 = lag(1);
  s.lag10 = lag(10);
  if (n >= 3) {
    double ar = 0, sd = 0, wsum = 0;
    std::vector<double> x(n);
    for (int e = 0; e < E; ++e) {
      double w = 0, m = 0;
      for (int r = 0; r < n; ++r) {
        x[r] = logs[static_cast<size_t>(r) * E + e];
        w += shares[static_cast<size_t>(r) * E + e];
        m += x[r];
      }
      m /= dn;
      double var = 0;
      for (double xr : x) var += (xr - m) * (xr - m);
      ar += w * ar1_coefficient(x);
      sd += w * std::sqrt(var / dn);
      wsum += w;
    }
    s.ar1_log = wsum > 0 ? ar / wsum : std::nan("");
    s.log_share_sd = wsum > 0 ? sd / wsum : std::nan("");
  } else {
    s.ar1_log = s.log_share_sd = std::nan("");
  }
  return s;
}

constexpr double LoadStats::*kFields[] = {
    &LoadStats::max_mean, &LoadStats::cv,      &LoadStats::gini,         &LoadStats::top1_share,
    &LoadStats::gpu_max_mean, &LoadStats::gpu_cv, &LoadStats::gpu_gini,  &LoadStats::gpu_top1_share,
    &LoadStats::lag1,     &LoadStats::lag10,   &LoadStats::ar1_log,      &LoadStats::log_share_sd,
    &LoadStats::source_tv, &LoadStats::source_max_mean};
constexpr const char* kJsonNames[] = {"expert_max_mean", "expert_cv", "expert_gini", "expert_top1_share",
                                      "gpu_max_mean",    "gpu_cv",    "gpu_gini",    "gpu_top1_share",
                                      "lag1_corr",       "lag10_corr", "ar1_log_share", "log_share_sd",
                                      "source_tv",       "source_max_mean"};

}  // namespace

TraceStats trace_stats(const Trace& t, int ep_size) {
  TraceStats out;
  out.ep_size = std::clamp(ep_size, 1, std::max(1, t.experts));
  out.iteration_stride = iteration_stride(t);
  const int R = static_cast<int>(t.records.size());
  const int w = std::max(1, R / 10);
  out.windows = {{"all", 0, R, {}, {}}, {"early", 0, std::min(w, R), {}, {}}, {"late", std::max(0, R - w), R, {}, {}}};
  for (auto& win : out.windows) {
    if (win.last <= win.first) continue;
    for (int l = 0; l < t.moe_layers; ++l) win.layers.push_back(layer_stats(t, l, win.first, win.last, out.ep_size));
    for (auto f : kFields) {
      double s = 0;
      for (const auto& x : win.layers) s += x.*f;
      win.overall.*f = s / static_cast<double>(win.layers.size());
    }
  }
  return out;
}

namespace {

std::string table_row(const LoadStats& s) {
  auto f = [](double x, int prec) { return std::isnan(x) ? std::string("-") : fmt::format("{:.{}f}", x, prec); };
  return fmt::format("{:>8} {:>6} {:>6} {:>6} {:>8} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}", f(s.max_mean, 3),
                     f(s.cv, 3), f(s.gini, 3), f(s.top1_share, 3), f(s.gpu_max_mean, 3), f(s.gpu_cv, 3),
                     f(s.gpu_gini, 3), f(s.gpu_top1_share, 3), f(s.lag1, 4), f(s.lag10, 4), f(s.ar1_log, 3),
                     f(s.log_share_sd, 3), f(s.source_tv, 4), f(s.source_max_mean, 3));
}

constexpr const char* kHead =
    "expert:m/m     CV   Gini   top1  GPU:m/m     CV   Gini   top1   lag-1  lag-10  AR1(lg)  sd(lg)  src-TV src:m/m";

}  // namespace

std::string stats_table(const Trace& t, const TraceStats& s, const std::string& file) {
  std::string o = fmt::format(
      "{}: {} records (iter {}..{}, one record every {} iteration{}), {} MoE layers, {} experts, top-{}, {} sources{}\n"
      "GPU level: EP {} (contiguous blocks of {} experts). Lags and AR(1) are in records ({} iteration{} each).\n",
      file, t.records.size(), t.records.empty() ? 0 : t.records.front().iter,
      t.records.empty() ? 0 : t.records.back().iter, s.iteration_stride, s.iteration_stride == 1 ? "" : "s",
      t.moe_layers, t.experts, t.top_k, t.sources, t.per_source() ? "" : " (global counts)", s.ep_size,
      t.experts % s.ep_size == 0 ? fmt::format("{}", t.experts / s.ep_size) : fmt::format("~{:.1f}", double(t.experts) / s.ep_size),
      s.iteration_stride, s.iteration_stride == 1 ? "" : "s");
  o += fmt::format("  {:<18}  {}\n", "window [records)", kHead);
  for (const auto& w : s.windows) {
    if (w.layers.empty()) continue;
    o += fmt::format("  {:<18} {}\n", fmt::format("{} [{}, {})", w.window, w.first, w.last), table_row(w.overall));
  }
  if (!s.windows.empty() && !s.windows[0].layers.empty()) {
    o += fmt::format("\nper layer, all records\n  {:<18}  {}\n", "layer", kHead);
    for (size_t l = 0; l < s.windows[0].layers.size(); ++l)
      o += fmt::format("  {:<18} {}\n", l, table_row(s.windows[0].layers[l]));
  }
  return o;
}

std::string stats_json(const Trace& t, const TraceStats& s, const std::string& file) {
  auto js = [](const LoadStats& x) {
    std::string o = "{";
    for (size_t i = 0; i < std::size(kFields); ++i) {
      const double v = x.*kFields[i];
      o += fmt::format("{}\"{}\": {}", i ? ", " : "", kJsonNames[i], std::isnan(v) ? std::string("null") : fmt::format("{:.6g}", v));
    }
    return o + "}";
  };
  std::string esc;
  for (char c : file) {
    if (c == '"' || c == '\\') esc += '\\';
    esc += c;
  }
  std::string o = fmt::format(
      "{{\"file\": \"{}\", \"records\": {}, \"moe_layers\": {}, \"experts\": {}, \"top_k\": {}, \"sources\": {}, "
      "\"ep_size\": {}, \"iteration_stride\": {}, \"lags_in\": \"records\", \"windows\": [",
      esc, t.records.size(), t.moe_layers, t.experts, t.top_k, t.sources, s.ep_size, s.iteration_stride);
  bool first = true;
  for (const auto& w : s.windows) {
    if (w.layers.empty()) continue;
    o += fmt::format("{}\n  {{\"window\": \"{}\", \"records\": [{}, {}], \"overall\": {}, \"layers\": [", first ? "" : ",",
                     w.window, w.first, w.last, js(w.overall));
    first = false;
    for (size_t l = 0; l < w.layers.size(); ++l) o += fmt::format("{}\n    {}", l ? "," : "", js(w.layers[l]));
    o += "]}";
  }
  return o + "\n]}\n";
}

}  // namespace hs::workload
