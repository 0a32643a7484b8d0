// Checks that a transport executes a plan correctly: every rank fills the chunks it owns with a
// deterministic pattern of (layer, chunk, element) and its gradient of every chunk it holds with a
// pattern of (layer, chunk, rank, element), runs spAG and spRS layer by layer (plan_executor.hpp)
// and compares what it ends with against the CPU reference: every replica holds its owner's
// parameters, every owner the sum of its holders' gradients, and an owned chunk nobody copied is
// untouched. hecate-plan-check runs it on MPI ranks; unit tests run it on threads.
//
// The patterns are small integers (|x| <= 510) stored as floats, so sums over up to 4,096 GPUs are
// exact in float whatever the order of additions: the check compares bits, not tolerances.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/plan_file.hpp"
#include "transport/transport.hpp"

namespace hs::transport {

float param_value(int layer, int chunk, std::size_t i);
float grad_value(int layer, int chunk, int rank, std::size_t i);

// Floats per chunk buffer: chunk_bytes / 4 (rounded up) times `scale` in (0, 1], at least 1. The
// real size with scale 1; tests use a small scale.
std::size_t chunk_elements(double chunk_bytes, double scale);

struct RankCheck {
  int rank = 0;
  int layers = 0;          // layers executed
  int copies = 0;          // replica chunks received in spAG and checked
  int sums = 0;            // owned chunks with copies whose gradient sum was checked
  int messages = 0;        // messages sent and received
  int64_t mismatches = 0;  // elements that differ from the reference
  std::string first_mismatch;
  bool ok() const { return mismatches == 0; }
};

// Runs every layer of `plan` on t.rank() and checks the result. t.size() must equal plan.gpus.
RankCheck check_plan_on_rank(const Plan& plan, Transport& t, double scale);

// "rank R: L layers, C copies received, S sums checked: ok" (or ": FAILED, N elements differ; first: ...").
std::string format_check(const RankCheck& c);

}  // namespace hs::transport
