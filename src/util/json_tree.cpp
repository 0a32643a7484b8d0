#include "util/json_tree.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <simdjson.h>

#include "util/atomic_file.hpp"

namespace hs::json {

namespace od = simdjson::ondemand;

const Node* Node::find(std::string_view key) const {
  if (kind != Kind::kObject) return nullptr;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return &items[i];
  return nullptr;
}

namespace {

class Builder {
 public:
  Builder(const simdjson::padded_string& buf, const std::string& file) : buf_(buf), file_(file) {}

  Node document() {
    od::parser parser;
    od::document doc;
    if (auto e = parser.iterate(buf_).get(doc)) malformed(nullptr, e);
    od::value v;
    // A scalar document is not a value in simdjson's on-demand API; every file read here is an
    // object or a list anyway.
    if (auto e = doc.get_value().get(v)) {
      if (e == simdjson::SCALAR_DOCUMENT_AS_VALUE) fail(buf_.data(), "", "expected a JSON object");
      malformed(nullptr, e);
    }
    Node root = value(v, 0);
    const char* rest = nullptr;  // simdjson 3.0's document has no at_end(): no location = at the end
    if (!doc.current_location().get(rest)) fail(rest, "", "unexpected content after the JSON value");
    return root;
  }

 private:
  [[noreturn]] void fail(const char* p, std::string field, std::string message) const {
    throw InputError(locate_in_text(buf_.data(), buf_.size(), p ? p : buf_.data(), file_), std::move(field),
                     std::move(message));
  }
  [[noreturn]] void malformed(const char* p, simdjson::error_code e) const {
    if (e == simdjson::UTF8_ERROR) fail(first_non_utf8(buf_.data(), buf_.size()), "", "not UTF-8 text (JSON must be UTF-8)");
    fail(p, "", fmt::format("malformed JSON: {}", simdjson::error_message(e)));
  }

  Node value(od::value& v, int depth) {
    const char* at = nullptr;
    if (v.current_location().get(at)) at = nullptr;
    if (depth >= kMaxDepth) fail(at, "", fmt::format("nested deeper than {} levels", kMaxDepth));
    Node n;
    n.offset = at ? static_cast<size_t>(at - buf_.data()) : 0;
    od::json_type type;
    if (auto e = v.type().get(type)) malformed(at, e);
    switch (type) {
      case od::json_type::null:
        if (bool is_null = false; v.is_null().get(is_null) || !is_null) malformed(at, simdjson::N_ATOM_ERROR);
        n.kind = Node::Kind::kNull;
        break;
      case od::json_type::boolean:
        if (auto e = v.get_bool().get(n.boolean)) malformed(at, e);
        n.kind = Node::Kind::kBool;
        break;
      case od::json_type::string: {
        std::string_view s;
        if (auto e = v.get_string().get(s)) malformed(at, e);
        n.kind = Node::Kind::kString;
        n.string = std::string(s);
        break;
      }
      case od::json_type::number: {
        od::number num;
        if (auto e = v.get_number().get(num)) {
          // Integers past 64 bits and numbers past a double's range are refused, not rounded.
          if (e == simdjson::NUMBER_ERROR) fail(at, "", "number out of range");
          malformed(at, e);
        }
        if (num.is_int64()) {
          n.kind = Node::Kind::kInteger;
          n.integer = num.get_int64();
          n.number = static_cast<double>(n.integer);
        } else {
          n.kind = Node::Kind::kNumber;
          n.number = num.as_double();  // an unsigned integer past int64 is a number, as JSON has it
        }
        break;
      }
      case od::json_type::array: {
        od::array a;
        if (auto e = v.get_array().get(a)) malformed(at, e);
        n.kind = Node::Kind::kArray;
        for (auto el : a) {
          od::value item;
          if (auto e = el.get(item)) malformed(at, e);
          n.items.push_back(value(item, depth + 1));
        }
        break;
      }
      case od::json_type::object: {
        od::object o;
        if (auto e = v.get_object().get(o)) malformed(at, e);
        n.kind = Node::Kind::kObject;
        for (auto field : o) {
          std::string_view key;
          if (auto e = field.unescaped_key().get(key)) malformed(at, e);
          std::string k(key);
          od::value item;
          if (auto e = field.value().get(item)) malformed(at, e);
          Node child = value(item, depth + 1);
          if (n.find(k)) fail(buf_.data() + child.offset, k, "key given twice in this object");
          n.keys.push_back(std::move(k));
          n.items.push_back(std::move(child));
        }
        break;
      }
    }
    return n;
  }

  const simdjson::padded_string& buf_;
  const std::string& file_;
};

}  // namespace

Document Document::parse(std::string_view text, std::string file) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  Document d;
  d.file_ = std::move(file);
  d.text_ = std::string(text);
  const simdjson::padded_string buf(d.text_);
  d.root_ = Builder(buf, d.file_).document();
  return d;
}

Document Document::load(const std::string& path) { return parse(read_file(path), path); }

SourceLocation Document::where(const Node& n) const {
  return locate_in_text(text_.data(), text_.size(), text_.data() + std::min(n.offset, text_.size()), file_);
}

void Document::fail(const Node& n, std::string field, std::string message) const {
  throw InputError(where(n), std::move(field), std::move(message));
}

}  // namespace hs::json
