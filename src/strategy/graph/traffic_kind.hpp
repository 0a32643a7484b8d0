// Which traffic a communication task is, for interference (engine/interference.hpp): network when
// some of its bytes go between GPUs of different nodes, else intra-node (NVLink, or the node's PCIe).
#pragma once

#include <vector>

#include "collective/transfer.hpp"
#include "engine/interference.hpp"
#include "topology/topology.hpp"

namespace hs::strategy {

engine::Traffic traffic_of(const topology::Topology& topo, const collective::Coflow& flows);
// An all-to-all's per-pair bytes (row-major, num_gpus x num_gpus).
engine::Traffic matrix_traffic(const topology::Topology& topo, const std::vector<double>& matrix);

}  // namespace hs::strategy
