#include "strategy/gpu_memory.hpp"

#include <algorithm>
#include <numeric>

#include "collective/ring.hpp"

namespace hs::strategy {


bool layer_moves_tokens(const LayerPlan& p, int gpus) {
  if (p.dispatch_bytes.empty()) return false;
  for (int s = 0; s < gpus; ++s) {  // usually the first row says so
    const double* row = p.dispatch_bytes.data() + static_cast<size_t>(s) * gpus;
    for (int d = 0; d < gpus; ++d)
      if (d != s && row[d] > 0) return true;
  }
  return false;
}

namespace {
// Layer p's all-to-all bytes per GPU (sent plus received, its own chunk included) into `bytes`;
// false when its all-to-all moves no token between GPUs (then `bytes` is not written).
bool layer_a2a_bytes(const LayerPlan& p, int gpus, std::vector<double>& bytes) {
  {
    if (!layer_moves_tokens(p, gpus)) return false;
    // Received: column sums, accumulated a row at a time; sent: row sums. GPU g's total adds row 0's
    // entry of column g, row 1's, ..., row g's, then row g's sum, then the rows after g.
    std::fill(bytes.begin(), bytes.end(), 0.0);
    const double* m = p.dispatch_bytes.data();
    int s = 0;
    // kRows rows at a time, each row's sum in its own column order and every column's in row order,
    // as one row at a time (the rows' addition chains overlap); columns s .. s + kRows - 1, where a
    // row's sum falls between two rows' entries, are added once those sums are known.
    constexpr int kRows = 4;
    for (; s + kRows <= gpus; s += kRows) {
      const double* rows[kRows];
      double sent[kRows] = {};
      for (int i = 0; i < kRows; ++i) rows[i] = m + static_cast<size_t>(s + i) * gpus;
      auto columns = [&](int d0, int d1) {
        for (int d = d0; d < d1; ++d) {
          double col = bytes[d];
          for (int i = 0; i < kRows; ++i) sent[i] += rows[i][d], col += rows[i][d];
          bytes[d] = col;
        }
      };
      columns(0, s);
      for (int d = s; d < s + kRows; ++d)
        for (int i = 0; i < kRows; ++i) sent[i] += rows[i][d];
      columns(s + kRows, gpus);
      for (int j = 0; j < kRows; ++j) {
        double col = bytes[s + j];
        for (int i = 0; i < kRows; ++i) {
          col += rows[i][s + j];
          if (i == j) col += sent[j];
        }
        bytes[s + j] = col;
      }
    }
    for (; s < gpus; ++s) {
      const double* row = m + static_cast<size_t>(s) * gpus;
      double sent = 0;
      for (int d = 0; d < gpus; ++d) {
        sent += row[d];
        bytes[d] += row[d];
      }
      bytes[s] += sent;
    }
  }
  return true;
}
}  // namespace

std::vector<double> a2a_buffer_bytes(std::span<const LayerPlan> plans, int gpus, int grad_accum) {
  std::vector<double> most(gpus, 0.0), bytes(gpus);
  for (const auto& p : plans)
    if (layer_a2a_bytes(p, gpus, bytes))
      for (int g = 0; g < gpus; ++g) most[g] = std::max(most[g], bytes[g]);
  for (double& b : most) b /= grad_accum;
  return most;
}

cost::NcclCommunicator nccl_communicator(const topology::Topology& t, std::span<const int> group, int g, bool ring,
                                         bool p2p) {
  cost::NcclCommunicator c;
  c.channels = collective::default_ring_channels(t, group);
  c.ring = ring && group.size() > 1;
  c.p2p = p2p && group.size() > 1;
  for (int peer : group) {
    if (peer == g) continue;
    if (t.node_of(peer) == t.node_of(g)) ++c.intra_peers;
    else ++c.inter_peers;
  }
  return c;
}

std::vector<double> ep_nccl_bytes(const topology::Topology& t, int ep, bool ep_ring) {
  const int n = t.num_gpus();
  std::vector<int> world(n);
  std::iota(world.begin(), world.end(), 0);
  std::vector<double> bytes(n, 0.0);
  std::vector<int> group;
  for (int g = 0; g < n; ++g) {
    bytes[g] += cost::nccl_buffer_bytes(nccl_communicator(t, world, g, true, false));
    group.clear();
    for (int k = g / ep * ep; k < (g / ep + 1) * ep; ++k) group.push_back(k);
    bytes[g] += cost::nccl_buffer_bytes(nccl_communicator(t, group, g, ep_ring, true));
    if (ep < n) {
      group.clear();
      for (int k = g % ep; k < n; k += ep) group.push_back(k);
      bytes[g] += cost::nccl_buffer_bytes(nccl_communicator(t, group, g, true, false));
    }
  }
  return bytes;
}

std::vector<double> world_nccl_bytes(const topology::Topology& t, bool p2p) {
  const int n = t.num_gpus();
  std::vector<int> world(n);
  std::iota(world.begin(), world.end(), 0);
  std::vector<double> bytes(n);
  for (int g = 0; g < n; ++g) bytes[g] = cost::nccl_buffer_bytes(nccl_communicator(t, world, g, true, p2p));
  return bytes;
}

std::vector<double> layout_nccl_bytes(const topology::Topology& t, const workload::ParallelLayout& l, bool ep_p2p,
                                      bool ep_ring) {
  const int n = t.num_gpus();
  std::vector<double> bytes(n, 0.0);
  const auto tp = l.tp_groups(), dp = l.dp_groups(), ep = l.ep_groups(), edp = l.edp_groups();
  // Each GPU's group of one kind: the groups of a kind partition the GPUs.
  auto of = [&](const std::vector<std::vector<int>>& groups) {
    std::vector<int> at(n, -1);
    for (size_t i = 0; i < groups.size(); ++i)
      for (int x : groups[i]) at[x] = static_cast<int>(i);
    return at;
  };
  const auto tp_at = of(tp), dp_at = of(dp), ep_at = of(ep), edp_at = of(edp);
  std::vector<int> pp_peers;
  for (int x = 0; x < n; ++x) {
    // The order of the EP-style communicators without a layout (dense ring over the DP group, the
    // EP group's all-to-all, the expert-DP ring), TP and PP after them.
    if (l.dp > 1) bytes[x] += cost::nccl_buffer_bytes(nccl_communicator(t, dp[dp_at[x]], x, true, false));
    if (l.ep > 1 && (ep_p2p || ep_ring))
      bytes[x] += cost::nccl_buffer_bytes(nccl_communicator(t, ep[ep_at[x]], x, ep_ring, ep_p2p));
    if (l.edp() > 1) bytes[x] += cost::nccl_buffer_bytes(nccl_communicator(t, edp[edp_at[x]], x, true, false));
    if (l.tp > 1) bytes[x] += cost::nccl_buffer_bytes(nccl_communicator(t, tp[tp_at[x]], x, true, false));
    if (l.pp > 1) {
      // Stage-to-stage sends connect a GPU to the same coordinates one stage up and down only
      // (NCCL_RUNTIME_CONNECT: connections are made where used).
      pp_peers.clear();
      const int s = l.pp_rank(x), S = l.stage_size();
      // With interleaving the last stage also sends to the first (its chunk k to chunk k + 1).
      if (s > 0) pp_peers.push_back(x - S);
      else if (l.vpp > 1) pp_peers.push_back(x + (l.pp - 1) * S);
      pp_peers.push_back(x);
      if (s + 1 < l.pp) pp_peers.push_back(x + S);
      else if (l.vpp > 1) pp_peers.push_back(x - (l.pp - 1) * S);
      std::sort(pp_peers.begin(), pp_peers.end());
      pp_peers.erase(std::unique(pp_peers.begin(), pp_peers.end()), pp_peers.end());
      bytes[x] += cost::nccl_buffer_bytes(nccl_communicator(t, pp_peers, x, false, true));
    }
  }
  return bytes;
}

}  // namespace hs::strategy
