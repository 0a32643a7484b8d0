#include "topology/topology_builder.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <queue>

namespace hs::topology {

Bandwidth Topology::route_bandwidth(int src, int dst) const {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& h : route(src, dst).hops) best = std::min(best, links_[h.link].bandwidth.value() / h.fraction);
  return Bandwidth(best);
}

TopologyBuilder::TopologyBuilder(std::string name, GpuModel gpu) {
  topo_.name_ = std::move(name);
  topo_.gpu_ = std::move(gpu);
}

VertexId TopologyBuilder::add_gpu(std::string name, int node) {
  topo_.vertices_.push_back({std::move(name), VertexKind::kGpu, node});
  const VertexId v = static_cast<VertexId>(topo_.vertices_.size() - 1);
  topo_.gpu_vertex_.push_back(v);
  topo_.gpu_node_.push_back(node);
  return v;
}

VertexId TopologyBuilder::add_switch(std::string name, int node) {
  topo_.vertices_.push_back({std::move(name), VertexKind::kSwitch, node});
  return static_cast<VertexId>(topo_.vertices_.size() - 1);
}

VertexId TopologyBuilder::add_nic(std::string name, int node) {
  topo_.vertices_.push_back({std::move(name), VertexKind::kNic, node});
  return static_cast<VertexId>(topo_.vertices_.size() - 1);
}

void TopologyBuilder::add_link(VertexId from, VertexId to, const LinkParams& p) {
  Link l;
  l.from = from;
  l.to = to;
  l.line_rate = p.line_rate;
  l.efficiency = p.efficiency;
  l.bandwidth = p.line_rate * p.efficiency;
  l.latency = p.latency;
  l.link_class = p.link_class;
  topo_.links_.push_back(std::move(l));
}

void TopologyBuilder::add_duplex_link(VertexId a, VertexId b, const LinkParams& p) {
  add_link(a, b, p);
  add_link(b, a, p);
}

VertexId TopologyBuilder::find(const std::string& name) const {
  for (size_t i = 0; i < topo_.vertices_.size(); ++i)
    if (topo_.vertices_[i].name == name) return static_cast<VertexId>(i);
  return -1;
}

namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property,
                                    boost::property<boost::edge_weight_t, int64_t, boost::property<boost::edge_index_t, int>>>;

// Integer routing cost of a link: prefers high-bandwidth paths (NVLink over a NIC hairpin) and makes
// identical links tie exactly, which is what lets ECMP splitting see equal-cost paths.
int64_t link_cost(const Link& l) {
  return 1 + static_cast<int64_t>(std::llround(1e13 / std::max(l.bandwidth.value(), 1.0)));
}

}  // namespace

// Dominance (see Topology::may_bind). The first route through a link proposes every other hop on it
// as a dominator; each later route through the link strikes the proposals it does not cross and
// raises the worst fraction ratio of the rest. A link is left out only if a surviving dominator
// satisfies the capacity condition and is itself kept, so two links that dominate each other
// (equal capacities, same routes) both stay.
void TopologyBuilder::compute_may_bind(Topology& t) {
  const int n = t.num_gpus();
  const size_t nl = static_cast<size_t>(t.num_links());
  struct Cand {
    LinkId link;
    double ratio;  // max over routes of fraction here / fraction on the candidate
  };
  std::vector<std::vector<Cand>> cands(nl);
  std::vector<char> seen(nl, 0);
  std::vector<double> frac_on(nl, 0.0);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      const auto hops = t.route(s, d).hops;
      for (const auto& h : hops) frac_on[h.link] = h.fraction;
      for (const auto& h : hops) {
        auto& c = cands[h.link];
        if (!seen[h.link]) {
          seen[h.link] = 1;
          for (const auto& m : hops)
            if (m.link != h.link) c.push_back({m.link, h.fraction / m.fraction});
          continue;
        }
        size_t w = 0;
        for (const Cand& x : c) {
          const double f = frac_on[x.link];
          if (f > 0) c[w++] = {x.link, std::max(x.ratio, h.fraction / f)};
        }
        c.resize(w);
      }
      for (const auto& h : hops) frac_on[h.link] = 0.0;
    }
  // dom[l]: the dominator with the most headroom, or -1.
  std::vector<LinkId> dom(nl, -1);
  for (size_t l = 0; l < nl; ++l) {
    const double cap = t.link(static_cast<LinkId>(l)).bandwidth.value();
    double best = 0;
    for (const Cand& x : cands[l]) {
      const double bound = x.ratio * t.link(x.link).bandwidth.value();
      if (bound <= cap && (dom[l] < 0 || bound < best)) best = bound, dom[l] = x.link;
    }
  }
  t.may_bind_.assign(nl, 1);
  for (size_t l = 0; l < nl; ++l)
    if (dom[l] >= 0 && dom[dom[l]] < 0) t.may_bind_[l] = 0;
}

Topology TopologyBuilder::build(const SourceLocation& where) {
  Diagnostics diags;
  Topology& t = topo_;
  const int n = t.num_gpus();
  if (n == 0) diags.error(where, "gpus", "the topology has no GPU");
  if (n > kMaxGpus)
    diags.error(where, "gpus", fmt::format("{} GPUs: this version supports at most {} (routes are precomputed for "
                                           "every GPU pair)", n, kMaxGpus));
  for (size_t i = 0; i < t.links_.size(); ++i) {
    const Link& l = t.links_[i];
    if (!(l.bandwidth.value() > 0))
      diags.error(where, fmt::format("links[{}]", i), fmt::format("link {} -> {} needs a positive bandwidth",
                                                                  t.vertices_[l.from].name, t.vertices_[l.to].name));
  }
  diags.throw_if_errors();
  int max_node = -1;
  for (int g = 0; g < n; ++g) max_node = std::max(max_node, t.gpu_node_[g]);
  t.num_nodes_ = max_node + 1;
  t.node_gpus_.assign(t.num_nodes_, {});
  for (int g = 0; g < n; ++g) t.node_gpus_[t.gpu_node_[g]].push_back(g);

  // Graph for Dijkstra, reversed so one run per destination gives every vertex's distance to it.
  const size_t nv = t.vertices_.size();
  Graph graph(nv);
  for (size_t i = 0; i < t.links_.size(); ++i) {
    const Link& l = t.links_[i];
    boost::add_edge(static_cast<size_t>(l.from), static_cast<size_t>(l.to),
                    Graph::edge_property_type(link_cost(l), static_cast<int>(i)), graph);
  }
  // GPUs do not forward traffic: drop edges out of GPUs except for the source, by giving every
  // edge that enters a GPU an infinite cost unless it is the destination (handled below by only
  // accepting paths whose interior contains no GPU).
  std::vector<std::vector<LinkId>> out_links(nv);
  for (size_t i = 0; i < t.links_.size(); ++i) out_links[t.links_[i].from].push_back(static_cast<LinkId>(i));

  const int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
  t.route_offset_.assign(static_cast<size_t>(n) * n + 1, 0);
  t.route_latency_.assign(static_cast<size_t>(n) * n, 0.f);
  t.route_hop_count_.assign(static_cast<size_t>(n) * n, 0);
  std::vector<int64_t> dist(nv);
  std::vector<double> frac(nv);
  std::vector<double> lat(nv);
  std::vector<int> hop(nv);
  std::vector<double> link_frac(t.links_.size(), 0.0);
  std::vector<LinkId> touched;
  std::vector<VertexId> order;
  // Per destination: distances to it over the reversed graph, GPUs other than dst not expanded.
  std::vector<std::vector<int64_t>> dist_to(n);
  for (int d = 0; d < n; ++d) {
    std::fill(dist.begin(), dist.end(), kInf);
    const VertexId dv = t.gpu_vertex_[d];
    using QE = std::pair<int64_t, VertexId>;
    std::priority_queue<QE, std::vector<QE>, std::greater<>> pq;
    dist[dv] = 0;
    pq.push({0, dv});
    auto rg = boost::make_reverse_graph(graph);
    auto weight = boost::get(boost::edge_weight, graph);
    while (!pq.empty()) {
      auto [du, u] = pq.top();
      pq.pop();
      if (du != dist[u]) continue;
      if (t.vertices_[u].kind == VertexKind::kGpu && u != dv) continue;  // GPUs don't forward
      for (auto [ei, ee] = boost::out_edges(static_cast<size_t>(u), rg); ei != ee; ++ei) {
        size_t w = boost::target(*ei, rg);
        int64_t nd = du + boost::get(weight, boost::get(boost::edge_underlying, rg, *ei));
        if (nd < dist[w]) {
          dist[w] = nd;
          pq.push({nd, static_cast<VertexId>(w)});
        }
      }
    }
    dist_to[d] = dist;
  }
  // Forward ECMP propagation from each source toward each destination.
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const size_t p = static_cast<size_t>(s) * n + d;
      t.route_offset_[p] = static_cast<uint32_t>(t.route_hops_.size());
      if (s == d) continue;
      const auto& dd = dist_to[d];
      const VertexId sv = t.gpu_vertex_[s], dv = t.gpu_vertex_[d];
      if (dd[sv] >= kInf) {
        diags.error(where, "links", fmt::format("no path from GPU {} ({}) to GPU {} ({})", s,
                                                t.vertices_[sv].name, d, t.vertices_[dv].name));
        continue;
      }
      // Vertices on shortest paths, processed in decreasing distance.
      order.clear();
      order.push_back(sv);
      frac[sv] = 1.0;
      size_t head = 0;
      while (head < order.size()) {
        VertexId u = order[head++];
        if (u == dv) continue;
        for (LinkId li : out_links[u]) {
          const Link& l = t.links_[li];
          const VertexId w = l.to;
          if (dd[w] >= kInf || dd[w] + link_cost(l) != dd[u]) continue;
          if (t.vertices_[w].kind == VertexKind::kGpu && w != dv) continue;
          if (std::find(order.begin(), order.end(), w) == order.end()) {
            order.push_back(w);
            frac[w] = 0.0;
          }
        }
      }
      std::sort(order.begin(), order.end(), [&](VertexId a, VertexId b) {
        return dd[a] != dd[b] ? dd[a] > dd[b] : a < b;
      });
      for (VertexId u : order) frac[u] = 0.0, lat[u] = 0.0;
      frac[sv] = 1.0;
      touched.clear();
      for (VertexId u : order) {
        if (u == dv || frac[u] == 0.0) continue;
        int nh = 0;
        for (LinkId li : out_links[u]) {
          const Link& l = t.links_[li];
          if (dd[l.to] < kInf && dd[l.to] + link_cost(l) == dd[u] &&
              (t.vertices_[l.to].kind != VertexKind::kGpu || l.to == dv))
            ++nh;
        }
        for (LinkId li : out_links[u]) {
          const Link& l = t.links_[li];
          if (dd[l.to] < kInf && dd[l.to] + link_cost(l) == dd[u] &&
              (t.vertices_[l.to].kind != VertexKind::kGpu || l.to == dv)) {
            const double f = frac[u] / nh;
            if (link_frac[li] == 0.0) touched.push_back(li);
            link_frac[li] += f;
            frac[l.to] += f;
          }
        }
      }
      // Latency and hop count of the longest equal-cost path (reverse order: from dst back).
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        VertexId u = *it;
        if (u == dv) { lat[u] = 0; hop[u] = 0; continue; }
        double best = 0;
        int best_h = 0;
        for (LinkId li : out_links[u]) {
          const Link& l = t.links_[li];
          if (link_frac[li] > 0 && l.from == u) {
            best = std::max(best, l.latency.value() + lat[l.to]);
            best_h = std::max(best_h, 1 + hop[l.to]);
          }
        }
        lat[u] = best;
        hop[u] = best_h;
      }
      std::sort(touched.begin(), touched.end());
      for (LinkId li : touched) {
        t.route_hops_.push_back({li, link_frac[li]});
        link_frac[li] = 0.0;
      }
      const int hops = hop[sv];
      t.route_latency_[p] = static_cast<float>(lat[sv]);
      t.route_hop_count_[p] = static_cast<uint8_t>(std::min(hops, 255));
    }
  }
  t.route_offset_[static_cast<size_t>(n) * n] = static_cast<uint32_t>(t.route_hops_.size());
  diags.throw_if_errors();
  compute_may_bind(t);
  return std::move(topo_);
}

Topology build_compact(const CompactSpec& s, const SourceLocation& where) {
  TopologyBuilder b(s.name, s.gpu);
  b.set_nvls(s.nvls && s.intra_kind == "nvswitch");
  const int g = s.gpus_per_node;
  std::vector<VertexId> nics;  // node-major
  for (int node = 0; node < s.nodes; ++node) {
    const VertexId sw = b.add_switch(fmt::format("node{}.{}", node, s.intra_kind), node);
    std::vector<VertexId> gpus;
    for (int i = 0; i < g; ++i) {
      gpus.push_back(b.add_gpu(fmt::format("node{}.gpu{}", node, i), node));
      LinkParams p = s.intra;
      p.link_class = s.intra_kind == "pcie" ? "pcie" : "nvlink";
      b.add_duplex_link(gpus.back(), sw, p);
    }
    if (s.nodes > 1) {
      for (int k = 0; k < s.nics_per_node; ++k) {
        const VertexId nic = b.add_nic(fmt::format("node{}.nic{}", node, k), node);
        nics.push_back(nic);
        const int per = g / s.nics_per_node;
        for (int i = k * per; i < (k + 1) * per; ++i) {
          LinkParams p = s.pcie;
          p.link_class = "pcie";
          b.add_duplex_link(gpus[i], nic, p);
        }
      }
    }
  }
  if (s.nodes > 1) {
    LinkParams nicp = s.nic;
    nicp.link_class = "nic";
    const int k = s.nics_per_node;
    if (s.fabric_kind == "single-switch") {
      const VertexId core = b.add_switch("fabric.core");
      LinkParams p = nicp;
      p.latency = p.latency + s.switch_latency;
      for (VertexId nic : nics) b.add_duplex_link(nic, core, p);
    } else {
      // Leaves: rail-optimized = leaf r joins NIC r of every node; fat-tree = leaf per group of
      // nodes_per_leaf nodes. Spines join every leaf; uplink capacity = downlink / oversubscription.
      std::vector<std::vector<VertexId>> leaf_ports;
      if (s.fabric_kind == "rail-optimized") {
        leaf_ports.assign(k, {});
        for (int node = 0; node < s.nodes; ++node)
          for (int r = 0; r < k; ++r) leaf_ports[r].push_back(nics[static_cast<size_t>(node) * k + r]);
      } else {
        const int groups = (s.nodes + s.nodes_per_leaf - 1) / s.nodes_per_leaf;
        leaf_ports.assign(groups, {});
        for (int node = 0; node < s.nodes; ++node)
          for (int r = 0; r < k; ++r)
            leaf_ports[node / s.nodes_per_leaf].push_back(nics[static_cast<size_t>(node) * k + r]);
      }
      const int leaves = static_cast<int>(leaf_ports.size());
      std::vector<VertexId> leaf_v;
      for (int i = 0; i < leaves; ++i) {
        leaf_v.push_back(b.add_switch(fmt::format("fabric.leaf{}", i)));
        LinkParams p = nicp;
        p.latency = p.latency + s.switch_latency;
        for (VertexId nic : leaf_ports[i]) b.add_duplex_link(nic, leaf_v.back(), p);
      }
      if (leaves > 1) {
        const int spines = s.spines > 0 ? s.spines : std::max(1, static_cast<int>(leaf_ports[0].size()));
        std::vector<VertexId> spine_v;
        for (int i = 0; i < spines; ++i) spine_v.push_back(b.add_switch(fmt::format("fabric.spine{}", i)));
        for (int i = 0; i < leaves; ++i) {
          const double down = static_cast<double>(leaf_ports[i].size()) * nicp.line_rate.value();
          LinkParams up;
          up.line_rate = Bandwidth(down / s.oversubscription / spines);
          up.efficiency = nicp.efficiency;
          up.latency = s.switch_latency;
          up.link_class = "fabric";
          for (VertexId sp : spine_v) b.add_duplex_link(leaf_v[i], sp, up);
        }
      }
    }
  }
  return b.build(where);
}

}  // namespace hs::topology
