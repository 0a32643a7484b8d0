#include "topology/connectivity.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/strong_components.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace hs::topology {

namespace {
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
}  // namespace

GpuGroups gpu_groups(std::span<const Vertex> vertices, std::span<const Link> links,
                     std::span<const VertexId> gpu_vertex) {
  Graph graph(vertices.size());
  for (const Link& l : links) boost::add_edge(static_cast<size_t>(l.from), static_cast<size_t>(l.to), graph);

  std::vector<int> component(vertices.size());
  boost::strong_components(graph, boost::make_iterator_property_map(component.begin(),
                                                                     boost::get(boost::vertex_index, graph)));
  GpuGroups out;
  std::map<int, size_t> group_of_component;  // in order of first GPU: GPUs are visited ascending
  for (size_t g = 0; g < gpu_vertex.size(); ++g) {
    const int c = component[static_cast<size_t>(gpu_vertex[g])];
    auto [it, added] = group_of_component.try_emplace(c, out.groups.size());
    if (added) out.groups.emplace_back();
    out.groups[it->second].push_back(static_cast<int>(g));
  }
  if (out.groups.size() < 2) return out;

  // A direction that fails: from group 0's first GPU to another group's, or back. With several
  // components one of the two directions between any two of them has no path.
  std::vector<boost::default_color_type> color(vertices.size(), boost::white_color);
  const auto colors = boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, graph));
  const int a = out.groups[0].front(), b = out.groups[1].front();
  boost::breadth_first_search(graph, static_cast<size_t>(gpu_vertex[static_cast<size_t>(a)]), boost::color_map(colors));
  const bool a_reaches_b = color[static_cast<size_t>(gpu_vertex[static_cast<size_t>(b)])] != boost::white_color;
  out.unreachable_src = a_reaches_b ? b : a;
  out.unreachable_dst = a_reaches_b ? a : b;
  return out;
}

std::string describe_gpu_groups(std::span<const Vertex> vertices, std::span<const VertexId> gpu_vertex,
                                const GpuGroups& g, size_t max_names, size_t max_groups) {
  const auto name = [&](int gpu) { return vertices[static_cast<size_t>(gpu_vertex[static_cast<size_t>(gpu)])].name; };
  std::string s = fmt::format("{} groups:", g.groups.size());
  const size_t shown = std::min(g.groups.size(), max_groups);
  for (size_t i = 0; i < shown; ++i) {
    const auto& group = g.groups[i];
    s += i == 0 ? " {" : ", {";
    for (size_t k = 0; k < std::min(group.size(), max_names); ++k) s += (k ? ", " : "") + name(group[k]);
    if (group.size() > max_names) s += fmt::format(", ... {} more", group.size() - max_names);
    s += fmt::format("}} ({} GPU{})", group.size(), group.size() == 1 ? "" : "s");
  }
  if (g.groups.size() > shown) s += fmt::format(", ... {} more groups", g.groups.size() - shown);
  if (g.unreachable_src >= 0)
    s += fmt::format("; e.g. no path from GPU {} ({}) to GPU {} ({})", g.unreachable_src, name(g.unreachable_src),
                     g.unreachable_dst, name(g.unreachable_dst));
  return s;
}

}  // namespace hs::topology
