#include "measure/permutation.hpp"

#include <cmath>
#include <stdexcept>
#include <fmt/format.h>

#include "measure/pattern.hpp"

namespace hs::measure {

std::vector<std::int32_t> route_tokens(std::size_t tokens, int experts, std::uint64_t seed) {
  std::vector<std::int32_t> out(tokens);
  for (std::size_t t = 0; t < tokens; ++t) {
    // pattern_value is an integer in [-64, 64] without 0: 128 values; two of them make 14 bits.
    const int a = static_cast<int>(pattern_value(seed, 0x5eed, 2 * t)), b = static_cast<int>(pattern_value(seed, 0x5eed, 2 * t + 1));
    const int ia = a > 0 ? a + 63 : a + 64, ib = b > 0 ? b + 63 : b + 64;  // [0, 128)
    const double u = (ia * 128 + ib) / 16384.0;
    out[t] = static_cast<std::int32_t>(std::floor(experts * u * u));
  }
  return out;
}

Permutation permute_by_expert(const std::vector<std::int32_t>& expert_of, int experts) {
  Permutation p;
  p.offsets.assign(static_cast<std::size_t>(experts) + 1, 0);
  for (std::size_t t = 0; t < expert_of.size(); ++t) {
    const int e = expert_of[t];
    if (e < 0 || e >= experts) throw std::invalid_argument(fmt::format("token {} routed to expert {} of {}", t, e, experts));
    ++p.offsets[static_cast<std::size_t>(e) + 1];
  }
  for (int e = 0; e < experts; ++e) p.offsets[e + 1] += p.offsets[e];
  std::vector<std::int64_t> next(p.offsets.begin(), p.offsets.end() - 1);
  p.gather.resize(expert_of.size());
  p.inverse.resize(expert_of.size());
  for (std::size_t t = 0; t < expert_of.size(); ++t) {
    const auto j = next[static_cast<std::size_t>(expert_of[t])]++;
    p.gather[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(t);
    p.inverse[t] = static_cast<std::int32_t>(j);
  }
  return p;
}

}  // namespace hs::measure
