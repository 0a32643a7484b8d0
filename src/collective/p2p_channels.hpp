// How NCCL runs a grouped point-to-point exchange (an all-to-all(-v), a set of direct sends) on a
// communicator, reduced to what bounds its time: per-connection rate caps and scheduling rounds.
// The behaviour modelled is NCCL 2.28's (src/graph/paths.cc ncclTopoGetNchannels and
// ncclTopoComputeP2pChannels, src/enqueue.cc's p2p scheduling), with the per-channel bandwidths of
// topology/nccl_config.hpp.
//
// Channels. A rank runs its sends and receives on P = p2p_channels channels (thread blocks); every
// peer connection gets c of them, c the same for all peers of the communicator: the power of two
// at or above the smallest per-peer count, where a peer reached over NVLink asks for 2 per NVLink,
// a local peer over PCIe for 2, and a peer on another node for 2, halved while 2 x ranks > 4 x P
// (NCCL_NCHANNELS_PER_NET_PEER overrides it). In a multi-node communicator c is therefore 2 (or 1
// beyond 2P ranks), for local peers too.
//
// Caps. One connection moves at most c x (bandwidth of a channel on its path): network peers
// c x net_channel_bandwidth, NVLink peers c x nvlink_channel_bandwidth; peers over PCIe only their
// route's links. A lone large transfer to a peer on another node thus reaches 2 x 14 = 28 GB/s by
// default, not a 400 Gb/s NIC's 47.5 GB/s.
//
// Rounds. A channel runs up to 8 operations (4 peers, a send and a receive each:
// NCCL_MAX_DEV_WORK_P2P_PER_BATCH) in one batch and its batches one after another; NCCL lowers the
// channels per operation of small exchanges so that every peer fits one batch where it can. So an
// exchange among `ranks` ranks takes ceil((ranks - 1) / (4 P)) batches, each paying a route
// latency: one up to 129 ranks with P = 32, 8 at 1,024.
#pragma once

#include "topology/topology.hpp"

namespace hs::collective {

class P2pChannels {
 public:
  // NCCL's choices for a communicator of `ranks` ranks of `topo` (multi-node when it spans nodes).
  P2pChannels(const topology::Topology& topo, int ranks, bool multi_node);
  // The whole topology as one communicator.
  explicit P2pChannels(const topology::Topology& topo);

  int channels() const { return channels_; }          // P
  int channels_per_peer() const { return per_peer_; }  // c
  int rounds() const { return rounds_; }
  // Rate cap of one connection src -> dst (bytes/s); 0 where only the links limit it (PCIe peers),
  // the convention of Transfer::rate_cap.
  double cap(int src, int dst) const { return node_of_(src) == node_of_(dst) ? local_cap_ : net_cap_; }
  double net_cap() const { return net_cap_; }
  double local_cap() const { return local_cap_; }

 private:
  int node_of_(int g) const { return topo_->node_of(g); }
  const topology::Topology* topo_;
  int channels_ = 32, per_peer_ = 1, rounds_ = 1;
  double net_cap_ = 0, local_cap_ = 0;
};

// Per-channel NVLink bandwidth NCCL's graph search starts from for a compute capability (bytes/s):
// 40 GB/s before 9.0, 60 GB/s for 9.x, 90 GB/s from 10.0 (src/graph/search.cc).
double default_nvlink_channel_bandwidth(double compute_capability);
// NCCL's bandwidth of one NVLink for a compute capability (bytes/s; src/graph/topo.h SMxx_NVLINK_BW):
// 18 GB/s (6.x), 20 (7.x, 8.0), 12 (8.6), 20.6 (9.x), 40.1 (10.x).
double nccl_nvlink_bandwidth(double compute_capability);

}  // namespace hs::collective
