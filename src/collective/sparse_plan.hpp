// SparseAllGather / SparseReduceScatter as communication plans (FSSDP, Hecate: arXiv 2502.02581).
//
// A chunk (one whole expert: its parameters) is owned by exactly one GPU (placement P0). A target
// placement P1 adds materialized copies. spAG(P0, P1): for every (chunk, GPU) in P1 \ P0 the owner
// sends the chunk's bytes to that GPU: a set of broadcasts, each from the owner to a subset of GPUs.
// spRS(P1, P0) is its mirror: every copy's gradient is sent back to the owner and summed there.
// Plans are plain data (who sends how many bytes to whom), independent of the engine and of the
// transport, so the same plan drives the simulator's network tiers, CPU tests, and the CUDA/NCCL
// backend.
//
// Per-GPU volume: a GPU sends (copies of its owned chunks) x chunk bytes in spAG and receives as
// many in spRS; with lambda the fraction of chunks that move, the bottleneck volume is O(lambda*S),
// the same as the gradient all-reduce replica-based systems pay for the same placement.
#pragma once

#include <vector>

#include "collective/transfer.hpp"
#include "topology/topology.hpp"

namespace hs::collective {

// How one chunk reaches its holders. kChain: a pipelined chain (NCCL's ring broadcast): owner ->
// holders of its own node -> the next node's holders -> ...; every link carries the chunk once and
// each node boundary is crossed once. kDirect: the owner sends to every holder itself (grouped
// ncclSend), so its uplink carries one copy per holder.
enum class BroadcastAlgo { kChain, kDirect };

struct SparsePlacement {
  std::vector<int> owner;                  // [chunk] -> owning GPU (P0)
  std::vector<std::vector<int>> replicas;  // [chunk] -> GPUs holding a materialized copy (P1 \ P0), sorted
};

// spAG(P0, P1): per chunk, its broadcast from the owner to the holders (one transfer per copy).
// node_of maps GPU -> node (for the chain order); may be empty with kDirect.
// `channels` (kChain): a chain whose holders span nodes runs as that many chains, each carrying
// chunk / channels and entering every node at a different holder (chain_order's `channel`), as
// NCCL's broadcast splits its buffer over channels whose rings cross nodes on different NICs
// (chain_channels); a chain inside one node stays one. 1 gives the logical plan: one transfer per
// copy (what plan files list and the backend executes, whole chunks along the same hops).
Coflow sparse_allgather(const SparsePlacement& p, double chunk_bytes, const std::vector<int>& node_of,
                        BroadcastAlgo algo = BroadcastAlgo::kChain, int channels = 1);
// spRS(P1, P0): the mirror: every transfer of spAG reversed (a chain reduce into the owner, or every
// holder sending its gradient to the owner); the owner ends with the sum.
Coflow sparse_reduce_scatter(const SparsePlacement& p, double chunk_bytes, const std::vector<int>& node_of,
                             BroadcastAlgo algo = BroadcastAlgo::kChain, int channels = 1);
// Channels a chain spanning nodes runs on: with several NICs per node, one per GPU of a node (at
// most 8, as the rings: every NIC gets an equal share, NCCL gives each NIC its rings); 1 with one
// NIC per node or on one node.
int chain_channels(const topology::Topology& topo);
// What NCCL adds to a sparse collective's transfers on a topology, beyond their link loads; sets the
// transfers' rate caps and returns the latency to add to the coflow's largest route latency.
// - kDirect: every send is a point-to-point connection of the whole-machine communicator, capped by
//   its channels (collective/p2p_channels.hpp).
// - kChain: a pipelined broadcast (or reduce) whose first bytes cross every hop in turn, so it pays
//   the sum of its hops' route latencies; the longest chain's sum beyond the coflow's largest route
//   latency is returned. (The chain runs on a ring broadcast's channels: no per-connection cap.)
// - `reduce` (spRS): the receiver also sums what arrives with what it holds, reading two operands and
//   writing one per byte, so no transfer outruns the GPU's HBM bandwidth / 3.
// `channels` as given to sparse_allgather (each channel's chain pays its own hops' sum).
double sparse_finish(Coflow& c, const SparsePlacement& p, const topology::Topology& topo,
                     const std::vector<int>& node_of, BroadcastAlgo algo, bool reduce, int channels = 1);

// sparse_allgather (or sparse_reduce_scatter when `reduce`) and sparse_finish in one pass, each
// chain ordered once: the same transfers, caps and latency as the two calls (SparsePlanCache builds
// its plans so; tests compare the two). The latency's two terms come with it: latency =
// max(alpha, longest) - alpha, alpha the transfers' largest route latency, longest the longest
// chain's summed hop latencies (0 with kDirect, which has no chain); a plan of several chunks takes
// the largest of its chunks' (collective/sparse_time_tracker.hpp adds chunks' plans up so).
struct SparsePlanBuild {
  Coflow flows;
  double latency = 0;
  double alpha = 0, longest = 0;
};
SparsePlanBuild build_sparse_plan(const SparsePlacement& p, double chunk_bytes, const topology::Topology& topo,
                                  const std::vector<int>& node_of, BroadcastAlgo algo, bool reduce, int channels = 1);

// The order in which a chunk's broadcast chain visits its holders, starting at the owner: the
// owner's node first, then the nodes cyclically after it; inside a node, holders by local index
// counted from the owner's plus `channel` (channel 0 enters a node on the owner's rail when that GPU
// holds a copy, as NCCL's rings do; channel c enters c rails further). Where the owner's node would
// be left from the owner itself, its other holders come last (NCCL's ring broadcast from a root in
// the middle of the ring: they receive from the last node), so channels leave on different NICs.
std::vector<int> chain_order(int owner, const std::vector<int>& holders, const std::vector<int>& node_of,
                             int channel = 0);

// Bytes each GPU sends and receives in a coflow (for tests and reports).
struct GpuVolumes {
  std::vector<double> sent, received;
};
GpuVolumes volumes(const Coflow& c, int gpus);

}  // namespace hs::collective
