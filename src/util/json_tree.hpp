// A small JSON document kept as a tree whose every value remembers where it was written, for loaders
// of small machine-written files (measured.json) that want file:line on every problem and the
// project's strictness: a key given twice in an object, text that is not UTF-8, NaN / Infinity (not
// JSON) and nesting deeper than kMaxDepth are errors with file:line; a UTF-8 byte-order mark is
// skipped. Large inputs (traces, plans) stream through simdjson's on-demand API instead and never
// build a tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/diagnostics.hpp"

namespace hs::json {

inline constexpr int kMaxDepth = 64;

struct Node {
  enum class Kind { kNull, kBool, kInteger, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  size_t offset = 0;           // of the value's first byte in the text
  bool boolean = false;
  int64_t integer = 0;         // kInteger (fits int64)
  double number = 0;           // kInteger and kNumber
  std::string string;          // kString
  std::vector<Node> items;     // kArray; kObject: the members' values, in the order written
  std::vector<std::string> keys;  // kObject: the members' keys (keys[i] names items[i])

  bool is_number() const { return kind == Kind::kInteger || kind == Kind::kNumber; }
  // The member `key` of an object, nullptr when absent or when this is not an object.
  const Node* find(std::string_view key) const;
};

class Document {
 public:
  // Throws InputError (file:line) on malformed JSON and the strictness rules above.
  static Document parse(std::string_view text, std::string file);
  static Document load(const std::string& path);

  const Node& root() const { return root_; }
  const std::string& file() const { return file_; }
  SourceLocation where(const Node& n) const;
  // InputError at n's line naming `field`.
  [[noreturn]] void fail(const Node& n, std::string field, std::string message) const;

 private:
  std::string file_, text_;
  Node root_;
};

}  // namespace hs::json
