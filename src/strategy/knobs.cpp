#include "strategy/knobs.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "util/diagnostics.hpp"

namespace hs::strategy {

KnobValues::KnobValues(const StrategyInfo& row, const KnobMap& given) : strategy_(row.name) {
  for (const Knob& k : row.knobs) values_[k.name] = k.value;
  for (const auto& [name, value] : given) {
    if (!values_.count(name))
      throw std::logic_error(fmt::format("knob {}:{} is not declared in the registry", row.name, name));
    values_[name] = value;
  }
}

KnobValues::KnobValues(const StrategySpec& spec) : KnobValues(check_strategy_spec(spec), spec.knobs) {}

const std::string& KnobValues::text(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error(fmt::format("knob {}:{} is not declared in the registry", strategy_, name));
  return it->second;
}

namespace {
// A value the domain accepted that does not parse as asked: the declaration and the reader disagree.
[[noreturn]] void misread(const std::string& strategy, const std::string& name, const std::string& value,
                           std::string_view as) {
  throw std::logic_error(fmt::format("knob {}:{} = '{}' read as {}: its registry domain says otherwise", strategy,
                                     name, value, as));
}
}  // namespace

long long KnobValues::integer(const std::string& name) const {
  const std::string& s = text(name);
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) misread(strategy_, name, s, "an integer");
  return v;
}

double KnobValues::number(const std::string& name) const {
  const std::string& s = text(name);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) misread(strategy_, name, s, "a number");
  return v;
}

bool KnobValues::boolean(const std::string& name) const {
  const std::string& s = text(name);
  if (s == "true" || s == "1") return true;
  if (s == "false" || s == "0") return false;
  misread(strategy_, name, s, "true or false");
}

double KnobValues::quantity(const std::string& name, Dimension d) const {
  const std::string& s = text(name);
  auto v = parse_quantity(s, d);
  if (!v) misread(strategy_, name, s, dimension_name(d));
  return *v;
}

}  // namespace hs::strategy
