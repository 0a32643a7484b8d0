// NCCL's NVLS all-reduce inside one NVSwitch node with in-switch reduction (NVLink SHARP, H100 and
// later): each GPU owns 1/n of the buffer; the switch reads that slice from all n GPUs, reduces it
// and returns it to the owner (multimem load-reduce), then the owner writes it once and the switch
// multicasts it to all n GPUs (multimem store). Per GPU port: S + S/n up and S/n + S down, against
// 2(n-1)/n S each way for a ring: 8 GPUs move 1.125 S instead of 1.75 S (the ~1.5x NCCL reports).
//
// Network tiers route GPU-to-GPU transfers only; a non-blocking switch is limited by its ports, so
// the switch traffic is expressed as transfers with the same per-port loads: GPU i sends
// S (n + 1) / n to GPU i+1 (cyclically), which loads every uplink and every downlink by exactly that.
#pragma once

#include <span>

#include "collective/transfer.hpp"
#include "topology/topology.hpp"

namespace hs::collective {

// The topology reduces in its switches and the group (2+ GPUs) sits inside one node.
bool nvls_applicable(const topology::Topology& topo, std::span<const int> group);
// `extra_latency`: one route latency for the second (multicast) phase.
Coflow nvls_all_reduce_flows(const topology::Topology& topo, std::span<const int> group, double bytes,
                             double& extra_latency);

}  // namespace hs::collective
