// Ring collectives decomposed as NCCL runs them (Simple protocol): `channels` rings, each carrying
// 1/channels of the data. Channel c orders GPUs node by node, rotating each node's GPUs by c, so
// the inter-node hop of each channel leaves from a different GPU (and NIC): with one channel per
// NIC, every NIC of a node carries an equal share, as NCCL's rings do on rail-optimized clusters.
// Where a node's GPUs have links of their own (a hybrid cube-mesh, no NVSwitch), rings follow those
// links as NCCL's ring search does (collective/ring_search.hpp): a one-node group gets the searched
// rings, one per channel, and a group spanning nodes keeps channel c's entry and exit GPUs but runs
// through each node along a searched path between them. Nodes joined by a switch keep the rotation.
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

// The rings of channels 0..channels-1: GPUs node by node, each node's GPUs rotated by the channel
// or, over direct GPU-GPU links, as searched (above).
std::vector<std::vector<int>> ring_orders(const topology::Topology& topo, std::span<const int> group, int channels);
// The transfers of one ring step over `group` (global GPU ranks) for `bytes` of total data.
Coflow ring_step(const topology::Topology& topo, std::span<const int> group, double bytes, int channels);
int ring_steps(RingOp op, int n);
// Default channel count: the GPUs of a node (one per NIC rotation) capped at 8 when the group spans
// nodes; inside one node, the rings found over direct GPU-GPU links, else 1; at most NCCL_MAX_CTAS
// (NcclConfig::max_ctas) where set.
int default_ring_channels(const topology::Topology& topo, std::span<const int> group);
double ring_time(AnalyticNetwork& net, std::span<const int> group, double bytes, RingOp op);
// The fluid form of a ring collective for the flow tier: every ring edge carries its total over all
// steps at once (a pipelined ring keeps every edge busy), plus the latency of the steps beyond the
// first (returned in extra_latency; the flow tier adds one route latency itself). These are the
// Simple protocol's transfers with one route latency per step; NCCL's protocol choice and latency
// formula are applied on top by collective/all_reduce.hpp (plan_nccl).
Coflow ring_flows(const topology::Topology& topo, std::span<const int> group, double bytes, RingOp op,
                  double& extra_latency);
// Several rings running at once, one per group (groups may share GPUs: EP replica sets, FlexMoE's
// replica groups), in the same fluid form: their transfers concatenated in group order, and the
// largest extra latency among them. Groups of fewer than 2 GPUs contribute nothing.
Coflow concurrent_ring_flows(const topology::Topology& topo, const std::vector<std::vector<int>>& groups, double bytes,
                             RingOp op, double& extra_latency);

}  // namespace hs::collective
