// Token routing for the materialize suite: which expert each token goes to, and the permutation that
// groups tokens by expert (a stable counting sort, as MoE frameworks permute before the grouped GEMM)
// with its inverse (unpermute: every token's output back in token order).
#pragma once

#include <cstdint>
#include <vector>

namespace hs::measure {

// expert(t) = floor(experts * u^2) with u uniform in [0, 1) from a hash of (seed, t): skewed towards
// the low experts (expert 0 gets about 1/sqrt(experts) of the tokens), so tokens per expert differ
// as in real routing. Deterministic.
std::vector<std::int32_t> route_tokens(std::size_t tokens, int experts, std::uint64_t seed);

struct Permutation {
  std::vector<std::int32_t> gather;   // permuted row j holds token gather[j]
  std::vector<std::int32_t> inverse;  // token t sits at permuted row inverse[t]
  std::vector<std::int64_t> offsets;  // experts + 1: expert e's rows are [offsets[e], offsets[e + 1])
};

// Throws std::invalid_argument for an expert id outside [0, experts).
Permutation permute_by_expert(const std::vector<std::int32_t>& expert_of, int experts);

}  // namespace hs::measure
