// Range checks for numeric options that print a sentence ("--iterations: must be at least 1, got 0")
// instead of CLI11's "Value 0 not in range 0.000000 to 1.797693e+308". Shared by every command.
#pragma once

#include <CLI/CLI.hpp>

namespace hs::cli {

// The value must be a number >= min.
CLI::Validator at_least(double min);
// The value must be a number in [lo, hi].
CLI::Validator in_range(double lo, double hi);

}  // namespace hs::cli
