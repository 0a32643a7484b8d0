#include <doctest/doctest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sweep/parallel_map.hpp"
#include "sweep/sweep_points.hpp"
#include "sweep/sweep_results.hpp"
#include "sweep/sweep_spec.hpp"

using namespace hs::sweep;

namespace {
const char* kBase = R"(schema: hecate-sim/sweep@1
topologies: [a.yaml, b.yaml]
traces: [t.json]
strategies:
  ep: {}
  fssdp: {overlap_degree: [auto, 2, 4], rematerialize: [false, "1"]}
model: {micro_batch: [4, 8]}
)";

std::vector<std::string> errors_of(const std::string& text) {
  std::vector<std::string> out;
  try {
    parse_sweep(text, "s.yaml");
  } catch (const hs::InputError& e) {
    for (const auto& d : e.diagnostics()) out.push_back(hs::to_string(d));
  }
  return out;
}
}  // namespace

TEST_CASE("grid: every combination once, in a fixed order, keys unique and stable") {
  // 2 topologies x 1 trace x 1 network x 2 micro-batches = 4 settings; per setting ep (1) + fssdp
  // (3 x 2 = 6) = 7 points: 28 in all.
  auto s = parse_sweep(kBase, "s.yaml");
  auto pts = expand(s);
  REQUIRE(pts.size() == 28);
  std::set<std::string> keys;
  for (size_t i = 0; i < pts.size(); ++i) {
    CHECK(pts[i].index == static_cast<int>(i));
    keys.insert(pts[i].key);
  }
  CHECK(keys.size() == 28);
  CHECK(pts[0].spec() == "ep");
  CHECK(pts[1].spec() == "fssdp:overlap_degree=auto:rematerialize=false");
  CHECK(pts[2].spec() == "fssdp:overlap_degree=auto:rematerialize=true");  // "1" canonicalized
  CHECK(pts[0].model_sets() == "micro_batch=4");
  CHECK(pts[7].model_sets() == "micro_batch=8");
  CHECK(pts[14].topology == "b.yaml");
  // The key is a function of the point's inputs alone.
  CHECK(expand(parse_sweep(kBase, "other.yaml"))[5].key == pts[5].key);
  CHECK(point_key(pts[5].canonical()) == pts[5].key);
}

TEST_CASE("random search: a seeded sample of the grid without repeats, in grid order") {
  std::string text = std::string(kBase) + "search: {random: {samples: 10, seed: 3}}\n";
  auto a = expand(parse_sweep(text, "s.yaml"));
  auto b = expand(parse_sweep(text, "s.yaml"));
  REQUIRE(a.size() == 10);
  std::set<std::string> keys;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].key == b[i].key);
    keys.insert(a[i].key);
  }
  CHECK(keys.size() == 10);
  auto grid = expand(parse_sweep(kBase, "s.yaml"));
  size_t g = 0;  // every sampled point is a grid point, and they come in grid order
  for (const auto& p : a) {
    while (g < grid.size() && grid[g].key != p.key) ++g;
    CHECK(g < grid.size());
  }
  auto c = expand(parse_sweep(std::string(kBase) + "search: {random: {samples: 10, seed: 4}}\n", "s.yaml"));
  bool differs = false;
  for (size_t i = 0; i < c.size(); ++i) differs = differs || c[i].key != a[i].key;
  CHECK(differs);
  // More samples than points: the whole grid.
  CHECK(expand(parse_sweep(std::string(kBase) + "search: {random: {samples: 100}}\n", "s.yaml")).size() == 28);
}

TEST_CASE("bad sweep files: every problem located and named") {
  auto e = errors_of(R"(schema: hecate-sim/sweep@1
topologies: [a.yaml]
traces: [t.json]
strategies:
  fssdp: {window: [0], broadcast: [ring], nope: [1]}
  smartmoe: {period: 3.5}
objective: fastest
constraints: {peak_memory: 12 apples}
)");
  REQUIRE(e.size() == 6);
  CHECK(e[0] == "s.yaml:5:20: error: strategies.fssdp.window: expected an integer in [1, 100000], got '0'");
  CHECK(e[1].find("s.yaml:5:36: error: strategies.fssdp.broadcast: expected one of chain, direct") == 0);
  CHECK(e[2].find("strategies.fssdp.nope: strategy 'fssdp' has no knob 'nope'") != std::string::npos);
  CHECK(e[3].find("s.yaml:6:22: error: strategies.smartmoe.period") == 0);
  CHECK(e[4].find("objective") != std::string::npos);
  CHECK(e[5].find("constraints.peak_memory") != std::string::npos);
  CHECK(errors_of("schema: hecate-sim/sweep@2\ntopologies: [a]\ntraces: [t]\nstrategies: {ep: {}}\n").size() == 1);
  CHECK(errors_of("topologies: [a]\ntraces: [t]\nstrategies: {ep: {}}\n").size() == 1);          // no schema
  CHECK(errors_of("schema: hecate-sim/sweep@1\ntopologies: []\ntraces: [t]\nstrategies: {ep: {}}\n").size() == 1);
  CHECK(errors_of("schema: hecate-sim/sweep@1\ntopologies: [a]\ntraces: [t]\nstrategies: {}\n").size() == 1);
}

TEST_CASE("layouts: a fixed layout or an axis of them; syntax checked at the value's place; keys unchanged without one") {
  // 4 settings x 7 points (the grid test above) x 3 layouts = 84 points, layouts outside the model axis.
  auto s = parse_sweep(std::string(kBase) + "layout: [none, \"tp=2,pp=2,ep=4\", mixtral-8x7b]\n", "s.yaml");
  REQUIRE(s.layouts.size() == 3);
  CHECK(s.layouts[0].text.empty());  // none: no layout
  auto pts = expand(s);
  REQUIRE(pts.size() == 84);
  // Order: topology, trace, network, model file, calibration, layout, model fields, then strategies.
  CHECK(pts[0].layout.empty());
  CHECK(pts[14].layout == "tp=2,pp=2,ep=4");
  CHECK(pts[14].model_sets() == "micro_batch=4");
  CHECK(pts[28].layout == "mixtral-8x7b");
  CHECK(pts[14].layout_at.line == 8);
  CHECK(pts[14].canonical().find("layout=tp=2,pp=2,ep=4\n") != std::string::npos);
  // A point without a layout keeps the key it had before layouts existed.
  auto plain = expand(parse_sweep(kBase, "s.yaml"));
  CHECK(pts[0].key == plain[0].key);
  CHECK(pts[0].canonical().find("layout") == std::string::npos);
  std::set<std::string> keys;
  for (const auto& p : pts) keys.insert(p.key);
  CHECK(keys.size() == 84);
  // A single layout (a scalar) is one value.
  CHECK(parse_sweep(std::string(kBase) + "layout: \"pp=2,ep=2\"\n", "s.yaml").layouts.size() == 1);
  // Rows carry it through JSON Lines and CSV.
  Row r = row_of(pts[14]);
  CHECK(r.layout == "tp=2,pp=2,ep=4");
  const std::string line = to_json_line(r);
  auto back = parse_json_line(line.substr(0, line.size() - 1));
  REQUIRE(back);
  CHECK(back->layout == "tp=2,pp=2,ep=4");
  // Rows written before layouts existed (no "layout" key) still read, as no layout.
  const std::string old_line = std::string(line).replace(line.find("\"layout\": \"tp=2,pp=2,ep=4\", "), 28, "");
  CHECK(old_line.find("layout") == std::string::npos);
  auto old_row = parse_json_line(old_line.substr(0, old_line.size() - 1));
  REQUIRE(old_row);
  CHECK(old_row->layout.empty());
  CHECK(old_row->strategy == "ep");
  CHECK(csv_header({}).find(",calibration,layout,strategy,") != std::string::npos);
  CHECK(to_csv_line(r, {}).find(",\"tp=2,pp=2,ep=4\",ep,") != std::string::npos);
  // Bad layouts: each problem at the value's line and column, naming the layout's field.
  auto e = errors_of(std::string(kBase) + "layout: [\"tp=0\", \"pp=2,xx=1\", nosuchpreset]\n");
  REQUIRE(e.size() == 3);
  CHECK(e[0] == "s.yaml:8:10: error: layout.tp: '0' is not a positive integer");
  CHECK(e[1].find("s.yaml:8:18: error: layout.xx: unknown key 'xx'") == 0);
  CHECK(e[2].find("s.yaml:8:31: error: layout: 'nosuchpreset' is neither KEY=VALUE nor a layout preset") == 0);
}

TEST_CASE("rows round-trip through JSON Lines; a torn line is no row") {
  auto pts = expand(parse_sweep(kBase, "s.yaml"));
  Row r = row_of(pts[3]);
  r.mean_ms = 12.345678901;
  r.p99_ms = 20;
  r.tokens_per_s = 1.5e6;
  r.peak_memory_gib = 7.25;
  r.dropped_fraction = 0.0843;
  r.fits = r.feasible = true;
  r.error = "a \"quoted\", comma";
  const std::string line = to_json_line(r);
  auto back = parse_json_line(line.substr(0, line.size() - 1));
  REQUIRE(back);
  CHECK(to_json_line(*back) == line);
  CHECK(back->dropped_fraction == 0.0843);
  // A row written before dropped_fraction existed reads as dropless.
  std::string older = line;
  older.erase(older.find(", \"dropped_fraction\": 0.0843"), std::string(", \"dropped_fraction\": 0.0843").size());
  auto old_back = parse_json_line(older.substr(0, older.size() - 1));
  REQUIRE(old_back);
  CHECK(old_back->dropped_fraction == 0);
  CHECK(old_back->fits);
  CHECK_FALSE(parse_json_line(line.substr(0, line.size() / 2)));
  // CSV: the knob columns of the sweep, a field with a comma quoted.
  auto cols = knob_columns(parse_sweep(kBase, "s.yaml"));
  CHECK(cols == std::vector<std::string>{"overlap_degree", "rematerialize"});
  CHECK(to_csv_line(r, cols).find(",\"a \"\"quoted\"\", comma\"\n") != std::string::npos);
}

TEST_CASE("summary: best feasible point per strategy and the time-memory Pareto front") {
  auto s = parse_sweep(kBase, "s.yaml");
  auto pts = expand(s);
  // Points 1..3 fssdp: (time, memory) = (10, 5), (8, 6), (9, 7); point 4 infeasible and fastest.
  std::vector<Row> rows;
  const double t[] = {20, 10, 8, 9, 1}, m[] = {4, 5, 6, 7, 1};
  for (int i = 0; i < 5; ++i) {
    Row r = row_of(pts[i]);
    r.mean_ms = t[i];
    r.peak_memory_gib = m[i];
    r.feasible = i != 4;
    rows.push_back(r);
  }
  auto sum = summarize(rows, s);
  REQUIRE(sum.best.size() == 2);
  CHECK(sum.best[0].spec == "ep");
  CHECK(sum.best[1].mean_ms == 8);
  // Front by memory: (4, 20) ep, (5, 10), (6, 8); (7, 9) is beaten by (6, 8).
  REQUIRE(sum.pareto.size() == 3);
  CHECK(sum.pareto[0].mean_ms == 20);
  CHECK(sum.pareto[1].mean_ms == 10);
  CHECK(sum.pareto[2].mean_ms == 8);
}

TEST_CASE("ordered parallel map: commits in index order for any number of jobs; errors surface") {
  for (int jobs : {1, 2, 4}) {
    std::vector<size_t> order;
    parallel_map_ordered<size_t>(50, jobs, [](size_t i) { return i * i; },
                                 [&](size_t i, size_t&& v) {
                                   CHECK(v == i * i);
                                   order.push_back(i);
                                 });
    REQUIRE(order.size() == 50);
    for (size_t i = 0; i < order.size(); ++i) CHECK(order[i] == i);
  }
  CHECK_THROWS_AS(parallel_map_ordered<int>(
                      20, 2, [](size_t i) -> int { if (i == 7) throw std::runtime_error("x"); return 0; },
                      [](size_t, int&&) {}),
                  std::runtime_error);
}

#include "sweep/tune.hpp"

TEST_CASE("coordinate descent finds the optimum of a separable objective in far fewer runs than the grid") {
  // f(a, b, c) = (a - 3)^2 + (b - 1)^2 + 2 [c == "x"]: the optimum a = 3, b = 1, c = "y", f = 0.
  // From a = 0, b = 0, c = x: round 1 moves a to 3, b to 1, c to y (1 start + 5 + 5 + 1 = 12 runs);
  // round 2 checks every single-knob neighbour of (3, 1, y) not yet run (5 + 5 + 1 = 11) and changes
  // nothing: 22 runs against a grid of 6 x 6 x 2 = 72.
  std::vector<TuneAxis> axes = {{"a", {"0", "1", "2", "3", "4", "5"}}, {"b", {"0", "1", "2", "3", "4", "5"}}, {"c", {"x", "y"}}};
  Setting start = {{"a", "0"}, {"b", "0"}, {"c", "x"}};
  int runs = 0;
  auto eval = [&](const std::vector<Setting>& batch) {
    std::vector<Row> rows;
    for (const auto& s : batch) {
      ++runs;
      Row r;
      const double a = std::stod(s[0].second), b = std::stod(s[1].second);
      r.mean_ms = (a - 3) * (a - 3) + (b - 1) * (b - 1) + (s[2].second == "x" ? 2 : 0);
      r.feasible = true;
      r.knobs = s;
      rows.push_back(r);
    }
    return rows;
  };
  auto t = coordinate_descent(axes, start, Objective::kMeanTime, 0, eval);
  REQUIRE(t.found);
  CHECK(t.best.mean_ms == 0);
  CHECK(t.best.knobs == Setting{{"a", "3"}, {"b", "1"}, {"c", "y"}});
  CHECK(t.converged);
  CHECK(t.trail.size() == 22);
  CHECK(runs == 22);
  CHECK(t.grid_size == 72);
  // A budget stops it; infeasible points never win.
  auto b = coordinate_descent(axes, start, Objective::kMeanTime, 4, eval);
  CHECK(b.trail.size() == 4);
  CHECK_FALSE(b.converged);
  auto infeasible_a3 = [&](const std::vector<Setting>& batch) {
    auto rows = eval(batch);
    for (auto& r : rows) r.feasible = r.knobs[0].second != "3";
    return rows;
  };
  auto c = coordinate_descent(axes, start, Objective::kMeanTime, 0, infeasible_a3);
  CHECK(c.best.knobs[0].second != "3");
  CHECK(c.best.mean_ms == 1);  // a = 2 or 4, b = 1, c = y
}

TEST_CASE("batch: max-fit and batch_candidates parsed; a micro_batch axis beside it refused at its place") {
  const std::string head = "schema: hecate-sim/sweep@1\ntopologies: [a]\ntraces: [t]\nstrategies: {ep: {}}\n";
  const auto s = parse_sweep(head + "batch: max-fit\nbatch_candidates: [8, 4, 2]\n", "s.yaml");
  CHECK(s.batch_max_fit);
  CHECK(s.batch_candidates == std::vector<int>{8, 4, 2});
  CHECK_FALSE(parse_sweep(head, "s.yaml").batch_max_fit);
  auto e = errors_of(head + "model: {micro_batch: [4, 8]}\nbatch: max-fit\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0] == "s.yaml:5:23: error: model.micro_batch: batch: max-fit chooses micro_batch itself: drop this axis");
  e = errors_of(head + "batch: largest\nbatch_candidates: [4, 0, x]\n");
  REQUIRE(e.size() == 3);
  CHECK(e[0].find("s.yaml:5:8: error: batch: expected max-fit") == 0);
  CHECK(e[1].find("s.yaml:6:23: error: batch_candidates: expected a micro-batch") == 0);
  CHECK(e[2].find("got 'x'") != std::string::npos);
  CHECK(errors_of(head + "batch_candidates: [4]\n").front().find("batch_candidates: needs batch: max-fit") != std::string::npos);
}
