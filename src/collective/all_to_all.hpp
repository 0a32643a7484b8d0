// All-to-all(-v) as NCCL runs it: grouped ncclSend/ncclRecv, one connection per peer pair, each
// capped by its channels, in batches per channel (collective/p2p_channels.hpp), one kernel launch.
// Both network tiers time it from the same description: the transfers (with their rate caps) and the
// extra latency: the batches after the first and the launch.
#pragma once

#include <span>

#include "collective/p2p_channels.hpp"
#include "collective/transfer.hpp"

namespace hs::collective {

// The communicator an n x n byte matrix (row = source) implies: ranks = 1 + the most peers any GPU
// sends to or receives from (an expert-parallel group's size when the matrix holds several groups:
// each group is its own communicator), multi-node when some pair with bytes crosses nodes.
struct P2pGroupShape {
  int ranks = 1;
  bool multi_node = false;
  size_t transfers = 0;  // pairs (a != b) with bytes
};
P2pGroupShape p2p_group_shape(const topology::Topology& topo, std::span<const double> matrix);

// The transfers of an all-to-all-v from a dense n x n byte matrix (`transpose`: column-wise, the
// combine of a dispatch), each with its connection's rate cap; `extra_latency` = (batches - 1) x the
// largest route latency among them + the group's launch latency (P2pChannels::launch_latency; 0 when
// there are no transfers).
Coflow alltoallv_flows(const topology::Topology& topo, std::span<const double> matrix, bool transpose,
                       double& extra_latency);

}  // namespace hs::collective
