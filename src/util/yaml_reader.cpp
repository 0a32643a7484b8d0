#include "util/yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <sstream>
#include <vector>
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>

namespace hs {

SourceLocation YamlContext::at(const YAML::Node& n) const {
  if (!n.IsDefined()) return {file, 0, 0};
  auto m = n.Mark();
  if (m.is_null()) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

namespace {
// yaml-cpp keeps every pair of a map and answers a lookup with the first, so `nodes: 1` followed by
// `nodes: 2` would silently read 1. A key given twice is an error at its second place. YAML merge
// keys (`<<: *base`) are not part of YAML 1.2 and yaml-cpp does not apply them: refused by name.
void check_keys(const YAML::Node& n, YamlContext& ctx, const std::string& path) {
  if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) check_keys(n[i], ctx, fmt::format("{}[{}]", path, i));
  } else if (n.IsMap()) {
    std::map<std::string, int> first_line;
    for (const auto& kv : n) {
      const YAML::Node key = kv.first, value = kv.second;
      const std::string k = key.IsScalar() ? key.Scalar() : std::string("<complex key>");
      const std::string field = path.empty() ? k : path + "." + k;
      if (k == "<<" && key.Tag() != "tag:yaml.org,2002:str")
        ctx.diags->error(ctx.at(key), field, "YAML merge keys (<<) are not supported: write the fields out (anchors "
                                             "and aliases of whole values are fine)");
      auto [it, fresh] = first_line.emplace(k, ctx.at(key).line);
      if (!fresh) ctx.diags->error(ctx.at(key), field, fmt::format("key given twice (first on line {})", it->second));
      check_keys(value, ctx, field);
    }
  }
}
}  // namespace

namespace {

// Records where each document starts and ignores every other event.
class DocumentStarts final : public YAML::EventHandler {
 public:
  DocumentStarts(std::vector<YAML::Mark>& starts, std::vector<YAML::Mark>& roots) : starts_(starts), roots_(roots) {}
  void OnDocumentStart(const YAML::Mark& mark) override {
    starts_.push_back(mark), roots_.push_back(mark), rooted_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { root(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { root(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { root(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { root(m); }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { root(m); }
  void OnMapEnd() override {}

 private:
  // The document's first node: where its content starts (the document start may be a '---').
  void root(const YAML::Mark& m) {
    if (!rooted_) rooted_ = true, roots_.back() = m;
  }
  std::vector<YAML::Mark>& starts_;
  std::vector<YAML::Mark>& roots_;
  bool rooted_ = false;
};

}  // namespace

YAML::Node parse_yaml(const std::string& text, YamlContext& ctx) {
  if (const size_t bad = invalid_utf8(text); bad != std::string::npos) {
    ctx.diags->error(locate_in_text(text.data(), text.size(), text.data() + bad, ctx.file), "",
                     "not UTF-8 text (YAML files must be UTF-8)");
    return YAML::Node(YAML::NodeType::Undefined);
  }
  try {
    // Count the documents first, at most three: YAML::LoadAll never returns on a ',' outside a flow
    // collection at document level (yaml-cpp 0.7 yields an endless run of empty documents, each at the
    // ',' it never consumes; found by fuzzing), so two documents starting at the same mark mean that.
    std::vector<YAML::Mark> starts, roots;
    {
      std::istringstream in(text);
      YAML::Parser parser(in);
      DocumentStarts h(starts, roots);
      while (starts.size() < 3 && parser.HandleNextDocument(h)) {
        const size_t n = starts.size();
        if (n >= 2 && starts[n - 1].pos == starts[n - 2].pos) {
          const YAML::Mark& m = starts[n - 1];
          const char c = m.pos >= 0 && static_cast<size_t>(m.pos) < text.size() ? text[static_cast<size_t>(m.pos)] : '?';
          ctx.diags->error({ctx.file, m.line + 1, m.column + 1}, "",
                           fmt::format("malformed YAML: unexpected '{}' (a ',' separates entries inside [ ] or {{ }} only)", c));
          return YAML::Node(YAML::NodeType::Undefined);
        }
      }
    }
    if (starts.empty()) return YAML::Node();
    if (starts.size() > 1) {
      ctx.diags->error({ctx.file, roots[1].line + 1, 0}, "",
                       fmt::format("{}{} YAML documents in one file: expected one", starts.size(), starts.size() >= 3 ? " or more" : ""));
      return YAML::Node(YAML::NodeType::Undefined);
    }
    YAML::Node doc = YAML::Load(text);
    check_keys(doc, ctx, "");
    return ctx.diags->has_errors() ? YAML::Node(YAML::NodeType::Undefined) : doc;
  } catch (const YAML::Exception& e) {
    ctx.diags->error({ctx.file, e.mark.line + 1, e.mark.column + 1}, "",
                     fmt::format("malformed YAML: {}", e.msg));
    return YAML::Node(YAML::NodeType::Undefined);
  }
}

std::string describe_yaml_type(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Scalar: return fmt::format("'{}'", n.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    default: return "nothing";
  }
}

MapReader::MapReader(const YAML::Node& node, std::string path, YamlContext& ctx)
    : node_(node), path_(std::move(path)), ctx_(ctx) {
  if (!node.IsDefined()) return;
  if (!node.IsMap()) {
    ctx_.diags->error(ctx_.at(node), path_.empty() ? "<document>" : path_,
                      fmt::format("expected a map of keys, got {}", describe_yaml_type(node)));
    return;
  }
  valid_ = true;
}

bool MapReader::has(const std::string& key) const { return valid_ && node_[key].IsDefined() && !node_[key].IsNull(); }

SourceLocation MapReader::where(const std::string& key) const {
  if (valid_) {
    YAML::Node c = node_[key];
    if (c.IsDefined()) return ctx_.at(c);
  }
  return ctx_.at(node_);
}

void MapReader::error(const std::string& key, std::string message) {
  ctx_.diags->error(where(key), field(key), std::move(message));
}

YAML::Node MapReader::child(const std::string& key, bool required) {
  known_.insert(key);
  if (!valid_) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node c = node_[key];
  if (!c.IsDefined() || c.IsNull()) {
    if (required) ctx_.diags->error(ctx_.at(node_), field(key), "missing required field");
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return c;
}

std::optional<std::string> MapReader::str(const std::string& key, bool required) {
  YAML::Node c = child(key, required);
  if (!c.IsDefined()) return std::nullopt;
  if (!c.IsScalar()) {
    error(key, fmt::format("expected a string, got {}", describe_yaml_type(c)));
    return std::nullopt;
  }
  return c.Scalar();
}

std::optional<int64_t> yaml_integer(const YAML::Node& c, const std::string& field, YamlContext& ctx,
                                    int64_t min, int64_t max) {
  if (!c.IsScalar()) {
    ctx.diags->error(ctx.at(c), field, fmt::format("expected an integer, got {}", describe_yaml_type(c)));
    return std::nullopt;
  }
  const std::string& s = c.Scalar();
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    ctx.diags->error(ctx.at(c), field, fmt::format("expected an integer, got '{}'", s));
    return std::nullopt;
  }
  if (v < min || v > max) {
    if (max == INT64_MAX)
      ctx.diags->error(ctx.at(c), field, fmt::format("expected an integer >= {}, got {}", min, v));
    else
      ctx.diags->error(ctx.at(c), field, fmt::format("expected an integer in [{}, {}], got {}", min, max, v));
    return std::nullopt;
  }
  return v;
}

std::optional<int64_t> MapReader::integer(const std::string& key, bool required, int64_t min, int64_t max) {
  YAML::Node c = child(key, required);
  if (!c.IsDefined()) return std::nullopt;
  return yaml_integer(c, field(key), ctx_, min, max);
}

std::optional<double> MapReader::number(const std::string& key, bool required, double min, double max) {
  YAML::Node c = child(key, required);
  if (!c.IsDefined()) return std::nullopt;
  if (!c.IsScalar()) {
    error(key, fmt::format("expected a number, got {}", describe_yaml_type(c)));
    return std::nullopt;
  }
  const std::string& s = c.Scalar();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    error(key, fmt::format("expected a number, got '{}'", s));
    return std::nullopt;
  }
  if (v < min || v > max) {
    error(key, fmt::format("expected a number in [{}, {}], got {}", min, max, v));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> MapReader::boolean(const std::string& key, bool required) {
  YAML::Node c = child(key, required);
  if (!c.IsDefined()) return std::nullopt;
  if (c.IsScalar()) {
    const std::string& s = c.Scalar();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  error(key, fmt::format("expected true or false, got {}", describe_yaml_type(c)));
  return std::nullopt;
}

std::optional<double> yaml_quantity(const YAML::Node& c, const std::string& field, Dimension d,
                                    YamlContext& ctx) {
  if (c.IsScalar()) {
    if (auto v = parse_quantity(c.Scalar(), d)) return v;
  }
  ctx.diags->error(ctx.at(c), field,
                   fmt::format("expected a {} with its unit, such as {}; got {}", dimension_name(d),
                               dimension_examples(d), describe_yaml_type(c)));
  return std::nullopt;
}

std::optional<double> MapReader::quantity(const std::string& key, Dimension d, bool required) {
  YAML::Node c = child(key, required);
  if (!c.IsDefined()) return std::nullopt;
  return yaml_quantity(c, field(key), d, ctx_);
}

std::optional<std::string> MapReader::choice(const std::string& key, const std::vector<std::string>& allowed,
                                             bool required) {
  auto s = str(key, required);
  if (!s) return std::nullopt;
  for (const auto& a : allowed)
    if (a == *s) return s;
  error(key, fmt::format("expected one of {}, got '{}'", fmt::join(allowed, ", "), *s));
  return std::nullopt;
}

void MapReader::finish() {
  if (!valid_) return;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string k = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
    if (known_.count(k)) continue;
    std::vector<std::string> names(known_.begin(), known_.end());
    ctx_.diags->error(ctx_.at(it->first), field(k),
                      fmt::format("unknown key (known keys here: {})", fmt::join(names, ", ")));
  }
}

}  // namespace hs
