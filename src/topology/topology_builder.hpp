// One builder for every way of describing hardware: the YAML loader (compact or explicit form) and
// C++ generators (tests, presets) both call it. build() checks the graph (every GPU reaches every
// other, links reference existing vertices, positive bandwidths) and computes all routes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "util/diagnostics.hpp"

namespace hs::topology {

class PairRoutes;

struct LinkParams {
  Bandwidth line_rate{0};
  double efficiency = 1.0;
  Seconds latency{0};
  std::string link_class;
};

// Calibration of a topology (a calibration file, see src/calib/calibration.hpp): per link class, a
// factor on the effective bandwidth and a latency replacing the preset's; the GPU's overlap slowdowns.
struct LinkClassAdjust {
  std::string link_class;
  double bandwidth_scale = 1.0;
  std::optional<Seconds> latency;
};
struct TopologyAdjust {
  std::vector<LinkClassAdjust> links;
  NcclProtoScales protocols{};  // NCCL's per-protocol latency / bandwidth factors (NcclConfig::proto_scale)
  Seconds net_step_latency{0};  // added to NCCL's every network step (NcclConfig::net_step_latency)
  engine::InterferenceOverride interference;  // the cells a calibration measured
};

// The largest topology accepted. Routes are precomputed for every GPU pair (O(N^2) memory) up to
// kAllPairsMaxGpus GPUs; larger compact topologies whose structure allows it store them factored
// (Topology::factored_routes: O(N x GPUs per node)); an explicit topology of more GPUs still routes
// every pair (minutes and GBs at 4,096).
inline constexpr int kMaxGpus = 4096;
inline constexpr int kAllPairsMaxGpus = 1024;

// What a generator knows that lets routes be stored factored (TopologyBuilder::set_factoring): every
// GPU leaves its node only through `out` (its hops, in path order, to its gateway: the fabric
// switch its NICs hang off) and is entered only through `in` (gateway to GPU); GPUs of one node
// reach each other through their node's switch (to_switch, from_switch); gateways, when there are
// several, are joined by spines (up[gate][k]: gateway -> spine k; down[gate][k]: spine k -> gateway).
// A hop's fraction is 1 but on a GPU's equal parallel branches (m NICs of one GPU: 1/m on each
// branch's links), so a path's latency, hop count and cost are the fraction-weighted sums.
struct RouteFactoring {
  std::vector<int> gate;                       // per GPU
  std::vector<std::vector<RouteHop>> out, in;  // per GPU
  std::vector<LinkId> to_switch, from_switch;  // per GPU
  std::vector<std::vector<LinkId>> up, down;   // per gateway, per spine (empty: a single gateway)
};

class TopologyBuilder {
 public:
  explicit TopologyBuilder(std::string name, GpuModel gpu);
  // GPUs are numbered in the order added (global rank).
  VertexId add_gpu(std::string name, int node);
  VertexId add_switch(std::string name, int node = -1);
  VertexId add_nic(std::string name, int node);
  // A pair of directed links, one per direction, each with the full bandwidth.
  void add_duplex_link(VertexId a, VertexId b, const LinkParams& p);
  void add_link(VertexId from, VertexId to, const LinkParams& p);
  VertexId find(const std::string& name) const;  // -1 if absent
  int num_links() const { return static_cast<int>(topo_.links_.size()); }  // the next link's id
  void set_description(std::string d) { topo_.description = std::move(d); }
  void set_nvls(bool on) { topo_.nvls_ = on; }
  void set_nccl(const NcclConfig& c) { topo_.nccl_ = c; }
  // Every link added afterwards whose class is adjusted gets the calibrated bandwidth and latency.
  void set_adjust(const TopologyAdjust* a) { adjust_ = a; }
  // Routes of more than kAllPairsMaxGpus GPUs (or any count, `force`: tests compare the two) are
  // stored factored when `f` describes the topology (and the same-node check holds; else all pairs).
  void set_factoring(RouteFactoring f, bool force = false) {
    factoring_ = std::move(f);
    force_factoring_ = force;
  }
  // Validates and seals. Problems go to diags (located at `where`; a disconnected topology at
  // `links_where` when given: the explicit form's `links:`); throws InputError if any.
  Topology build(const SourceLocation& where, const SourceLocation* links_where = nullptr);

 private:
  static bool factored_routes(Topology& t, const RouteFactoring& f);
  // `pairs`: the all-pairs routes (PairRoutes), or null when they are factored.
  static void compute_may_bind(Topology& t, const PairRoutes* pairs);
  static void compute_binding_hops(Topology& t);
  static void prune_by_endpoint_bounds(Topology& t, const PairRoutes& pairs);
  static void drop_twin_links(Topology& t, const PairRoutes* pairs);
  Topology topo_;
  const TopologyAdjust* adjust_ = nullptr;
  std::optional<RouteFactoring> factoring_;
  bool force_factoring_ = false;
};

// Compact-form generator shared by the YAML loader and code: `nodes` nodes of `gpus_per_node` GPUs
// joined inside a node by one intra-node switch each (or, for `hybrid-cube-mesh`, by the DGX-1V /
// p3dn.24xlarge NVLink matrix, kHybridCubeMesh), `nics_per_node` NICs, and a fabric joining the
// NICs. With k NICs for g GPUs, one count divides the other: k <= g, NIC i serves GPUs
// [i*g/k, (i+1)*g/k); k > g, GPU i has NICs [i*k/g, (i+1)*k/g) (by affinity, as AWS p5: 32 EFA
// NICs for 8 GPUs) and its network traffic splits evenly over them (ECMP over equal paths).
//
// The PCIe side of a node (built when there is more than one node):
//   * gpus_per_pcie_switch 0 (default): GPU i has a PCIe link of its own straight to its NIC, or,
//     without GPUDirect RDMA, to the node's host. A GPU with several NICs reaches them through one
//     PCIe link to a switch of its own (node<n>.gpu<i>.pcie), which has a PCIe link to each of them.
//   * gpus_per_pcie_switch p: GPUs [j*p, (j+1)*p) hang off PCIe switch j by a link each; every switch
//     has an uplink to the host (the CPU root complex and its memory). A NIC whose GPUs all sit
//     behind one switch is attached to that switch (its GPUs share the switch-to-NIC link, as on a
//     DGX-1 or a p4d; a GPU's several NICs sit on its switch); a NIC serving GPUs of several
//     switches, or any NIC without GPUDirect RDMA, is attached to the host.
// Rail-optimized fabric: leaf r joins rail r of every node, rail r being NIC r when k <= g and the
// NICs of GPU r when k > g (a GPU's k/g NICs on one leaf: the same capacity as k/g leaves of one
// NIC each, as a leaf is non-blocking; and it keeps one gateway per GPU for factored routes).
//   * gpudirect_rdma false: the NIC moves data from and to pinned host memory (NCCL's net transport
//     without GDR), so a GPU's inter-node traffic crosses its PCIe path up to the host, then the
//     host's link to the NIC: every NIC hangs off the host.
// Every PCIe link (GPU-switch, switch-host, switch-NIC, host-NIC, GPU-NIC, GPU-host) has `pcie`'s
// bandwidth and latency and link class "pcie".
struct CompactSpec {
  std::string name;
  GpuModel gpu;
  int nodes = 1;
  int gpus_per_node = 8;
  std::string intra_kind = "nvswitch";  // nvswitch | nvlink-mesh | hybrid-cube-mesh | pcie
  bool nvls = false;                    // NVSwitch with in-switch reduction (NVLink SHARP, H100+)
  LinkParams intra;                     // per GPU, per direction; per NVLink for hybrid-cube-mesh
  int nics_per_node = 0;
  LinkParams nic;                       // per NIC, per direction
  LinkParams pcie;                      // every PCIe link (see above)
  int gpus_per_pcie_switch = 0;         // 0: no PCIe switch level
  bool gpudirect_rdma = true;           // false: inter-node data staged through host memory
  std::string fabric_kind = "single-switch";  // single-switch | fat-tree | rail-optimized
  double oversubscription = 1.0;
  int nodes_per_leaf = 4;               // fat-tree only
  int spines = 0;                       // 0 = as many as needed for the oversubscription (min 1)
  Seconds switch_latency{0};
  NcclConfig nccl;                      // NCCL's point-to-point configuration (`nccl:`)
  bool force_factored_routes = false;   // factored routes at any size, where possible (tests)
};

// NVLinks between the 8 GPUs of a DGX-1 with V100 (and AWS p3dn.24xlarge, same hybrid cube-mesh):
// kHybridCubeMesh[a][b] bonded NVLink2 links between GPU a and GPU b (0: none), each GPU using all
// six of its links. From `nvidia-smi topo -m` on a DGX-1V (NV1 / NV2 entries), as recorded in
// microsoft/msccl-tools tests/test_topologies.py (test_nvlink_only) and Microway's nvidia-smi guide.
inline constexpr int kHybridCubeMesh[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
    {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1}, {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};

Topology build_compact(const CompactSpec& spec, const SourceLocation& where, const TopologyAdjust* adjust = nullptr);

}  // namespace hs::topology
