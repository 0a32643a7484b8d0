#include "measure/size_sweep.hpp"

#include <cctype>
#include <limits>
#include <stdexcept>
#include <fmt/format.h>

namespace hs::measure {

std::uint64_t parse_size(const std::string& text, const std::string& flag) {
  auto bad = [&](const char* why) {
    return std::invalid_argument(fmt::format("{} expects a size in bytes (e.g. 8, 64K, 1M, 8G), got '{}': {}", flag, text, why));
  };
  std::size_t i = 0;
  std::uint64_t v = 0;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const std::uint64_t d = static_cast<std::uint64_t>(text[i] - '0');
    if (v > (kMax - d) / 10) throw bad("too large");
    v = v * 10 + d;
  }
  if (i == 0) throw bad("not a number");
  std::uint64_t unit = 1;
  if (i < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[i]))) {
      case 'K': unit = 1ULL << 10; ++i; break;
      case 'M': unit = 1ULL << 20; ++i; break;
      case 'G': unit = 1ULL << 30; ++i; break;
      default: break;
    }
    if (i < text.size() && std::toupper(static_cast<unsigned char>(text[i])) == 'B') ++i;
    if (i != text.size()) throw bad("unknown suffix (K, M or G)");
  }
  if (v > kMax / unit) throw bad("too large");
  if (v == 0) throw bad("must be positive");
  return v * unit;
}

std::vector<std::uint64_t> size_sweep(std::uint64_t min, std::uint64_t max, std::uint64_t factor) {
  if (min == 0 || min > max) throw std::invalid_argument(fmt::format("size sweep: -b {} must be positive and at most -e {}", min, max));
  if (factor < 2) throw std::invalid_argument(fmt::format("size sweep: -f {} must be at least 2", factor));
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = min;; s *= factor) {
    out.push_back(s);
    if (s > max / factor) break;  // the next size would pass max (or overflow)
  }
  return out;
}

}  // namespace hs::measure
