#include "collective/sparse_plan.hpp"

#include <algorithm>
#include <cstddef>

#include "collective/p2p_channels.hpp"

namespace hs::collective {

namespace {

// What chain_order needs of node_of, computed once per coflow rather than once per chain: per GPU
// its local index in its node, per node its GPU count.
struct NodeIndex {
  const std::vector<int>* node_of;
  int nodes = 1, widest = 1;
  std::vector<int> local, per_node;
  explicit NodeIndex(const std::vector<int>& n) : node_of(&n) {
    if (n.empty()) return;
    nodes = *std::max_element(n.begin(), n.end()) + 1;
    std::vector<int> first(nodes, -1);
    local.assign(n.size(), 0);
    per_node.assign(nodes, 0);
    for (size_t g = 0; g < n.size(); ++g) {
      if (first[n[g]] < 0) first[n[g]] = static_cast<int>(g);
      local[g] = static_cast<int>(g) - first[n[g]];
      ++per_node[n[g]];
    }
    widest = *std::max_element(per_node.begin(), per_node.end());
  }
};

// Scratch of chain_order, kept by a caller that orders many chains (no allocation per chain).
struct ChainScratch {
  std::vector<int> slot, rest, order;
};

// The chain into scratch.order (see the public chain_order).
const std::vector<int>& chain_order(int owner, const std::vector<int>& holders, const NodeIndex& ix, int channel,
                                    ChainScratch& scratch) {
  const std::vector<int>& node_of = *ix.node_of;
  const int nodes = ix.nodes;
  const int home = node_of.empty() ? 0 : node_of[owner];
  std::vector<int>& order = scratch.order;
  std::vector<int>& rest = scratch.rest;
  std::vector<int>& slot = scratch.slot;
  order.assign(1, owner);
  rest.clear();
  for (int g : holders)
    if (g != owner) rest.push_back(g);
  // Owner's node first, then nodes cyclically after it. Within a node, GPUs in order of their local
  // index counted from the owner's (rail-aligned entry: on rail-optimized fabrics the chain enters a
  // node on the owner's rail when that GPU is a holder, as NCCL's rings do).
  auto rank = [&](int g) { return ((node_of.empty() ? 0 : node_of[g]) - home + nodes) % nodes; };
  auto pos = [&](int g) {
    if (node_of.empty()) return g;
    const int k = ix.per_node[node_of[g]];
    return ((ix.local[g] - ix.local[owner] - channel) % k + k) % k;
  };
  if (node_of.empty()) {
    std::stable_sort(rest.begin(), rest.end());
  } else {
    // Ordered by (rank, pos): the keys rank x K + pos (K = the most GPUs a node has) are distinct,
    // pos being distinct within a node, so placing each holder at its key sorts them in O(GPUs)
    // (a comparison sort here was half of an FSSDP iteration's time at 256 GPUs).
    const int k = ix.widest;
    slot.assign(static_cast<size_t>(nodes) * k, -1);
    for (int g : rest) slot[static_cast<size_t>(rank(g)) * k + pos(g)] = g;
    rest.clear();
    for (int g : slot)
      if (g >= 0) rest.push_back(g);
  }
  // A channel whose ring would leave the owner's node from the owner itself (the owner has the
  // largest position there) runs as NCCL's ring broadcast does from a root inside the ring: the
  // owner sends to the next node first and its node's other holders receive last, from the final
  // node. So every channel leaves the owner's node from a different GPU (NIC).
  const auto home_end = std::find_if(rest.begin(), rest.end(), [&](int g) { return rank(g) != 0; });
  const bool owner_exits = !node_of.empty() && home_end != rest.begin() && home_end != rest.end() &&
                           pos(owner) > pos(*(home_end - 1));
  if (owner_exits) std::rotate(rest.begin(), home_end, rest.end());
  order.insert(order.end(), rest.begin(), rest.end());
  return order;
}

}  // namespace

std::vector<int> chain_order(int owner, const std::vector<int>& holders, const std::vector<int>& node_of,
                             int channel) {
  ChainScratch scratch;
  return chain_order(owner, holders, NodeIndex(node_of), channel, scratch);
}

namespace {

// Channels chunk e's chain runs on: `channels` when its holders (and owner) span nodes, else 1.
int chunk_channels(const SparsePlacement& p, std::size_t e, const std::vector<int>& node_of, int channels) {
  if (channels <= 1 || node_of.empty()) return 1;
  for (int g : p.replicas[e])
    if (node_of[g] != node_of[p.owner[e]]) return channels;
  return 1;
}

}  // namespace

int chain_channels(const topology::Topology& topo) {
  if (topo.num_nodes() < 2) return 1;
  int nics = 0;
  for (const auto& v : topo.vertices())
    if (v.kind == topology::VertexKind::kNic && v.node == 0) ++nics;
  // One channel per GPU of a node (as the rings, collective/ring.hpp), so that rotating the entry
  // GPU by one per channel spreads the channels evenly over NICs shared by several GPUs (p4d: 2 GPUs
  // per NIC); with one NIC per node channels cannot spread, and one chain is the same load.
  return nics > 1 ? std::clamp(topo.gpus_in_node(0), 1, 8) : 1;
}

namespace {

// f(order, ch) for every chain of p's chain broadcast: per chunk with copies, its chunk_channels
// chains in channel order (the order sparse_allgather lists their transfers in).
template <class F>
void for_each_chain(const SparsePlacement& p, const std::vector<int>& node_of, int channels, F&& f) {
  const NodeIndex ix(node_of);
  ChainScratch scratch;
  for (std::size_t e = 0; e < p.owner.size(); ++e) {
    if (p.replicas[e].empty()) continue;
    const int ch = chunk_channels(p, e, node_of, channels);
    for (int k = 0; k < ch; ++k) f(chain_order(p.owner[e], p.replicas[e], ix, k, scratch), ch);
  }
}

// The latency sum of a chain's hops, in the broadcast's direction.
double chain_latency(const std::vector<int>& order, const topology::Topology& topo) {
  double sum = 0;
  for (std::size_t i = 0; i + 1 < order.size(); ++i) sum += topo.route(order[i], order[i + 1]).latency.value();
  return sum;
}

// sparse_finish's common end: the reduce's HBM cap on every transfer; returns the coflow's largest
// route latency (alpha).
double finish_caps(Coflow& c, const topology::Topology& topo, bool reduce) {
  double alpha = 0;
  for (const auto& t : c) alpha = std::max(alpha, topo.route(t.src, t.dst).latency.value());
  const double cap_reduce = reduce ? topo.gpu_model().hbm_bandwidth.value() / 3 : 0.0;
  if (cap_reduce > 0)
    for (auto& t : c) t.rate_cap = t.rate_cap > 0 ? std::min(t.rate_cap, cap_reduce) : cap_reduce;
  return alpha;
}

}  // namespace

Coflow sparse_allgather(const SparsePlacement& p, double chunk_bytes, const std::vector<int>& node_of,
                        BroadcastAlgo algo, int channels) {
  Coflow c;
  if (algo == BroadcastAlgo::kDirect) {
    for (std::size_t e = 0; e < p.owner.size(); ++e)
      for (int g : p.replicas[e])
        if (g != p.owner[e]) c.push_back({p.owner[e], g, chunk_bytes});
    return c;
  }
  for_each_chain(p, node_of, channels, [&](const std::vector<int>& order, int ch) {
    for (std::size_t i = 0; i + 1 < order.size(); ++i) c.push_back({order[i], order[i + 1], chunk_bytes / ch});
  });
  return c;
}

Coflow sparse_reduce_scatter(const SparsePlacement& p, double chunk_bytes, const std::vector<int>& node_of,
                             BroadcastAlgo algo, int channels) {
  Coflow c = sparse_allgather(p, chunk_bytes, node_of, algo, channels);
  for (auto& t : c) std::swap(t.src, t.dst);
  return c;
}

double sparse_finish(Coflow& c, const SparsePlacement& p, const topology::Topology& topo,
                     const std::vector<int>& node_of, BroadcastAlgo algo, bool reduce, int channels) {
  if (c.empty()) return 0.0;
  double longest = 0;
  if (algo == BroadcastAlgo::kDirect) {
    const P2pChannels p2p(topo);
    for (auto& t : c) t.rate_cap = p2p.cap(t.src, t.dst);
  } else {
    for_each_chain(p, node_of, channels,
                   [&](const std::vector<int>& order, int) { longest = std::max(longest, chain_latency(order, topo)); });
  }
  const double alpha = finish_caps(c, topo, reduce);
  return std::max(alpha, longest) - alpha;
}

SparsePlanBuild build_sparse_plan(const SparsePlacement& p, double chunk_bytes, const topology::Topology& topo,
                                  const std::vector<int>& node_of, BroadcastAlgo algo, bool reduce, int channels) {
  if (algo == BroadcastAlgo::kDirect) {
    SparsePlanBuild b{reduce ? sparse_reduce_scatter(p, chunk_bytes, node_of, algo, channels)
                             : sparse_allgather(p, chunk_bytes, node_of, algo, channels),
                      0};
    b.latency = sparse_finish(b.flows, p, topo, node_of, algo, reduce, channels);
    for (const auto& t : b.flows) b.alpha = std::max(b.alpha, topo.route(t.src, t.dst).latency.value());
    return b;
  }
  // sparse_allgather's chains, each one's hop latencies summed as sparse_finish sums them (in the
  // broadcast's direction, before a reduce reverses the transfers).
  SparsePlanBuild b;
  for_each_chain(p, node_of, channels, [&](const std::vector<int>& order, int ch) {
    for (std::size_t i = 0; i + 1 < order.size(); ++i) b.flows.push_back({order[i], order[i + 1], chunk_bytes / ch});
    b.longest = std::max(b.longest, chain_latency(order, topo));
  });
  if (b.flows.empty()) return b;
  if (reduce)
    for (auto& t : b.flows) std::swap(t.src, t.dst);
  b.alpha = finish_caps(b.flows, topo, reduce);
  b.latency = std::max(b.alpha, b.longest) - b.alpha;
  return b;
}

GpuVolumes volumes(const Coflow& c, int gpus) {
  GpuVolumes v{std::vector<double>(gpus, 0.0), std::vector<double>(gpus, 0.0)};
  for (const auto& t : c) {
    v.sent[t.src] += t.bytes;
    v.received[t.dst] += t.bytes;
  }
  return v;
}

}  // namespace hs::collective
