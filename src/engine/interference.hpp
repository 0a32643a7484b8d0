// Interference between compute and communication overlapped on one device, by kind
// (Simulation::set_interference applies it; task_graph.hpp marks what each task is):
//
//   * a compute task of kernel class c progresses at 1 / (1 + compute[c][k]) of its speed while
//     communication of traffic kind k is active on one of its devices; with both kinds beside it,
//     the larger of the two slowdowns applies (the heavier interferer sets the pace; the slowdowns
//     are not added, for lack of a measurement of both at once);
//   * a communication task of traffic kind k progresses at 1 / (1 + communication[k]) while compute
//     (any class) is active on one of its devices.
//
// Why by kind: NCCL runs a collective's channels as thread blocks that take whole SMs (one block per
// channel, never sharing an SM with a compute kernel: NVIDIA/nccl issue #689, sjeaugey) and move
// its bytes through HBM; how many SMs and how much HBM bandwidth that is depends on the transport
// (issue #689: "a PCI system with a single NIC ... just launch 2 SMs ... DGX with 8 NICs ... 16
// SMs") and the kernel beside it feels it according to what bounds it (tensor cores or HBM). The
// values and their sources are in topology/topology.hpp (GpuModel::interference).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace hs::engine {

// What a compute kernel is bound by, for interference (the kernel classes the cost models have).
enum class KernelClass : uint8_t { kGemm, kAttention, kMemoryBound };
inline constexpr int kKernelClasses = 3;
// Where a communication task's bytes go: all inside one node (NVLink, or the node's PCIe), or some
// across the network (through a NIC).
enum class Traffic : uint8_t { kIntraNode, kNetwork };
inline constexpr int kTrafficKinds = 2;

inline const char* kernel_class_key(int c) { return c == 0 ? "gemm" : c == 1 ? "attention" : "memory_bound"; }
inline const char* traffic_key(int k) { return k == 0 ? "nvlink" : "network"; }

struct Interference {
  // Relative slowdowns: 0.19 = takes 1.19x as long while overlapped.
  std::array<std::array<double, kTrafficKinds>, kKernelClasses> compute{};  // [kernel class][traffic]
  std::array<double, kTrafficKinds> communication{};                        // [traffic]

  Interference() = default;
  // The flat pair of earlier versions: every kernel class beside every traffic kind, and every
  // traffic kind beside compute.
  Interference(double compute_all, double communication_all) {
    for (auto& row : compute) row.fill(compute_all);
    communication.fill(communication_all);
  }
  double compute_slowdown(KernelClass c, Traffic k) const { return compute[static_cast<int>(c)][static_cast<int>(k)]; }
  double communication_slowdown(Traffic k) const { return communication[static_cast<int>(k)]; }
  bool slows_communication() const { return communication[0] > 0 || communication[1] > 0; }
  bool active() const {
    for (const auto& row : compute)
      if (row[0] > 0 || row[1] > 0) return true;
    return slows_communication();
  }
  bool operator==(const Interference&) const = default;
};

// Some cells of an Interference (a topology's or a calibration's `overlap_slowdown`): those set
// replace the ones they are applied to, the rest are kept.
struct InterferenceOverride {
  std::array<std::array<std::optional<double>, kTrafficKinds>, kKernelClasses> compute{};
  std::array<std::optional<double>, kTrafficKinds> communication{};

  bool any() const {
    for (const auto& row : compute)
      if (row[0] || row[1]) return true;
    return communication[0] || communication[1];
  }
  bool any_communication() const { return communication[0] || communication[1]; }
  void apply(Interference& i) const {
    for (int c = 0; c < kKernelClasses; ++c)
      for (int k = 0; k < kTrafficKinds; ++k)
        if (compute[c][k]) i.compute[c][k] = *compute[c][k];
    for (int k = 0; k < kTrafficKinds; ++k)
      if (communication[k]) i.communication[k] = *communication[k];
  }
};

// One line for the resolved settings ("compute beside nvlink / network traffic: gemm 0.189 / 0.189,
// ...") and the same as a JSON object ({"compute": {"gemm": {"nvlink": .., "network": ..}, ..},
// "communication": {"nvlink": .., "network": ..}}).
std::string describe(const Interference& i);
std::string to_json(const Interference& i);

}  // namespace hs::engine
