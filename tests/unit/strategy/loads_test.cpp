#include <doctest/doctest.h>

#include <algorithm>
#include <fmt/format.h>
#include <numeric>
#include <vector>

#include "strategy/iteration_loads.hpp"
#include "strategy/runner.hpp"
#include "workload/model_spec.hpp"
#include "support/approx.hpp"

using namespace hs;

namespace {
workload::ModelSpec model(int tokens_seq) {
  return workload::load_model(fmt::format(R"(schema: hecate-sim/model@1
name: m
layers: 1
d_model: 64
d_ffn: 128
experts: 4
top_k: 2
heads: 4
seq_len: {}
)", tokens_seq), "m.yaml");
}
workload::Trace trace(int sources, int tokens, bool per_source) {
  workload::Trace t;
  t.moe_layers = 1;
  t.experts = 4;
  t.top_k = 2;
  t.sources = sources;
  t.tokens_per_source = tokens;
  t.axes = per_source ? workload::TraceAxes::kLayerSourceExpert : workload::TraceAxes::kLayerExpert;
  workload::TraceRecord r;
  const int rows = per_source ? sources : 1;
  const int tok = per_source ? tokens : tokens * sources;
  for (int s = 0; s < rows; ++s) {
    // Source s: 2*tok assignments as (tok, tok/2, tok/4, tok/4) rotated by s.
    std::vector<uint32_t> row{uint32_t(tok), uint32_t(tok / 2), uint32_t(tok / 4), uint32_t(tok / 4)};
    std::rotate(row.begin(), row.begin() + (s % 4), row.end());
    r.counts.insert(r.counts.end(), row.begin(), row.end());
  }
  t.records.push_back(r);
  return t;
}
double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
}  // namespace

TEST_CASE("re-binning 4 trace sources onto 8 GPUs conserves tokens and halves each source") {
  // Trace: 4 sources x 64 tokens; model: 32 tokens per GPU per iteration (seq 32) on 8 GPUs, so the
  // total 256 tokens x top-2 = 512 assignments match and no scaling happens. GPU 2j and 2j+1 each
  // get half of source j's counts.
  auto m = model(32);
  auto t = trace(4, 64, true);
  Diagnostics w;
  strategy::IterationLoads loads(t, m, 8, "t.json", w);
  std::vector<double> out;
  loads.load(0, out);
  CHECK(sum(out) == hs::test::approx(512));
  CHECK(out[0 * 4 + 0] == hs::test::approx(32));  // GPU 0: half of source 0's 64 on expert 0
  CHECK(out[1 * 4 + 0] == hs::test::approx(32));
  CHECK(out[2 * 4 + 3] == hs::test::approx(32));  // GPU 2: half of source 1 (rotated left: 64 on expert 3)
  CHECK(w.all().size() == 1);                     // "re-binned" warning
}

TEST_CASE("token counts are scaled to the model's tokens per GPU") {
  // Trace 64 tokens per source; model 128 per GPU on 4 GPUs: every count doubles.
  auto m = model(128);
  auto t = trace(4, 64, true);
  Diagnostics w;
  strategy::IterationLoads loads(t, m, 4, "t.json", w);
  std::vector<double> out;
  loads.load(0, out);
  CHECK(sum(out) == hs::test::approx(4 * 128 * 2));
  CHECK(out[0] == hs::test::approx(128));
}

TEST_CASE("a global trace is split multinomially (seeded, conserving counts) or evenly") {
  auto m = model(64);
  auto t = trace(4, 64, false);
  Diagnostics w;
  strategy::IterationLoads a(t, m, 4, "t.json", w, strategy::GlobalSplit::kMultinomial, 7);
  strategy::IterationLoads b(t, m, 4, "t.json", w, strategy::GlobalSplit::kMultinomial, 7);
  strategy::IterationLoads c(t, m, 4, "t.json", w, strategy::GlobalSplit::kEven, 7);
  std::vector<double> x, y, z;
  a.load(0, x);
  b.load(0, y);
  c.load(0, z);
  CHECK(x == y);  // same seed, same split
  // Per expert, the split over GPUs sums to the global count (256 tokens -> expert 0 has 256).
  double e0 = 0;
  for (int g = 0; g < 4; ++g) e0 += x[g * 4 + 0];
  CHECK(e0 == hs::test::approx(256));
  CHECK(z[0] == hs::test::approx(64));  // even: 256 / 4
}

TEST_CASE("a trace that does not match the model is bad input") {
  auto m = model(64);
  auto t = trace(4, 64, true);
  t.experts = 8;
  Diagnostics w;
  CHECK_THROWS_AS(strategy::IterationLoads(t, m, 4, "t.json", w), InputError);
}

TEST_CASE("a layer at a time gives the whole iteration's numbers, for every split and re-binning") {
  // Three MoE layers; layer l holds the one-layer trace's rows rotated by l more.
  auto m = workload::load_model(R"(schema: hecate-sim/model@1
name: m3
layers: 3
d_model: 64
d_ffn: 128
experts: 4
top_k: 2
heads: 4
seq_len: 64
)", "m3.yaml");
  REQUIRE(m.moe_layers() == 3);
  for (const bool per_source : {false, true})
    for (const auto split : {strategy::GlobalSplit::kMultinomial, strategy::GlobalSplit::kEven}) {
      CAPTURE(per_source);
      auto t = trace(4, 64, per_source);
      const std::vector<uint32_t> one = t.records[0].counts;
      t.moe_layers = 3;
      t.records[0].counts.clear();
      for (int l = 0; l < 3; ++l)
        for (size_t r = 0; r < one.size(); r += 4) {
          std::vector<uint32_t> row(one.begin() + static_cast<long>(r), one.begin() + static_cast<long>(r) + 4);
          std::rotate(row.begin(), row.begin() + l, row.end());
          t.records[0].counts.insert(t.records[0].counts.end(), row.begin(), row.end());
        }
      Diagnostics w;
      strategy::IterationLoads loads(t, m, 8, "t.json", w, split, 7);  // 8 GPUs: re-binned when per source
      std::vector<double> whole;
      loads.load(0, whole);
      REQUIRE(whole.size() == 3 * loads.layer_size());
      std::vector<double> layer(loads.layer_size());
      strategy::SplitScratch scratch;
      for (int l = 2; l >= 0; --l) {  // any order: a layer's split does not depend on the others
        loads.load_layer(0, l, layer.data(), scratch);
        CHECK(std::equal(layer.begin(), layer.end(), whole.begin() + static_cast<long>(l * loads.layer_size())));
      }
      // Counts produced on demand: layer() before and after total() materializes them.
      strategy::CountBuffers buf;
      const strategy::IterationCounts counts = strategy::iteration_counts(loads, 0, buf);
      for (int l = 0; l < 3; ++l) {
        const auto c = counts.layer(l, 8, 4);
        CHECK(std::equal(c.begin(), c.end(), whole.begin() + static_cast<long>(l * loads.layer_size())));
      }
      const auto all = counts.total();
      CHECK(std::equal(all.begin(), all.end(), whole.begin(), whole.end()));
      const auto again = counts.layer(1, 8, 4);
      CHECK(std::equal(again.begin(), again.end(), whole.begin() + static_cast<long>(loads.layer_size())));
    }
}
