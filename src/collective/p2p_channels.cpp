#include "collective/p2p_channels.hpp"

#include <algorithm>
#include <bit>
#include <limits>

namespace hs::collective {

double default_nvlink_channel_bandwidth(double cc) {
  if (cc >= 10.0) return 90e9;
  if (cc >= 9.0) return 60e9;
  return 40e9;
}

double nccl_nvlink_bandwidth(double cc) {
  if (cc >= 10.0) return 40.1e9;
  if (cc >= 9.0) return 20.6e9;
  if (cc >= 8.6 && cc < 8.7) return 12e9;
  if (cc >= 7.0) return 20e9;
  return 18e9;
}

namespace {

int pow2_up(int v) { return static_cast<int>(std::bit_ceil(static_cast<unsigned>(std::max(v, 1)))); }

// Whether GPUs of one node reach each other over NVLink (the first hop's class), and how many
// NVLinks' worth their route carries; checked on the first node with two GPUs.
struct LocalPath {
  bool exists = false;
  bool nvlink = false;
  double line_rate = 0;
};

LocalPath local_path(const topology::Topology& t) {
  LocalPath p;
  for (int node = 0; node < t.num_nodes(); ++node) {
    const auto gpus = t.node_gpus(node);
    if (gpus.size() < 2) continue;
    const auto r = t.route(gpus[0], gpus[1]);
    if (r.hops.empty()) continue;
    p.exists = true;
    p.nvlink = true;
    p.line_rate = std::numeric_limits<double>::infinity();
    for (const auto& h : r.hops) {
      const auto& l = t.link(h.link);
      if (l.link_class != "nvlink") p.nvlink = false;
      p.line_rate = std::min(p.line_rate, l.line_rate.value() / h.fraction);
    }
    return p;
  }
  return p;
}

}  // namespace

P2pChannels::P2pChannels(const topology::Topology& topo) : P2pChannels(topo, topo.num_gpus(), topo.num_nodes() > 1) {}

P2pChannels::P2pChannels(const topology::Topology& topo, int ranks, bool multi_node) : topo_(&topo) {
  const auto& cfg = topo.nccl();
  channels_ = cfg.p2p_channels;
  const double cc = topo.gpu_model().compute_capability;
  const double nvl_channel =
      cfg.nvlink_channel_bandwidth.value() > 0 ? cfg.nvlink_channel_bandwidth.value() : default_nvlink_channel_bandwidth(cc);
  // Smallest per-peer channel count over the kinds of peers present (ncclTopoGetNchannels).
  int smallest = channels_;
  const LocalPath lp = local_path(topo);
  if (lp.exists) {
    const int local = lp.nvlink ? 2 * std::max(1, static_cast<int>(lp.line_rate / nccl_nvlink_bandwidth(cc))) : 2;
    smallest = std::min(smallest, local);
  }
  if (multi_node) {
    int net = cfg.channels_per_net_peer;
    if (net == 0) {
      net = 2;
      while (net * ranks > channels_ * 4 && net > 1) net /= 2;
    }
    smallest = std::min(smallest, net);
  }
  per_peer_ = std::min(channels_, pow2_up(smallest));
  rounds_ = std::max(1, (ranks - 1 + 4 * channels_ - 1) / (4 * channels_));
  net_cap_ = per_peer_ * cfg.net_channel_bandwidth.value();
  local_cap_ = lp.nvlink ? per_peer_ * nvl_channel : 0.0;
}

}  // namespace hs::collective
