// Synthetic nccl-tests output for tests: the times the simulator gives on a topology with a known
// calibration (`truth`) applied, times (1 + noise), in nccl-tests' output format.
#pragma once

#include <fmt/format.h>
#include <cmath>
#include <string>

#include "calib/link_fit.hpp"
#include "collective/nccl_op.hpp"
#include "topology/topology_loader.hpp"
#include "util/rng.hpp"

namespace hs {

// Two nodes of 4 GPUs: NVSwitch inside (nvlink class), one NIC per node (nic class).
inline const char* const kTwoNodeTopo = R"(schema: hecate-sim/topology@1
name: two nodes
gpu: {model: H100-SXM5-80GB, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, memory: 80GiB}
nodes: 2
gpus_per_node: 4
intra_node: {kind: nvswitch, bandwidth: 450GB/s, efficiency: 0.8, latency: 3us}
nics_per_node: 1
nic: {bandwidth: 400Gbps, efficiency: 0.95, latency: 2us}
fabric: {kind: single-switch}
)";


// An nccl-tests log of `op` over `ranks` GPUs on `nodes` hosts, the times the simulator gives on the
// topology with `truth` applied (link classes and NCCL protocol factors), times (1 + noise), noise
// uniform in [-amp, amp] (seeded); sizes 8 B to 1 GiB, each `factor` times the one before.
inline std::string synthetic_log(const std::string& topo_text, collective::NcclOp op, int ranks, int nodes, const topology::TopologyAdjust& truth, double amp,
                          uint64_t seed, double factor = 4) {
  auto t = topology::load_topology(topo_text, "topology", &truth);
  collective::AnalyticNetwork net(t);
  auto group = calib::nccl_group(t, ranks, nodes, "x");
  std::string s = "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20\n#\n# Using devices\n";
  for (int r = 0; r < ranks; ++r)
    s += fmt::format("#  Rank {:2d} Group  0 Pid {:6d} on node{:02d} device {:2d} [0x18] NVIDIA H100 80GB HBM3\n", r, 1000 + r,
                     r / (ranks / nodes), r % (ranks / nodes));
  s += "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  Rng rng(seed);
  // nccl-tests' count (calib/nccl_tests_ranks.hpp): per rank for all_gather / reduce_scatter, per
  // peer for alltoall, so size = count x 4 x ranks; sizes below that are left out.
  const bool spans = op == collective::NcclOp::kAllGather || op == collective::NcclOp::kReduceScatter ||
                     op == collective::NcclOp::kAllToAll;
  for (double b = 8; b <= 1073741824.0; b *= factor) {
    const double count = spans ? b / 4 / ranks : b / 4;
    if (count != std::floor(count) || count < 1) continue;
    const double sec = collective::nccl_op_time(net, op, group, b).seconds * (1 + amp * (2 * rng.uniform() - 1));
    const double alg = b / sec / 1e9, bus = alg * collective::bus_factor(op, ranks);
    s += fmt::format("{:12.0f} {:13.0f}     float     sum      -1 {:8.2f} {:7.2f} {:7.2f}      0 {:8.2f} {:7.2f} {:7.2f}      0\n", b,
                     count, sec * 1e6, alg, bus, sec * 1e6, alg, bus);
  }
  return s;
}
}  // namespace hs
