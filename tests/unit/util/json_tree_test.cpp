#include "util/json_tree.hpp"

#include <doctest/doctest.h>
#include <string>

using hs::InputError;
using hs::json::Document;
using Kind = hs::json::Node::Kind;

namespace {
// The first diagnostic's "line:field:message" of parsing `text`, or "ok".
std::string problem(const std::string& text) {
  try {
    Document::parse(text, "f.json");
    return "ok";
  } catch (const InputError& e) {
    const auto& d = e.diagnostics().front();
    return std::to_string(d.where.line) + ":" + d.field + ":" + d.message;
  }
}
}  // namespace

TEST_CASE("json tree: values, kinds and the line each value starts on") {
  const Document d = Document::parse("{\"a\": 1,\n \"b\": [true, null, -2.5e3],\n \"c\": {\"s\": \"x\\u00e9\"}}", "f.json");
  const auto& r = d.root();
  REQUIRE(r.kind == Kind::kObject);
  REQUIRE(r.keys.size() == 3);
  CHECK(r.keys[0] == "a");  // order as written
  CHECK(r.keys[2] == "c");
  const auto* a = r.find("a");
  REQUIRE(a);
  CHECK(a->kind == Kind::kInteger);
  CHECK(a->integer == 1);
  CHECK(d.where(*a).line == 1);
  const auto* b = r.find("b");
  REQUIRE(b);
  REQUIRE(b->items.size() == 3);
  CHECK(b->items[0].boolean);
  CHECK(b->items[1].kind == Kind::kNull);
  CHECK(b->items[2].kind == Kind::kNumber);
  CHECK(b->items[2].number == -2500.0);  // exactly representable
  CHECK(d.where(b->items[2]).line == 2);
  const auto* c = r.find("c");
  REQUIRE(c);
  CHECK(c->find("s")->string == "x\xC3\xA9");  // \u00e9 unescaped to UTF-8
  CHECK(d.where(*c->find("s")).line == 3);
  CHECK(r.find("missing") == nullptr);
}

TEST_CASE("json tree: integers keep 64 bits, beyond is a number or out of range") {
  // 2^53 + 1 is not a double but is an int64: kept exactly.
  const Document d = Document::parse("[9007199254740993, 18446744073709551615, 1.5]", "f.json");
  CHECK(d.root().items[0].kind == Kind::kInteger);
  CHECK(d.root().items[0].integer == 9007199254740993LL);
  // 2^64 - 1 fits no int64: an unsigned integer read as a number (a double).
  CHECK(d.root().items[1].kind == Kind::kNumber);
  CHECK(d.root().items[1].number == 18446744073709551616.0);
  CHECK(problem("[1, 2,\n 100000000000000000000000]") == "2::number out of range");
}

TEST_CASE("json tree: strictness, each refused with its line") {
  CHECK(problem("{\"a\": 1,\n \"a\": 2}") == "2:a:key given twice in this object");
  CHECK(problem("{\"a\": {\"b\": 1,\n \"b\": 1}}") == "2:b:key given twice in this object");
  CHECK(problem("{\"a\": NaN}").find("malformed JSON") != std::string::npos);
  CHECK(problem("{\"a\": Infinity}").find("malformed JSON") != std::string::npos);
  CHECK(problem("{\"a\": \"\xff\"}") == "1::not UTF-8 text (JSON must be UTF-8)");
  CHECK(problem("{\"a\": 1} x") .find("unexpected content") != std::string::npos);
  CHECK(problem("{\"a\": 1,}").find("malformed JSON") != std::string::npos);
  CHECK(problem("42").find("expected a JSON object") != std::string::npos);
  // 64 levels are allowed, 65 are not (kMaxDepth = 64).
  CHECK(problem(std::string(64, '[') + std::string(64, ']')) == "ok");
  CHECK(problem(std::string(65, '[') + std::string(65, ']')).find("nested deeper than 64") != std::string::npos);
  // A UTF-8 byte-order mark is skipped.
  CHECK(problem("\xEF\xBB\xBF{\"a\": 1}") == "ok");
}
