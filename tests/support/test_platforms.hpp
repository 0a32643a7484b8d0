// Small platforms and models built in code for the unit tests (the builder is the same one the
// YAML loader uses).
#pragma once

#include <string>
#include <vector>

#include "topology/topology_builder.hpp"
#include "workload/model_spec.hpp"

namespace hs::test {

struct ClusterShape {
  int nodes = 1;
  int gpus_per_node = 8;
  double intra_bw = 400e9, intra_lat = 1e-6;   // per GPU to the node's switch
  int nics = 0;
  double nic_bw = 0, nic_lat = 2e-6;
  double pcie_bw = 200e9, pcie_lat = 0;        // GPU <-> NIC: faster than any test NIC, slower than NVLink
  std::string fabric = "single-switch";
  double oversubscription = 1.0;
  bool nvls = false;                           // NVSwitch reduces in the switch (NVLS)
  std::string intra_kind = "nvswitch";         // or hybrid-cube-mesh (intra_bw then per NVLink)
  int gpus_per_pcie_switch = 0;                // PCIe switches (0: GPU-NIC links)
  bool gpudirect_rdma = true;                  // false: NICs on the host, traffic staged through it
  double peak_flops = 1e15, hbm = 3e12;
  double memory = 80e9;                        // bytes per GPU
  bool factored = false;                       // factored routes (as large presets store them)
};

inline topology::Topology make_cluster(const ClusterShape& c) {
  topology::CompactSpec s;
  s.name = "test";
  s.gpu = {"X", FlopRate(c.peak_flops), Bandwidth(c.hbm), Bytes(c.memory)};
  s.nodes = c.nodes;
  s.gpus_per_node = c.gpus_per_node;
  s.intra = {Bandwidth(c.intra_bw), 1.0, Seconds(c.intra_lat), ""};
  s.nics_per_node = c.nics;
  s.nic = {Bandwidth(c.nic_bw), 1.0, Seconds(c.nic_lat), ""};
  s.pcie = {Bandwidth(c.pcie_bw), 1.0, Seconds(c.pcie_lat), ""};
  s.fabric_kind = c.fabric;
  s.oversubscription = c.oversubscription;
  s.nvls = c.nvls;
  s.intra_kind = c.intra_kind;
  s.gpus_per_pcie_switch = c.gpus_per_pcie_switch;
  s.gpudirect_rdma = c.gpudirect_rdma;
  s.force_factored_routes = c.factored;
  return topology::build_compact(s, {"test", 0, 0});
}

// `layers` MoE blocks (2 unless given), d_model 512, d_ffn 1024 experts, 8 heads; `experts`
// experts, top-k routing, micro_batch x seq_len tokens per GPU.
inline workload::ModelSpec small_moe_model(const std::string& name, int experts, int top_k, int seq_len,
                                           int micro_batch, int layers = 2) {
  return workload::load_model("schema: hecate-sim/model@1\nname: " + name + "\nlayers: " + std::to_string(layers) +
                                  "\nd_model: 512\nd_ffn: 1024\nexperts: " + std::to_string(experts) +
                                  "\ntop_k: " + std::to_string(top_k) + "\nheads: 8\nseq_len: " +
                                  std::to_string(seq_len) + "\nmicro_batch: " + std::to_string(micro_batch) + "\n",
                              name + ".yaml");
}

// One node of 8 GPUs on a switch, 200 GB/s each, 300 TFLOP/s, 2 TB/s HBM (the strategy tests' node).
inline topology::Topology node8() {
  ClusterShape c;
  c.intra_bw = 200e9, c.intra_lat = 2e-6, c.peak_flops = 300e12, c.hbm = 2e12;
  return make_cluster(c);
}

// Two nodes of g GPUs, one 10 GB/s NIC each (5 us): every cross-node transfer shares the NIC pair
// (the network tests' contended node pair).
inline topology::Topology two_nodes_one_nic(int g = 4) {
  ClusterShape c;
  c.nodes = 2, c.gpus_per_node = g, c.nics = 1, c.nic_bw = 10e9, c.nic_lat = 5e-6;
  return make_cluster(c);
}

// loads[layer][gpu][expert] with every GPU routing `per_gpu` assignments evenly over the E experts.
inline std::vector<double> uniform_loads(int L, int n, int E, double per_gpu) {
  return std::vector<double>(static_cast<size_t>(L) * n * E, per_gpu / E);
}
// 2 MoE blocks, d_model 512, 8 experts of d_ffn 1024, top-2, 2 x 1024 tokens per GPU.
inline workload::ModelSpec tiny_moe_model() { return small_moe_model("tiny", 8, 2, 1024, 2); }

}  // namespace hs::test
