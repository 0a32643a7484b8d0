#include <doctest/doctest.h>

#include <string>

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
