#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "topology/connectivity.hpp"
#include "topology/topology_loader.hpp"
#include "util/diagnostics.hpp"

using namespace hs;
using namespace hs::topology;

namespace {
std::string errors_of(const std::string& text) {
  try {
    load_topology(text, "t.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// n GPUs (vertices 0..n-1) then `switches` switches; links as (from, to) pairs, directed.
struct Graph {
  std::vector<Vertex> vertices;
  std::vector<Link> links;
  std::vector<VertexId> gpu_vertex;
  Graph(int n, int switches) {
    for (int g = 0; g < n; ++g) {
      vertices.push_back({"g" + std::to_string(g), VertexKind::kGpu, 0});
      gpu_vertex.push_back(g);
    }
    for (int s = 0; s < switches; ++s) vertices.push_back({"s" + std::to_string(s), VertexKind::kSwitch, -1});
  }
  void link(int a, int b) {
    Link l;
    l.from = a, l.to = b;
    links.push_back(l);
  }
  GpuGroups groups() const { return gpu_groups(vertices, links, gpu_vertex); }
};
}  // namespace

TEST_CASE("two nodes that share no link: one error at links:, naming both groups and a missing path") {
  // Nodes {a, b} on switch s0 and {c, d} on s1, nothing between s0 and s1: a and c are in
  // different strongly connected components, so the topology is refused before routing (exit 2
  // in the CLI), with one line instead of the route search's 8 "no path" lines (4 x 2 pairs).
  const std::string text = R"(schema: hecate-sim/topology@1
name: split
gpu: {model: X, peak_bf16: 100TFLOPS, hbm_bandwidth: 1TB/s, memory: 16GiB}
gpus: [{name: a, node: 0}, {name: b, node: 0}, {name: c, node: 1}, {name: d, node: 1}]
switches: [{name: s0}, {name: s1}]
links:
  - {from: a, to: s0, bandwidth: 10GB/s}
  - {from: b, to: s0, bandwidth: 10GB/s}
  - {from: c, to: s1, bandwidth: 10GB/s}
  - {from: d, to: s1, bandwidth: 10GB/s}
)";
  const std::string e = errors_of(text);
  CHECK(e.find("t.yaml:7:") != std::string::npos);  // the first link's line, inside links:
  CHECK(e.find("{a, b} (2 GPUs), {c, d} (2 GPUs)") != std::string::npos);
  CHECK(e.find("no path from GPU 0 (a) to GPU 2 (c)") != std::string::npos);
  CHECK(e.find("no path from GPU 1") == std::string::npos);  // one error, not one per pair

  // The same with a link between the switches loads.
  CHECK(errors_of(text + "  - {from: s0, to: s1, bandwidth: 10GB/s}\n").empty());
}

TEST_CASE("a one-way link: the missing direction is the one named") {
  // a -> b only (duplex: false): a reaches b, b does not reach a; the components are {a}, {b}.
  Graph g(2, 0);
  g.link(0, 1);
  const GpuGroups r = g.groups();
  REQUIRE(r.groups.size() == 2);
  CHECK(r.unreachable_src == 1);
  CHECK(r.unreachable_dst == 0);
  g.link(1, 0);
  CHECK(g.groups().groups.size() == 1);
  CHECK(g.groups().unreachable_src == -1);
}

TEST_CASE("the description lists at most 4 groups and 8 names per group") {
  // 12 isolated GPUs (0..11) plus GPUs 12..21 joined through switch s0: 13 groups; the first
  // shown are {g0}, {g1}, {g2}, {g3}, in order of their lowest GPU.
  Graph g(22, 1);
  for (int k = 12; k < 22; ++k) g.link(k, 22), g.link(22, k);
  const GpuGroups r = g.groups();
  REQUIRE(r.groups.size() == 13);
  CHECK(r.groups.back().size() == 10);
  const std::string s = describe_gpu_groups(g.vertices, g.gpu_vertex, r);
  CHECK(s.find("13 groups: {g0} (1 GPU), {g1} (1 GPU), {g2} (1 GPU), {g3} (1 GPU), ... 9 more groups") == 0);
  Graph h(10, 1);
  for (int k = 0; k < 9; ++k) h.link(k, 10), h.link(10, k);
  const std::string t = describe_gpu_groups(h.vertices, h.gpu_vertex, h.groups());
  CHECK(t.find("{g0, g1, g2, g3, g4, g5, g6, g7, ... 1 more} (9 GPUs), {g9} (1 GPU)") != std::string::npos);
}

TEST_CASE("property: groups are exactly the classes of mutual reachability (Floyd-Warshall closure)") {
  // Random directed graphs of 6 GPUs and 3 switches: GPUs i and j share a group iff i reaches j
  // and j reaches i in the transitive closure; the named pair is unreachable in that direction.
  uint64_t state = 12345;
  const auto next = [&] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 6, v = 9;
    Graph g(n, v - n);
    std::vector<std::vector<bool>> reach(v, std::vector<bool>(v, false));
    for (int i = 0; i < v; ++i) reach[i][i] = true;
    const int edges = static_cast<int>(next() % 16);
    for (int k = 0; k < edges; ++k) {
      const int a = static_cast<int>(next() % v), b = static_cast<int>(next() % v);
      if (a == b) continue;
      g.link(a, b);
      reach[a][b] = true;
    }
    for (int k = 0; k < v; ++k)
      for (int i = 0; i < v; ++i)
        for (int j = 0; j < v; ++j)
          if (reach[i][k] && reach[k][j]) reach[i][j] = true;
    const GpuGroups r = g.groups();
    std::vector<int> group_of(n, -1);
    for (size_t k = 0; k < r.groups.size(); ++k)
      for (int gpu : r.groups[k]) group_of[gpu] = static_cast<int>(k);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) CHECK((group_of[i] == group_of[j]) == (reach[i][j] && reach[j][i]));
    if (r.groups.size() > 1) CHECK_FALSE(reach[r.unreachable_src][r.unreachable_dst]);
    else CHECK(r.unreachable_src == -1);
  }
}
