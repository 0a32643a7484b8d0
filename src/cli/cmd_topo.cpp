// hecate-sim topo show|validate TOPOLOGY: what the simulator understood of a topology.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <memory>

#include "collective/p2p_channels.hpp"
#include "cli/command.hpp"
#include "app/presets.hpp"
#include "topology/topology_loader.hpp"

namespace hs::cli {

namespace {

// The vertices a route passes, "a -> b -> c"; where ECMP splits it, the split is named instead.
std::string route_path(const topology::Topology& t, int a, int b) {
  const auto r = t.route(a, b);
  topology::VertexId v = t.gpu_vertex(a);
  std::string out = t.vertices()[v].name;
  for (int step = 0; step < r.hop_count && v != t.gpu_vertex(b); ++step) {
    std::vector<topology::VertexId> next;
    for (const auto& h : r.hops)
      if (t.link(h.link).from == v) next.push_back(t.link(h.link).to);
    if (next.size() != 1) return out + fmt::format(" -> (split evenly over {} next hops)", next.size());
    v = next[0];
    out += " -> " + t.vertices()[v].name;
  }
  return out;
}

// nvidia-smi topo -m for node 0 when its GPUs have NVLinks of their own (a hybrid cube-mesh or
// explicit GPU-GPU links): NV<k> = k times the node's thinnest GPU-GPU link, "via g" = relayed
// through GPU g (several: the bytes split evenly).
std::string nvlink_matrix(const topology::Topology& t) {
  const auto gpus = t.node_gpus(0);
  const auto& vs = t.vertices();
  double thinnest = 0;
  for (const auto& l : t.links())
    if (vs[l.from].kind == topology::VertexKind::kGpu && vs[l.to].kind == topology::VertexKind::kGpu &&
        vs[l.from].node == 0)
      thinnest = thinnest == 0 ? l.line_rate.value() : std::min(thinnest, l.line_rate.value());
  if (thinnest == 0 || gpus.size() > 16) return "";
  std::string o;
  auto it = std::back_inserter(o);
  fmt::format_to(it, "GPU-GPU paths in node 0 (NV<k>: k x {} line; via g: relayed through GPU g over two NVLinks):\n        ",
                 format_bandwidth(Bandwidth(thinnest)));
  for (int b : gpus) fmt::format_to(it, "{:>9}", fmt::format("gpu{}", b));
  fmt::format_to(it, "\n");
  for (int a : gpus) {
    fmt::format_to(it, "  {:<6}", fmt::format("gpu{}", a));
    for (int b : gpus) {
      std::string cell = "-";
      if (a != b) {
        std::vector<int> via;
        const topology::Link* direct = nullptr;
        for (const auto& h : t.route(a, b).hops) {
          const auto& l = t.link(h.link);
          if (l.from == t.gpu_vertex(a) && l.to == t.gpu_vertex(b)) direct = &l;
          else if (l.from == t.gpu_vertex(a) && vs[l.to].kind == topology::VertexKind::kGpu)
            for (int g : gpus)
              if (t.gpu_vertex(g) == l.to) via.push_back(g);
        }
        if (direct) {
          cell = fmt::format("NV{:g}", std::round(direct->line_rate.value() / thinnest * 10) / 10);
        } else if (!via.empty()) {
          cell = "via ";
          for (size_t i = 0; i < via.size(); ++i) cell += (i ? "," : "") + std::to_string(via[i]);
        } else {
          cell = t.link(t.route(a, b).hops[0].link).link_class;
        }
      }
      fmt::format_to(it, "{:>9}", cell);
    }
    fmt::format_to(it, "\n");
  }
  return o;
}

std::string show(const topology::Topology& t, const std::string& source) {
  std::string o;
  auto it = std::back_inserter(o);
  const auto& g = t.gpu_model();
  fmt::format_to(it, "topology: {} ({})\n  {}\n", t.name(), source, t.description);
  fmt::format_to(it, "GPUs: {} x {} in {} node(s): {:.0f} TFLOP/s bf16, HBM {}, {}\n", t.num_gpus(), g.model,
                 t.num_nodes(), g.peak_flops.value() / 1e12, format_bandwidth(g.hbm_bandwidth), format_bytes(g.memory));
  struct ClassInfo { int count = 0; double line = 0, eff = 0, lat = 0; };
  std::map<std::string, std::map<std::pair<double, double>, ClassInfo>> classes;
  for (const auto& l : t.links()) {
    auto& c = classes[l.link_class][{l.line_rate.value(), l.latency.value()}];
    ++c.count;
    c.line = l.line_rate.value();
    c.eff = l.efficiency;
    c.lat = l.latency.value();
  }
  fmt::format_to(it, "links (directed, per direction):\n");
  for (const auto& [cls, variants] : classes)
    for (const auto& [key, c] : variants)
      fmt::format_to(it, "  {:<7} x{:<5} line {:>11}  efficiency {:.3f}  effective {:>11}  latency {}\n", cls, c.count,
                     format_bandwidth(Bandwidth(c.line)), c.eff, format_bandwidth(Bandwidth(c.line * c.eff)),
                     format_time(Seconds(c.lat)));
  {
    // NCCL's grouped send/receive over the whole machine (collective/p2p_channels.hpp).
    const collective::P2pChannels p2p(t);
    fmt::format_to(it, "NCCL send/receive (all {} GPUs as one communicator): {} channels, {} per peer, {} batch(es); "
                   "a connection reaches at most {} to another node, {} inside a node\n",
                   t.num_gpus(), p2p.channels(), p2p.channels_per_peer(), p2p.rounds(),
                   t.num_nodes() > 1 ? format_bandwidth(Bandwidth(p2p.net_cap())) : std::string("-"),
                   p2p.local_cap() > 0 ? format_bandwidth(Bandwidth(p2p.local_cap())) : std::string("its links"));
  }
  fmt::format_to(it, "point-to-point (effective bottleneck bandwidth, latency, hops):\n");
  if (t.num_gpus() > 1 && t.gpus_in_node(0) > 1) {
    const int a = t.node_gpus(0)[0], b = t.node_gpus(0)[1];
    auto r = t.route(a, b);
    fmt::format_to(it, "  intra-node gpu{} -> gpu{}: {:>11}  {}  {} hops\n", a, b,
                   format_bandwidth(t.route_bandwidth(a, b)), format_time(r.latency), r.hop_count);
  }
  if (t.num_nodes() > 1) {
    const int a = t.node_gpus(0)[0], b = t.node_gpus(1)[0];
    auto r = t.route(a, b);
    fmt::format_to(it, "  inter-node gpu{} -> gpu{}: {:>11}  {}  {} hops\n", a, b,
                   format_bandwidth(t.route_bandwidth(a, b)), format_time(r.latency), r.hop_count);
    const int c = t.node_gpus(1)[t.gpus_in_node(1) - 1];
    auto r2 = t.route(a, c);
    fmt::format_to(it, "  inter-node gpu{} -> gpu{}: {:>11}  {}  {} hops (different rail)\n", a, c,
                   format_bandwidth(t.route_bandwidth(a, c)), format_time(r2.latency), r2.hop_count);
    fmt::format_to(it, "  route gpu{} -> gpu{}: {}\n", a, b, route_path(t, a, b));
  }
  if (t.num_gpus() > 1) o += nvlink_matrix(t);
  return o;
}

}  // namespace

void setup_topo(CLI::App& sub, int& exit_code) {
  sub.require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* s = sub.add_subcommand("show", "print GPUs, nodes, link classes and point-to-point bandwidths");
  s->add_option("TOPOLOGY", *file, "topology YAML or preset name")->required();
  s->callback([file, &exit_code] {
    auto in = resolve_input(*file, "topologies");
    auto t = topology::load_topology(in.text, in.source);
    fmt::print("{}", show(t, in.source));
    exit_code = 0;
  });
  auto file2 = std::make_shared<std::string>();
  auto* v = sub.add_subcommand("validate", "check a topology file; exit 2 with located errors if bad");
  v->add_option("TOPOLOGY", *file2, "topology YAML or preset name")->required();
  v->callback([file2, &exit_code] {
    auto in = resolve_input(*file2, "topologies");
    auto t = topology::load_topology(in.text, in.source);
    fmt::print("{}: ok: {} GPUs in {} node(s), {} directed links\n", in.source, t.num_gpus(), t.num_nodes(), t.num_links());
    exit_code = 0;
  });
}

}  // namespace hs::cli
