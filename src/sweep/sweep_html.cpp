#include "sweep/sweep_html.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>

#include "util/hecate_version.hpp"
#include "util/text_escape.hpp"

namespace hs::sweep {

namespace {

constexpr std::array<const char*, 10> kColors = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                                 "#76b7b2", "#9c755f", "#edc948", "#ff9da7", "#bab0ac"};

std::string esc(const std::string& s) { return html_escape(s); }

std::string value_of(const Row& r, const std::string& knob) {
  for (const auto& [k, v] : r.knobs)
    if (k == knob) return v;
  return "";
}

std::string fmt_obj(double v) { return fmt::format("{:.4g}", v); }

// Scatter of every ok point: x peak memory, y objective; the Pareto front as a step line.
std::string pareto_chart(const SweepReportInput& in) {
  const Objective o = in.spec->objective;
  std::vector<const Row*> pts;
  for (const auto& r : in.rows)
    if (r.status == "ok") pts.push_back(&r);
  if (pts.empty()) return "<p>No point ran.</p>";
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const Row* r : pts) {
    x0 = std::min(x0, r->peak_memory_gib), x1 = std::max(x1, r->peak_memory_gib);
    const double y = objective_display(*r, o);
    y0 = std::min(y0, y), y1 = std::max(y1, y);
  }
  if (x1 - x0 < 1e-9) x0 -= 0.5, x1 += 0.5;
  if (y1 - y0 < 1e-12) y0 -= std::abs(y0) * 0.05 + 1e-9, y1 += std::abs(y1) * 0.05 + 1e-9;
  const double w = 640, h = 340, left = 80, top = 10, bottom = 40;
  auto X = [&](double v) { return left + (v - x0) / (x1 - x0) * w; };
  auto Y = [&](double v) { return top + h - (v - y0) / (y1 - y0) * h; };
  std::string s = fmt::format("<svg class=\"chart\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">",
                              left + w + 230, top + h + bottom);
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#888\"/><line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\" stroke=\"#888\"/>",
                   left, top + h, left + w, top);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">peak memory per GPU (GiB): {:.2f} .. {:.2f}</text>", left + w / 2,
                   top + h + 30, x0, x1);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                   left - 4, top + 10, fmt_obj(y1), left - 4, top + h, fmt_obj(y0));
  s += fmt::format("<text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">{} ({})</text>", top + h / 2,
                   top + h / 2, objective_name(o), objective_unit(o));
  std::vector<std::string> names;
  for (const auto& st : in.spec->strategies) names.push_back(st.name);
  for (const Row* r : pts) {
    const size_t ci = std::find(names.begin(), names.end(), r->strategy) - names.begin();
    const char* col = kColors[ci % kColors.size()];
    const double cx = X(r->peak_memory_gib), cy = Y(objective_display(*r, o));
    const std::string title = fmt::format("<title>{}: {} {}, {:.2f} GiB{}</title>", esc(r->spec), fmt_obj(objective_display(*r, o)),
                                          objective_unit(o), r->peak_memory_gib, r->feasible ? "" : " (infeasible)");
    if (r->feasible)
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.8\">{}</circle>", cx, cy, col, title);
    else
      s += fmt::format("<path d=\"M{0:.1f},{1:.1f}l6,6m0,-6l-6,6\" stroke=\"{2}\" transform=\"translate(-3,-3)\">{3}</path>", cx, cy, col, title);
  }
  std::string front;
  for (size_t i = 0; i < in.summary.pareto.size(); ++i) {
    const Row& p = in.summary.pareto[i];
    front += fmt::format("{}{:.1f},{:.1f} ", i ? "L" : "M", X(p.peak_memory_gib), Y(objective_display(p, o)));
    if (i + 1 < in.summary.pareto.size())
      front += fmt::format("L{:.1f},{:.1f} ", X(in.summary.pareto[i + 1].peak_memory_gib), Y(objective_display(p, o)));
  }
  if (!front.empty()) s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#222\" stroke-dasharray=\"5,3\"/>", front);
  for (size_t i = 0; i < names.size(); ++i)
    s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>", left + w + 20, top + 10 + 18 * i,
                     kColors[i % kColors.size()], left + w + 30, top + 14 + 18 * i, esc(names[i]));
  s += fmt::format("<path d=\"M{0},{1}l12,0\" stroke=\"#222\" stroke-dasharray=\"5,3\"/><text x=\"{2}\" y=\"{3}\">Pareto front</text>",
                   left + w + 14, top + 10 + 18 * names.size(), left + w + 30, top + 14 + 18 * names.size());
  return s + "</svg>";
}

// Objective over two knobs: each cell the best feasible point with that pair of values.
std::string heatmap(const SweepReportInput& in, const std::string& a, const std::string& b) {
  const Objective o = in.spec->objective;
  std::vector<std::string> va, vb;
  for (const auto& st : in.spec->strategies)
    for (const auto& k : st.knobs) {
      auto add = [&](std::vector<std::string>& v) {
        for (const auto& x : k.values)
          if (std::find(v.begin(), v.end(), x.text) == v.end()) v.push_back(x.text);
      };
      if (k.name == a) add(va);
      if (k.name == b) add(vb);
    }
  std::map<std::pair<std::string, std::string>, const Row*> best;
  for (const auto& r : in.rows) {
    if (!r.feasible) continue;
    const std::string x = value_of(r, a), y = value_of(r, b);
    if (x.empty() || y.empty()) continue;
    auto& c = best[{x, y}];
    if (!c || objective_value(r, o) < objective_value(*c, o)) c = &r;
  }
  if (best.empty()) return "<p>No feasible point sets both knobs.</p>";
  double lo = 1e300, hi = -1e300;
  for (const auto& [k, r] : best) lo = std::min(lo, objective_value(*r, o)), hi = std::max(hi, objective_value(*r, o));
  const double cw = 90, ch = 34, left = 150, top = 40;
  std::string s = fmt::format("<svg class=\"chart\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">",
                              left + cw * vb.size() + 20, top + ch * va.size() + 40);
  s += fmt::format("<text x=\"{}\" y=\"14\" text-anchor=\"middle\">{}</text>", left + cw * vb.size() / 2, esc(b));
  s += fmt::format("<text x=\"10\" y=\"{}\">{}</text>", top - 8, esc(a));
  for (size_t j = 0; j < vb.size(); ++j)
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", left + cw * j + cw / 2, top - 8, esc(vb[j]));
  for (size_t i = 0; i < va.size(); ++i) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", left - 8, top + ch * i + ch * 0.62, esc(va[i]));
    for (size_t j = 0; j < vb.size(); ++j) {
      auto it = best.find({va[i], vb[j]});
      if (it == best.end()) {
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#eee\"/>", left + cw * j, top + ch * i, cw - 2, ch - 2);
        continue;
      }
      const double v = objective_value(*it->second, o);
      const double f = hi > lo ? (v - lo) / (hi - lo) : 0;  // 0 best (green) .. 1 worst (red)
      const int red = static_cast<int>(60 + 190 * f), green = static_cast<int>(200 - 120 * f);
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"rgb({},{},90)\"><title>{}</title></rect>", left + cw * j,
                       top + ch * i, cw - 2, ch - 2, red, green, esc(it->second->spec));
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#fff\">{}</text>", left + cw * j + cw / 2 - 1,
                       top + ch * i + ch * 0.62, fmt_obj(objective_display(*it->second, o)));
    }
  }
  return s + "</svg>";
}

// Per strategy and knob: the best feasible objective for each value, as bars.
std::string knob_effects(const SweepReportInput& in) {
  const Objective o = in.spec->objective;
  std::string s;
  for (const auto& st : in.spec->strategies) {
    for (const auto& k : st.knobs) {
      if (k.values.size() < 2) continue;
      std::vector<std::pair<std::string, const Row*>> bars;
      for (const auto& v : k.values) {
        const Row* b = nullptr;
        for (const auto& r : in.rows)
          if (r.feasible && r.strategy == st.name && value_of(r, k.name) == v.text &&
              (!b || objective_value(r, o) < objective_value(*b, o)))
            b = &r;
        bars.emplace_back(v.text, b);
      }
      double hi = 0;
      for (const auto& [v, r] : bars)
        if (r) hi = std::max(hi, objective_display(*r, o));
      if (hi <= 0) continue;
      const double w = 360, bh = 18, left = 110;
      s += fmt::format("<div class=\"effect\"><b>{}:{}</b><br><svg class=\"chart\" width=\"{}\" height=\"{}\" "
                       "xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">",
                       esc(st.name), esc(k.name), left + w + 80, bars.size() * (bh + 4) + 4);
      for (size_t i = 0; i < bars.size(); ++i) {
        const double y = 2 + i * (bh + 4);
        s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", left - 6, y + bh * 0.75, esc(bars[i].first));
        if (!bars[i].second) {
          s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#999\">no feasible point</text>", left, y + bh * 0.75);
          continue;
        }
        const double v = objective_display(*bars[i].second, o);
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>", left, y, v / hi * w, bh,
                         kColors[0], esc(bars[i].second->spec));
        s += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{} {}</text>", left + v / hi * w + 4, y + bh * 0.75, fmt_obj(v), objective_unit(o));
      }
      s += "</svg></div>\n";
    }
  }
  return s.empty() ? "<p>No knob takes two values in this sweep.</p>" : s;
}

}  // namespace

std::string render_sweep_html(const SweepReportInput& in) {
  const SweepSpec& sp = *in.spec;
  const Objective o = sp.objective;
  std::string s = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>hecate-sim sweep</title><style>"
                  "body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse}"
                  "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f4f4f4}"
                  ".effect{display:inline-block;margin:0 24px 16px 0;vertical-align:top}</style></head><body>\n";
  s += fmt::format("<h1>hecate-sim {} sweep: {}</h1>\n", HECATE_VERSION, esc(sp.file));
  int ok = 0, feasible = 0;
  for (const auto& r : in.rows) ok += r.status == "ok", feasible += r.feasible;
  s += fmt::format("<p>{} points ({} ran, {} feasible); objective {} ({}); constraints: {}{}; search: {}.</p>\n", in.rows.size(), ok,
                   feasible, objective_name(o), objective_unit(o), sp.must_fit ? "fits GPU memory" : "none on memory",
                   sp.peak_memory_cap > 0 ? fmt::format(", peak memory at most {:.2f} GiB", sp.peak_memory_cap / (1024.0 * 1024 * 1024)) : "",
                   sp.random ? fmt::format("random sample of {} (seed {})", sp.samples, sp.search_seed) : std::string("grid"));
  s += "<h2>Best point per strategy</h2>\n<table><tr><th>strategy</th><th>" + std::string(objective_unit(o)) +
       "</th><th>peak GiB</th><th>vs defaults</th><th>setting</th></tr>\n";
  for (const auto& b : in.summary.best) {
    std::string gain = "-";
    for (const auto& d : in.defaults)
      if (d.strategy == b.strategy && d.topology == b.topology && d.trace == b.trace && d.network == b.network &&
          d.model == b.model && d.model_file == b.model_file && d.status == "ok") {
        const double vb = objective_display(b, o), vd = objective_display(d, o);
        gain = fmt::format("{:.3f}x", o == Objective::kTokensPerSecond ? vb / vd : vd / vb);
      }
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td><td>{} | {} | {}{}</td></tr>\n", esc(b.spec),
                     fmt_obj(objective_display(b, o)), b.peak_memory_gib, gain, esc(b.topology), esc(b.trace), esc(b.network),
                     b.model.empty() ? "" : " | " + esc(b.model));
  }
  s += "</table>\n<h2>Time against memory</h2>\n<p>Every point that ran (x: infeasible); the dashed line is the Pareto front.</p>\n" +
       pareto_chart(in);
  // Heat map axes: the requested pair, else the two knobs of one strategy with the most value pairs.
  std::string a = in.heatmap.first, b = in.heatmap.second;
  if (a.empty()) {
    size_t most = 0;
    for (const auto& st : sp.strategies)
      for (size_t i = 0; i < st.knobs.size(); ++i)
        for (size_t j = i + 1; j < st.knobs.size(); ++j) {
          const size_t n = st.knobs[i].values.size() * st.knobs[j].values.size();
          if (st.knobs[i].values.size() > 1 && st.knobs[j].values.size() > 1 && n > most)
            most = n, a = st.knobs[i].name, b = st.knobs[j].name;
        }
  }
  if (!a.empty()) s += fmt::format("\n<h2>Heat map: {} x {}</h2>\n<p>Each cell: the best feasible point with that pair of values.</p>\n{}", esc(a), esc(b), heatmap(in, a, b));
  s += "\n<h2>Each knob's effect</h2>\n<p>Best feasible objective for each value, the other knobs free.</p>\n" + knob_effects(in);
  std::vector<const Row*> order;
  for (const auto& r : in.rows) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [&](const Row* x, const Row* y) {
    if (x->feasible != y->feasible) return x->feasible;
    return objective_value(*x, o) < objective_value(*y, o);
  });
  s += "\n<h2>Points</h2>\n<table><tr><th>#</th><th>strategy</th><th>" + std::string(objective_unit(o)) +
       "</th><th>mean ms</th><th>p99 ms</th><th>peak GiB</th><th>dropped</th><th>feasible</th><th>setting</th></tr>\n";
  for (const Row* r : order)
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.2f}</td><td>{:.2f}%</td><td>{}</td><td>{} | {}{}</td></tr>\n",
                     r->index, esc(r->spec), r->status == "ok" ? fmt_obj(objective_display(*r, o)) : esc(r->error), r->mean_ms,
                     r->p99_ms, r->peak_memory_gib, 100 * r->dropped_fraction, r->feasible ? "yes" : "no", esc(r->topology), esc(r->trace),
                     r->model.empty() ? "" : " | " + esc(r->model));
  return s + "</table>\n</body></html>\n";
}

}  // namespace hs::sweep
