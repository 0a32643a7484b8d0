#include "transport/plan_check.hpp"

#include <cmath>
#include <stdexcept>
#include <fmt/format.h>

#include "transport/plan_executor.hpp"

namespace hs::transport {

namespace {

// splitmix64: a well-mixed hash of the indices, reduced to an integer in [-510, 510].
float pattern(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t x = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL ^
               (c + 0x2545F4914F6CDD1DULL) * 0x94D049BB133111EBULL ^ (d + 1) * 0xD6E8FEB86659FD93ULL;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return static_cast<float>(static_cast<int>(x % 1021) - 510);
}

}  // namespace

float param_value(int layer, int chunk, std::size_t i) {
  return pattern(static_cast<uint64_t>(layer), static_cast<uint64_t>(chunk), ~0ULL, i);
}

float grad_value(int layer, int chunk, int rank, std::size_t i) {
  return pattern(static_cast<uint64_t>(layer), static_cast<uint64_t>(chunk), static_cast<uint64_t>(rank), i);
}

std::size_t chunk_elements(double chunk_bytes, double scale) {
  if (!(scale > 0 && scale <= 1)) throw std::invalid_argument(fmt::format("scale {} not in (0, 1]", scale));
  const double n = std::ceil(std::ceil(chunk_bytes / 4) * scale);
  return n < 1 ? 1 : static_cast<std::size_t>(n);
}

RankCheck check_plan_on_rank(const Plan& plan, Transport& t, double scale) {
  if (t.size() != plan.gpus)
    throw std::invalid_argument(fmt::format("{} ranks for a plan of {} GPUs", t.size(), plan.gpus));
  RankCheck out;
  const int me = out.rank = t.rank();
  // `what` builds the message only for the first mismatch (this runs once per element).
  auto mismatch = [&](float got, float want, auto what) {
    if (got == want) return;
    if (out.mismatches++ == 0) out.first_mismatch = fmt::format("{}: got {}, expected {}", what(), got, want);
  };
  for (const PlanLayer& l : plan.layers) {
    const std::size_t n = chunk_elements(l.chunk_bytes, scale);
    ChunkBuffers params(l.chunks()), grads(l.chunks());
    for (int c = 0; c < l.chunks(); ++c) {
      if (!holds(l, c, me)) continue;
      params[c].assign(n, 0.0f);
      grads[c].resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        if (l.owner[c] == me) params[c][i] = param_value(l.layer, c, i);
        grads[c][i] = grad_value(l.layer, c, me, i);
      }
    }
    const ExecStats ag = execute_spag(l, t, params);
    const ExecStats rs = execute_sprs(l, t, grads);
    out.messages += ag.sent + ag.received + rs.sent + rs.received;
    for (int c = 0; c < l.chunks(); ++c) {
      if (!holds(l, c, me)) continue;
      const bool owner = l.owner[c] == me;
      const bool copied = !l.replicas[c].empty();
      if (!owner) ++out.copies;
      if (owner && copied) ++out.sums;
      for (std::size_t i = 0; i < n; ++i) {
        mismatch(params[c][i], param_value(l.layer, c, i), [&] {
          return fmt::format("layer {} chunk {} element {}: parameter {}", l.layer, c, i,
                             owner ? "at its owner" : fmt::format("copied from owner {}", l.owner[c]));
        });
        if (!owner) continue;  // a replica's gradient buffer holds the partial sum it sent
        float want = grad_value(l.layer, c, me, i);
        for (int g : l.replicas[c]) want += grad_value(l.layer, c, g, i);
        mismatch(grads[c][i], want, [&] {
          return fmt::format("layer {} chunk {} element {}: gradient sum at the owner", l.layer, c, i);
        });
      }
    }
    ++out.layers;
  }
  return out;
}

std::string format_check(const RankCheck& c) {
  std::string head = fmt::format("rank {}: {} layers, {} copies received, {} sums checked", c.rank, c.layers, c.copies, c.sums);
  if (c.ok()) return head + ": ok";
  return fmt::format("{}: FAILED, {} elements differ; first: {}", head, c.mismatches, c.first_mismatch);
}

}  // namespace hs::transport
