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
// Batches. NCCL 2.28 schedules the group in rounds r = 0 .. ranks - 1 (round r: send to rank + r,
// receive from rank - r; round 0 is the copy to self), one work (that send and that receive) per
// round on each of its channels; a channel runs up to 8 works in one batch
// (NCCL_MAX_DEV_WORK_P2P_PER_BATCH, src/include/device.h) and only works of one epoch of 8 rounds
// together (src/enqueue.cc addWorkBatchToPlan), its batches one after another. Round r's first
// channel is reverseBits(base, log2 P) (src/include/channel.h ncclP2pChannelBaseForRound): base = r
// on one node, r / 8 across nodes (whole epochs share a channel, P2P_SCHEDULE_GROUP_SIZE 8), and
// its operation's parts take the channels after it. An operation runs on
// nChannelsMin = c halved while nChannelsMin x ranks > P (scheduleP2pTasksToPlan) channels at the
// sizes where the batches count; so a channel runs `batches` batches, each paying a route latency:
// 1 up to P ranks on one node (2 at 64 ranks on 32 channels), 1 up to 8P across nodes (8 at 2,048).
//
// Launch. The group is one kernel launch; NCCL's own figure for a kernel's fixed cost is the base
// latency of its tuning model (src/graph/tuning.cc baseLatencies, ring: 6.6 us for LL, 8.4 us for
// Simple; nccl-tests issue #123 measures about 6 us for a one-channel ring on a DGX-A100 less its
// steps). An operation of b bytes to a peer runs LL when b <= c x NCCL_P2P_LL_THRESHOLD (16 KiB)
// and its connection has LL buffers (src/enqueue.cc addP2pToPlan): NVLink and PCIe peers do, network
// peers do not unless NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 (src/init.cc, src/transport/net.cc). The
// group's launch latency is LL's when all its operations are LL, else Simple's. LL moves 8 data bytes
// per 16-byte line, half a channel's rate (NCCL issue #281; tuning.cc caps ring LL at busBw x 0.5);
// with c channels per peer that is not below the links' share on any preset, so it caps nothing here.
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
  int rounds() const { return rounds_; }  // batches per channel
  int parts() const { return parts_; }     // nChannelsMin
  // Largest operation that runs LL on a connection with LL buffers (bytes): c x 16 KiB.
  double ll_threshold() const { return per_peer_ * kP2pLlThreshold; }
  // The group's launch latency (seconds): LL's base latency when no operation crosses nodes and the
  // largest is at most ll_threshold(), else Simple's.
  double launch_latency(double max_local_bytes, bool any_network) const;
  // Rate cap of one connection src -> dst (bytes/s); 0 where only the links limit it (PCIe peers),
  // the convention of Transfer::rate_cap.
  double cap(int src, int dst) const { return node_of_(src) == node_of_(dst) ? local_cap_ : net_cap_; }
  double net_cap() const { return net_cap_; }
  double local_cap() const { return local_cap_; }

 private:
  int node_of_(int g) const { return topo_->node_of(g); }
  const topology::Topology* topo_;
  static constexpr double kP2pLlThreshold = 16384;  // NCCL_P2P_LL_THRESHOLD
  int channels_ = 32, per_peer_ = 1, rounds_ = 1, parts_ = 1;
  double net_cap_ = 0, local_cap_ = 0;
};

// Batches per channel of a grouped exchange among `ranks` ranks on `channels` channels, each operation
// on `parts` channels (NCCL 2.28's schedule, above; `group` = P2P_SCHEDULE_GROUP_SIZE across nodes).
int nccl_p2p_batches(int ranks, int channels, int parts, bool multi_node, int group = 8);

// Per-channel NVLink bandwidth NCCL's graph search starts from for a compute capability (bytes/s):
// 40 GB/s before 9.0, 60 GB/s for 9.x, 90 GB/s from 10.0 (src/graph/search.cc).
double default_nvlink_channel_bandwidth(double compute_capability);
// NCCL's bandwidth of one NVLink for a compute capability (bytes/s; src/graph/topo.h SMxx_NVLINK_BW):
// 18 GB/s (6.x), 20 (7.x, 8.0), 12 (8.6), 20.6 (9.x), 40.1 (10.x).
double nccl_nvlink_bandwidth(double compute_capability);

}  // namespace hs::collective
