// The type and range of a strategy knob, declared once in the registry (registry.cpp). The CLI's
// --strategy, `sweep` and `tune` validate values against it before any strategy is built, and
// `tune` enumerates a knob's candidate values from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/units.hpp"

namespace hs::strategy {

struct KnobDomain {
  enum class Kind { kInt, kBool, kChoice, kSize, kNumber };
  Kind kind = Kind::kChoice;
  int64_t min = 0, max = 0;          // kInt
  double lo = 0, hi = 0;             // kNumber
  bool allows_auto = false;          // kInt, kSize, kNumber: the word "auto" is also accepted
  std::vector<std::string> words;    // kInt: named values accepted beside the integers (modes)
  Dimension dimension = Dimension::kBytes;  // kSize: a quantity of this dimension (bytes, bandwidth, FLOP/s)
  std::vector<std::string> choices;  // kChoice
  std::vector<std::string> tune_values;  // kInt, kSize: the values `tune` tries (none: not tuned)

  // The same domain with the values `tune` tries for an integer or size knob.
  KnobDomain tuned(std::vector<std::string> values) const;
  // Values `tune` tries: both booleans, every choice, or the declared tune_values.
  std::vector<std::string> candidates() const;

  static KnobDomain integer(int64_t min, int64_t max, bool allows_auto = false);
  // An integer in [min, max] or one of `words` (a knob whose automatic value has named modes).
  static KnobDomain integer_or(int64_t min, int64_t max, std::vector<std::string> words);
  static KnobDomain boolean();
  static KnobDomain choice(std::vector<std::string> words);
  static KnobDomain size(bool allows_auto);
  // A quantity with a unit other than bytes ("100Gbps", "312TFLOPS"), strictly positive.
  static KnobDomain quantity(Dimension d, bool allows_auto);
  // A plain decimal number in [lo, hi].
  static KnobDomain number(double lo, double hi, bool allows_auto);

  // nullopt when `value` is valid; else what was expected ("an integer in [1, 100000] or auto").
  std::optional<std::string> check(const std::string& value) const;
  std::string describe() const;  // e.g. "int [1, 100000] | auto"
  // Canonical text of a valid value ("1" -> "true" for booleans; integers without sign or zeros).
  std::string canonical(const std::string& value) const;
};

}  // namespace hs::strategy
