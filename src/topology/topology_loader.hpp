// Topology YAML (schema hecate-sim/topology@1), compact or explicit form, see topologies/README.md.
// Both forms go through TopologyBuilder; errors name file:line:col and the field.
#pragma once

#include <string>

#include "topology/topology.hpp"
#include "topology/topology_builder.hpp"

namespace hs::topology {

// `adjust` (a calibration) changes the bandwidth and latency of the links of its classes and the GPU's
// overlap slowdowns.
Topology load_topology(const std::string& text, const std::string& file, const TopologyAdjust* adjust = nullptr);
Topology load_topology_file(const std::string& path);

}  // namespace hs::topology
