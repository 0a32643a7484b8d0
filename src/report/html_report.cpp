#include "report/html_report.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>

#include "engine/interference.hpp"
#include "report/palette.hpp"
#include "util/hecate_version.hpp"
#include "util/text_escape.hpp"

namespace hs::report {

namespace {

constexpr const auto& kColors = kSeriesColors;

std::string esc(const std::string& s) { return html_escape(s); }

// Room left of a bar chart for its row labels (the strategies' names, right-aligned): at least 210
// px, more for long knob lists (7.5 px a character at 12 px).
double label_room(const RunReport& r) {
  size_t longest = 0;
  for (const auto& s : r.strategies) longest = std::max(longest, s.name.size());
  return std::max(210.0, 7.5 * static_cast<double>(longest) + 16);
}

std::string breakdown_chart(const RunReport& r) {
  const int rows = static_cast<int>(r.strategies.size());
  const double w = 720, left = label_room(r), bar_h = 22, gap = 10, top = 10, width = w + left + 90;
  double max_t = 0;
  for (const auto& s : r.strategies) max_t = std::max(max_t, s.mean);
  if (max_t <= 0) max_t = 1;
  // The legend: every component in a grid of equal columns as wide as the longest name (7.5 px a
  // character at 12 px, generous for sans-serif), as many as fit the chart's width; the chart is
  // as tall as its last row, so no row is clipped.
  size_t longest = 0;
  for (int c = 0; c < strategy::kNumComponents; ++c)
    longest = std::max(longest, std::string(strategy::component_name(static_cast<strategy::Component>(c))).size());
  const double col_w = 14 + 7.5 * static_cast<double>(longest) + 16, legend_x = 10, row_h = 18;
  const int cols = std::max(1, static_cast<int>((width - 2 * legend_x) / col_w));
  const int legend_rows = (strategy::kNumComponents + cols - 1) / cols;
  const double legend_top = top + rows * (bar_h + gap) + 14;
  const double h = legend_top + legend_rows * row_h + 8;
  std::string o = fmt::format("<svg class=\"chart\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">",
                              width, h);
  for (int i = 0; i < rows; ++i) {
    const auto& s = r.strategies[i];
    const double y = top + i * (bar_h + gap);
    o += fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", left - 6, y + bar_h * 0.7, esc(s.name));
    double x = left;
    for (int c = 0; c < strategy::kNumComponents; ++c) {
      const double bw = s.breakdown[c] / max_t * w;
      if (bw <= 0) continue;
      const auto comp = static_cast<strategy::Component>(c);
      o += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>{}: {:.3f} ms</title></rect>",
                       x, y, bw, bar_h, component_color(comp), strategy::component_name(comp), s.breakdown[c] * 1e3);
      x += bw;
    }
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{:.2f} ms</text>", x + 4, y + bar_h * 0.7, s.mean * 1e3);
  }
  o += "<g class=\"legend\">";
  for (int c = 0; c < strategy::kNumComponents; ++c) {
    const auto comp = static_cast<strategy::Component>(c);
    const double lx = legend_x + (c % cols) * col_w, ly = legend_top + (c / cols) * row_h;
    o += fmt::format("<g class=\"legend-item\"><rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                     "<text x=\"{}\" y=\"{}\">{}</text></g>",
                     lx, ly, component_color(comp), lx + 14, ly + 9, strategy::component_name(comp));
  }
  return o + "</g></svg>";
}

std::string time_chart(const RunReport& r) {
  const double w = 900, h = 260, left = 60, bottom = 30;
  double max_t = 0;
  size_t n = 0;
  for (const auto& s : r.strategies) {
    for (double t : s.times) max_t = std::max(max_t, t);
    n = std::max(n, s.times.size());
  }
  if (max_t <= 0 || n == 0) return "";
  // The legend (one row per strategy, right of the plot) fits: as wide as the longest name (7.5 px a
  // character), as tall as its rows.
  size_t longest = 0;
  for (const auto& s : r.strategies) longest = std::max(longest, s.name.size());
  const double width = std::max(w + left + 180, left + w + 24 + 7.5 * static_cast<double>(longest) + 10);
  const double height = std::max(h + bottom + 10, 10 + 16.0 * static_cast<double>(r.strategies.size()) + 8);
  std::string o = fmt::format("<svg class=\"chart\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">",
                              width, height);
  o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>", left, h, left + w, h);
  o += fmt::format("<line x1=\"{}\" y1=\"0\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>", left, left, h);
  o += fmt::format("<text x=\"{}\" y=\"12\" text-anchor=\"end\">{:.1f} ms</text>", left - 4, max_t * 1e3);
  o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>", left - 4, h);
  o += fmt::format("<text x=\"{}\" y=\"{}\">iteration</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                   left, h + 20, left + w, h + 20, n - 1);
  for (size_t i = 0; i < r.strategies.size(); ++i) {
    const auto& s = r.strategies[i];
    std::string pts;
    for (size_t k = 0; k < s.times.size(); ++k)
      pts += fmt::format("{:.1f},{:.1f} ", left + (n > 1 ? w * k / (n - 1) : 0), h - s.times[k] / max_t * (h - 10));
    const char* col = kColors[i % kColors.size()];
    o += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>", col, pts);
    o += fmt::format("<g class=\"legend-item\"><rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text></g>",
                     left + w + 10, 10 + 16 * i, col, left + w + 24, 19 + 16 * i, esc(s.name));
  }
  return o + "</svg>";
}

std::string memory_chart(const RunReport& r) {
  const double w = 720, left = label_room(r), bar_h = 22, gap = 10;
  const double cap = r.topo ? r.topo->gpu_model().memory.value() : 0;
  double max_b = cap;
  for (const auto& s : r.strategies) max_b = std::max(max_b, s.peak_memory.total());
  if (max_b <= 0) return "";
  const int rows = static_cast<int>(r.strategies.size());
  std::string o = fmt::format("<svg class=\"chart\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">",
                              w + left + 90, rows * (bar_h + gap) + 76);
  static_assert(cost::kMemoryTerms <= kColors.size());
  for (int i = 0; i < rows; ++i) {
    const auto& m = r.strategies[i].peak_memory;
    const double y = i * (bar_h + gap);
    o += fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", left - 6, y + bar_h * 0.7, esc(r.strategies[i].name));
    double x = left;
    const auto terms = m.terms();
    for (size_t c = 0; c < terms.size(); ++c) {
      const double bw = terms[c].bytes / max_b * w;
      if (bw <= 0) continue;
      o += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>{}: {:.2f} GiB</title></rect>", x, y,
                       bw, bar_h, kColors[c], terms[c].label, terms[c].bytes / (1024.0 * 1024 * 1024));
      x += bw;
    }
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{:.2f} GiB</text>", x + 4, y + bar_h * 0.7, m.total() / (1024.0 * 1024 * 1024));
  }
  const auto labels = cost::MemoryBreakdown{}.terms();
  for (size_t c = 0; c < labels.size(); ++c)  // legend in two rows
    o += fmt::format("<g class=\"legend-item\"><rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text></g>",
                     left + 140 * (c % 5), rows * (bar_h + gap) + 30 + 16 * (c / 5), kColors[c], left + 140 * (c % 5) + 14,
                     rows * (bar_h + gap) + 39 + 16 * (c / 5), labels[c].label);
  if (cap > 0) {
    const double cx = left + cap / max_b * w;
    o += fmt::format("<line x1=\"{:.1f}\" y1=\"0\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#c00\" stroke-dasharray=\"4\"/>", cx, cx, rows * (bar_h + gap));
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" fill=\"#c00\">GPU memory {:.0f} GiB</text>", cx - 60, rows * (bar_h + gap) + 14,
                     cap / (1024.0 * 1024 * 1024));
  }
  return o + "</svg>";
}

}  // namespace

std::string render_html(const RunReport& r) {
  std::string o = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>hecate-sim run</title><style>"
                  "body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse}"
                  "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}"
                  "td:first-child{text-align:left}pre{background:#f7f7f7;padding:8px}</style></head><body>\n";
  o += fmt::format("<h1>hecate-sim run</h1><p>hecate-sim {} &middot; topology <b>{}</b> ({} GPUs, {} nodes) &middot; model <b>{}</b> "
                   "&middot; {} iterations &middot; network {} &middot; seed {}</p>\n",
                   HECATE_VERSION, esc(r.topo ? r.topo->name() : ""), r.topo ? r.topo->num_gpus() : 0,
                   r.topo ? r.topo->num_nodes() : 0, esc(r.inputs.model_name), r.inputs.iterations, r.inputs.network, r.inputs.seed);
  o += fmt::format("<p>inputs: {} (fnv1a64 {}), {} (fnv1a64 {})</p>\n", esc(r.inputs.topology_file), r.inputs.topology_hash,
                   esc(r.inputs.trace_file), r.inputs.trace_hash);
  if (r.interference) o += fmt::format("<p>interference (every strategy): {}</p>\n", esc(engine::describe(*r.interference)));
  if (!r.inputs.warnings.empty() || !r.notes.empty()) {
    o += "<pre>";
    for (const auto& w : r.inputs.warnings) o += esc(w) + "\n";
    for (const auto& w : r.notes) o += esc(w) + "\n";
    o += "</pre>\n";
  }
  const strategy::RunSummary* ep = nullptr;
  for (const auto& s : r.strategies)
    if (s.name == "ep") ep = &s;
  o += "<h2>Summary</h2><table><tr><th>strategy</th><th>mean ms</th><th>p50 ms</th><th>p99 ms</th><th>vs EP</th>"
       "<th>peak GiB</th><th>fits</th><th>hidden comm ms</th></tr>\n";
  for (const auto& s : r.strategies)
    o += fmt::format("<tr><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{}</td><td>{:.2f}</td><td>{}</td><td>{:.2f}</td></tr>\n",
                     esc(s.name), s.mean * 1e3, s.p50 * 1e3, s.p99 * 1e3,
                     ep ? fmt::format("{:.2f}x", ep->mean / s.mean) : std::string("-"),
                     s.peak_memory.total() / (1024.0 * 1024 * 1024), s.fits_memory ? "yes" : "<b>NO</b>", s.hidden_comm * 1e3);
  o += "</table>\n<h2>Where the time goes (critical path, mean per iteration)</h2>\n" + breakdown_chart(r);
  o += "\n<h2>Iteration time</h2>\n" + time_chart(r);
  o += "\n<h2>Peak memory per GPU</h2>\n" + memory_chart(r);
  for (const auto& s : r.strategies)
    if (const std::string v = memory_verdict(s, r.topo ? r.topo->gpu_model().memory.value() : 0); !v.empty())
      o += "<p><b>" + esc(v) + "</b></p>\n";
  o += "\n<h2>Resolved settings</h2>\n<p>What automatic knobs and derived choices became, as of the last iteration.</p>\n"
       "<table><tr><th>strategy</th><th>setting</th><th>value</th></tr>\n";
  for (const auto& s : r.strategies)
    for (const auto& k : s.resolved)
      o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", esc(s.name), esc(k.key), esc(k.text));
  o += "</table>\n</body></html>\n";
  return o;
}

}  // namespace hs::report
