// Executes one layer of a plan (plan_file.hpp) on one rank over a Transport: SparseAllGather (every
// replica ends with its owner's chunk) and SparseReduceScatter (every owner ends with the sum of the
// gradients of all its chunk's holders, its own included). The plan logic (who sends what to whom,
// in which order) lives here and knows nothing of MPI, threads or NCCL.
//
// Ordering. Transfers run in rounds; each round is one transport group (as one ncclGroupStart/End),
// so the sends and receives of a round cannot deadlock whatever the pattern, and rounds follow the
// dependencies:
//   * spAG: a transfer from the owner runs in round 0; a transfer from a GPU that got the chunk in
//     round k runs in round k + 1. A chain owner -> a -> b -> c takes rounds 0, 1, 2; a direct
//     broadcast takes one round. Transfers keep the plan's order within a round.
//   * spRS: a copy's partial sum (its own gradient plus every partial sum sent to it) leaves once
//     all of those have arrived: a GPU with nothing flowing in sends in round 0, one whose last
//     input arrives in round k sends in round k + 1. The chain c -> b -> a -> owner takes rounds
//     0, 1, 2 whatever order the plan lists its transfers in.
// Every rank derives the same rounds from the same plan, and a rank posts its sends and receives of
// a round in plan order, so messages between two ranks match in order (transport.hpp).
// Within a round a received partial sum lands in a buffer of its own and is added after the round,
// in plan order: the sums are deterministic.
#pragma once

#include <vector>

#include "transport/plan_file.hpp"
#include "transport/transport.hpp"

namespace hs::transport {

// A rank's buffers for one layer: [chunk] -> floats, empty for a chunk it does not hold (neither
// owner nor replica). Every holder of a chunk uses the same size.
using ChunkBuffers = std::vector<std::vector<float>>;

bool holds(const PlanLayer& l, int chunk, int gpu);

// Transfer indices (into l.spag / l.sprs) per round, as described above. Throw std::invalid_argument
// on a plan that does not satisfy plan_file.hpp's checks (a transfer from a GPU that never gets the
// chunk, a cycle).
std::vector<std::vector<int>> spag_rounds(const PlanLayer& l);
std::vector<std::vector<int>> sprs_rounds(const PlanLayer& l);

struct ExecStats {
  int sent = 0;      // messages sent by this rank
  int received = 0;  // messages received by this rank
  int rounds = 0;    // transport groups run
};

// spAG on t.rank(): on entry params[c] holds the owner's parameters for every chunk the rank owns
// and is sized (contents ignored) for every chunk it replicates; on return every replica buffer
// holds its owner's bytes.
ExecStats execute_spag(const PlanLayer& l, Transport& t, ChunkBuffers& params);
// spRS on t.rank(): on entry grads[c] holds the rank's gradient of every chunk it holds; on return
// an owned chunk's buffer holds the sum over all its holders; a replica's holds the partial sum it
// sent.
ExecStats execute_sprs(const PlanLayer& l, Transport& t, ChunkBuffers& grads);

}  // namespace hs::transport
