#include "topology/topology_loader.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "topology/overlap_slowdown.hpp"
#include "topology/topology_builder.hpp"
#include "util/atomic_file.hpp"
#include "util/yaml_reader.hpp"

namespace hs::topology {

std::optional<double> infer_compute_capability(std::string_view model) {
  struct Family {
    std::string_view name;
    double cc;
  };
  // Matched as words (below), so the order does not matter: "A10" does not match "A100", "H200" does
  // not match "GH200".
  static constexpr std::array<Family, 16> kFamilies{{{"P100", 6.0}, {"V100", 7.0}, {"T4", 7.5}, {"A100", 8.0},
                                                     {"A800", 8.0}, {"A30", 8.0}, {"A10", 8.6}, {"A40", 8.6},
                                                     {"L4", 8.9}, {"L40", 8.9}, {"H100", 9.0}, {"H800", 9.0},
                                                     {"H200", 9.0}, {"GH200", 9.0}, {"B100", 10.0},
                                                     {"B200", 10.0}}};
  std::string up(model);
  for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  for (const auto& f : kFamilies) {
    // As a word: not preceded by a letter or digit, not followed by a digit ("A10" is not "A100";
    // "L40S" is an L40).
    for (size_t at = up.find(f.name); at != std::string::npos; at = up.find(f.name, at + 1)) {
      const size_t end = at + f.name.size();
      if ((at == 0 || !alnum(up[at - 1])) && (end == up.size() || !digit(up[end]))) return f.cc;
    }
  }
  return std::nullopt;
}

std::optional<int> infer_sm_count(std::string_view model) {
  const auto cc = infer_compute_capability(model);
  if (!cc) return std::nullopt;
  std::string up(model);
  for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto has = [&](std::string_view family) {  // as a word, as infer_compute_capability matches it
    for (size_t at = up.find(family); at != std::string::npos; at = up.find(family, at + 1)) {
      const size_t end = at + family.size();
      if ((at == 0 || !std::isalnum(static_cast<unsigned char>(up[at - 1]))) &&
          (end == up.size() || !std::isdigit(static_cast<unsigned char>(up[end]))))
        return true;
    }
    return false;
  };
  if (has("V100")) return 80;
  if (has("A100")) return 108;
  if (has("H100")) return up.find("PCIE") != std::string::npos ? 114 : 132;
  if (has("H800") || has("H200")) return 132;
  return std::nullopt;
}

namespace {

GpuModel read_gpu(const YAML::Node& n, YamlContext& ctx) {
  GpuModel g;
  MapReader r(n, "gpu", ctx);
  g.model = r.str("model").value_or("");
  g.peak_flops = FlopRate(r.quantity("peak_bf16", Dimension::kFlopRate).value_or(0));
  g.peak_fp8 = FlopRate(r.quantity("peak_fp8", Dimension::kFlopRate, false).value_or(0));
  g.hbm_bandwidth = Bandwidth(r.quantity("hbm_bandwidth", Dimension::kBandwidth).value_or(0));
  g.memory = Bytes(r.quantity("memory", Dimension::kBytes).value_or(0));
  // compute_capability: MAJOR.MINOR as CUDA writes it (7.0, 7.5, 8.0, 8.6, 9.0, 10.0); absent: inferred
  // from the model name, else 8.0 (GpuModel's default; topologies/README.md).
  if (YAML::Node c = r.child("compute_capability", false); c.IsDefined()) {
    double v = 0;
    bool ok = false;
    if (c.IsScalar()) {
      const std::string& s = c.Scalar();
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      const double tenths = v * 10;
      ok = ec == std::errc() && p == s.data() + s.size() && std::isfinite(v) && v >= 1.0 && v < 100.0 &&
           std::abs(tenths - std::round(tenths)) < 1e-9;
    }
    if (ok)
      g.compute_capability = std::round(v * 10) / 10;
    else
      r.error("compute_capability",
              fmt::format("expected a CUDA compute capability MAJOR.MINOR such as 7.0, 8.0 or 9.0, got {}",
                          c.IsScalar() ? fmt::format("'{}'", c.Scalar()) : describe_yaml_type(c)));
  } else if (auto cc = infer_compute_capability(g.model)) {
    g.compute_capability = *cc;
  }
  // sms: the streaming multiprocessors (the tile/wave GEMM model's wave); absent: inferred from the name.
  if (auto v = r.integer("sms", false, 1, 100000))
    g.sms = static_cast<int>(*v);
  else
    g.sms = infer_sm_count(g.model).value_or(0);
  // overlap_slowdown: {compute: 0.189 | {gemm: .., attention: .., memory_bound: ..}, communication: 0 |
  // {nvlink: .., network: ..}} (relative; overlap_slowdown.hpp the syntax, topology.hpp the sources).
  if (YAML::Node o = r.child("overlap_slowdown", false); o.IsDefined())
    read_overlap_slowdown(o, "gpu.overlap_slowdown", ctx, 10.0).apply(g.interference);
  r.finish();
  return g;
}

// {bandwidth, efficiency, latency}
LinkParams read_link_params(const YAML::Node& n, const std::string& path, YamlContext& ctx,
                            std::initializer_list<const char*> extra_keys, MapReader** keep = nullptr) {
  (void)keep;
  LinkParams p;
  MapReader r(n, path, ctx);
  p.line_rate = Bandwidth(r.quantity("bandwidth", Dimension::kBandwidth).value_or(1));
  if (p.line_rate.value() <= 0) r.error("bandwidth", "expected a positive bandwidth");
  p.efficiency = r.number("efficiency", false, 0.01, 1.0).value_or(1.0);
  p.latency = Seconds(r.quantity("latency", Dimension::kTime, false).value_or(0));
  for (const char* k : extra_keys) r.child(k, false);  // read by the caller
  r.finish();
  return p;
}

Topology load_explicit(MapReader& r, const std::string& name, const GpuModel& gpu, YamlContext& ctx,
                       const TopologyAdjust* adjust, const NcclConfig& nccl) {
  TopologyBuilder b(name, gpu);
  b.set_adjust(adjust);
  b.set_nccl(nccl);
  YAML::Node gpus = r.child("gpus");
  YAML::Node switches = r.child("switches", false);
  YAML::Node nics = r.child("nics", false);
  YAML::Node links = r.child("links");
  auto add_named = [&](const YAML::Node& list, const char* field, VertexKind kind) {
    if (!list.IsDefined()) return;
    if (!list.IsSequence()) {
      ctx.diags->error(ctx.at(list), field, "expected a list");
      return;
    }
    for (size_t i = 0; i < list.size(); ++i) {
      MapReader e(list[i], fmt::format("{}[{}]", field, i), ctx);
      auto nm = e.str("name");
      int node = static_cast<int>(e.integer("node", kind == VertexKind::kGpu, 0, 1 << 20).value_or(-1));
      e.finish();
      if (!nm) continue;
      if (b.find(*nm) >= 0) {
        e.error("name", fmt::format("'{}' is declared twice", *nm));
        continue;
      }
      if (kind == VertexKind::kGpu) b.add_gpu(*nm, node);
      else if (kind == VertexKind::kNic) b.add_nic(*nm, node);
      else b.add_switch(*nm, node);
    }
  };
  add_named(gpus, "gpus", VertexKind::kGpu);
  add_named(switches, "switches", VertexKind::kSwitch);
  add_named(nics, "nics", VertexKind::kNic);
  if (links.IsDefined()) {
    if (!links.IsSequence()) ctx.diags->error(ctx.at(links), "links", "expected a list of links");
    else
      for (size_t i = 0; i < links.size(); ++i) {
        std::string path = fmt::format("links[{}]", i);
        MapReader e(links[i], path, ctx);
        auto from = e.str("from");
        auto to = e.str("to");
        LinkParams p;
        p.line_rate = Bandwidth(e.quantity("bandwidth", Dimension::kBandwidth).value_or(0));
        if (e.has("bandwidth") && p.line_rate.value() <= 0) e.error("bandwidth", "expected a positive bandwidth");
        p.efficiency = e.number("efficiency", false, 0.01, 1.0).value_or(1.0);
        p.latency = Seconds(e.quantity("latency", Dimension::kTime, false).value_or(0));
        p.link_class = e.choice("class", {"nvlink", "pcie", "nic", "fabric"}, false).value_or("fabric");
        bool duplex = e.boolean("duplex", false).value_or(true);
        VertexId a = -1, c = -1;
        if (from && (a = b.find(*from)) < 0) e.error("from", fmt::format("no GPU, switch or NIC named '{}'", *from));
        if (to && (c = b.find(*to)) < 0) e.error("to", fmt::format("no GPU, switch or NIC named '{}'", *to));
        e.finish();
        if (a < 0 || c < 0 || p.line_rate.value() <= 0) continue;
        if (a == c) {
          e.error("to", "a link cannot join a vertex to itself");
          continue;
        }
        if (duplex) b.add_duplex_link(a, c, p);
        else b.add_link(a, c, p);
      }
  }
  ctx.diags->throw_if_errors();
  b.set_description("explicit nodes/links");
  const SourceLocation links_where = links.IsDefined() ? ctx.at(links) : r.where();
  return b.build(r.where(), &links_where);
}

// `nccl:` (topologies/README.md): NCCL's point-to-point configuration; absent keys keep NCCL's
// defaults (topology/nccl_config.hpp).
NcclConfig read_nccl(MapReader& parent, YamlContext& ctx) {
  NcclConfig c;
  if (!parent.has("nccl")) return c;
  MapReader r(parent.child("nccl"), "nccl", ctx);
  auto pow2 = [&](const char* key, int lo, int hi, int fallback) {
    const auto v = r.integer(key, false, lo, hi);
    if (!v) return fallback;
    if ((*v & (*v - 1)) != 0)
      r.error(key, fmt::format("{} is not a power of two (NCCL rounds its point-to-point channel counts up to "
                               "one; write the count NCCL ends up with)", *v));
    return static_cast<int>(*v);
  };
  c.p2p_channels = pow2("p2p_channels", 1, 64, c.p2p_channels);
  c.channels_per_net_peer = pow2("channels_per_net_peer", 1, 64, 0);
  for (auto [key, out] : {std::pair{"net_channel_bandwidth", &c.net_channel_bandwidth},
                          std::pair{"nvlink_channel_bandwidth", &c.nvlink_channel_bandwidth}})
    if (auto b = r.quantity(key, Dimension::kBandwidth, false)) {
      if (*b > 0) *out = Bandwidth(*b);
      else r.error(key, "must be a positive bandwidth (bytes/s of one channel)");
    }
  // NCCL_ALGO / NCCL_PROTO (a comma list of what stays enabled) and NCCL_MIN_CTAS / NCCL_MAX_CTAS.
  auto list = [&](const char* key, std::initializer_list<const char*> known, std::vector<std::string>& out) {
    const auto v = r.str(key, false);
    if (!v) return;
    std::string item;
    std::string all = *v + ",";
    for (char ch : all) {
      if (ch != ',') {
        if (ch != ' ') item += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        continue;
      }
      bool ok = false;
      for (const char* k : known) ok = ok || item == k;
      if (!ok) {
        std::string names;
        for (const char* k : known) names += std::string(names.empty() ? "" : ", ") + k;
        r.error(key, fmt::format("'{}' is not one of {} (a comma-separated list, as NCCL_{} takes)", item, names,
                                 std::string(key) == "algo" ? "ALGO" : "PROTO"));
        return;
      }
      out.push_back(item);
      item.clear();
    }
  };
  list("algo", {"ring", "tree", "nvls", "nvls_tree", "nvlstree", "pat"}, c.algos);
  for (auto& a : c.algos)
    if (a == "nvls_tree") a = "nvlstree";
  list("proto", {"ll", "ll128", "simple"}, c.protos);
  c.min_ctas = static_cast<int>(r.integer("min_ctas", false, 1, 64).value_or(0));
  c.max_ctas = static_cast<int>(r.integer("max_ctas", false, 1, 64).value_or(0));
  if (c.min_ctas > 0 && c.max_ctas > 0 && c.min_ctas > c.max_ctas)
    r.error("min_ctas", fmt::format("{} is above max_ctas {}", c.min_ctas, c.max_ctas));
  r.finish();
  return c;
}

}  // namespace

Topology load_topology(const std::string& text, const std::string& file, const TopologyAdjust* adjust) {
  Diagnostics diags;
  YamlContext ctx{file, &diags};
  YAML::Node root = parse_yaml(text, ctx);
  diags.throw_if_errors();
  MapReader r(root, "", ctx);
  if (!r.valid()) diags.throw_if_errors();
  if (auto s = r.str("schema")) {
    if (*s != "hecate-sim/topology@1")
      r.error("schema", fmt::format("this version reads 'hecate-sim/topology@1', got '{}'", *s));
  }
  std::string name = r.str("name").value_or("");
  GpuModel gpu = read_gpu(r.child("gpu"), ctx);
  if (adjust) adjust->interference.apply(gpu.interference);
  // A calibration the topology names (a path relative to the topology file); applied by the caller.
  const std::string calibration = r.has("calibration") ? r.str("calibration", false).value_or("") : "";
  NcclConfig nccl = read_nccl(r, ctx);
  if (adjust) nccl.proto_scale = adjust->protocols, nccl.net_step_latency = adjust->net_step_latency;
  const bool explicit_form = r.has("links");
  if (explicit_form) {
    for (const char* k : {"nodes", "gpus_per_node", "intra_node", "nics_per_node", "nic", "fabric", "pcie"})
      if (r.has(k)) r.error(k, "the explicit form (links:) cannot be mixed with compact-form keys");
    Topology t = load_explicit(r, name, gpu, ctx, adjust, nccl);
    r.finish();
    diags.throw_if_errors();
    t.calibration_file = calibration;
    return t;
  }
  CompactSpec s;
  s.name = name;
  s.gpu = gpu;
  s.nccl = nccl;
  s.nodes = static_cast<int>(r.integer("nodes", true, 1, 1 << 16).value_or(1));
  s.gpus_per_node = static_cast<int>(r.integer("gpus_per_node", true, 1, 1024).value_or(1));
  if (static_cast<long long>(s.nodes) * s.gpus_per_node > kMaxGpus)
    r.error("nodes", fmt::format("{} nodes x {} GPUs = {} GPUs: this version supports at most {}", s.nodes, s.gpus_per_node,
                                 static_cast<long long>(s.nodes) * s.gpus_per_node, kMaxGpus));
  {
    YAML::Node in = r.child("intra_node");
    s.intra = read_link_params(in, "intra_node", ctx, {"kind", "nvls"});
    if (in.IsDefined() && in.IsMap()) {
      MapReader k(in, "intra_node", ctx);
      s.intra_kind = k.choice("kind", {"nvswitch", "nvlink-mesh", "hybrid-cube-mesh", "pcie"}).value_or("nvswitch");
      s.nvls = k.boolean("nvls", false).value_or(false);
      if (s.nvls && s.intra_kind != "nvswitch")
        k.error("nvls", fmt::format("NVLink SHARP (nvls: true) needs kind: nvswitch, not {}", s.intra_kind));
      if (s.intra_kind == "hybrid-cube-mesh" && s.gpus_per_node != 8)
        k.error("kind", fmt::format("hybrid-cube-mesh is the 8-GPU NVLink layout of a DGX-1 / p3dn.24xlarge (bandwidth "
                                    "per NVLink): needs gpus_per_node: 8, got {}", s.gpus_per_node));
    }
  }
  s.nics_per_node = static_cast<int>(r.integer("nics_per_node", s.nodes > 1, 1, 1024).value_or(0));
  if (s.nodes > 1 || r.has("nic")) {
    YAML::Node nic = r.child("nic", s.nodes > 1);
    s.nic = read_link_params(nic, "nic", ctx, {"gpudirect_rdma"});
    if (nic.IsDefined() && nic.IsMap()) {
      MapReader k(nic, "nic", ctx);
      s.gpudirect_rdma = k.boolean("gpudirect_rdma", false).value_or(true);
    }
  }
  s.pcie.line_rate = Bandwidth(64e9);  // PCIe gen5 x16 per direction (~64 GB/s); override with pcie:
  s.pcie.latency = Seconds(1e-6);
  if (r.has("pcie")) {
    YAML::Node pcie = r.child("pcie");
    s.pcie = read_link_params(pcie, "pcie", ctx, {"gpus_per_switch"});
    if (pcie.IsMap()) {
      MapReader k(pcie, "pcie", ctx);
      s.gpus_per_pcie_switch = static_cast<int>(k.integer("gpus_per_switch", false, 1, 1024).value_or(0));
      if (s.gpus_per_pcie_switch > 0 && s.gpus_per_node % s.gpus_per_pcie_switch != 0)
        k.error("gpus_per_switch", fmt::format("gpus_per_node {} must be a multiple of gpus_per_switch {} (every "
                                               "PCIe switch holds the same number of GPUs)",
                                               s.gpus_per_node, s.gpus_per_pcie_switch));
    }
  }
  if (s.nodes > 1 || r.has("fabric")) {
    YAML::Node f = r.child("fabric", s.nodes > 1);
    MapReader fr(f, "fabric", ctx);
    s.fabric_kind = fr.choice("kind", {"single-switch", "fat-tree", "rail-optimized"}).value_or("single-switch");
    s.oversubscription = fr.number("oversubscription", false, 1.0, 1000.0).value_or(1.0);
    s.nodes_per_leaf = static_cast<int>(fr.integer("nodes_per_leaf", false, 1, 1 << 16).value_or(4));
    s.spines = static_cast<int>(fr.integer("spines", false, 1, 1 << 16).value_or(0));
    s.switch_latency = Seconds(fr.quantity("switch_latency", Dimension::kTime, false).value_or(0));
    fr.finish();
  }
  r.finish();
  if (s.nics_per_node > 0 && s.gpus_per_node % s.nics_per_node != 0 && s.nics_per_node % s.gpus_per_node != 0)
    r.error("nics_per_node", fmt::format("gpus_per_node {} and nics_per_node {}: one must be a multiple of the other "
                                         "(NIC i serves an equal block of GPUs, or GPU i has an equal block of NICs)",
                                         s.gpus_per_node, s.nics_per_node));
  diags.throw_if_errors();
  s.name = name;
  // NCCL's path type from a GPU to its NIC (collective/nccl_tuning.hpp): through the host without
  // GPUDirect RDMA, or when the NIC sits on the host because its GPUs are behind several switches.
  if (s.nodes > 1 && (!s.gpudirect_rdma || (s.gpus_per_pcie_switch > 0 &&
                                            s.gpus_per_pcie_switch % std::max(1, s.gpus_per_node / std::max(1, s.nics_per_node)) != 0)))
    s.nccl.net_via_host = true;
  Topology t = build_compact(s, r.where(), adjust);
  t.calibration_file = calibration;
  t.description = fmt::format("{} node(s) x {} GPUs, {} inside a node, {} NIC(s) per node, fabric {}", s.nodes,
                              s.gpus_per_node, s.intra_kind, s.nics_per_node, s.nodes > 1 ? s.fabric_kind : "none");
  if (s.intra_kind == "hybrid-cube-mesh")
    t.description += "\n  NVLink hybrid cube-mesh (DGX-1V / p3dn): GPU-GPU links, NV2 pairs bonded; pairs without "
                     "an NVLink relay through one GPU (NCCL's PATH_NVB)";
  if (s.nodes > 1 && s.nics_per_node > s.gpus_per_node) {
    // Where a GPU's inter-node traffic goes: its own NICs, or every NIC it reaches as cheaply.
    const int m = s.nics_per_node / s.gpus_per_node;
    const char* split = !s.gpudirect_rdma            ? "every NIC on the host: a GPU's network traffic split evenly over the node's NICs"
                        : s.gpus_per_pcie_switch > 0 ? "a GPU's network traffic split evenly over the NICs of its PCIe switch"
                                                     : "its network traffic split evenly over them";
    t.description += fmt::format("\n  {} NICs per GPU (GPU i has NICs [{}i, {}i + {})), {}", m, m, m, m, split);
  }
  if (s.nodes > 1 && (s.gpus_per_pcie_switch > 0 || !s.gpudirect_rdma)) {
    const int per_switch = s.gpus_per_pcie_switch, per_nic = std::max(1, s.gpus_per_node / s.nics_per_node);
    const std::string pcie = per_switch > 0 ? fmt::format("{} switch(es) per node, {} GPU(s) each, uplinked to the host",
                                                          s.gpus_per_node / per_switch, per_switch)
                                            : std::string("each GPU linked to the host");
    const char* nics = !s.gpudirect_rdma ? "on the host: no GPUDirect RDMA, inter-node data staged through host memory"
                       : per_switch % per_nic == 0 ? "on their GPUs' switch (GPUDirect RDMA)"
                                                   : "on the host (their GPUs sit behind several switches)";
    t.description += fmt::format("\n  PCIe: {}; NIC(s) {}", pcie, nics);
  }
  return t;
}

Topology load_topology_file(const std::string& path) { return load_topology(read_file(path), path); }

}  // namespace hs::topology
