#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "util/diagnostics.hpp"
#include "workload/trace_io.hpp"

using namespace hs;
using namespace hs::workload;

namespace {
const char* kGood = R"({
  "format": "hecate-sim/expert-load-trace", "version": "1.0",
  "model": {"moe_layers": 1, "experts": 2, "top_k": 1},
  "workload": {"sources": 2, "tokens_per_source": 3},
  "axes": ["layer", "source", "expert"],
  "records": [
    {"iter": 0, "counts": [[[2, 1], [0, 3]]]}
  ]
})";
std::string error_of(const std::string& text) {
  try {
    parse_trace(text, "t.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
std::string replace(std::string s, const std::string& a, const std::string& b) {
  s.replace(s.find(a), a.size(), b);
  return s;
}
}  // namespace

TEST_CASE("a good trace reads and round-trips") {
  auto t = parse_trace(kGood, "t.json");
  CHECK(t.records.size() == 1);
  CHECK(t.global_count(t.records[0], 0, 1) == 4);  // 1 + 3
  auto again = parse_trace(trace_to_json(t), "again.json");
  CHECK(again.records[0].counts == t.records[0].counts);
}

TEST_CASE("bad traces: located errors naming the field and what was expected") {
  // Sum of source 1 is 4, not tokens x top_k = 3 (line 7).
  auto e = error_of(replace(kGood, "[0, 3]", "[1, 3]"));
  CHECK(e.find("t.json:7:") != std::string::npos);
  CHECK(e.find("records[0].counts[0][1]") != std::string::npos);
  CHECK(e.find("sum to 4") != std::string::npos);
  // Expert over the cap: with top_k 2 sums must be 6; [6, 0] puts 6 > 3 tokens on expert 0.
  e = error_of(replace(replace(replace(kGood, "\"top_k\": 1", "\"top_k\": 2"), "[2, 1]", "[6, 0]"), "[0, 3]", "[3, 3]"));
  CHECK(e.find("more than the 3 tokens") != std::string::npos);
  // Wrong nesting.
  e = error_of(replace(kGood, "[[[2, 1], [0, 3]]]", "[[2, 1], [0, 3]]"));
  CHECK(e.find("nesting levels") != std::string::npos);
  // Unknown key, wrong version, wrong type, malformed JSON.
  e = error_of(replace(kGood, "\"axes\"", "\"axis\""));
  CHECK(e.find("t.json:5:") != std::string::npos);
  CHECK(e.find("unknown key") != std::string::npos);
  e = error_of(replace(kGood, "\"1.0\"", "\"2.0\""));
  CHECK(e.find("reads version 1") != std::string::npos);
  e = error_of(replace(kGood, "\"experts\": 2", "\"experts\": \"two\""));
  CHECK(e.find("model.experts") != std::string::npos);
  CHECK_FALSE(error_of("{\"format\": ").empty());
  CHECK_FALSE(error_of("").empty());
  CHECK_FALSE(error_of("[1, 2]").empty());
  // Records out of order.
  e = error_of(replace(kGood, "{\"iter\": 0, \"counts\": [[[2, 1], [0, 3]]]}",
                       "{\"iter\": 4, \"counts\": [[[2, 1], [0, 3]]]}, {\"iter\": 2, \"counts\": [[[2, 1], [0, 3]]]}"));
  CHECK(e.find("iterations must increase") != std::string::npos);
}

TEST_CASE("write_trace -> read_trace round trip, plain and .gz, and the streaming writer") {
  auto t = parse_trace(kGood, "t.json");
  t.provenance_json = "{\"kind\": \"test\"}";
  const auto dir = std::filesystem::temp_directory_path() / ("hecate-io-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* name : {"rt.json", "rt.json.gz"}) {
    const std::string path = (dir / name).string();
    write_trace(t, path);
    auto back = read_trace(path);
    CHECK(trace_to_json(back) == trace_to_json(t));
  }
  {
    TraceWriter w((dir / "stream.json.gz").string(), t);
    for (const auto& r : t.records) w.write(r);
    w.close();
  }
  CHECK(trace_to_json(read_trace((dir / "stream.json.gz").string())) == trace_to_json(t));
  std::filesystem::remove_all(dir);
}

TEST_CASE("bad traces: the cap and nesting errors are located too") {
  // Expert over the cap (line 7): [6, 0] with top-2 and 3 tokens.
  auto e = error_of(replace(replace(replace(kGood, "\"top_k\": 1", "\"top_k\": 2"), "[2, 1]", "[6, 0]"), "[0, 3]", "[3, 3]"));
  CHECK(e.find("t.json:7:") != std::string::npos);
  CHECK(e.find("records[0].counts[0][0]") != std::string::npos);
  e = error_of(replace(kGood, "[[[2, 1], [0, 3]]]", "[[2, 1], [0, 3]]"));
  CHECK(e.find("t.json:7:") != std::string::npos);
  CHECK(e.find("records[0].counts") != std::string::npos);
  // Several problems are all reported at once.
  // (The reader checks record sums only once the header is sound, so pair two header problems.)
  e = error_of(replace(replace(kGood, "\"top_k\": 1", "\"top_k\": 1, \"topk\": 1"), "\"1.0\"", "\"2.0\""));
  CHECK(e.find("t.json:3:") != std::string::npos);
  CHECK(e.find("unknown key") != std::string::npos);
  CHECK(e.find("reads version 1") != std::string::npos);
}

namespace {
// kGood with two micro-batches per iteration (v1.1): micro-batch 0 as kGood's record with 3 tokens
// per source, micro-batch 1 mirrored; 6 tokens per source per iteration.
const char* kMicro = R"({
  "format": "hecate-sim/expert-load-trace", "version": "1.1",
  "model": {"moe_layers": 1, "experts": 2, "top_k": 1},
  "workload": {"sources": 2, "tokens_per_source": 6, "micro_batches": 2},
  "axes": ["micro_batch", "layer", "source", "expert"],
  "records": [
    {"iter": 0, "counts": [[[[2, 1], [0, 3]]], [[[1, 2], [3, 0]]]]},
    {"iter": 1, "counts": [[[[3, 0], [3, 0]]], [[[3, 0], [3, 0]]]]}
  ]
})";
}  // namespace

TEST_CASE("micro-batch axis (v1.1): slices kept, the iteration is their sum, round trip") {
  auto t = parse_trace(kMicro, "m.json");
  CHECK(t.micro_batches == 2);
  CHECK(t.tokens_per_source_micro_batch() == 3);
  CHECK(t.records[0].micro == std::vector<uint32_t>{2, 1, 0, 3, 1, 2, 3, 0});
  CHECK(t.records[0].counts == std::vector<uint32_t>{3, 3, 3, 3});  // [2+1, 1+2], [0+3, 3+0]
  CHECK(t.global_count(t.records[1], 0, 0) == 12);
  const std::string json = trace_to_json(t);
  CHECK(json.find("\"version\": \"1.1\"") != std::string::npos);
  CHECK(json.find("\"micro_batches\": 2") != std::string::npos);
  CHECK(json.find("\"axes\": [\"micro_batch\", \"layer\", \"source\", \"expert\"]") != std::string::npos);
  auto back = parse_trace(json, "back.json");
  CHECK(back.records[0].micro == t.records[0].micro);
  CHECK(trace_to_json(back) == json);
  // Dropping the axis leaves a v1.0 trace of the iteration counts, written as before.
  drop_micro_batches(t);
  const std::string v10 = trace_to_json(t);
  CHECK(v10.find("\"version\": \"1.0\"") != std::string::npos);
  CHECK(v10.find("micro") == std::string::npos);
  CHECK(parse_trace(v10, "v10.json").records[0].counts == std::vector<uint32_t>{3, 3, 3, 3});
  // A trace without the axis still writes exactly what it read (the v1.0 fixture of this file).
  CHECK(trace_to_json(parse_trace(trace_to_json(parse_trace(kGood, "t.json")), "t2.json")) ==
        trace_to_json(parse_trace(kGood, "t.json")));
}

TEST_CASE("micro-batch axis: inconsistent or ill-declared micro-batches are located errors") {
  // Record 1 has one micro-batch where the trace has 2 (line 8, the record's counts).
  auto e = error_of(replace(kMicro, "[[[[3, 0], [3, 0]]], [[[3, 0], [3, 0]]]]", "[[[[3, 0], [3, 0]]]]"));
  CHECK(e.find("t.json:8:") != std::string::npos);
  CHECK(e.find("records[1].counts") != std::string::npos);
  CHECK(e.find("expected 2 entries along axis micro_batch") != std::string::npos);
  // Every record with 3 micro-batches against the header's 2.
  e = error_of(replace(replace(kMicro, "[[[[2, 1], [0, 3]]], [[[1, 2], [3, 0]]]]",
                               "[[[[2, 1], [0, 3]]], [[[1, 2], [3, 0]]], [[[1, 2], [3, 0]]]]"),
                       "[[[[3, 0], [3, 0]]], [[[3, 0], [3, 0]]]]", "[[[[3, 0], [3, 0]]], [[[3, 0], [3, 0]]], [[[3, 0], [3, 0]]]]"));
  CHECK(e.find("level 0 has 3 entries but the header says 2 micro-batches (workload.micro_batches)") != std::string::npos);
  // A micro-batch whose source does not sum to its 3 tokens x top-1, named by micro-batch.
  e = error_of(replace(kMicro, "[[[1, 2], [3, 0]]]", "[[[1, 2], [3, 1]]]"));
  CHECK(e.find("t.json:7:") != std::string::npos);
  CHECK(e.find("records[0].counts[1][0][1]") != std::string::npos);
  CHECK(e.find("micro-batch 1") != std::string::npos);
  // The cap holds per micro-batch: top-2 over 3 tokens, [4, 2] puts 4 assignments on expert 0,
  // though the iteration's [6, 6] would pass its own cap of 6 tokens.
  e = error_of(R"({"format": "hecate-sim/expert-load-trace", "version": "1.1",
    "model": {"moe_layers": 1, "experts": 2, "top_k": 2},
    "workload": {"sources": 1, "tokens_per_source": 6, "micro_batches": 2},
    "axes": ["micro_batch", "layer", "source", "expert"], "records": [{"iter": 0, "counts": [[[[4, 2]]], [[[2, 4]]]]}]})");
  CHECK(e.find("records[0].counts[0][0][0][0]") != std::string::npos);
  CHECK(e.find("more than the 3 tokens") != std::string::npos);
  // Declarations: the axis needs version 1.1 and workload.micro_batches, which needs the axis and
  // must divide the iteration's tokens.
  e = error_of(replace(kMicro, "\"1.1\"", "\"1.0\""));
  CHECK(e.find("t.json:2:") != std::string::npos);
  CHECK(e.find("micro_batch axis needs version 1.1") != std::string::npos);
  e = error_of(replace(kMicro, ", \"micro_batches\": 2", ""));
  CHECK(e.find("workload.micro_batches") != std::string::npos);
  CHECK(e.find("give the number of micro-batches") != std::string::npos);
  e = error_of(replace(kMicro, "\"micro_batch\", ", ""));
  CHECK(e.find("t.json:4:") != std::string::npos);
  CHECK(e.find("axes have no \"micro_batch\"") != std::string::npos);
  e = error_of(replace(kMicro, "\"tokens_per_source\": 6", "\"tokens_per_source\": 7"));
  CHECK(e.find("2 micro-batches do not split tokens_per_source 7") != std::string::npos);
  e = error_of(replace(kMicro, "\"micro_batches\": 2", "\"micro_batches\": 0"));
  CHECK(e.find("workload.micro_batches") != std::string::npos);
}
