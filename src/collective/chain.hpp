// Broadcast and reduce as NCCL's ring algorithm runs them: a pipelined chain along the ring order
// (collective/ring.hpp), starting at the root (broadcast) or ending there (reduce). Each chain edge
// carries the whole buffer, split over `channels` rings whose inter-node hops leave from different
// GPUs; the pipeline adds one latency per hop beyond the first.
#pragma once

#include <span>

#include "collective/transfer.hpp"
#include "topology/topology.hpp"

namespace hs::collective {

Coflow broadcast_flows(const topology::Topology& topo, std::span<const int> group, int root, double bytes,
                       double& extra_latency);
Coflow reduce_flows(const topology::Topology& topo, std::span<const int> group, int root, double bytes,
                    double& extra_latency);

}  // namespace hs::collective
