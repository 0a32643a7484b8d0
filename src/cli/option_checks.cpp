#include "cli/option_checks.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <optional>

namespace hs::cli {

namespace {

std::optional<double> number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || std::isnan(v)) return std::nullopt;
  return v;
}

// 1048576 rather than 1.04858e+06.
std::string show(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:g}", v);
}

}  // namespace

CLI::Validator at_least(double min) {
  return CLI::Validator(
      [min](std::string& s) -> std::string {
        const auto v = number(s);
        if (!v) return fmt::format("expected a number, got '{}'", s);
        if (*v < min) return fmt::format("must be at least {}, got {}", show(min), s);
        return "";
      },
      ">= " + show(min));
}

CLI::Validator in_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        const auto v = number(s);
        if (!v) return fmt::format("expected a number, got '{}'", s);
        if (*v < lo) return fmt::format("must be at least {} (at most {}), got {}", show(lo), show(hi), s);
        if (*v > hi) return fmt::format("must be at most {} (at least {}), got {}", show(hi), show(lo), s);
        return "";
      },
      show(lo) + " to " + show(hi));
}

}  // namespace hs::cli
