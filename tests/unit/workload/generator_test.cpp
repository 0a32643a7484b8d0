// Synthetic trace generator: determinism, invariants, and each preset's statistics within the band
// documented in src/workload/trace_generator.hpp.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <string>

#include "util/diagnostics.hpp"
#include "workload/trace_generator.hpp"
#include "workload/trace_io.hpp"
#include "workload/trace_stats.hpp"

using namespace hs;
using namespace hs::workload;

namespace {

// tokens per source = seq_len x micro_batch (grad_accum 1).
ModelSpec model(int experts, int layers, int seq_len = 1024, int top_k = 2) {
  return load_model(fmt::format(R"(schema: hecate-sim/model@1
name: gen-test
layers: {}
d_model: 64
d_ffn: 128
experts: {}
top_k: {}
heads: 4
seq_len: {}
micro_batch: 2
)", layers, experts, top_k, seq_len), "m.yaml");
}

LoadStats late(const Trace& t, int ep) { return trace_stats(t, ep).windows.at(2).overall; }

Trace gen(const ModelSpec& m, int sources, int iterations, const std::string& preset, uint64_t seed = 1) {
  return generate_trace(m, "gen-test", sources, iterations, *GeneratorParams::preset(preset), preset, seed);
}

}  // namespace

TEST_CASE("the generator is deterministic for a seed and keeps the trace invariants for every preset") {
  for (const auto& name : GeneratorParams::preset_names()) {
    CAPTURE(name);
    for (int top_k : {1, 2, 4}) {
      CAPTURE(top_k);
      auto m = model(16, 3, 64, top_k);
      auto a = gen(m, 4, 20, name, 9);
      auto b = gen(m, 4, 20, name, 9);
      auto c = gen(m, 4, 20, name, 10);
      CHECK(trace_to_json(a) == trace_to_json(b));
      if (name != "uniform") CHECK(trace_to_json(a) != trace_to_json(c));
      // Per source: sum = tokens x top_k exactly, no expert above the source's tokens (1/top_k).
      CHECK(a.tokens_per_source == 128);
      for (const auto& r : a.records)
        for (int l = 0; l < a.moe_layers; ++l)
          for (int s = 0; s < a.sources; ++s) {
            uint64_t sum = 0;
            for (int e = 0; e < a.experts; ++e) {
              const uint32_t x = r.counts[(static_cast<size_t>(l) * a.sources + s) * a.experts + e];
              sum += x;
              CHECK(x <= 128);
            }
            CHECK(sum == 128u * static_cast<unsigned>(top_k));
          }
      Diagnostics d;
      validate_trace(a, "gen", d);
      CHECK_FALSE(d.has_errors());
      auto back = parse_trace(trace_to_json(a), "gen.json");
      CHECK(back.records.size() == 20);
      CHECK(back.records[7].counts == a.records[7].counts);
    }
  }
}

TEST_CASE("the cap at 1/top_k holds even when popularity wants more (sigma 10, top-4 of 8)") {
  auto p = *GeneratorParams::preset("collapsed");
  CHECK(p.set("sigma", 10));
  auto t = generate_trace(model(8, 2, 256, 4), "gen-test", 3, 30, p, "collapsed", 3);
  Diagnostics d;
  validate_trace(t, "capped", d);
  CHECK_FALSE(d.has_errors());
  // Top-4 of 8: at most 1/4 of the assignments on one expert; with sigma 10 the top experts sit at it.
  CHECK(late(t, 8).top1_share <= 0.25 + 1e-12);
  CHECK(late(t, 8).top1_share > 0.24);
}

TEST_CASE("--set names: every parameter settable, unknown names refused, ranges checked") {
  GeneratorParams p;
  for (const auto& n : GeneratorParams::names()) CHECK(p.set(n, 0.5));
  CHECK_FALSE(p.set("sigmaa", 1));
  CHECK(p.check().empty());
  CHECK(p.set("phi", 1.5));
  CHECK(p.check().find("phi") == 0);
  CHECK_FALSE(GeneratorParams::preset("lumpy").has_value());
}

TEST_CASE("preset uniform: sampling noise only") {
  auto s = late(gen(model(64, 2), 8, 30, "uniform"), 8);
  CHECK(s.gini < 0.03);
  CHECK(s.max_mean < 1.2);
}

TEST_CASE("preset aux_loss at 64 experts: Gini 0.12-0.2, max/mean 1.5-2.6, persistent") {
  auto s = late(gen(model(64, 4), 8, 200, "aux_loss"), 8);
  CHECK(s.gini > 0.12);
  CHECK(s.gini < 0.2);
  CHECK(s.max_mean > 1.5);
  CHECK(s.max_mean < 2.6);
  CHECK(s.lag1 > 0.9);
}

TEST_CASE("preset aux_free at 64 experts: globally flat (max/mean < 1.15), each source less so") {
  auto s = late(gen(model(64, 4, 2048), 16, 100, "aux_free"), 8);
  CHECK(s.max_mean < 1.15);
  CHECK(s.source_max_mean > s.max_mean + 0.15);
}

TEST_CASE("preset concentrated at 64 experts: Gini 0.3-0.45, max/mean 4-7") {
  auto s = late(gen(model(64, 4), 8, 100, "concentrated"), 8);
  CHECK(s.gini > 0.3);
  CHECK(s.gini < 0.45);
  CHECK(s.max_mean > 4);
  CHECK(s.max_mean < 7);
}

TEST_CASE("preset collapsed at 32 experts, top-2: late max/mean above 10, lag-10 correlation above 0.99") {
  auto s = late(gen(model(32, 6), 16, 300, "collapsed"), 16);
  CHECK(s.max_mean > 10);
  CHECK(s.lag10 > 0.99);
  CHECK(s.source_tv < 0.05);  // ranks close to the global distribution (SmartMoE: ~0.013 late)
}

TEST_CASE("the early transient swings more than the settled phase") {
  auto t = gen(model(64, 4), 8, 200, "aux_loss");
  auto w = trace_stats(t, 8).windows;
  CHECK(w[1].overall.gini > w[2].overall.gini);
}

TEST_CASE("streaming and in-memory generation give the same trace") {
  auto m = model(8, 2, 64);
  auto p = *GeneratorParams::preset("aux_loss");
  auto whole = generate_trace(m, "gen-test", 2, 5, p, "aux_loss", 4);
  Trace header;
  std::vector<TraceRecord> recs;
  generate_trace_stream(m, "gen-test", 2, 5, p, "aux_loss", 4, header, [&](const TraceRecord& r) { recs.push_back(r); });
  header.records = recs;
  CHECK(trace_to_json(header) == trace_to_json(whole));
}
