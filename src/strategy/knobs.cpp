#include "strategy/knobs.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "util/diagnostics.hpp"

namespace hs::strategy {

namespace {
[[noreturn]] void bad(const std::string& strategy, const std::string& name, const std::string& value,
                      const std::string& expected) {
  throw InputError({"--strategy", 0, 0}, fmt::format("{}:{}", strategy, name),
                   fmt::format("expected {}, got '{}'", expected, value));
}
}  // namespace

int64_t knob_int(const KnobMap& k, const std::string& strategy, const std::string& name, int64_t def, int64_t min,
                 int64_t max) {
  auto it = k.find(name);
  if (it == k.end()) return def;
  int64_t v = 0;
  const auto& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max)
    bad(strategy, name, s, fmt::format("an integer in [{}, {}]", min, max));
  return v;
}

double knob_double(const KnobMap& k, const std::string& strategy, const std::string& name, double def, double min,
                   double max) {
  auto it = k.find(name);
  if (it == k.end()) return def;
  double v = 0;
  const auto& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v) || v < min || v > max)
    bad(strategy, name, s, fmt::format("a number in [{}, {}]", min, max));
  return v;
}

bool knob_bool(const KnobMap& k, const std::string& strategy, const std::string& name, bool def) {
  auto it = k.find(name);
  if (it == k.end()) return def;
  if (it->second == "true" || it->second == "1") return true;
  if (it->second == "false" || it->second == "0") return false;
  bad(strategy, name, it->second, "true or false");
}

std::string knob_choice(const KnobMap& k, const std::string& strategy, const std::string& name, const std::string& def,
                        std::initializer_list<const char*> allowed) {
  auto it = k.find(name);
  if (it == k.end()) return def;
  for (const char* a : allowed)
    if (it->second == a) return it->second;
  bad(strategy, name, it->second, fmt::format("one of {}", fmt::join(allowed, ", ")));
}

}  // namespace hs::strategy
