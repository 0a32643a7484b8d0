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
// the pipeline beyond the first hop (the flow tier adds one itself); collective/all_reduce.hpp puts
// NCCL's latency formula in its place.
//
// NCCL's tuner does not see this ideal tree's bandwidth: per node the NICs carry S out and S in, about
// half a ring's 2(n-1)/n S, yet measured trees run near rings (2 nodes of 8 A100 on 4 x 200 Gb/s:
// 86-91 GB/s busbw, rings about the same). NCCL's model caps the tree at channels x perChMaxTreeBw
// (one channel per NIC) of its busBw, half of it algorithm bandwidth; the protocol step
// (nccl_tuning.hpp) applies that cap to these transfers.
Coflow tree_all_reduce_flows(const topology::Topology& topo, std::span<const int> group, double bytes,
                             double& extra_latency);
// NCCL's NVLSTree all-reduce (src/device/all_reduce.h runTreeUpDown over NVLS): inside each node the
// switch reduces and multicasts (collective/nvls.hpp's transfers, per node), across nodes the node
// heads run the double binary tree above without chains. Needs 2+ nodes of 2+ GPUs each on a
// topology whose switches reduce; empty otherwise.
Coflow nvls_tree_all_reduce_flows(const topology::Topology& topo, std::span<const int> group, double bytes,
                                  double& extra_latency);

}  // namespace hs::collective
