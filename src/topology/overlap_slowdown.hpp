// The `overlap_slowdown` map of a topology's `gpu` and of a calibration file's `gpu`
// (engine/interference.hpp has what each cell means; topology.hpp, GpuModel::interference, the
// defaults and their sources):
//
//   overlap_slowdown:
//     compute: 0.189                   # every kernel class beside every traffic kind (the flat form)
//     compute: {gemm: 0.189, attention: {nvlink: 0.189, network: 0.1}, memory_bound: 0.2}
//     communication: 0                 # both traffic kinds beside compute
//     communication: {nvlink: 0, network: 0.05}
//
// A kernel class (gemm, attention, memory_bound) takes a number for both traffic kinds or a map
// {nvlink, network}; `nvlink` is traffic that stays inside a node, `network` traffic that crosses a
// NIC. Cells not named keep what they were (the preset's, or the topology's under a calibration).
// Values are relative slowdowns in [0, max]; anything else is an error at its line.
#pragma once

#include <string>

#include "engine/interference.hpp"
#include "util/yaml_reader.hpp"

namespace hs::topology {

engine::InterferenceOverride read_overlap_slowdown(const YAML::Node& n, const std::string& path, YamlContext& ctx,
                                                   double max);

}  // namespace hs::topology
