#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <vector>

#include "workload/trace_generator.hpp"
#include "workload/trace_io.hpp"

using namespace hs;
using namespace hs::workload;

namespace {
ModelSpec model(int experts, int layers) {
  return load_model(fmt::format(R"(schema: hecate-sim/model@1
name: gen-test
layers: {}
d_model: 64
d_ffn: 128
experts: {}
top_k: 2
heads: 4
seq_len: 1024
micro_batch: 2
)", layers, experts), "m.yaml");
}
// Gini coefficient: sum_i (2i - n + 1) x_(i) / (n sum x), x sorted ascending.
double gini(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size()), s = std::accumulate(v.begin(), v.end(), 0.0);
  double g = 0;
  for (size_t i = 0; i < v.size(); ++i) g += (2.0 * i - n + 1) * v[i];
  return g / (n * s);
}
std::vector<double> global(const Trace& t, const TraceRecord& r, int l) {
  std::vector<double> v(t.experts);
  for (int e = 0; e < t.experts; ++e) v[e] = static_cast<double>(t.global_count(r, l, e));
  return v;
}
double corr(const std::vector<double>& a, const std::vector<double>& b) {
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / a.size();
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / b.size();
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}
}  // namespace

TEST_CASE("gini of hand-computed cases") {
  // Equal loads: 0. One expert takes all of n = 4: (2*3 - 4 + 1) * 1 / (4 * 1) = 3/4.
  CHECK(gini({1, 1, 1, 1}) == doctest::Approx(0));
  CHECK(gini({0, 0, 0, 1}) == doctest::Approx(0.75));
}

TEST_CASE("the generator is deterministic for a seed and keeps the trace invariants for every preset") {
  auto m = model(16, 3);
  for (const auto& name : GeneratorParams::preset_names()) {
    auto p = *GeneratorParams::preset(name);
    auto a = generate_trace(m, "gen-test", 4, 20, p, name, 9);
    auto b = generate_trace(m, "gen-test", 4, 20, p, name, 9);
    auto c = generate_trace(m, "gen-test", 4, 20, p, name, 10);
    CHECK(trace_to_json(a) == trace_to_json(b));
    if (name != "uniform") CHECK(trace_to_json(a) != trace_to_json(c));
    Diagnostics d;
    validate_trace(a, "gen", d);  // sums = tokens x top_k per source, no expert above tokens
    CHECK_MESSAGE(!d.has_errors(), name);
    // And it survives a write/read round trip.
    auto back = parse_trace(trace_to_json(a), "gen.json");
    CHECK(back.records.size() == 20);
    CHECK(back.records[7].counts == a.records[7].counts);
  }
}

TEST_CASE("aux_loss at 64 experts: Gini about 0.12-0.2") {
  auto m = model(64, 4);
  auto t = generate_trace(m, "gen-test", 8, 200, *GeneratorParams::preset("aux_loss"), "aux_loss", 1);
  double g = 0;
  int k = 0;
  for (size_t r = 100; r < t.records.size(); ++r)
    for (int l = 0; l < t.moe_layers; ++l, ++k) g += gini(global(t, t.records[r], l));
  g /= k;
  CHECK(g > 0.12);
  CHECK(g < 0.2);
}

TEST_CASE("collapsed at 32 experts, top-2: late max/mean above 10, lag-10 share correlation above 0.99") {
  auto m = model(32, 6);
  auto t = generate_trace(m, "gen-test", 16, 300, *GeneratorParams::preset("collapsed"), "collapsed", 1);
  double mm = 0, c = 0;
  int k = 0, kc = 0;
  for (size_t r = 270; r < t.records.size(); ++r)
    for (int l = 0; l < t.moe_layers; ++l, ++k) {
      auto v = global(t, t.records[r], l);
      mm += *std::max_element(v.begin(), v.end()) / (std::accumulate(v.begin(), v.end(), 0.0) / v.size());
      if (r >= 280) c += corr(v, global(t, t.records[r - 10], l)), ++kc;
    }
  CHECK(mm / k > 10);
  CHECK(c / kc > 0.99);
}
