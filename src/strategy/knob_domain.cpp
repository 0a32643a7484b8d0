#include "strategy/knob_domain.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/units.hpp"

namespace hs::strategy {

KnobDomain KnobDomain::integer(int64_t min, int64_t max, bool allows_auto) {
  KnobDomain d;
  d.kind = Kind::kInt;
  d.min = min;
  d.max = max;
  d.allows_auto = allows_auto;
  return d;
}

KnobDomain KnobDomain::integer_or(int64_t min, int64_t max, std::vector<std::string> words) {
  KnobDomain d = integer(min, max);
  d.words = std::move(words);
  return d;
}

KnobDomain KnobDomain::boolean() {
  KnobDomain d;
  d.kind = Kind::kBool;
  return d;
}

KnobDomain KnobDomain::choice(std::vector<std::string> words) {
  KnobDomain d;
  d.kind = Kind::kChoice;
  d.choices = std::move(words);
  return d;
}

KnobDomain KnobDomain::size(bool allows_auto) {
  KnobDomain d;
  d.kind = Kind::kSize;
  d.allows_auto = allows_auto;
  return d;
}

KnobDomain KnobDomain::quantity(Dimension dim, bool allows_auto) {
  KnobDomain d = size(allows_auto);
  d.dimension = dim;
  return d;
}

KnobDomain KnobDomain::number(double lo, double hi, bool allows_auto) {
  KnobDomain d = integer(0, 0, allows_auto);
  d.kind = Kind::kNumber, d.lo = lo, d.hi = hi;
  return d;
}

KnobDomain KnobDomain::tuned(std::vector<std::string> values) const {
  KnobDomain d = *this;
  d.tune_values = std::move(values);
  return d;
}

std::vector<std::string> KnobDomain::candidates() const {
  switch (kind) {
    case Kind::kBool: return {"false", "true"};
    case Kind::kChoice: return choices;
    default: return tune_values;
  }
}

namespace {
std::optional<int64_t> parse_int(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}
std::optional<double> parse_number(const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}
}  // namespace

std::string KnobDomain::describe() const {
  const std::string a = allows_auto ? " | auto" : "";
  switch (kind) {
    case Kind::kInt:
      if (!words.empty()) return fmt::format("int [{}, {}] | {}{}", min, max, fmt::join(words, " | "), a);
      return fmt::format("int [{}, {}]{}", min, max, a);
    case Kind::kBool: return "true | false";
    case Kind::kChoice: return fmt::format("{}", fmt::join(choices, " | "));
    case Kind::kSize:
      if (dimension == Dimension::kBytes) return "size (e.g. 8GiB)" + a;
      return fmt::format("{} (e.g. {}){}", dimension_name(dimension), dimension_examples(dimension), a);
    case Kind::kNumber: return fmt::format("number [{:g}, {:g}]{}", lo, hi, a);
  }
  return "";
}

std::optional<std::string> KnobDomain::check(const std::string& value) const {
  if (allows_auto && value == "auto") return std::nullopt;
  const std::string a = allows_auto ? " or auto" : "";
  switch (kind) {
    case Kind::kInt: {
      auto v = parse_int(value);
      if (v && *v >= min && *v <= max) return std::nullopt;
      for (const auto& w : words)
        if (value == w) return std::nullopt;
      if (!words.empty()) return fmt::format("an integer in [{}, {}] or one of {}{}", min, max, fmt::join(words, ", "), a);
      return fmt::format("an integer in [{}, {}]{}", min, max, a);
    }
    case Kind::kBool:
      if (value == "true" || value == "false" || value == "1" || value == "0") return std::nullopt;
      return std::string("true or false");
    case Kind::kChoice:
      for (const auto& c : choices)
        if (value == c) return std::nullopt;
      return fmt::format("one of {}", fmt::join(choices, ", "));
    case Kind::kSize:
      if (dimension == Dimension::kBytes) {
        if (auto v = parse_quantity(value, Dimension::kBytes); v && *v >= 0) return std::nullopt;
        return "a size such as 8GiB" + a;
      }
      if (auto v = parse_quantity(value, dimension); v && *v > 0) return std::nullopt;
      return fmt::format("a positive {} such as {}{}", dimension_name(dimension), dimension_examples(dimension), a);
    case Kind::kNumber: {
      auto v = parse_number(value);
      if (v && *v >= lo && *v <= hi) return std::nullopt;
      return fmt::format("a number in [{:g}, {:g}]{}", lo, hi, a);
    }
  }
  return std::string("a valid value");
}

std::string KnobDomain::canonical(const std::string& value) const {
  if (kind == Kind::kBool) return value == "1" || value == "true" ? "true" : "false";
  if (kind == Kind::kInt && value != "auto")
    if (auto v = parse_int(value)) return fmt::format("{}", *v);
  return value;
}

}  // namespace hs::strategy
