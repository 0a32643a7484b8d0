// Connectivity of a topology's GPUs: can every GPU send to every other over the links as given?
//
// Checked once when a topology is built (TopologyBuilder::build), before routes are searched, so
// that a topology with a missing link is refused with one error that names the groups of GPUs the
// links leave apart, instead of one "no path" per pair (N^2 lines for N GPUs) from the route search.
//
// The graph is the vertices (GPUs, switches, NICs) and the directed links (a duplex link is two).
// Every GPU reaches every other iff all GPUs lie in one strongly connected component (Tarjan's
// algorithm, Boost.Graph's strong_components, O(V + E)). Here a GPU may forward traffic, which the
// route search allows only as an NVLink relay (pair_routes.hpp), so this is the physical check;
// a pair that is connected only through a GPU that may not forward is still reported, per pair,
// by the route search.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace hs::topology {

struct GpuGroups {
  // The GPUs of each strongly connected component holding at least one GPU, ordered by their
  // lowest GPU index; GPUs ascending within a group. One group: every pair is connected.
  std::vector<std::vector<int>> groups;
  // When there are several groups: a pair (src, dst) of GPUs with no path from src to dst.
  int unreachable_src = -1, unreachable_dst = -1;
};

// Over the vertices, the directed links between them and each GPU's vertex (a Topology's, before
// or after it is sealed).
GpuGroups gpu_groups(std::span<const Vertex> vertices, std::span<const Link> links,
                     std::span<const VertexId> gpu_vertex);

// "2 groups: {a, b} (2 GPUs), {c, d} (2 GPUs); e.g. no path from GPU 0 (a) to GPU 2 (c)": at most
// `max_names` names per group and `max_groups` groups, then how many more.
std::string describe_gpu_groups(std::span<const Vertex> vertices, std::span<const VertexId> gpu_vertex,
                                const GpuGroups& g, size_t max_names = 8, size_t max_groups = 4);

}  // namespace hs::topology
