// Importers (SmartMoE per-rank logs, Megatron-Core router-trace JSONL, CSV) and source re-binning.
// Fixtures live in tests/fixtures (HECATE_FIXTURES); the real SmartMoE artifact trace is read from
// ../shared/data/smartmoe-trace/moe_trace when present (HECATE_SMARTMOE_DIR), else that case is
// skipped visibly.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "util/diagnostics.hpp"
#include "workload/trace_import.hpp"
#include "workload/trace_io.hpp"

using namespace hs;
using namespace hs::workload;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string fixture(const std::string& name) { return env("HECATE_FIXTURES") + "/" + name; }

std::filesystem::path scratch() {
  static const auto d = std::filesystem::temp_directory_path() / ("hecate-import-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

// The SmartMoE-style fixture folder, written once per run by tests/fixtures/write_smartmoe_fixture.sh
// (generated rather than tracked: the repository holds no file named like the artifact's data).
std::string smartmoe_fixture() {
  static const std::string dir = [] {
    const auto d = scratch() / "smartmoe";
    const std::string cmd = "sh '" + fixture("write_smartmoe_fixture.sh") + "' '" + d.string() + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
    return d.string();
  }();
  return dir;
}

std::string write_scratch(const std::string& name, const std::string& text) {
  const auto p = scratch() / name;
  std::ofstream(p) << text;
  return p.string();
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool smartmoe_data_absent() {
  const std::string dir = env("HECATE_SMARTMOE_DIR");
  const bool absent = dir.empty() || !std::filesystem::is_directory(dir);
  if (absent)
    std::fprintf(stderr, "SKIPPED: SmartMoE artifact trace not found at '%s' (../shared/data/smartmoe-trace/moe_trace)\n",
                 dir.c_str());
  return absent;
}

void check_valid(const Trace& t) {
  Diagnostics d;
  validate_trace(t, "t", d);
  CHECK_FALSE(d.has_errors());
}

}  // namespace

TEST_CASE("SmartMoE importer on the repository's fixture: micro-batches kept per rank") {
  auto t = import_smartmoe(smartmoe_fixture(), ImportOptions{2, 1, ""});
  CHECK(t.records.size() == 2);
  CHECK(t.records[1].iter == 11);
  CHECK(t.moe_layers == 2);
  CHECK(t.experts == 4);
  CHECK(t.sources == 2);
  // 2 micro-batches x 8 assignments / top-2 = 8 tokens per source and iteration, 4 per micro-batch.
  CHECK(t.micro_batches == 2);
  CHECK(t.tokens_per_source == 8);
  CHECK(t.provenance_json.find("\"micro_batches\": 2, \"micro_batch_assignments\": 8") != std::string::npos);
  // Iteration 1, layer 0, rank 0 logs [[2,2,2,2], [4,2,1,1]]: micro-batch slices [layer][source][expert]
  // of 2 x 2 x 4 counts, rank 0 of layer 0 first; the iteration is their sum [6,4,3,3].
  const auto& r = t.records[0];
  CHECK(std::vector<uint32_t>(r.micro.begin(), r.micro.begin() + 4) == std::vector<uint32_t>{2, 2, 2, 2});
  CHECK(std::vector<uint32_t>(r.micro.begin() + 16, r.micro.begin() + 20) == std::vector<uint32_t>{4, 2, 1, 1});
  // Rank 1, layer 1, micro-batch 1 of iteration 11: [1, 3, 2, 2].
  CHECK(std::vector<uint32_t>(t.records[1].micro.begin() + 28, t.records[1].micro.begin() + 32) ==
        std::vector<uint32_t>{1, 3, 2, 2});
  CHECK(r.counts[0] == 6);
  CHECK(r.counts[3] == 3);
  check_valid(t);
  // Summing them away gives what earlier versions imported.
  auto summed = t;
  drop_micro_batches(summed);
  CHECK(summed.micro_batches == 0);
  CHECK(summed.records[0].counts == t.records[0].counts);
  CHECK(summed.records[0].micro.empty());
  check_valid(summed);
  // Stride 2 keeps iteration 1 only.
  CHECK(import_smartmoe(smartmoe_fixture(), ImportOptions{2, 2, ""}).records.size() == 1);
  CHECK_THROWS_AS(import_smartmoe(fixture("nowhere"), ImportOptions{}), InputError);
}

TEST_CASE("SmartMoE importer: bad logs give located errors") {
  const auto dir = scratch() / "badsm";
  std::filesystem::create_directories(dir);
  for (const auto& f : std::filesystem::directory_iterator(smartmoe_fixture()))
    std::filesystem::copy_file(f.path(), dir / f.path().filename(), std::filesystem::copy_options::overwrite_existing);
  // Line 2 of iteration 1, rank 0: a non-number.
  std::ofstream(dir / "table_iter1_rank0.log")
      << "0:[[2.0, 2.0, 2.0, 2.0], [4.0, 2.0, 1.0, 1.0]]\n1:[[3.0, x, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0]]\n";
  auto e = error_of([&] { import_smartmoe(dir.string(), ImportOptions{}); });
  CHECK(e.find("table_iter1_rank0.log:2:10") != std::string::npos);
  CHECK(e.find("layer 1.micro_batch 0.expert 1") != std::string::npos);
  // A micro-batch that sums differently.
  std::ofstream(dir / "table_iter1_rank0.log")
      << "0:[[2.0, 2.0, 2.0, 2.0], [4.0, 2.0, 1.0, 1.0]]\n1:[[3.0, 3.0, 1.0, 2.0], [2.0, 2.0, 2.0, 2.0]]\n";
  e = error_of([&] { import_smartmoe(dir.string(), ImportOptions{}); });
  CHECK(e.find("table_iter1_rank0.log:2") != std::string::npos);
  CHECK(e.find("sum to 9") != std::string::npos);
  // A layer with one micro-batch where the others have two (line 2 of the file).
  std::ofstream(dir / "table_iter1_rank0.log")
      << "0:[[2.0, 2.0, 2.0, 2.0], [4.0, 2.0, 1.0, 1.0]]\n1:[[3.0, 3.0, 1.0, 1.0]]\n";
  e = error_of([&] { import_smartmoe(dir.string(), ImportOptions{}); });
  CHECK(e.find("table_iter1_rank0.log:2:1") != std::string::npos);
  CHECK(e.find("1 micro-batches, but 2") != std::string::npos);
  // A missing rank.
  std::filesystem::remove(dir / "table_iter1_rank0.log");
  e = error_of([&] { import_smartmoe(dir.string(), ImportOptions{}); });
  CHECK(e.find("rank 0 has no log file") != std::string::npos);
}

TEST_CASE("SmartMoE importer on the real artifact trace" * doctest::skip(smartmoe_data_absent())) {
  const std::string dir = env("HECATE_SMARTMOE_DIR");
  auto t = import_smartmoe(dir, ImportOptions{2, 1, ""});
  CHECK(t.moe_layers == 24);
  CHECK(t.experts == 32);
  CHECK(t.sources == 16);
  CHECK(t.records.size() == 501);
  CHECK(t.records.front().iter == 1);
  CHECK(t.records.back().iter == 5001);
  // Every micro-batch was checked against the first one's sum on import: 4 x 4,096 per rank.
  CHECK(t.provenance_json.find("\"micro_batches\": 4, \"micro_batch_assignments\": 4096") != std::string::npos);
  CHECK(t.tokens_per_source == 8192);  // 4 micro-batches x 4,096 assignments / top-2
  CHECK(t.micro_batches == 4);
  CHECK(t.tokens_per_source_micro_batch() == 2048);
  // Property: token conservation per micro-batch, every (record, micro-batch, layer, rank) routes
  // 2,048 tokens x top-2 (validate_trace checks it too), and the micro-batches sum to the iteration.
  uint64_t bad = 0;
  for (const auto& r : t.records) {
    for (int mb = 0; mb < 4; ++mb)
      for (size_t row = 0; row < static_cast<size_t>(24 * 16); ++row) {
        uint64_t s = 0;
        for (int e = 0; e < 32; ++e) s += t.micro_slice(r, mb)[row * 32 + e];
        bad += s != 4096;
      }
    for (size_t i = 0; i < r.counts.size(); ++i) {
      uint64_t s = 0;
      for (int mb = 0; mb < 4; ++mb) s += t.micro_slice(r, mb)[i];
      bad += s != r.counts[i];
    }
  }
  CHECK(bad == 0);
  check_valid(t);
  // Stride 10: iterations 1, 101, ..., 4901 and 5001 -> 51 records.
  CHECK(import_smartmoe(dir, ImportOptions{2, 10, ""}).records.size() == 51);
}

TEST_CASE("Megatron router-trace JSONL importer") {
  auto m = import_megatron(fixture("megatron-router.jsonl"), ImportOptions{2, 1, ""});
  CHECK(m.records.size() == 2);  // steps 0 and 5
  CHECK(m.records[1].iter == 5);
  CHECK(m.moe_layers == 2);
  CHECK(m.experts == 4);
  CHECK(m.sources == 2);
  CHECK(m.tokens_per_source == 3);  // 3 tokens x top-2 = 6 assignments per (step, layer, rank)
  // Step 5, layer 0, rank 0: tokens [0,1] [0,2] [0,3] -> expert 0 has 3.
  CHECK(m.records[1].counts[0] == 3);
  check_valid(m);
  CHECK(import_megatron(fixture("megatron-router.jsonl"), ImportOptions{2, 1, ""}, 6).experts == 6);
  // Bad input: unknown key, a token routed to the same expert twice, uneven top-k, missing rank.
  auto e = error_of([&] {
    import_megatron(write_scratch("k.jsonl", "{\"step\": 0, \"layer\": 0, \"rank\": 0, \"top_indices\": [[0, 1]], \"colour\": 1}\n"),
                    ImportOptions{});
  });
  CHECK(e.find("k.jsonl:1:") != std::string::npos);
  CHECK(e.find("colour") != std::string::npos);
  CHECK(e.find("unknown key") != std::string::npos);
  e = error_of([&] {
    import_megatron(write_scratch("twice.jsonl", "\n{\"step\": 0, \"layer\": 0, \"rank\": 0, \"top_indices\": [[1, 1]]}\n"),
                    ImportOptions{});
  });
  CHECK(e.find("twice.jsonl:2:") != std::string::npos);
  CHECK(e.find("top_indices[0]") != std::string::npos);
  e = error_of([&] {
    import_megatron(write_scratch("k3.jsonl", "{\"step\": 0, \"layer\": 0, \"rank\": 0, \"top_indices\": [[0, 1], [2]]}\n"),
                    ImportOptions{});
  });
  CHECK(e.find("top_indices[1]") != std::string::npos);
  e = error_of([&] {
    import_megatron(write_scratch("miss.jsonl", "{\"step\": 0, \"layer\": 0, \"rank\": 1, \"top_indices\": [[0, 1]]}\n"),
                    ImportOptions{});
  });
  CHECK(e.find("source 0") != std::string::npos);
}

TEST_CASE("CSV importer") {
  // The fixture routes 4 tokens per source, top-1.
  auto c = import_csv(fixture("loads.csv"), ImportOptions{1, 1, ""});
  CHECK(c.records.size() == 2);
  CHECK(c.experts == 2);
  CHECK(c.tokens_per_source == 4);
  CHECK(c.records[1].counts[2] == 1);  // iter 7, layer 0, source 1, expert 0
  check_valid(c);
  CHECK(import_csv(fixture("loads.csv"), ImportOptions{1, 1, ""}, 4).experts == 4);
  // With top-2 the same counts break the cap (an expert above the tokens): bad input.
  CHECK_THROWS_AS(import_csv(fixture("loads.csv"), ImportOptions{2, 1, ""}), InputError);
  auto e = error_of([&] { import_csv(write_scratch("bad.csv", "iter,layer,source,expert,count\n0,0,0,x,3\n"), ImportOptions{1, 1, ""}); });
  CHECK(e.find("bad.csv:2:7") != std::string::npos);
  CHECK(e.find("expert") != std::string::npos);
  e = error_of([&] { import_csv(write_scratch("hdr.csv", "iteration,layer,source,expert,count\n"), ImportOptions{}); });
  CHECK(e.find("hdr.csv:1:1") != std::string::npos);
  // Top-k 0: from the data, which here allows top-1 only (one expert takes a source's 4 tokens).
  CHECK(import_csv(fixture("loads.csv"), ImportOptions{0, 1, ""}).top_k == 1);
  // A wrong top-k names the count's line and column, and what the counts allow.
  e = error_of([&] { import_csv(fixture("loads.csv"), ImportOptions{2, 1, ""}); });
  CHECK(e.find("loads.csv:6:9: error: count of iter 7, layer 0, source 0, expert 0: 4 tokens picked this expert but the "
               "source has only 2 tokens") != std::string::npos);
  CHECK(e.find("allow K = 1)") != std::string::npos);
  // Counts that allow several top-k values: asked for, at the largest count.
  const std::string two = write_scratch("two.csv", "iter,layer,source,expert,count\n0,0,0,0,1\n0,0,0,1,1\n0,0,0,2,1\n0,0,0,3,1\n"
                                                   "0,0,1,0,2\n0,0,1,1,2\n");
  e = error_of([&] { import_csv(two, ImportOptions{0, 1, ""}); });
  CHECK(e.find("two.csv:6:9: error: --top-k:") != std::string::npos);
  CHECK(e.find("allow K = 1, 2)") != std::string::npos);
  CHECK(import_csv(two, ImportOptions{2, 1, ""}).tokens_per_source == 2);
  // --experts too small: at the expert's column.
  e = error_of([&] { import_csv(two, ImportOptions{2, 1, ""}, 2); });
  CHECK(e.find("two.csv:4:7: error: expert: expert id 2 but --experts is 2") != std::string::npos);
}

TEST_CASE("re-binning sources: merge, split and proportional ratios keep every invariant") {
  auto t = import_smartmoe(smartmoe_fixture(), ImportOptions{2, 1, ""});
  // Merge 2 sources into 1: counts add, tokens per source double (8 -> 16).
  auto merged = t;
  rebin_sources(merged, 1, "fixture");
  CHECK(merged.sources == 1);
  CHECK(merged.tokens_per_source == 16);
  CHECK(merged.records[0].counts[0] == t.records[0].counts[0] + t.records[0].counts[4]);
  CHECK(merged.provenance_json.find("\"rebinned_sources\": {\"from\": 2, \"to\": 1") != std::string::npos);
  // Split 2 sources into 4: tokens per source halve (8 -> 4), each micro-batch on its own (4 -> 2
  // tokens). Iteration 1, layer 0, source 0 had micro-batches [2, 2, 2, 2] -> halves [1, 1, 1, 1] and
  // [4, 2, 1, 1] -> first half [2, 1, 0.5, 0.5]: floors [2, 1, 0, 0] (3 of 4), the one left to the
  // largest remainder, ties to the lower id: [2, 1, 1, 0]; the second half is the rest [2, 1, 0, 1].
  // Summed over micro-batches: [3, 2, 2, 1] and [3, 2, 1, 2].
  auto split = t;
  rebin_sources(split, 4, "fixture");
  CHECK(split.tokens_per_source == 4);
  CHECK(std::vector<uint32_t>(split.records[0].counts.begin(), split.records[0].counts.begin() + 8) ==
        std::vector<uint32_t>{3, 2, 2, 1, 3, 2, 1, 2});
  check_valid(split);
  CHECK(std::vector<uint32_t>(split.records[0].micro.begin(), split.records[0].micro.begin() + 8) ==
        std::vector<uint32_t>{1, 1, 1, 1, 1, 1, 1, 1});
  CHECK(std::vector<uint32_t>(split.records[0].micro.begin() + 32, split.records[0].micro.begin() + 40) ==
        std::vector<uint32_t>{2, 1, 1, 0, 2, 1, 0, 1});
  for (int e = 0; e < 4; ++e) CHECK(split.global_count(split.records[1], 1, e) == t.global_count(t.records[1], 1, e));
  // 2 sources x 4 tokens per micro-batch = 8 tokens do not split over 3 sources.
  auto bad = t;
  auto e = error_of([&] { rebin_sources(bad, 3, "fixture"); });
  CHECK(e.find("--sources") != std::string::npos);
  // Proportional, not a divisor nor a multiple: 3 sources of 4 tokens (top-1) -> 2 sources of 6:
  // new source 0 = old 0 + half of old 1, new source 1 = the other half + old 2.
  Trace p;
  p.moe_layers = 1, p.experts = 3, p.top_k = 1, p.sources = 3, p.tokens_per_source = 4;
  p.records.push_back({0, {4, 0, 0, 1, 1, 2, 0, 0, 4}});
  rebin_sources(p, 2, "p");
  CHECK(p.tokens_per_source == 6);
  // Old 1 = [1, 1, 2], its first 2 tokens: [0.5, 0.5, 1] -> [0, 0, 1] + one to the largest remainder
  // (0.5 ties: expert 0) = [1, 0, 1]; rest [0, 1, 1].
  CHECK(p.records[0].counts == std::vector<uint32_t>{5, 0, 1, 0, 1, 5});
  check_valid(p);
}

TEST_CASE("re-binning a generated-size trace to many ratios conserves totals and the cap") {
  Trace t;
  t.moe_layers = 2, t.experts = 5, t.top_k = 2, t.sources = 6, t.tokens_per_source = 10;
  TraceRecord r{0, {}};
  for (int l = 0; l < 2; ++l)
    for (int s = 0; s < 6; ++s) {
      const std::vector<uint32_t> row = s % 2 ? std::vector<uint32_t>{10, 7, 1, 1, 1} : std::vector<uint32_t>{4, 4, 4, 4, 4};
      r.counts.insert(r.counts.end(), row.begin(), row.end());
    }
  t.records.push_back(r);
  for (int n : {1, 2, 3, 4, 5, 10, 12, 15, 20, 30, 60}) {
    CAPTURE(n);
    auto u = t;
    rebin_sources(u, n, "t");
    CHECK(u.sources == n);
    CHECK(u.tokens_per_source * n == 60);
    check_valid(u);
    for (int e = 0; e < 5; ++e) CHECK(u.global_count(u.records[0], 1, e) == t.global_count(t.records[0], 1, e));
  }
}

TEST_CASE("CSV and Megatron importers keep a micro-batch index when their input has one") {
  // CSV, top-1, 1 layer, 2 sources, 2 experts, 2 micro-batches of 2 tokens per source: iteration 3
  // routes micro-batch 0 as [2, 0] / [1, 1] and micro-batch 1 as [0, 2] / [2, 0].
  const std::string csv =
      "iter,micro_batch,layer,source,expert,count\n"
      "3,0,0,0,0,2\n3,0,0,1,0,1\n3,0,0,1,1,1\n"
      "3,1,0,0,1,2\n3,1,0,1,0,2\n";
  auto c = import_csv(write_scratch("mb.csv", csv), ImportOptions{1, 1, ""});
  CHECK(c.micro_batches == 2);
  CHECK(c.tokens_per_source == 4);  // 2 micro-batches x 2 tokens
  CHECK(c.records[0].micro == std::vector<uint32_t>{2, 0, 1, 1, 0, 2, 2, 0});
  CHECK(c.records[0].counts == std::vector<uint32_t>{2, 2, 3, 1});
  check_valid(c);
  // Iteration 5 lacks micro-batch 1 (its rows start on line 7): located at the iteration's first row.
  auto e = error_of([&] { import_csv(write_scratch("mb-missing.csv", csv + "5,0,0,0,0,2\n5,0,0,1,0,2\n"), ImportOptions{1, 1, ""}); });
  CHECK(e.find("mb-missing.csv:7") != std::string::npos);
  CHECK(e.find("micro_batch 1") != std::string::npos);
  CHECK(e.find("no counts for this (iter, micro_batch, layer, source)") != std::string::npos);
  // A micro-batch that routes a different number of tokens (line 4's group sums to 3).
  e = error_of([&] { import_csv(write_scratch("mb-sum.csv", "iter,micro_batch,layer,source,expert,count\n3,0,0,0,0,2\n3,0,0,1,0,1\n3,0,0,1,1,2\n"), ImportOptions{1, 1, ""}); });
  CHECK(e.find("mb-sum.csv:3") != std::string::npos);
  CHECK(e.find("counts sum to 3 but other (iter, micro_batch, layer, source) to 2") != std::string::npos);
  e = error_of([&] { import_csv(write_scratch("mb-short.csv", "iter,micro_batch,layer,source,expert,count\n3,0,0,0,2\n"), ImportOptions{1, 1, ""}); });
  CHECK(e.find("mb-short.csv:2:") != std::string::npos);
  CHECK(e.find("expected 6 comma-separated fields") != std::string::npos);

  // Megatron: "micro_batch" on every line keeps them apart; step 0, 2 micro-batches of one token.
  const std::string jsonl =
      "{\"step\": 0, \"micro_batch\": 0, \"layer\": 0, \"rank\": 0, \"top_indices\": [[0, 1]]}\n"
      "{\"step\": 0, \"micro_batch\": 1, \"layer\": 0, \"rank\": 0, \"top_indices\": [[2, 3]]}\n";
  auto m = import_megatron(write_scratch("mb.jsonl", jsonl), ImportOptions{}, 4);
  CHECK(m.micro_batches == 2);
  CHECK(m.top_k == 2);
  CHECK(m.tokens_per_source == 2);
  CHECK(m.records[0].micro == std::vector<uint32_t>{1, 1, 0, 0, 0, 0, 1, 1});
  check_valid(m);
  // On some lines only: located at the line that disagrees with the first.
  e = error_of([&] {
    import_megatron(write_scratch("mb-mixed.jsonl", jsonl + "{\"step\": 1, \"layer\": 0, \"rank\": 0, \"top_indices\": [[2, 3]]}\n"),
                    ImportOptions{}, 4);
  });
  CHECK(e.find("mb-mixed.jsonl:3:") != std::string::npos);
  CHECK(e.find("give it on every line or on none") != std::string::npos);
  // Without the key, lines of one (step, layer, rank) add up as before: no micro-batch axis.
  auto summed = import_megatron(fixture("megatron-router.jsonl"), ImportOptions{});
  CHECK(summed.micro_batches == 0);
}
