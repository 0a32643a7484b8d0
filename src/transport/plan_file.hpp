// Plan files (`schema: hecate-sim/plan@1`): what a strategy planned for one iteration, written by
// `hecate-sim plan` and executed by the validation backend (plan_executor.hpp) on real transports.
//
// Per MoE layer: which GPU owns each chunk (one expert's parameters, `chunk_bytes`), which GPUs hold
// a materialized copy, the SparseAllGather transfers in the order the simulator issues them, the
// SparseReduceScatter transfers, and the dispatch all-to-all's byte matrix. A plan read back is
// checked completely before anything runs, so an executor may trust it:
//   * every GPU, chunk and node index in range, replicas sorted, unique and without the owner;
//   * spAG delivers every replica exactly its owner's chunk: each transfer's source already holds
//     the chunk when it sends (the owner, or a GPU an earlier transfer delivered it to), each
//     destination is a replica that does not hold it yet, every replica receives it exactly once;
//     `direct` broadcasts send from the owner only (with `chain`, a chunk may start several chains
//     at its owner: FSSDP's calibration copies follow the forward spAG in chains of their own);
//   * spRS is a reduce tree into the owner: every replica sends its (partial) gradient sum exactly
//     once, to the owner or another replica, every replica's path reaches the owner (no cycle);
//     `direct`: straight to the owner. spRS transfers may be listed in any order (the simulator
//     lists them as the mirror of spAG, head of the chain first); the executor sends a partial
//     sum once everything flowing into it has arrived;
//   * dispatch_bytes is gpus x gpus of finite non-negative numbers.
// Every problem is reported with the file and the line of the offending element (InputError, exit
// 2), all of a file's problems at once (the checks above run on layers whose structure is sound).
// Unknown and repeated keys are errors, as in every input of hecate-sim.
//
// The writer puts one transfer, one replica list and one matrix row per line, so those line numbers
// point at the element, and writes the same bytes for the same plan.
#pragma once

#include <string>
#include <vector>

namespace hs::transport {

inline constexpr const char* kPlanSchema = "hecate-sim/plan@1";

// How a chunk's copies are produced: a chain (owner -> holder -> holder ...) or the owner sending
// every copy itself (see collective/sparse_plan.hpp).
enum class Broadcast { kChain, kDirect };
const char* broadcast_name(Broadcast b);

struct ChunkTransfer {
  int chunk = 0, src = 0, dst = 0;
};

struct PlanLayer {
  int layer = 0;            // MoE layer index
  double chunk_bytes = 0;   // one expert's parameter bytes (every transfer carries one chunk)
  Broadcast broadcast = Broadcast::kChain;
  std::vector<int> owner;                  // [chunk] -> owning GPU
  std::vector<std::vector<int>> replicas;  // [chunk] -> GPUs with a copy, sorted, owner excluded
  std::vector<ChunkTransfer> spag;         // in issue order
  std::vector<ChunkTransfer> sprs;         // a reduce tree into each owner (any order)
  std::vector<std::vector<double>> dispatch_bytes;  // [src][dst] bytes of the dispatch all-to-all
  int chunks() const { return static_cast<int>(owner.size()); }
};

// Where the plan came from (written for provenance, read back as is).
struct PlanProvenance {
  std::string tool;  // "hecate-sim 0.1.0"
  std::string topology_file, topology_hash, trace_file, trace_hash, model, model_source, strategy;
  std::vector<std::string> sets;  // --set overrides as given
  int iteration = 0;
  int trace_record = 0;           // the trace record iteration `iteration` simulated
  unsigned long long seed = 1;
  int gpus = 0, nodes = 0;
};

struct Plan {
  PlanProvenance provenance;
  int gpus = 0;
  std::vector<int> node_of;  // [gpu] -> node
  std::vector<PlanLayer> layers;
};

// The plan as JSON (deterministic bytes).
std::string render_plan(const Plan& plan);
// Parses and checks a plan; `file` names it in diagnostics. Throws InputError with every problem.
Plan parse_plan(const std::string& text, const std::string& file);
// Reads `path` and parses it.
Plan read_plan(const std::string& path);

}  // namespace hs::transport
