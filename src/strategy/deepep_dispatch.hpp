// DeepEP-style dispatch and combine (deepseek-ai/DeepEP, its "normal" kernels with NVLink and RDMA
// forwarding; DeepSeek-V3, arXiv 2412.19437 §3.2.2): a token whose experts lie on node N crosses the
// network once, to the GPU of N with the source's local rank (on a rail-optimized fabric, the same
// rail), which forwards it over NVLink once to every GPU of N holding one of its experts; a token
// for experts on its own node goes over NVLink once per destination GPU. The combine mirrors it
// (the GPUs of N send their partial outputs to that GPU over NVLink, it sends one reduced token
// back). NCCL's all-to-all-v instead sends one copy per (token, expert) pair, each to its expert's
// GPU directly (collective/all_to_all.hpp).
//
// Both phases form one coflow, timed by the topology's links (NICs, NVSwitch ports, fabric) with
// no per-connection rate cap and one latency (the network route's plus the NVLink hop's): DeepEP's
// kernels forward chunk by chunk while the RDMA transfers are still arriving, so the two phases
// overlap; their SM budget (24 SMs by default) is not modelled as a cap. docs/model.md §5 puts
// DeepEP's published bandwidths beside what this model gives for the same setting.
//
// Distinct tokens. A strategy's plan holds assignment bytes per (source GPU, destination GPU): one
// token x expert pair each, which is what NCCL sends. How many distinct tokens they are per
// destination depends on how a token's top_k experts cluster, which per-expert counts do not say.
// The estimate, per source s with T token bytes (its row sum / top_k = K), per node N receiving
// b_N of the row's assignment bytes, X the expert instances of the GPUs s sends to:
//   * without node limit, a token draws its K experts without replacement from the X, the node
//     holding the fraction f = b_N / (K T) of them: it misses N with probability
//     prod_{i<K} (1 - f X / (X - i)) (exactly C(X - x, K) / C(X, K) when the node's x of X experts
//     are as popular as the rest), so D_N = min(b_N, T (1 - that));
//   * with node-limited routing (the model's max_nodes; workload/node_limited_routing.hpp) a token
//     reaches at most L nodes with about top_k / L experts on each (DeepSeek-V3 §2.1.2: nodes are
//     chosen by the sum of their top_k / M affinities): D_N = min(that, b_N L / top_k), so the
//     network carries at most L copies of a token, not top_k;
//   * D_N >= the largest expert's share b_g / x_g of any GPU g of N (a token reaching an expert
//     reaches its node);
//   * per GPU g of N with x_g experts, the tokens that reached N take each of them independently
//     with probability b_g / (x_g D_N): F_g = D_N (1 - (1 - b_g / (x_g D_N))^x_g) (= b_g with one
//     expert per GPU).
// The unit tests compare the estimate with token-exact counts from the node-limited router. A row
// without some of its source's tokens (FasterMoE's shadowed experts compute them locally) makes T
// smaller than the source's tokens, so the estimate reads its tokens as more concentrated.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "collective/transfer.hpp"
#include "topology/topology.hpp"

namespace hs::strategy {

// Builds DeepEP's per-pair byte matrix (n x n, row = sender) from distinct-token bytes, source by
// source: add_node(s, N, D) for each node N != node(s) that s's tokens reach (D bytes cross the
// network once, to s's rail GPU on N), add_gpu(s, g, F) for each GPU g != s that receives F bytes
// of s's tokens (over NVLink from s on its own node, else from the rail GPU of g's node).
class DeepEpMatrix {
 public:
  explicit DeepEpMatrix(const topology::Topology& topo);
  void reset();
  // The GPU of `node` with the local rank of `src` (DeepEP's RDMA peer; modulo a smaller node).
  int rail_gpu(int src, int node) const;
  void add_node(int src, int node, double bytes);
  void add_gpu(int src, int gpu, double bytes);
  std::span<const double> bytes() const { return m_; }
  // The matrix's transfers (no rate caps); `combine` reverses every one. `extra_latency` gets the
  // largest NVLink route latency when tokens are forwarded (the second hop after the network's).
  collective::Coflow flows(bool combine, double& extra_latency) const;
  // Bytes that cross nodes (the network's part).
  double network_bytes() const;
  const topology::Topology& topology() const { return topo_; }

 private:
  const topology::Topology& topo_;
  int n_;
  std::vector<int> local_;  // [gpu] its index in its node
  // [src * n + dst] bytes; only the rows flagged in used_ hold any (an EP group's sources: 64 of
  // 2,048 GPUs' rows), so reset() clears and flows() reads those rows alone.
  std::vector<double> m_;
  std::vector<char> used_;
  bool forwarded_ = false;
};

// The estimate above for an assignment byte matrix (n x n, row = source: one copy per token x
// expert, as LayerPlan::dispatch_bytes), `experts_on[g]` expert instances on GPU g (at least one
// counted where g receives), top_k, and node_limit (0: none; else the most nodes a token reaches).
// `active`: GPUs [first, second) hold every non-zero entry, as rows and as columns (a pipeline
// stage's GPUs: a layer's tokens never leave its stage); only that block is read, in the same
// order, so the result is the same bit for bit as reading the whole matrix (the sums skip zeros
// only). {0, 0} (the default): the whole matrix. On DeepSeek-V3's 2,048 GPUs a stage is 128 GPUs,
// and reading the other 99.6% of the matrix was 8.6% of a step's simulation.
void estimate_deepep(std::span<const double> assignment_bytes, std::span<const int> experts_on, int top_k,
                     int node_limit, DeepEpMatrix& out, std::pair<int, int> active = {0, 0});

// The most nodes a token of `model`'s router reaches under an EP group of `ep` GPUs with
// `gpus_per_node` GPUs per node: 0 (no limit) without node-limited routing, else max_nodes x the
// nodes one routing group spans (1 when a node holds whole groups, as DeepSeek-V3's EP64 over 8
// nodes with 8 groups).
int deepep_node_limit(int route_groups, int max_nodes, int ep, int gpus_per_node);

}  // namespace hs::strategy
