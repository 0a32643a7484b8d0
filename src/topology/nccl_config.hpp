// How NCCL runs point-to-point traffic on this machine: the part of NCCL's configuration that decides
// how fast one send/receive connection can go (collective/p2p_channels.hpp turns it into per-
// connection rate caps and scheduling rounds). The defaults are NCCL 2.28's own figures; a topology
// file may override them (`nccl:` in topologies/README.md), e.g. with NCCL_* variables a site sets.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "util/units.hpp"

namespace hs::topology {

// A calibration's factors on one NCCL protocol's figures (calib/calibration.hpp `protocols:`):
// `latency` multiplies NCCL's per-step hardware latencies of the protocol, `bandwidth` its bandwidth
// fraction and caps (collective/nccl_tuning.hpp). 1 = NCCL's own.
struct NcclProtoScale {
  double latency = 1, bandwidth = 1;
  bool operator==(const NcclProtoScale&) const = default;
};
// [tier][protocol]: tier 0 inside a node (NVLink / PCI steps; the bandwidth of one-node
// communicators), 1 across nodes (network steps; the bandwidth of multi-node communicators);
// protocols LL, LL128, Simple.
using NcclProtoScales = std::array<std::array<NcclProtoScale, 3>, 2>;

struct NcclConfig {
  // p2pnChannels: channels (thread blocks) a rank's grouped send/receive calls run on. NCCL takes the
  // communicator's collective channel count capped at NCCL_MAX_P2P_NCHANNELS and rounds it up to a
  // power of two (src/graph/paths.cc, ncclTopoComputeP2pChannels); 32 is NCCL's channel limit before
  // 2.20 and what 8-GPU NVSwitch nodes reach.
  int p2p_channels = 32;
  // Channels per network peer; 0 = NCCL's rule (2, halved while 2 x ranks > 4 x p2p_channels, i.e.
  // NCCL_NCHANNELS_PER_NET_PEER unset in NCCL <= 2.28.9, src/graph/paths.cc ncclTopoGetNchannels).
  int channels_per_net_peer = 0;
  // Bandwidth one channel moves over the network: NCCL_P2P_PER_CHANNEL_NET_BW, 14 GB/s by default
  // (NCCL 2.29, which sizes its network channel counts with it).
  Bandwidth net_channel_bandwidth{14e9};
  // Bandwidth one channel moves over NVLink; 0 = the highest per-channel speed NCCL's intra-node
  // graph search tries for the GPU's architecture (src/graph/search.cc: speedArrayIntra 40 GB/s before
  // sm90, sm90SpeedArrayIntra 60 GB/s on Hopper, sm100SpeedArrayIntra 90 GB/s on Blackwell).
  Bandwidth nvlink_channel_bandwidth{0};

  // Collective tuning knobs, as the NCCL variables of the same names (NCCL 2.30 src/graph/tuning.cc,
  // src/init.cc). `algos` / `protos`: the algorithms (ring, tree, nvls, nvlstree, pat) and protocols
  // (ll, ll128, simple) NCCL_ALGO / NCCL_PROTO leave enabled; empty = all that NCCL's rules allow.
  // min_ctas / max_ctas: NCCL_MIN_CTAS / NCCL_MAX_CTAS, bounds on the communicator's channels (0 =
  // unset). The collective model's use of them: collective/nccl_tuning.hpp.
  std::vector<std::string> algos;
  std::vector<std::string> protos;
  int min_ctas = 0;
  int max_ctas = 0;
  // Not a key: the network path of a GPU goes through the host (no GPUDirect RDMA, or NICs on the
  // host): NCCL's PATH_PHB or worse, which keeps LL128 off before Hopper (tuning.cc). Set by the loader.
  bool net_via_host = false;
  // Not a key: a calibration's per-protocol factors (TopologyAdjust::protocols), set by the loader.
  NcclProtoScales proto_scale{};
  // Not a key: a calibration's latency added to every network step (TopologyAdjust::net_step_latency):
  // NCCL's own term for a network slower than its IB figures, graphs[a]->latencyInter (the net
  // plugin's ncclNetProperties_t::latency; IB reports 0, aws-ofi-nccl 75 us on p4d / p4de / p5),
  // added to hwLat NET once per network step, twice for Simple (src/graph/tuning.cc). 0 = none.
  Seconds net_step_latency{0};
};

}  // namespace hs::topology
