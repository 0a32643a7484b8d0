// Typed, located access to YAML maps for the input loaders (internal: include only from .cpp files,
// it pulls in yaml-cpp).
//
// A MapReader wraps one YAML map. Each accessor marks its key as known, converts the value and on any
// problem records a Diagnostic naming file:line:col (from yaml-cpp's marks), the dotted field path
// and what was expected, then returns nullopt so the loader carries on and collects every error.
// finish() reports every key that no accessor asked for: unknown keys are errors.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "util/diagnostics.hpp"
#include "util/units.hpp"

namespace hs {

struct YamlContext {
  std::string file;
  Diagnostics* diags;
  SourceLocation at(const YAML::Node& n) const;
};

// Parses text as YAML; a syntax error becomes a located diagnostic and an undefined node.
YAML::Node parse_yaml(const std::string& text, YamlContext& ctx);

std::string describe_yaml_type(const YAML::Node& n);

class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path, YamlContext& ctx);
  bool valid() const { return valid_; }
  bool has(const std::string& key) const;

  std::optional<std::string> str(const std::string& key, bool required = true);
  std::optional<int64_t> integer(const std::string& key, bool required = true,
                                 int64_t min = INT64_MIN, int64_t max = INT64_MAX);
  std::optional<double> number(const std::string& key, bool required = true,
                               double min = -1e308, double max = 1e308);
  std::optional<bool> boolean(const std::string& key, bool required = true);
  std::optional<double> quantity(const std::string& key, Dimension d, bool required = true);
  // One of a fixed set of words.
  std::optional<std::string> choice(const std::string& key, const std::vector<std::string>& allowed,
                                    bool required = true);
  // The raw child (marked known); undefined if absent (an error if required).
  YAML::Node child(const std::string& key, bool required = true);

  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  SourceLocation where(const std::string& key) const;
  SourceLocation where() const { return ctx_.at(node_); }
  void error(const std::string& key, std::string message);
  // Reports unknown keys. Call once after all accessors.
  void finish();

 private:
  YAML::Node node_;
  std::string path_;
  YamlContext& ctx_;
  bool valid_ = false;
  std::set<std::string> known_;
};

// Scalar conversions shared with list elements.
std::optional<int64_t> yaml_integer(const YAML::Node& n, const std::string& field, YamlContext& ctx,
                                    int64_t min = INT64_MIN, int64_t max = INT64_MAX);
std::optional<double> yaml_quantity(const YAML::Node& n, const std::string& field, Dimension d,
                                    YamlContext& ctx);

}  // namespace hs
