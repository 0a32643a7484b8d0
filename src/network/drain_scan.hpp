// The rate pass of a coflow drain (network/coflow_drain.cpp), eight flows at a time with AVX-512
// where the processor has it: each flow's bytes left integrated at its previous rate and tested
// against the horizon at its new rate, the same operations flow by flow as the scalar pass, so the
// same bytes. For flows over at most two links that may bind.
//
// For flow f with links la[f], lb[f] (and cap[f] when caps is not null):
//     rate(f, lv) = min(lv[la[f]], lv[lb[f]])  (then min with cap[f]), as std::min(lv[la], lv[lb])
//     integrate:  left[f] -= rate(f, prev) * dt
//     candidate:  left[f] <= horizon * rate(f, level)
// drain_scan_avx512 runs from flow f (a multiple of 8 apart from the caller's start) over whole
// blocks of eight below n, integrating each block (when integrate) and stopping after the first
// block with a candidate: it returns that block's first flow and the candidates' lanes in *mask (bit
// j: flow block + j), or the first flow it did not reach (fewer than 8 before n) with *mask 0. The
// caller tests each candidate again at its own horizon, which only falls: a block's test at the
// horizon it started with keeps every flow the scalar test would keep (horizon x rate does not
// decrease with the horizon for a rate >= 0).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hs::network {

// Whether the processor runs drain_scan_avx512 (AVX-512 F).
bool drain_scan_available();

struct DrainScanArgs {
  const int32_t* la;
  const int32_t* lb;
  const double* cap;  // null: no caps
  double* left;
  const double* prev;   // link levels of the last solve (integration)
  const double* level;  // link levels of this solve
  double dt;
  bool integrate;
};

size_t drain_scan_avx512(const DrainScanArgs& a, size_t f, size_t n, double horizon, unsigned* mask);

}  // namespace hs::network
