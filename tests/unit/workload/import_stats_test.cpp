#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <unistd.h>
#include <filesystem>
#include <string>
#include <vector>

#include "util/diagnostics.hpp"
#include "workload/trace_import.hpp"
#include "workload/trace_io.hpp"
#include "workload/trace_stats.hpp"

using namespace hs;
using namespace hs::workload;

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
// The SmartMoE-style fixture folder, written once per test run by tests/fixtures/write_smartmoe_fixture.sh.
std::string smartmoe_fixture() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("hecate-smartmoe-fixture-" + std::to_string(::getpid()));
    const std::string cmd = "sh '" + env("HECATE_FIXTURES") + "/write_smartmoe_fixture.sh' '" + d.string() + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
    return d.string();
  }();
  return dir;
}
}  // namespace

TEST_CASE("SmartMoE importer on the repository's fixture: micro-batches summed per rank") {
  auto t = import_smartmoe(smartmoe_fixture(), ImportOptions{2, 1, ""});
  CHECK(t.records.size() == 2);
  CHECK(t.records[1].iter == 11);
  CHECK(t.moe_layers == 2);
  CHECK(t.experts == 4);
  CHECK(t.sources == 2);
  // 2 micro-batches x 8 assignments / top-2 = 8 tokens per source.
  CHECK(t.tokens_per_source == 8);
  // Iteration 1, layer 0, rank 0: [2,2,2,2] + [4,2,1,1] = [6,4,3,3].
  CHECK(t.records[0].counts[0] == 6);
  CHECK(t.records[0].counts[3] == 3);
  Diagnostics d;
  validate_trace(t, "fixture", d);
  CHECK_FALSE(d.has_errors());
  // Stride 2 keeps iteration 1 only.
  CHECK(import_smartmoe(smartmoe_fixture(), ImportOptions{2, 2, ""}).records.size() == 1);
  CHECK_THROWS_AS(import_smartmoe(env("HECATE_FIXTURES") + "/nowhere", ImportOptions{}), InputError);
}

TEST_CASE("SmartMoE importer on the real artifact trace (skipped when the data is absent)") {
  const std::string dir = env("HECATE_SMARTMOE_DIR");
  if (dir.empty() || !std::filesystem::is_directory(dir)) {
    MESSAGE("SKIPPED: the SmartMoE trace (../shared/data/smartmoe-trace/moe_trace) is not on this machine");
    return;
  }
  auto t = import_smartmoe(dir, ImportOptions{2, 1, ""});
  CHECK(t.moe_layers == 24);
  CHECK(t.experts == 32);
  CHECK(t.sources == 16);
  CHECK(t.records.size() == 501);
  CHECK(t.tokens_per_source == 8192);  // 4 micro-batches x 4,096 assignments / top-2
  Diagnostics d;
  validate_trace(t, dir, d);  // every per-rank sum is 4 x 4,096 (each micro-batch was checked on import)
  CHECK_FALSE(d.has_errors());
}

TEST_CASE("trace statistics: hand-computed cases") {
  // Gini and Pearson.
  CHECK(gini_coefficient({1, 1, 1, 1}) == doctest::Approx(0));
  CHECK(gini_coefficient({0, 0, 0, 1}) == doctest::Approx(0.75));
  CHECK(pearson({1, 2, 3}, {2, 4, 6}) == doctest::Approx(1));
  CHECK(pearson({1, 2, 3}, {3, 2, 1}) == doctest::Approx(-1));
  // One record, one layer, one source, 4 experts with counts [4, 2, 1, 1] (8 tokens? top-1: sum 8):
  // mean 2 -> max/mean 2; s.d. = sqrt((4+0+1+1)/4) = sqrt(1.5) -> CV = 0.6124; top-1 share 0.5;
  // EP 2: GPU loads [6, 2] -> max/mean 6/4 = 1.5.
  Trace t;
  t.moe_layers = 1, t.experts = 4, t.top_k = 1, t.sources = 1, t.tokens_per_source = 8;
  t.records.push_back({0, {4, 2, 1, 1}});
  auto s = trace_stats(t, 2)[0].overall;
  CHECK(s.max_mean == doctest::Approx(2));
  CHECK(s.cv == doctest::Approx(std::sqrt(1.5) / 2));
  CHECK(s.top1_share == doctest::Approx(0.5));
  CHECK(s.gpu_max_mean == doctest::Approx(1.5));
  CHECK(s.source_tv == doctest::Approx(0));
}

TEST_CASE("Megatron router-trace JSONL and CSV importers") {
  auto m = import_megatron(env("HECATE_FIXTURES") + "/megatron-router.jsonl", ImportOptions{2, 1, ""});
  CHECK(m.records.size() == 2);      // steps 0 and 5
  CHECK(m.records[1].iter == 5);
  CHECK(m.moe_layers == 2);
  CHECK(m.experts == 4);
  CHECK(m.sources == 2);
  CHECK(m.tokens_per_source == 3);   // 3 tokens x top-2 = 6 assignments per (step, layer, rank)
  // Step 5, layer 0, rank 0: tokens [0,1] [0,2] [0,3] -> expert 0 has 3.
  CHECK(m.records[1].counts[0] == 3);
  // The CSV fixture routes 4 tokens per source, top-1.
  auto c = import_csv(env("HECATE_FIXTURES") + "/loads.csv", ImportOptions{1, 1, ""});
  CHECK(c.records.size() == 2);
  CHECK(c.experts == 2);
  CHECK(c.tokens_per_source == 4);
  CHECK(c.records[1].counts[2] == 1);  // iter 7, layer 0, source 1, expert 0
  // Explicit expert count larger than the ids seen.
  CHECK(import_csv(env("HECATE_FIXTURES") + "/loads.csv", ImportOptions{1, 1, ""}, 4).experts == 4);
  // With top-2 the same counts break the cap (an expert above the tokens): bad input.
  CHECK_THROWS_AS(import_csv(env("HECATE_FIXTURES") + "/loads.csv", ImportOptions{2, 1, ""}), InputError);
}

TEST_CASE("re-binning sources exactly: merge and split keep every invariant") {
  auto t = import_smartmoe(smartmoe_fixture(), ImportOptions{2, 1, ""});
  // Merge 2 sources into 1: counts add, tokens per source double (8 -> 16).
  auto merged = t;
  rebin_sources(merged, 1, "fixture");
  CHECK(merged.sources == 1);
  CHECK(merged.tokens_per_source == 16);
  CHECK(merged.records[0].counts[0] == t.records[0].counts[0] + t.records[0].counts[4]);
  // Split 2 sources into 4: tokens per source halve (8 -> 4); iteration 1, layer 0, source 0 had
  // [6, 4, 3, 3]: halves [3, 2, 2, 1] and [3, 2, 1, 2] (remainders dealt round-robin across experts).
  auto split = t;
  rebin_sources(split, 4, "fixture");
  CHECK(split.tokens_per_source == 4);
  CHECK(std::vector<uint32_t>(split.records[0].counts.begin(), split.records[0].counts.begin() + 8) ==
        std::vector<uint32_t>{3, 2, 2, 1, 3, 2, 1, 2});
  Diagnostics d;
  validate_trace(split, "split", d);
  CHECK_FALSE(d.has_errors());
  // Totals per expert are conserved.
  for (int e = 0; e < 4; ++e) CHECK(split.global_count(split.records[1], 1, e) == t.global_count(t.records[1], 1, e));
  auto bad = t;
  CHECK_THROWS_AS(rebin_sources(bad, 3, "fixture"), InputError);
}
