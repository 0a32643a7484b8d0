#include "collective/p2p_channels.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>
#include <vector>

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

int nccl_p2p_batches(int ranks, int channels, int parts, bool multi_node, int group) {
  constexpr int kWorksPerBatch = 8;  // NCCL_MAX_DEV_WORK_P2P_PER_BATCH
  const unsigned p = std::bit_ceil(static_cast<unsigned>(std::max(channels, 1)));
  const int bits = std::countr_zero(p);
  group = std::max(group, 1);
  // Rounds in order, so a channel's epochs come in order: count where its epoch changes.
  std::vector<int> last(p, -1), batches(p, 0);
  for (int r = 0; r < ranks; ++r) {
    const int base = multi_node ? (r / group) * ((group + kWorksPerBatch - 1) / kWorksPerBatch) + (r % group) / kWorksPerBatch : r;
    unsigned rev = 0;
    for (int b = 0; b < bits; ++b) rev |= ((static_cast<unsigned>(base) >> b) & 1u) << (bits - 1 - b);
    const int epoch = r / kWorksPerBatch;
    for (int part = 0; part < std::max(parts, 1); ++part) {
      const unsigned ch = (rev + static_cast<unsigned>(part)) & (p - 1);
      if (last[ch] != epoch) last[ch] = epoch, ++batches[ch];
    }
  }
  return std::max(1, *std::max_element(batches.begin(), batches.end()));
}

double P2pChannels::launch_latency(double max_local_bytes, bool any_network) const {
  // src/graph/tuning.cc baseLatencies[NCCL_ALGO_RING]: { LL 6.6, LL128 14.0, Simple 8.4 } us.
  constexpr double kBaseLl = 6.6e-6, kBaseSimple = 8.4e-6;
  return !any_network && max_local_bytes <= ll_threshold() ? kBaseLl : kBaseSimple;
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
  parts_ = per_peer_;
  while (parts_ * ranks > channels_ && parts_ > 1) parts_ /= 2;
  // P2P_SCHEDULE_GROUP_SIZE: 8, or its gcd with the ranks per node (src/init.cc ncclP2pSchedule).
  const int local = std::min(ranks, topo.gpus_in_node(0));
  rounds_ = nccl_p2p_batches(ranks, channels_, parts_, multi_node, std::gcd(8, std::max(local, 1)));
  net_cap_ = per_peer_ * cfg.net_channel_bandwidth.value();
  local_cap_ = lp.nvlink ? per_peer_ * nvl_channel : 0.0;
}

}  // namespace hs::collective
