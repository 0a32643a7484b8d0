// Typed access to a strategy's knobs. Each knob is declared once, in the strategy's registry row
// (strategy/registry.cpp: name, default, domain = type and range); check_strategy_spec has checked
// every given value against its domain before a strategy is built. KnobValues fills in the row's
// default for every knob not given and reads values by name, so a strategy holds no second copy of
// a default or a range. Asking for a knob the row does not declare is a bug (std::logic_error).
#pragma once

#include <map>
#include <string>

#include "strategy/strategy.hpp"
#include "util/units.hpp"

namespace hs::strategy {

using KnobMap = std::map<std::string, std::string>;

class KnobValues {
 public:
  // spec's knobs over `row`'s defaults (spec checked against `row`).
  KnobValues(const StrategyInfo& row, const KnobMap& given);
  // The registry row of spec's strategy (check_strategy_spec) and its knobs.
  explicit KnobValues(const StrategySpec& spec);

  const std::string& text(const std::string& name) const;  // as given or declared
  bool is_auto(const std::string& name) const { return text(name) == "auto"; }
  long long integer(const std::string& name) const;         // an int domain's value (not "auto")
  double number(const std::string& name) const;             // a number domain's value (not "auto")
  bool boolean(const std::string& name) const;              // true / 1 or false / 0
  double quantity(const std::string& name, Dimension d) const;  // a size or quantity (not "auto")
  const std::string& strategy() const { return strategy_; }

 private:
  std::string strategy_;
  std::map<std::string, std::string> values_;
};

}  // namespace hs::strategy
