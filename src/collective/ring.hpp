// Ring collectives decomposed as NCCL runs them (Simple protocol): `channels` rings, each carrying
// 1/channels of the data. Channel c orders GPUs node by node, rotating each node's GPUs by c, so
// the inter-node hop of each channel leaves from a different GPU (and NIC): with one channel per
// NIC, every NIC of a node carries an equal share, as NCCL's rings do on rail-optimized clusters.
//   all-reduce      : 2(n-1) steps, each GPU sends S/(n*channels) per channel per step
//   all-gather / reduce-scatter: (n-1) steps  (S = the full, gathered size)
// Every step is the same coflow, so its time is computed once and multiplied.
#pragma once

#include <span>
#include <vector>

#include "collective/analytic_network.hpp"
#include "collective/transfer.hpp"

namespace hs::collective {

enum class RingOp { kAllReduce, kAllGather, kReduceScatter };

// Channel `channel`'s ring: GPUs node by node, each node's GPUs rotated by the channel.
std::vector<int> ring_order(const topology::Topology& topo, std::span<const int> group, int channel);
// The transfers of one ring step over `group` (global GPU ranks) for `bytes` of total data.
Coflow ring_step(const topology::Topology& topo, std::span<const int> group, double bytes, int channels);
int ring_steps(RingOp op, int n);
// Default channel count: the NICs of a node when the group spans nodes, else 1... capped at 8.
int default_ring_channels(const topology::Topology& topo, std::span<const int> group);
double ring_time(AnalyticNetwork& net, std::span<const int> group, double bytes, RingOp op);
// The fluid form of a ring collective for the flow tier: every ring edge carries its total over all
// steps at once (a pipelined ring keeps every edge busy), plus the latency of the steps beyond the
// first (returned in extra_latency; the flow tier adds one route latency itself).
Coflow ring_flows(const topology::Topology& topo, std::span<const int> group, double bytes, RingOp op,
                  double& extra_latency);
// Several rings running at once, one per group (groups may share GPUs: EP replica sets, FlexMoE's
// replica groups), in the same fluid form: their transfers concatenated in group order, and the
// largest extra latency among them. Groups of fewer than 2 GPUs contribute nothing.
Coflow concurrent_ring_flows(const topology::Topology& topo, const std::vector<std::vector<int>>& groups, double bytes,
                             RingOp op, double& extra_latency);

}  // namespace hs::collective
