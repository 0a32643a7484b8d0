// NCCL's double binary tree all-reduce across nodes, in fluid form for both network tiers.
//
// Nodes form two binary trees (heap-shaped over the node list, and its mirror), so a node that is
// interior in one tree is a leaf in the other; each tree carries half the data. Inside a node the
// GPUs form a chain whose head talks to the parent and children nodes. Reduce flows go up
// (chain -> head -> parent head), broadcast flows come back down; pipelined, every edge carries its
// total at once. As with rings, `channels` copies (one per NIC of a node, heads rotated) split the
// data so every NIC carries a share. Per node the NIC traffic is about 2S in and 2S out, as for a
// ring, but a message crosses 2(depth + chain) hops instead of 2(n-1) steps: trees win on latency
// (small messages, many nodes), rings on bandwidth.
#pragma once

#include <span>

#include "collective/transfer.hpp"
#include "topology/topology.hpp"

namespace hs::collective {

// Needs a group spanning at least two nodes; empty otherwise. `extra_latency`: route latencies of
// the pipeline beyond the first hop (the flow tier adds one itself).
Coflow tree_all_reduce_flows(const topology::Topology& topo, std::span<const int> group, double bytes,
                             double& extra_latency);

}  // namespace hs::collective
