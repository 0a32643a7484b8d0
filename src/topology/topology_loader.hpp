// Topology YAML (schema hecate-sim/topology@1), compact or explicit form, see topologies/README.md.
// Both forms go through TopologyBuilder; errors name file:line:col and the field.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace hs::topology {

Topology load_topology(const std::string& text, const std::string& file);
Topology load_topology_file(const std::string& path);

}  // namespace hs::topology
