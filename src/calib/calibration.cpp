#include "calib/calibration.hpp"

#include <fmt/format.h>

#include "topology/overlap_slowdown.hpp"
#include "util/yaml_reader.hpp"

namespace hs::calib {

namespace {
std::string q(const std::string& s) {  // a YAML double-quoted scalar
  std::string o = "\"";
  for (char c : s) o += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return o + "\"";
}

// The cells set, in the topology's syntax (flow maps; a kernel class or the communication with one
// value for both traffic kinds is written as that value).
std::string overlap_yaml(const engine::InterferenceOverride& o) {
  auto pair = [](const std::array<std::optional<double>, engine::kTrafficKinds>& cells) {
    if (cells[0] && cells[1] && *cells[0] == *cells[1]) return fmt::format("{:.6g}", *cells[0]);
    std::string p;
    for (int k = 0; k < engine::kTrafficKinds; ++k)
      if (cells[k]) p += fmt::format("{}{}: {:.6g}", p.empty() ? "" : ", ", engine::traffic_key(k), *cells[k]);
    return "{" + p + "}";
  };
  std::string parts;
  bool flat = true;  // every class the same cells: the flat form
  for (int k = 1; k < engine::kKernelClasses; ++k) flat = flat && o.compute[k] == o.compute[0];
  const bool any_compute = o.compute[0][0] || o.compute[0][1] || !flat;
  if (any_compute && flat && o.compute[0][0] && o.compute[0][1] && *o.compute[0][0] == *o.compute[0][1]) {
    parts = "compute: " + pair(o.compute[0]);
  } else if (any_compute) {
    std::string classes;
    for (int k = 0; k < engine::kKernelClasses; ++k)
      if (o.compute[k][0] || o.compute[k][1])
        classes += fmt::format("{}{}: {}", classes.empty() ? "" : ", ", engine::kernel_class_key(k), pair(o.compute[k]));
    parts = "compute: {" + classes + "}";
  }
  if (o.any_communication()) parts += fmt::format("{}communication: {}", parts.empty() ? "" : ", ", pair(o.communication));
  return "{" + parts + "}";
}
}  // namespace

std::string to_yaml(const Calibration& c) {
  std::string s = "schema: hecate-sim/calibration@1\n";
  s += fmt::format("topology: {}\n", q(c.topology));
  if (!c.topology_hash.empty()) s += fmt::format("topology_fnv1a64: {}\n", q(c.topology_hash));
  s += "sources:\n";
  for (const auto& src : c.sources)
    s += fmt::format("  - {{file: {}, fnv1a64: {}, what: {}}}\n", q(src.file), q(src.fnv1a64), q(src.what));
  if (!c.links.empty()) {
    s += "links:\n";
    for (const auto& l : c.links) {
      s += fmt::format("  {}: {{bandwidth_scale: {:.6g}", l.link_class, l.bandwidth_scale);
      if (l.latency_s) s += fmt::format(", latency: {:.6g}us", *l.latency_s * 1e6);
      s += fmt::format(", points: {}", l.points);
      if (l.heldout_median_error) s += fmt::format(", heldout_median_error: {:.4g}", *l.heldout_median_error);
      if (l.heldout_max_error) s += fmt::format(", heldout_max_error: {:.4g}", *l.heldout_max_error);
      s += "}\n";
    }
  }
  if (!c.protocols.empty() || c.net_step_latency_s) {
    s += "protocols:\n";
    for (const char* tier : {"intra", "net"}) {
      std::string parts;
      if (std::string(tier) == "net" && c.net_step_latency_s)
        parts = fmt::format("step_latency: {:.6g}us", *c.net_step_latency_s * 1e6);
      for (const auto& p : c.protocols)
        if (p.tier == tier)
          parts += fmt::format("{}{}: {{latency_scale: {:.6g}, bandwidth_scale: {:.6g}}}", parts.empty() ? "" : ", ", p.proto,
                               p.latency_scale, p.bandwidth_scale);
      if (!parts.empty()) s += fmt::format("  {}: {{{}}}\n", tier, parts);
    }
  }
  if (c.eta_max || c.gemm_tiles || c.hbm_efficiency || c.kernel_launch_s || c.interference.any()) {
    s += "gpu:\n";
    if (c.eta_max && c.t_half) s += fmt::format("  gemm: {{eta_max: {:.6g}, t_half: {:.6g}}}\n", *c.eta_max, *c.t_half);
    if (const auto& t = c.gemm_tiles)
      s += fmt::format("  gemm_tiles: {{tile_m: {}, tile_n: {}, eta_tile: {:.6g}, k_fill: {:.6g}, call: {:.6g}us}}\n", t->tile_m,
                       t->tile_n, t->eta_tile, t->k_fill, t->call.value() * 1e6);
    if (c.hbm_efficiency) s += fmt::format("  hbm_efficiency: {:.6g}\n", *c.hbm_efficiency);
    if (c.kernel_launch_s) s += fmt::format("  kernel_launch: {:.6g}us\n", *c.kernel_launch_s * 1e6);
    if (c.interference.any()) s += fmt::format("  overlap_slowdown: {}\n", overlap_yaml(c.interference));
  }
  return s;
}

Calibration parse_calibration(const std::string& text, const std::string& file) {
  Calibration c;
  Diagnostics diags;
  YamlContext ctx{file, &diags};
  YAML::Node root = parse_yaml(text, ctx);
  diags.throw_if_errors();
  if (!root.IsMap()) throw InputError({file, 1, 1}, "", "expected a YAML map (schema: hecate-sim/calibration@1)");
  MapReader r(root, "", ctx);
  if (auto s = r.str("schema"); s && *s != "hecate-sim/calibration@1")
    r.error("schema", fmt::format("expected hecate-sim/calibration@1, got '{}'", *s));
  c.topology = r.str("topology", false).value_or("");
  c.topology_hash = r.str("topology_fnv1a64", false).value_or("");
  if (auto n = r.child("sources", false); n) {
    if (!n.IsSequence()) {
      diags.error(ctx.at(n), "sources", "expected a list of {file, fnv1a64, what}");
    } else {
      for (size_t i = 0; i < n.size(); ++i) {
        MapReader m(n[i], fmt::format("sources[{}]", i), ctx);
        if (!m.valid()) continue;
        CalibrationSource src;
        src.file = m.str("file").value_or("");
        src.fnv1a64 = m.str("fnv1a64", false).value_or("");
        src.what = m.str("what", false).value_or("");
        m.finish();
        c.sources.push_back(src);
      }
    }
  }
  if (auto n = r.child("links", false); n) {
    if (!n.IsMap()) {
      diags.error(ctx.at(n), "links", "expected a map LINK_CLASS: {bandwidth_scale, latency}");
    } else {
      for (const auto& kv : n) {
        const YAML::Node key = kv.first, val = kv.second;
        LinkClassCalibration l;
        l.link_class = key.Scalar();
        MapReader m(val, "links." + l.link_class, ctx);
        if (!m.valid()) continue;
        l.bandwidth_scale = m.number("bandwidth_scale", true, 1e-3, 1e3).value_or(1.0);
        if (m.has("latency")) l.latency_s = m.quantity("latency", Dimension::kTime, false);
        if (l.latency_s && *l.latency_s < 0) m.error("latency", "expected a non-negative time");
        l.points = static_cast<int>(m.integer("points", false, 0, 1 << 30).value_or(0));
        if (m.has("heldout_median_error")) l.heldout_median_error = m.number("heldout_median_error", false, 0, 1e9);
        if (m.has("heldout_max_error")) l.heldout_max_error = m.number("heldout_max_error", false, 0, 1e9);
        m.finish();
        c.links.push_back(l);
      }
    }
  }
  if (auto n = r.child("protocols", false); n) {
    MapReader tiers(n, "protocols", ctx);
    if (tiers.valid()) {
      for (const char* tier : {"intra", "net"}) {
        auto tn = tiers.child(tier, false);
        if (!tn) continue;
        MapReader protos(tn, fmt::format("protocols.{}", tier), ctx);
        if (!protos.valid()) continue;
        if (std::string(tier) == "net" && protos.has("step_latency")) {
          c.net_step_latency_s = protos.quantity("step_latency", Dimension::kTime, false);
          if (c.net_step_latency_s && (*c.net_step_latency_s < 0 || *c.net_step_latency_s > 1e-2))
            protos.error("step_latency", "expected a time in [0, 10ms] (added to every network step)");
        }
        for (const char* proto : {"LL", "LL128", "Simple"}) {
          auto pn = protos.child(proto, false);
          if (!pn) continue;
          MapReader m(pn, fmt::format("protocols.{}.{}", tier, proto), ctx);
          if (!m.valid()) continue;
          ProtocolCalibration p{tier, proto};
          p.latency_scale = m.number("latency_scale", false, 1e-3, 1e3).value_or(1.0);
          p.bandwidth_scale = m.number("bandwidth_scale", false, 1e-3, 1e3).value_or(1.0);
          m.finish();
          c.protocols.push_back(p);
        }
        protos.finish();
      }
      tiers.finish();
    }
  }
  if (auto n = r.child("gpu", false); n) {
    MapReader g(n, "gpu", ctx);
    if (g.valid()) {
      if (auto gm = g.child("gemm", false); gm) {
        MapReader m(gm, "gpu.gemm", ctx);
        if (m.valid()) {
          c.eta_max = m.number("eta_max", true, 1e-3, 1.0);
          c.t_half = m.number("t_half", true, 0, 1e7);
          m.finish();
        }
      }
      if (auto gt = g.child("gemm_tiles", false); gt) {
        MapReader m(gt, "gpu.gemm_tiles", ctx);
        if (m.valid()) {
          cost::GemmTileParams t;
          t.tile_m = static_cast<int>(m.integer("tile_m", false, 1, 4096).value_or(t.tile_m));
          t.tile_n = static_cast<int>(m.integer("tile_n", false, 1, 4096).value_or(t.tile_n));
          t.eta_tile = m.number("eta_tile", true, 1e-3, 1.0).value_or(t.eta_tile);
          t.k_fill = m.number("k_fill", true, 0, 1e6).value_or(t.k_fill);
          const auto call = m.quantity("call", Dimension::kTime, true);
          if (call && (*call < 0 || *call > 1e-2)) m.error("call", "expected a time in [0, 10ms] (fixed time per GEMM launch)");
          t.call = Seconds(call.value_or(t.call.value()));
          m.finish();
          c.gemm_tiles = t;
        }
      }
      if (g.has("hbm_efficiency")) c.hbm_efficiency = g.number("hbm_efficiency", false, 1e-3, 1.0);
      if (g.has("kernel_launch")) {
        c.kernel_launch_s = g.quantity("kernel_launch", Dimension::kTime, false);
        if (c.kernel_launch_s && (*c.kernel_launch_s < 0 || *c.kernel_launch_s > 1e-2))
          g.error("kernel_launch", "expected a time in [0, 10ms] (per kernel launch)");
      }
      if (auto o = g.child("overlap_slowdown", false); o)
        c.interference = topology::read_overlap_slowdown(o, "gpu.overlap_slowdown", ctx, 100);
      g.finish();
    }
  }
  r.finish();
  diags.throw_if_errors();
  return c;
}

topology::TopologyAdjust topology_adjust(const Calibration& c) {
  topology::TopologyAdjust a;
  for (const auto& l : c.links) {
    topology::LinkClassAdjust x;
    x.link_class = l.link_class;
    x.bandwidth_scale = l.bandwidth_scale;
    if (l.latency_s) x.latency = Seconds(*l.latency_s);
    a.links.push_back(x);
  }
  for (const auto& p : c.protocols) {
    const int tier = p.tier == "net" ? 1 : 0;
    const int proto = p.proto == "LL" ? 0 : p.proto == "LL128" ? 1 : 2;
    a.protocols[tier][proto] = {p.latency_scale, p.bandwidth_scale};
  }
  if (c.net_step_latency_s) a.net_step_latency = Seconds(*c.net_step_latency_s);
  a.interference = c.interference;
  return a;
}

void apply_compute(const Calibration& c, cost::ComputeParams& p) {
  if (c.eta_max && c.t_half) p.eta_max = *c.eta_max, p.t_half = *c.t_half, p.gemm_model = cost::GemmModel::kCurve;
  if (c.gemm_tiles) p.tiles = *c.gemm_tiles, p.gemm_model = cost::GemmModel::kTiles;
  if (c.hbm_efficiency) p.eta_mem = *c.hbm_efficiency;
  if (c.kernel_launch_s) p.launch = Seconds(*c.kernel_launch_s);
}

std::string topology_mismatch(const Calibration& c, const std::string& topo_source, const std::string& topo_hash) {
  if (c.topology_hash.empty() || c.topology_hash == topo_hash) return "";
  return fmt::format("fitted on {} (fnv1a64 {}), applied to {} (fnv1a64 {}): its link and protocol factors may not "
                     "hold on this topology",
                     c.topology.empty() ? "another topology" : c.topology, c.topology_hash, topo_source, topo_hash);
}

}  // namespace hs::calib
