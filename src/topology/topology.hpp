// The sealed hardware graph the simulator runs on.
//
// Vertices are GPUs, switches (NVSwitch / PCIe / leaf / spine) and NICs; every link is directed and
// carries an effective bandwidth (line rate x efficiency, bytes/s), a latency and a class name
// ("nvlink", "pcie", "nic", "fabric") that calibration fits per class. A Topology is immutable once
// built (TopologyBuilder::build): routes are computed then, so lookups on the simulator's hot path
// are array reads.
//
// Routing: shortest paths, each link costing about 1 / its bandwidth (high-bandwidth paths win).
// Where several equal-cost next hops exist (ECMP: spines of a leaf/spine fabric), a transfer's bytes
// are split evenly over them at every branching point, the fluid limit of per-flow hashing; a Route
// is therefore a list of (link, fraction of the bytes). This keeps the analytic tier invariant under
// relabelling GPUs. GPUs do not forward, except as NCCL relays between NVLink-connected GPUs: a pair
// of GPUs without an NVLink of its own (a hybrid cube-mesh) goes through one intermediate GPU of the
// node over two NVLink hops (TopologyBuilder::build has the rule and its source).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/interference.hpp"
#include "topology/nccl_config.hpp"
#include "util/units.hpp"

namespace hs::topology {

using LinkId = int32_t;
using VertexId = int32_t;

enum class VertexKind { kGpu, kSwitch, kNic };

struct GpuModel {
  std::string model;
  FlopRate peak_flops{0};     // dense BF16/FP16 tensor-core peak
  Bandwidth hbm_bandwidth{0};
  Bytes memory{0};
  // CUDA compute capability (7.0 V100, 8.0 A100, 9.0 H100/H200): decides which attention kernels
  // exist (FlashAttention 2 needs 8.0). The loader takes `gpu.compute_capability`, else infers it from
  // the model name (infer_compute_capability), else assumes 8.0; so does a GpuModel built in code.
  double compute_capability = 8.0;
  // Interference between overlapped compute and communication on this GPU, per kernel class and
  // traffic kind (engine/interference.hpp; `gpu.overlap_slowdown`, topologies/README.md). The
  // defaults and their sources, cell by cell:
  //   * compute beside traffic inside a node, every kernel class: 0.189, the mean computational
  //     slowdown measured when NCCL / RCCL collectives overlap the training kernels of GPT and LLaMA
  //     models on 4 GPUs of one system (A100, H100, MI250, MI210): "Characterizing Compute-
  //     Communication Overlap in GPU-Accelerated Distributed Deep Learning", arXiv 2507.03114 v1,
  //     abstract (mean 18.9%, max 40.0%). It is an aggregate over a step's kernels; no source found
  //     splits it by kernel class, so GEMM, attention and memory-bound kernels take the same figure.
  //   * compute beside network traffic, every kernel class: no measurement across nodes was found
  //     (arXiv 2507.03114, T3 arXiv 2401.16677, FLUX arXiv 2406.06858, Domino arXiv 2409.15241 and
  //     ConCCL arXiv 2412.14335 measure within one node), so the aggregate 0.189 is the default.
  //     NCCL gives a network transport fewer SMs (NVIDIA/nccl issue #689: 2 SMs for one NIC, 16
  //     for 8 NICs) which suggests less, but no figure says how much.
  //   * communication beside compute, both kinds: 0, for lack of a published figure that isolates
  //     it (the validation backend's overlap suite measures it; `calibrate` sets it).
  engine::Interference interference{0.189, 0.0};
  // Dense FP8 tensor-core peak (`gpu.peak_fp8`); 0 = the GPU has no FP8 tensor cores (V100, A100).
  // H100/H800/H200 SXM: 1,979 TFLOPS, twice the bf16 989 (NVIDIA H100 / H200 datasheets, dense).
  FlopRate peak_fp8{0};
  // Streaming multiprocessors (`gpu.sms`): the tile/wave GEMM model's wave width (cost/gemm_tiles.hpp).
  // Absent: inferred from the model name (infer_sm_count), else 0, which the cost model reads as 132.
  int sms = 0;
};

// Compute capability of a known GPU family named in `model` (case-insensitive, as a word: "V100",
// "A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"); nullopt for an unknown name. Families: P100 6.0,
// V100 7.0, T4 7.5, A100/A800/A30 8.0, A10/A40 8.6, L4/L40(S) 8.9, H100/H800/H200/GH200 9.0,
// B100/B200 10.0.
std::optional<double> infer_compute_capability(std::string_view model);
// SM count of a known data-center GPU named in `model` (matched as infer_compute_capability does);
// nullopt otherwise. NVIDIA's architecture whitepapers: V100 SXM2 80 ("NVIDIA Tesla V100 GPU
// Architecture", 2017, Table 1), A100 108 ("NVIDIA A100 Tensor Core GPU Architecture", 2020,
// Table 3), H100 SXM5 132 and H100 PCIe 114 ("NVIDIA H100 Tensor Core GPU Architecture", 2022,
// Table 3); H800 and H200 are the H100 SXM5's GH100 configuration, 132 (the H100 SXM5 measurement in
// validation/results/h100-sxm5-80gb reads 132 from the device). A "PCIe" H100 counts 114.
std::optional<int> infer_sm_count(std::string_view model);

struct Vertex {
  std::string name;
  VertexKind kind = VertexKind::kSwitch;
  int node = -1;  // node index for GPUs and NICs (and intra-node switches); -1 for fabric switches
};

struct Link {
  VertexId from = 0, to = 0;
  Bandwidth bandwidth{0};    // effective: line rate x efficiency
  Bandwidth line_rate{0};
  double efficiency = 1.0;
  Seconds latency{0};
  std::string link_class;
};

struct RouteHop {
  LinkId link;
  double fraction;  // share of the transfer's bytes crossing this link (1 unless ECMP splits)
};

// The hops of a route: one stored run, or (factored routes, below) the concatenation of up to
// three: the source's way out of its node, the fabric between two gateways, the way into the
// destination. Iterates like a span; views the topology's storage (valid while it lives).
class HopSeq {
 public:
  HopSeq() = default;
  explicit HopSeq(std::span<const RouteHop> a, std::span<const RouteHop> b = {}, std::span<const RouteHop> c = {})
      : part_{a, b, c} {}
  size_t size() const { return part_[0].size() + part_[1].size() + part_[2].size(); }
  bool empty() const { return size() == 0; }
  const RouteHop& operator[](size_t i) const {
    for (const auto& p : part_) {
      if (i < p.size()) return p[i];
      i -= p.size();
    }
    return part_[2][i];  // out of range, as a span's would be
  }
  class iterator {
   public:
    using value_type = RouteHop;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(const HopSeq* s, int part, size_t i) : s_(s), part_(part), i_(i) { skip(); }
    const RouteHop& operator*() const { return s_->part_[part_][i_]; }
    const RouteHop* operator->() const { return &s_->part_[part_][i_]; }
    iterator& operator++() {
      ++i_;
      skip();
      return *this;
    }
    iterator operator++(int) {
      iterator o = *this;
      ++*this;
      return o;
    }
    bool operator==(const iterator& o) const { return part_ == o.part_ && i_ == o.i_; }

   private:
    void skip() {
      while (part_ < 3 && i_ >= s_->part_[part_].size()) ++part_, i_ = 0;
    }
    const HopSeq* s_ = nullptr;
    int part_ = 3;
    size_t i_ = 0;
  };
  iterator begin() const { return iterator(this, 0, 0); }
  iterator end() const { return iterator(this, 3, 0); }

 private:
  std::span<const RouteHop> part_[3];
};

struct Route {
  HopSeq hops;
  Seconds latency{0};  // sum of link latencies along the (longest, if ECMP) path
  int hop_count = 0;
};

class Topology {
 public:
  const std::string& name() const { return name_; }
  const GpuModel& gpu_model() const { return gpu_; }
  int num_gpus() const { return static_cast<int>(gpu_vertex_.size()); }
  int num_nodes() const { return num_nodes_; }
  int node_of(int gpu) const { return gpu_node_[gpu]; }
  int gpus_in_node(int node) const { return static_cast<int>(node_gpus_[node].size()); }
  std::span<const int> node_gpus(int node) const { return node_gpus_[node]; }
  VertexId gpu_vertex(int gpu) const { return gpu_vertex_[gpu]; }
  std::span<const Vertex> vertices() const { return vertices_; }
  std::span<const Link> links() const { return links_; }
  const Link& link(LinkId l) const { return links_[l]; }
  int num_links() const { return static_cast<int>(links_.size()); }
  // Intra-node switches reduce in the switch (NVLink SHARP): NCCL's NVLS all-reduce is available
  // to groups inside one node.
  bool nvls() const { return nvls_; }
  // NCCL's point-to-point configuration on this machine (topology/nccl_config.hpp).
  const NcclConfig& nccl() const { return nccl_; }
  // Replaces the NCCL configuration (command-line NCCL knobs over the file's `nccl:`); call it
  // before the topology is used (it does not change routes).
  void set_nccl(const NcclConfig& c) { nccl_ = c; }

  // Route between two GPUs (src != dst). Precomputed, or composed from precomputed parts; O(1).
  Route route(int src_gpu, int dst_gpu) const {
    if (factored_) return factored_route(src_gpu, dst_gpu);
    const size_t p = static_cast<size_t>(src_gpu) * gpu_vertex_.size() + static_cast<size_t>(dst_gpu);
    const uint32_t b = route_offset_[p], e = route_offset_[p + 1];
    return Route{HopSeq(std::span<const RouteHop>(route_hops_.data() + b, e - b)), Seconds(route_latency_[p]),
                 route_hop_count_[p]};
  }
  Seconds route_latency(int src_gpu, int dst_gpu) const {
    if (factored_) return Seconds(factored_latency(src_gpu, dst_gpu));
    return Seconds(route_latency_[static_cast<size_t>(src_gpu) * gpu_vertex_.size() + static_cast<size_t>(dst_gpu)]);
  }
  // Whether routes are stored factored (see the private part): large compact topologies.
  bool factored_routes() const { return factored_; }
  // False when the link can never limit a flow, because either every route through it also crosses
  // a link m with capacity(m) x max over those routes of (fraction here / fraction on m) <=
  // capacity here (typical: the PCIe hop to a slower NIC), or the summed bound over the sources
  // (or destinations) of the routes through it, each source's traffic bounded by a link all its
  // routes through this one cross, is at most its capacity (typical: leaf-spine links of a
  // non-oversubscribed fabric); the links such bounds rely on stay. Its load then never exceeds
  // its capacity, so the flow tier leaves it out of the max-min problem without changing any rate
  // (a max-min allocation of the relaxed problem that is feasible for the full one is the full
  // one's), and collectives on disjoint nodes become separate components. Also false for all but
  // the lowest-numbered of a set of twins, links of one capacity that carry the same fraction of
  // every route (the spines' links of an oversubscribed core, up from one leaf or down to one):
  // their constraints are one and the same, so one is enough (a cross-leaf route keeps 4 binding
  // hops instead of 2 + 2 x spines).
  bool may_bind(LinkId l) const { return may_bind_[l] != 0; }
  // The hops of route(src, dst) whose links may bind, in route order (precomputed; O(1)): all the
  // flow tier gives the max-min solver, and all the analytic tier needs (a coflow's most loaded link
  // relative to its capacity is always one of them, by the same argument).
  HopSeq binding_hops(int src_gpu, int dst_gpu) const {
    if (factored_) return factored_hops(src_gpu, dst_gpu, 1);
    const size_t p = static_cast<size_t>(src_gpu) * gpu_vertex_.size() + static_cast<size_t>(dst_gpu);
    return HopSeq({bind_hops_.data() + bind_offset_[p], bind_offset_[p + 1] - bind_offset_[p]});
  }
  // Stored routes (factored_routes() false) row by row, for a tight loop over a source's pairs:
  // pair (s, d)'s binding hops are binding_hop_data()[off[d] .. off[d + 1]) with off =
  // binding_offsets(s), its route latency latency_row(s)[d] (as route_latency gives it).
  const uint32_t* binding_offsets(int src_gpu) const {
    return bind_offset_.data() + static_cast<size_t>(src_gpu) * gpu_vertex_.size();
  }
  const RouteHop* binding_hop_data() const { return bind_hops_.data(); }
  const float* latency_row(int src_gpu) const {
    return route_latency_.data() + static_cast<size_t>(src_gpu) * gpu_vertex_.size();
  }
  // Endpoint-separable binding hops: when every route's binding hops are its source's egress hops
  // plus its destination's ingress hops, both fixed per GPU and per locality (cross_node: the pair
  // is on different nodes) — one NIC per GPU behind a non-blocking fabric is like that — the loads
  // of an all-to-all reduce to row and column sums of its byte matrix. Route latencies are then also
  // required symmetric (latency(a, b) = latency(b, a)), so a transposed matrix needs no second table.
  bool endpoint_separable() const { return separable_; }
  std::span<const RouteHop> egress_hops(int gpu, bool cross_node) const { return endpoint_hops(gpu, cross_node, 0); }
  std::span<const RouteHop> ingress_hops(int gpu, bool cross_node) const { return endpoint_hops(gpu, cross_node, 1); }
  // Bottleneck effective bandwidth of the route (min over links of bandwidth / fraction).
  Bandwidth route_bandwidth(int src_gpu, int dst_gpu) const;

  // Whether the topology came from the compact form, and its summary, for `topo show`.
  std::string description;
  // The calibration file the topology names (`calibration:`, relative to the topology file), or "".
  std::string calibration_file;

 private:
  friend class TopologyBuilder;
  std::string name_;
  GpuModel gpu_;
  int num_nodes_ = 0;
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<VertexId> gpu_vertex_;
  std::vector<int> gpu_node_;
  std::vector<std::vector<int>> node_gpus_;
  // All-pairs routes in CSR form (unless factored): pair p = src * n + dst -> hops_[offset_[p] .. offset_[p+1]).
  std::vector<uint32_t> route_offset_;
  std::vector<RouteHop> route_hops_;
  std::vector<float> route_latency_;
  std::vector<uint8_t> route_hop_count_;
  std::vector<char> may_bind_;
  std::vector<uint32_t> bind_offset_;  // binding_hops in CSR form, as the routes
  std::vector<RouteHop> bind_hops_;
  // Endpoint hops: slot (gpu * 2 + cross_node) * 2 + ingress -> end_hops_[end_offset_[slot] ..
  // end_offset_[slot + 1]).
  std::span<const RouteHop> endpoint_hops(int gpu, bool cross_node, int ingress) const {
    const size_t k = (static_cast<size_t>(gpu) * 2 + (cross_node ? 1 : 0)) * 2 + static_cast<size_t>(ingress);
    return {end_hops_.data() + end_offset_[k], end_offset_[k + 1] - end_offset_[k]};
  }
  // Factored routes (TopologyBuilder::set_factoring; compact topologies of more than
  // kAllPairsMaxGpus GPUs, where every GPU's only way out of its node is its NIC's link to one
  // fabric switch, its gateway): a pair on different nodes routes as seg(out of s) + seg(gateway of
  // s -> gateway of d, empty if the same) + seg(into d); a pair on one node as its node's stored
  // route. Storage O(GPUs x GPUs per node + gateways^2) instead of O(GPUs^2). Each segment is kept
  // twice: all its hops (kind 0) and its hops that may bind (kind 1), in seg_off_[kind].
  Route factored_route(int s, int d) const {
    return Route{factored_hops(s, d, 0), Seconds(factored_latency(s, d)), factored_hop_count(s, d)};
  }
  HopSeq factored_hops(int s, int d, int kind) const {
    const auto seg = [&](uint32_t i) {
      const auto& off = seg_off_[kind];
      return std::span<const RouteHop>(seg_hops_[kind].data() + off[i], off[i + 1] - off[i]);
    };
    if (gpu_node_[s] == gpu_node_[d]) return HopSeq(seg(local_seg(s, d)));
    return HopSeq(seg(out_seg_[s]), seg(mid_seg(s, d)), seg(in_seg_[d]));
  }
  // As the all-pairs routing sums it (from the destination back), in double, stored as float.
  double factored_latency(int s, int d) const {
    if (gpu_node_[s] == gpu_node_[d]) return static_cast<float>(seg_lat_[local_seg(s, d)]);
    // Segment latencies are summed from their far end, so the nesting below is the route's.
    return static_cast<float>(seg_lat_[out_seg_[s]] + (seg_lat_[mid_seg(s, d)] + seg_lat_[in_seg_[d]]));
  }
  int factored_hop_count(int s, int d) const {
    if (gpu_node_[s] == gpu_node_[d]) return seg_hop_count_[local_seg(s, d)];
    return seg_hop_count_[out_seg_[s]] + seg_hop_count_[mid_seg(s, d)] + seg_hop_count_[in_seg_[d]];
  }
  uint32_t local_seg(int s, int d) const {
    return local_base_[s] + static_cast<uint32_t>(local_index_[d]);
  }
  uint32_t mid_seg(int s, int d) const {
    return mid_base_ + static_cast<uint32_t>(gate_[s] * num_gates_ + gate_[d]);
  }
  bool factored_ = false;
  std::vector<uint32_t> seg_off_[2];
  std::vector<RouteHop> seg_hops_[2];
  std::vector<double> seg_lat_;        // per segment: latency of its longest path
  std::vector<uint8_t> seg_hop_count_;
  std::vector<uint32_t> out_seg_, in_seg_, local_base_;  // per GPU
  std::vector<int> local_index_, gate_;                  // per GPU: index in its node, gateway
  int num_gates_ = 0;
  uint32_t mid_base_ = 0;              // segment of gateway pair (a, b) = mid_base_ + a x gates + b
  bool separable_ = false;
  std::vector<uint32_t> end_offset_;
  std::vector<RouteHop> end_hops_;
  bool nvls_ = false;
  NcclConfig nccl_;
};

}  // namespace hs::topology
