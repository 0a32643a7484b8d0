// Typed access to a strategy's knobs (values arrive as text from NAME:KNOB=VALUE). Bad values are
// bad input: InputError naming the strategy and knob, exit 2.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace hs::strategy {

using KnobMap = std::map<std::string, std::string>;

int64_t knob_int(const KnobMap& k, const std::string& strategy, const std::string& name, int64_t def, int64_t min,
                 int64_t max);
double knob_double(const KnobMap& k, const std::string& strategy, const std::string& name, double def, double min,
                   double max);
bool knob_bool(const KnobMap& k, const std::string& strategy, const std::string& name, bool def);
std::string knob_choice(const KnobMap& k, const std::string& strategy, const std::string& name, const std::string& def,
                        std::initializer_list<const char*> allowed);

}  // namespace hs::strategy
