#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "transport/plan_file.hpp"
#include "util/diagnostics.hpp"

using namespace hs;
using namespace hs::transport;

namespace {

// 4 GPUs on 2 nodes (0,1 | 2,3), 3 chunks per layer.
// Layer 0 (chain): chunk 0 owned by 0, copies on 1, 2, 3: chain 0 -> 1 -> 2 -> 3, reduce mirrored;
//                  chunk 1 owned by 1, no copies; chunk 2 owned by 3, copy on 0: 3 -> 0.
// Layer 1 (direct): chunk 0 owned by 2, copies on 0, 1: 2 -> 0, 2 -> 1 and back.
Plan small_plan() {
  Plan p;
  p.provenance.tool = "hecate-sim test";
  p.provenance.topology_file = "preset:two-nodes";
  p.provenance.strategy = "fssdp:overlap_degree=1";
  p.provenance.sets = {"experts=3"};
  p.provenance.iteration = 2;
  p.provenance.gpus = 4;
  p.provenance.nodes = 2;
  p.gpus = 4;
  p.node_of = {0, 0, 1, 1};
  PlanLayer a;
  a.layer = 0;
  a.chunk_bytes = 4096;
  a.broadcast = Broadcast::kChain;
  a.owner = {0, 1, 3};
  a.replicas = {{1, 2, 3}, {}, {0}};
  a.spag = {{0, 0, 1}, {0, 1, 2}, {0, 2, 3}, {2, 3, 0}};
  a.sprs = {{0, 1, 0}, {0, 2, 1}, {0, 3, 2}, {2, 0, 3}};
  a.dispatch_bytes.assign(4, std::vector<double>(4, 0.0));
  a.dispatch_bytes[0][1] = 1536.5;
  a.dispatch_bytes[3][2] = 1e9;
  PlanLayer b;
  b.layer = 1;
  b.chunk_bytes = 100;
  b.broadcast = Broadcast::kDirect;
  b.owner = {2, 2, 0};
  b.replicas = {{0, 1}, {}, {}};
  b.spag = {{0, 2, 0}, {0, 2, 1}};
  b.sprs = {{0, 0, 2}, {0, 1, 2}};
  b.dispatch_bytes.assign(4, std::vector<double>(4, 7.0));
  p.layers = {a, b};
  return p;
}

// 1-based line of the first occurrence of `needle` (the test's expectation of where an error points).
int line_of(const std::string& text, const std::string& needle) {
  const auto pos = text.find(needle);
  REQUIRE(pos != std::string::npos);
  int line = 1;
  for (size_t i = 0; i < pos; ++i) line += text[i] == '\n';
  return line;
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

std::vector<Diagnostic> errors_of(const std::string& text) {
  try {
    parse_plan(text, "plan.json");
  } catch (const InputError& e) {
    return e.diagnostics();
  }
  return {};
}

// Exactly one error, at plan.json:LINE, whose message contains `what`.
void expect_error(const std::string& text, int line, const std::string& what) {
  const auto d = errors_of(text);
  REQUIRE_MESSAGE(d.size() == 1, (d.empty() ? std::string("no error") : to_string(d.back())));
  CHECK(d[0].where.file == "plan.json");
  CHECK_MESSAGE(d[0].where.line == line, to_string(d[0]));
  CHECK_MESSAGE(d[0].message.find(what) != std::string::npos, to_string(d[0]));
}

}  // namespace

TEST_CASE("a plan survives writing and reading back, byte for byte") {
  const Plan p = small_plan();
  const std::string text = render_plan(p);
  const Plan q = parse_plan(text, "plan.json");
  CHECK(q.gpus == 4);
  CHECK(q.node_of == p.node_of);
  CHECK(q.provenance.strategy == "fssdp:overlap_degree=1");
  CHECK(q.provenance.sets == std::vector<std::string>{"experts=3"});
  CHECK(q.provenance.iteration == 2);
  REQUIRE(q.layers.size() == 2);
  for (size_t l = 0; l < 2; ++l) {
    CHECK(q.layers[l].layer == p.layers[l].layer);
    CHECK(q.layers[l].chunk_bytes == p.layers[l].chunk_bytes);
    CHECK(q.layers[l].broadcast == p.layers[l].broadcast);
    CHECK(q.layers[l].owner == p.layers[l].owner);
    CHECK(q.layers[l].replicas == p.layers[l].replicas);
    CHECK(q.layers[l].dispatch_bytes == p.layers[l].dispatch_bytes);  // 1536.5 and 1e9 exactly
    REQUIRE(q.layers[l].spag.size() == p.layers[l].spag.size());
    for (size_t i = 0; i < p.layers[l].spag.size(); ++i) {
      CHECK(q.layers[l].spag[i].chunk == p.layers[l].spag[i].chunk);
      CHECK(q.layers[l].spag[i].src == p.layers[l].spag[i].src);
      CHECK(q.layers[l].spag[i].dst == p.layers[l].spag[i].dst);
    }
    REQUIRE(q.layers[l].sprs.size() == p.layers[l].sprs.size());
  }
  CHECK(render_plan(q) == text);
  CHECK(text.find("\"schema\": \"hecate-sim/plan@1\"") != std::string::npos);
  // One transfer per line: the line of an element is where its errors point.
  CHECK(line_of(text, "{\"chunk\": 0, \"src\": 1, \"dst\": 2}") == line_of(text, "{\"chunk\": 0, \"src\": 0, \"dst\": 1}") + 1);
}

TEST_CASE("spAG transfers must deliver every replica its owner's chunk along valid chains") {
  const std::string text = render_plan(small_plan());
  const std::string hop1 = "{\"chunk\": 0, \"src\": 0, \"dst\": 1}";
  const std::string hop2 = "{\"chunk\": 0, \"src\": 1, \"dst\": 2}";
  SUBCASE("a GPU forwards a chunk before it has received it") {
    // Hops 1 and 2 swapped: GPU 1 sends chunk 0 (now on hop1's line) before 0 -> 1 arrives.
    std::string t = replace(text, hop1, "@@");
    t = replace(t, hop2, hop1);
    t = replace(t, "@@", hop2);
    expect_error(t, line_of(t, hop2), "GPU 1 sends chunk 0 before it holds it");
  }
  SUBCASE("a destination out of range") {
    const std::string t = replace(text, "{\"chunk\": 0, \"src\": 2, \"dst\": 3}", "{\"chunk\": 0, \"src\": 2, \"dst\": 9}");
    const auto d = errors_of(t);
    REQUIRE(d.size() >= 1);
    CHECK(d[0].where.line == line_of(t, "\"dst\": 9"));
    CHECK(d[0].field == "layers[0].spag[2].dst");
    CHECK(d[0].message.find("GPU 9 out of range (gpus: 4)") != std::string::npos);
  }
  SUBCASE("a replica that never receives its copy") {
    // The last hop removed: GPU 3 is a replica of chunk 0 that no transfer reaches.
    const std::string t = replace(text, "{\"chunk\": 0, \"src\": 2, \"dst\": 3},\n", "");
    expect_error(t, line_of(t, "[1, 2, 3]"), "GPU 3 never receives chunk 0 in spag");
  }
  SUBCASE("a copy delivered twice") {
    const std::string t = replace(text, "{\"chunk\": 2, \"src\": 3, \"dst\": 0}", "{\"chunk\": 0, \"src\": 3, \"dst\": 1}");
    const auto d = errors_of(t);
    REQUIRE(d.size() == 2);  // GPU 1 receives chunk 0 twice; GPU 0 never gets chunk 2
    CHECK(d[0].where.line == line_of(t, "{\"chunk\": 0, \"src\": 3, \"dst\": 1}"));
    CHECK(d[0].message.find("GPU 1 receives chunk 0 a second time") != std::string::npos);
    CHECK(d[1].message.find("GPU 0 never receives chunk 2") != std::string::npos);
  }
  SUBCASE("a transfer to a GPU that is not a replica") {
    const std::string t = replace(text, "{\"chunk\": 2, \"src\": 3, \"dst\": 0}", "{\"chunk\": 2, \"src\": 3, \"dst\": 1}");
    const auto d = errors_of(t);
    REQUIRE(d.size() == 2);
    CHECK(d[0].where.line == line_of(t, "{\"chunk\": 2, \"src\": 3, \"dst\": 1}"));
    CHECK(d[0].message.find("GPU 1 is not a replica of chunk 2") != std::string::npos);
  }
  SUBCASE("a direct broadcast sent by a replica") {
    // Layer 1's second copy sent by GPU 0 (which holds it by then) instead of the owner, GPU 2.
    const std::string tail = "\n      ],\n      \"sprs\"";
    const std::string t = replace(text, "{\"chunk\": 0, \"src\": 2, \"dst\": 1}" + tail, "{\"chunk\": 0, \"src\": 0, \"dst\": 1}" + tail);
    expect_error(t, line_of(t, "{\"chunk\": 0, \"src\": 0, \"dst\": 1}" + tail), "direct broadcast sends from the owner, GPU 2");
  }
}

TEST_CASE("spRS transfers must form a reduce tree into the owner") {
  const std::string text = render_plan(small_plan());
  SUBCASE("a cycle never reaches the owner") {
    // 1 -> 0 becomes 1 -> 3: 1 -> 3 -> 2 -> 1.
    const std::string t = replace(text, "{\"chunk\": 0, \"src\": 1, \"dst\": 0}", "{\"chunk\": 0, \"src\": 1, \"dst\": 3}");
    const auto d = errors_of(t);
    REQUIRE(d.size() == 3);  // each of GPUs 1, 2, 3 goes round the cycle
    CHECK(d[0].where.line == line_of(t, "[1, 2, 3]"));
    CHECK(d[0].message.find("goes round a cycle in sprs") != std::string::npos);
  }
  SUBCASE("the owner does not send its gradient away") {
    const std::string t = replace(text, "{\"chunk\": 2, \"src\": 0, \"dst\": 3}", "{\"chunk\": 2, \"src\": 3, \"dst\": 0}");
    const auto d = errors_of(t);
    REQUIRE(d.size() == 2);
    CHECK(d[0].where.line == line_of(t, "{\"chunk\": 2, \"src\": 3, \"dst\": 0}\n      ],\n      \"dispatch"));
    CHECK(d[0].message.find("GPU 3 holds no copy of chunk 2") != std::string::npos);
    CHECK(d[1].message.find("GPU 0 never returns its gradient of chunk 2") != std::string::npos);
  }
  SUBCASE("a gradient returned twice") {
    const std::string t = replace(text, "{\"chunk\": 0, \"src\": 3, \"dst\": 2}", "{\"chunk\": 0, \"src\": 2, \"dst\": 0}");
    const auto d = errors_of(t);
    REQUIRE(d.size() == 2);
    CHECK(d[0].message.find("GPU 2 returns its gradient of chunk 0 a second time") != std::string::npos);
    CHECK(d[1].message.find("GPU 3 never returns") != std::string::npos);
  }
}

TEST_CASE("structural problems name the file and line of the element") {
  const std::string text = render_plan(small_plan());
  SUBCASE("wrong schema") {
    const std::string t = replace(text, "hecate-sim/plan@1", "hecate-sim/plan@2");
    expect_error(t, 2, "expected \"hecate-sim/plan@1\"");
  }
  SUBCASE("unknown key") {
    const std::string t = replace(text, "\"broadcast\": \"direct\",", "\"broadcast\": \"direct\", \"brodcast\": 1,");
    expect_error(t, line_of(t, "brodcast"), "unknown key");
  }
  SUBCASE("a key given twice") {
    const std::string t = replace(text, "\"layer\": 1,", "\"layer\": 1, \"layer\": 1,");
    expect_error(t, line_of(t, "\"layer\": 1,"), "key given twice");
  }
  SUBCASE("a missing key") {
    const std::string t = replace(text, "\"broadcast\": \"chain\",\n", "");
    const auto d = errors_of(t);
    REQUIRE(d.size() == 1);
    CHECK(d[0].field == "layers[0].broadcast");
    CHECK(d[0].message == "missing");
    CHECK(d[0].where.line == line_of(t, "\"layer\": 0") - 1);  // the layer's opening brace
  }
  SUBCASE("a replica list naming the owner") {
    const std::string t = replace(text, "[1, 2, 3]", "[0, 1, 2, 3]");
    const auto d = errors_of(t);
    REQUIRE(!d.empty());
    CHECK(d[0].where.line == line_of(t, "[0, 1, 2, 3]"));
    CHECK(d[0].message.find("lists the owner, GPU 0") != std::string::npos);
  }
  SUBCASE("a dispatch row of the wrong length") {
    const std::string t = replace(text, "[7, 7, 7, 7],", "[7, 7, 7],");
    expect_error(t, line_of(t, "[7, 7, 7],"), "expected 4 entries");
  }
  SUBCASE("a negative byte count") {
    const std::string t = replace(text, "[7, 7, 7, 7],", "[7, -7, 7, 7],");
    expect_error(t, line_of(t, "[7, -7, 7, 7],"), "non-negative number");
  }
  SUBCASE("malformed JSON") {
    const std::string t = text.substr(0, text.find("\"sprs\""));
    const auto d = errors_of(t);
    REQUIRE(!d.empty());
    CHECK(d[0].message.find("JSON") != std::string::npos);
    CHECK(d[0].where.file == "plan.json");
  }
  SUBCASE("bytes that are not UTF-8") {
    const std::string t = replace(text, "fssdp:overlap_degree=1", "fssdp:overlap_degree=1\xff");
    expect_error(t, line_of(t, "\xff"), "not UTF-8 text");
  }
  SUBCASE("a UTF-8 byte-order mark is skipped") {
    CHECK(render_plan(parse_plan("\xEF\xBB\xBF" + text, "plan.json")) == text);
  }
  SUBCASE("content after the plan") {
    expect_error(text + "{}\n", line_of(text + "{}", "}\n{}") + 1, "unexpected content after the plan");
  }
  SUBCASE("node_of of the wrong length") {
    const std::string t = replace(text, "\"node_of\": [0, 0, 1, 1]", "\"node_of\": [0, 0, 1]");
    expect_error(t, line_of(t, "node_of"), "expected 4 entries");
  }
  SUBCASE("every problem at once") {
    std::string t = replace(text, "{\"chunk\": 0, \"src\": 2, \"dst\": 3}", "{\"chunk\": 7, \"src\": 2, \"dst\": 3}");
    t = replace(t, "[7, 7, 7, 7],", "[7, 7, 7],");
    const auto d = errors_of(t);
    REQUIRE(d.size() >= 2);
    CHECK(d[0].message.find("chunk 7 out of range (3 chunks)") != std::string::npos);
  }
}
