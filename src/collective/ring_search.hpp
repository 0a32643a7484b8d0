// NVLink-aware ring search for GPUs joined by links of their own (a hybrid cube-mesh: DGX-1 with
// V100, AWS p3dn.24xlarge), as NCCL builds its rings there (src/graph/search.cc, ncclTopoCompute and
// ncclTopoSearchRec; src/graph/rings.cc connects them): every ring edge is a direct GPU-GPU link,
// never a pair NCCL would relay through a third GPU, and NCCL looks for as many rings at one speed
// as the links' bandwidth holds, each ring taking that speed out of every link it crosses, stopping
// once rings x speed reaches a GPU's total NVLink bandwidth (`system->totalBw`).
//
// The model here: the speed is one link's bandwidth (the slowest direct link of the group); a
// directed link of m times that bandwidth (an NV2 bonded pair: m = 2) carries m rings. The search
// returns the most rings (at most kMaxRings, NCCL's MAXCHANNELS/2 ring channels) it finds within a
// fixed step budget (NCCL bounds its search by a step count too, NCCL_SEARCH_TIMEOUT), a ring per
// channel. On the DGX-1V matrix that is 6 rings: every GPU's 6 NVLinks carry one ring each way, so a
// ring all-reduce moves 6 x one link's bandwidth of bus bandwidth. NCCL duplicates channels only at
// 25 GB/s per channel or more, which a V100's 20 GB/s NVLink (NCCL's figure) is not.
//
// Deterministic: candidates are tried in a fixed order (most capacity left first, then position),
// and results are memoized by the link matrix (their only input), so the search runs once per
// distinct group shape.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "topology/topology.hpp"

namespace hs::collective {

inline constexpr int kMaxRings = 16;

// Direct links among `gpus` (one node's, in the given order). mult[i * k + j] is how many rings the
// route gpus[i] -> gpus[j] carries when that route is a single link (a GPU-GPU NVLink): its
// bandwidth over the slowest such link's, rounded down; 0 when the route crosses a switch or relays
// through another GPU.
struct DirectLinks {
  int k = 0;
  std::vector<int> mult;
  int at(int i, int j) const { return mult[static_cast<size_t>(i) * k + j]; }
  bool any() const;
};
DirectLinks direct_links(const topology::Topology& topo, std::span<const int> gpus);

// Rings over the group inside one node: directed Hamiltonian cycles over direct links, as positions
// into the group, each starting at position 0, together crossing every directed link at most as
// often as it carries rings (mult). Empty when there is none (or no direct link at all).
std::vector<std::vector<int>> search_rings(const DirectLinks& links);

// One node's stretch of each channel's ring in a group spanning nodes: for channel c a Hamiltonian
// path over direct links from ends[c].first to ends[c].second (the GPUs where the channel enters and
// leaves the node), else from ends[c].first to wherever one ends, else empty (no such path). Links
// already taken by earlier channels are tried last (least used relative to mult first), so the
// channels spread over every link.
std::vector<std::vector<int>> search_paths(const DirectLinks& links, std::span<const std::pair<int, int>> ends);

}  // namespace hs::collective
