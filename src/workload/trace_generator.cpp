#include "workload/trace_generator.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "util/rng.hpp"
#include "workload/node_limited_routing.hpp"

namespace hs::workload {

namespace {

struct Field {
  const char* name;
  double GeneratorParams::*ptr;
};
constexpr Field kFields[] = {
    {"sigma", &GeneratorParams::sigma},           {"layer_spread", &GeneratorParams::layer_spread},
    {"edge_flatness", &GeneratorParams::edge_flatness}, {"phi", &GeneratorParams::phi},
    {"sd", &GeneratorParams::sd},                 {"burst_rate", &GeneratorParams::burst_rate},
    {"burst_size", &GeneratorParams::burst_size}, {"burst_decay", &GeneratorParams::burst_decay},
    {"transient", &GeneratorParams::transient},   {"transient_sd", &GeneratorParams::transient_sd},
    {"phi_transient", &GeneratorParams::phi_transient}, {"source_noise", &GeneratorParams::source_noise},
};

// Caps shares at `cap` (sum 1), moving the excess proportionally onto uncapped entries.
void cap_shares(std::vector<double>& p, double cap) {
  for (int round = 0; round < 64; ++round) {
    double excess = 0, free_mass = 0;
    for (double& x : p) {
      if (x > cap) excess += x - cap, x = cap;
      else if (x < cap) free_mass += x;
    }
    if (excess <= 1e-15 || free_mass <= 0) return;
    for (double& x : p)
      if (x < cap) x += excess * x / free_mass;
  }
}

}  // namespace

std::optional<GeneratorParams> GeneratorParams::preset(const std::string& name) {
  GeneratorParams p;  // defaults are aux_loss
  if (name == "aux_loss") return p;
  if (name == "uniform") {
    p.sigma = 0, p.layer_spread = 0, p.sd = 0, p.burst_rate = 0, p.transient = 0, p.source_noise = 0;
    return p;
  }
  if (name == "aux_free") {
    // Bias-based balancing corrects every expert every step: almost no static skew, a short memory
    // (phi 0.9) and bursts that die fast; global max/mean ~1.05-1.1 while each source's own counts
    // stay as imbalanced as its few tokens make them (plus source_noise: batches differ).
    p.sigma = 0.02, p.phi = 0.9, p.sd = 0.02, p.burst_rate = 0.0005, p.burst_size = 0.2, p.burst_decay = 0.5;
    p.transient_sd = 0.15, p.source_noise = 0.1;
    return p;
  }
  if (name == "concentrated") {
    p.sigma = 0.8, p.sd = 0.12, p.transient_sd = 0.4;
    return p;
  }
  if (name == "collapsed") {
    p.sigma = 2.6, p.layer_spread = 0.25, p.edge_flatness = 0.8, p.phi = 0.97, p.sd = 0.1;
    p.burst_rate = 0.001, p.burst_size = 0.5, p.transient = 0.05, p.transient_sd = 0.67, p.phi_transient = 0.95;
    p.source_noise = 0.05;
    return p;
  }
  return std::nullopt;
}

std::vector<std::string> GeneratorParams::preset_names() {
  return {"uniform", "aux_loss", "aux_free", "concentrated", "collapsed"};
}

bool GeneratorParams::set(const std::string& key, double value) {
  for (const auto& f : kFields)
    if (key == f.name) {
      this->*(f.ptr) = value;
      return true;
    }
  return false;
}

std::string GeneratorParams::check() const {
  struct Range {
    const char* name;
    double value, lo, hi;
  };
  const Range ranges[] = {
      {"sigma", sigma, 0, 20},         {"layer_spread", layer_spread, 0, 1}, {"edge_flatness", edge_flatness, 0, 10},
      {"phi", phi, 0, 1},              {"sd", sd, 0, 20},                     {"burst_rate", burst_rate, 0, 1},
      {"burst_size", burst_size, 0, 20}, {"burst_decay", burst_decay, 0, 1},  {"transient", transient, 0, 1},
      {"transient_sd", transient_sd, 0, 20}, {"phi_transient", phi_transient, 0, 1},
      {"source_noise", source_noise, 0, 20}};
  for (const auto& r : ranges)
    if (!(r.value >= r.lo && r.value <= r.hi)) return fmt::format("{}: expected a value in [{}, {}], got {}", r.name, r.lo, r.hi, r.value);
  return "";
}

std::vector<std::string> GeneratorParams::names() {
  std::vector<std::string> v;
  for (const auto& f : kFields) v.push_back(f.name);
  return v;
}

std::string GeneratorParams::to_json() const {
  std::string s = "{";
  for (size_t i = 0; i < std::size(kFields); ++i)
    s += fmt::format("{}\"{}\": {}", i ? ", " : "", kFields[i].name, this->*(kFields[i].ptr));
  return s + "}";
}

Trace generate_trace(const ModelSpec& model, const std::string& model_preset, int sources, int iterations,
                     const GeneratorParams& g, const std::string& preset_name, uint64_t seed) {
  Trace t;
  std::vector<TraceRecord> recs;
  generate_trace_stream(model, model_preset, sources, iterations, g, preset_name, seed, t,
                        [&](const TraceRecord& r) { recs.push_back(r); });
  t.records = std::move(recs);
  return t;
}

void generate_trace_stream(const ModelSpec& model, const std::string& model_preset, int sources, int iterations,
                           const GeneratorParams& g, const std::string& preset_name, uint64_t seed, Trace& t,
                           const std::function<void(const TraceRecord&)>& sink) {
  t.model_preset = model_preset;
  t.moe_layers = model.moe_layers();
  t.experts = model.experts;
  t.top_k = model.top_k;
  t.sources = sources;
  t.tokens_per_source = model.tokens_per_gpu_iteration();
  t.axes = TraceAxes::kLayerSourceExpert;
  t.provenance_json = fmt::format(
      "{{\"kind\": \"synthetic\", \"generator\": \"lognormal-ar1\", \"preset\": \"{}\", \"seed\": {}, \"params\": {}}}",
      preset_name, seed, g.to_json());
  // Node-limited routing (model.max_nodes): tokens are routed one by one (see below); the
  // provenance says so, and traces without it keep their bytes.
  const bool limited = model.max_nodes > 0;
  if (limited)
    t.provenance_json.insert(t.provenance_json.size() - 1,
                             fmt::format(", \"routing\": {{\"route_groups\": {}, \"max_nodes\": {}}}",
                                         model.route_groups, model.max_nodes));
  const int L = t.moe_layers, E = t.experts;
  const uint64_t tokens = static_cast<uint64_t>(t.tokens_per_source);
  const uint64_t assignments = tokens * static_cast<uint64_t>(t.top_k);
  const double cap = 1.0 / t.top_k;
  Rng init = Rng::derive(seed, 1);
  std::vector<double> sigma_l(L), z(static_cast<size_t>(L) * E), x(static_cast<size_t>(L) * E, 0.0),
      burst(static_cast<size_t>(L) * E, 0.0);
  for (int l = 0; l < L; ++l) {
    double f = 1.0 + g.layer_spread * (2 * init.uniform() - 1);
    if (L > 2 && (l == 0 || l == L - 1)) f *= g.edge_flatness;
    sigma_l[l] = g.sigma * f;
    for (int e = 0; e < E; ++e) {
      z[static_cast<size_t>(l) * E + e] = init.normal();
      // Start the drift at its (transient) stationary distribution.
      x[static_cast<size_t>(l) * E + e] = (g.transient > 0 ? g.transient_sd : g.sd) * init.normal();
    }
  }
  const int transient_iters = static_cast<int>(std::ceil(g.transient * iterations));
  Rng drift = Rng::derive(seed, 2);
  std::vector<double> p(E), ps(E);
  std::vector<uint64_t> draw(E);
  NodeLimitedRouter router(E, t.top_k, model.route_groups, model.max_nodes);
  std::vector<double> affinity(limited ? E : 0);
  std::vector<int> chosen;
  TraceRecord rec;
  for (int it = 0; it < iterations; ++it) {
    const bool early = it < transient_iters;
    const double phi = early ? g.phi_transient : g.phi;
    const double sd = early ? g.transient_sd : g.sd;
    const double innov = std::sqrt(std::max(0.0, 1 - phi * phi)) * sd;
    rec.iter = it;
    rec.counts.assign(static_cast<size_t>(L) * sources * E, 0);
    for (int l = 0; l < L; ++l) {
      double mx = -1e300;
      for (int e = 0; e < E; ++e) {
        const size_t k = static_cast<size_t>(l) * E + e;
        x[k] = phi * x[k] + innov * drift.normal();
        burst[k] *= g.burst_decay;
        if (g.burst_rate > 0 && drift.uniform() < g.burst_rate) burst[k] += g.burst_size;
        p[e] = sigma_l[l] * z[k] + x[k] + burst[k];
        mx = std::max(mx, p[e]);
      }
      double sum = 0;
      for (double& v : p) sum += (v = std::exp(v - mx));
      for (double& v : p) v /= sum;
      cap_shares(p, cap);
      for (int s = 0; s < sources; ++s) {
        Rng rs = Rng::derive(seed, ((static_cast<uint64_t>(it) * L + l) * sources + s) * 2 + 3);
        double ssum = 0;
        for (int e = 0; e < E; ++e) ssum += (ps[e] = p[e] * std::exp(g.source_noise * rs.normal()));
        for (double& v : ps) v /= ssum;
        uint32_t* out = rec.counts.data() + (static_cast<size_t>(l) * sources + s) * E;
        if (limited) {
          // Token by token: affinities ps_e / Exp(1) (the order of log ps_e + Gumbel noise, so plain
          // top-k draws top_k experts without replacement in proportion to ps), then the router's
          // node-limited top-k. A token takes an expert at most once: the counts keep the invariants
          // without the cap.
          std::fill(draw.begin(), draw.end(), 0);
          for (uint64_t tok = 0; tok < tokens; ++tok) {
            for (int e = 0; e < E; ++e) affinity[e] = ps[e] / -std::log1p(-rs.uniform());
            router.route(affinity, chosen);
            for (int e : chosen) ++draw[e];
          }
          for (int e = 0; e < E; ++e) out[e] = static_cast<uint32_t>(draw[e]);
          continue;
        }
        cap_shares(ps, cap);
        rs.multinomial(assignments, ps, draw);
        // Sampling noise can push an expert past the cap: move the excess to the expert with the
        // most room, keeping the sum exact.
        for (int e = 0; e < E; ++e) {
          while (draw[e] > tokens) {
            int room = e == 0 ? 1 : 0;
            for (int f = 0; f < E; ++f)
              if (f != e && draw[f] < draw[room]) room = f;
            const uint64_t move = std::min(draw[e] - tokens, tokens - std::min(tokens, draw[room]));  // room >= 0
            if (move == 0) break;
            draw[e] -= move;
            draw[room] += move;
          }
        }
        for (int e = 0; e < E; ++e) out[e] = static_cast<uint32_t>(draw[e]);
      }
    }
    sink(rec);
  }
}

}  // namespace hs::workload
