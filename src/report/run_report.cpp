#include "report/run_report.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "util/hecate_version.hpp"
#include "util/text_escape.hpp"

namespace hs::report {

namespace {

const strategy::RunSummary* find_ep(const RunReport& r) {
  for (const auto& s : r.strategies)
    if (s.name == "ep") return &s;
  for (const auto& s : r.strategies)
    if (s.name.rfind("ep:", 0) == 0) return &s;
  return nullptr;
}

std::string num(double v) { return fmt::format("{:.9g}", v); }

std::string link_name(const RunReport& r, topology::LinkId l) {
  if (!r.topo || l < 0) return "";
  const auto& lk = r.topo->link(l);
  return fmt::format("{} -> {} ({})", r.topo->vertices()[lk.from].name, r.topo->vertices()[lk.to].name, lk.link_class);
}

std::string gpu_name(const RunReport& r, int g) {
  if (!r.topo || g < 0) return "- (balanced)";
  return fmt::format("gpu{} ({})", g, r.topo->vertices()[r.topo->gpu_vertex(g)].name);
}

}  // namespace

std::string content_hash(const std::string& bytes) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

Throughput throughput(const IterationWork& w, double mean) {
  Throughput t;
  if (w.tokens <= 0 || w.gpus <= 0 || mean <= 0) return t;
  t.tokens_per_s_per_gpu = w.tokens / (mean * w.gpus);
  t.model_tflops_per_gpu = t.tokens_per_s_per_gpu * w.flops_per_token / 1e12;
  t.gpu_hours_per_trillion_tokens = w.gpus * mean / w.tokens * 1e12 / 3600;
  return t;
}

std::string memory_verdict(const strategy::RunSummary& s, double capacity) {
  if (s.fits_memory) return "";
  const double G = 1024.0 * 1024 * 1024;
  std::string v = fmt::format("{}: does not fit in {:.3g} GiB (peak {:.2f} GiB, largest term: {})", s.name, capacity / G,
                              s.peak_memory.total() / G, s.peak_memory.largest());
  if (const auto& rm = s.peak_memory_rematerialized)
    v += rm->total() <= capacity ? fmt::format("; fits with rematerialize=on (peak {:.2f} GiB)", rm->total() / G)
                                 : fmt::format("; does not fit with rematerialize=on either (peak {:.2f} GiB, largest term: {})",
                                               rm->total() / G, rm->largest());
  return v;
}

std::string render_table(const RunReport& r) {
  std::string o;
  auto it = std::back_inserter(o);
  const auto* ep = find_ep(r);
  fmt::format_to(it, "hecate-sim {} | topology {} ({} GPUs, {} nodes) | model {} | {} iterations | network {}\n",
                 HECATE_VERSION, r.topo ? r.topo->name() : "", r.topo ? r.topo->num_gpus() : 0,
                 r.topo ? r.topo->num_nodes() : 0, r.inputs.model_name, r.inputs.iterations, r.inputs.network);
  if (!r.inputs.calibration_file.empty())
    fmt::format_to(it, "calibration {} (fnv1a64 {})\n", r.inputs.calibration_file, r.inputs.calibration_hash);
  // The name column fits the longest strategy spec (at least 28 wide), so long knob lists keep the
  // columns aligned.
  size_t w = 28;
  for (const auto& s : r.strategies) w = std::max(w, s.name.size());
  fmt::format_to(it, "\n{:<{}} {:>10} {:>10} {:>10} {:>8} {:>10} {:>5}  {}\n", "strategy", w, "mean ms", "p50 ms",
                 "p99 ms", "vs EP", "peak GiB", "fits", "bottleneck GPU");
  for (const auto& s : r.strategies) {
    std::string speed = ep ? fmt::format("{:.2f}x", ep->mean / s.mean) : "-";
    fmt::format_to(it, "{:<{}} {:>10.2f} {:>10.2f} {:>10.2f} {:>8} {:>10.2f} {:>5}  {}\n", s.name, w, s.mean * 1e3,
                   s.p50 * 1e3, s.p99 * 1e3, speed, s.peak_memory.total() / (1024.0 * 1024 * 1024),
                   s.fits_memory ? "yes" : "NO", gpu_name(r, s.bottleneck_gpu));
  }
  // How far each strategy is from the lower bound (strategy/policy/bound/layout_bound.cpp), when it ran.
  for (const auto& b : r.strategies) {
    if (b.name != "bound" || b.mean <= 0) continue;
    fmt::format_to(it, "lower bound: {:.2f} ms; mean / bound:", b.mean * 1e3);
    for (const auto& s : r.strategies)
      if (&s != &b) fmt::format_to(it, " {} {:.2f}x", s.name, s.mean / b.mean);
    o += '\n';
  }
  // Token dropping (strategy/capacity.hpp), when the model sets a capacity_factor: one line.
  if (std::any_of(r.strategies.begin(), r.strategies.end(), [](const auto& s) { return !s.dropped_tokens.empty(); })) {
    o += "dropped at capacity (token-expert assignments per iteration, share of routed):";
    for (const auto& s : r.strategies) {
      double dropped = 0;
      for (double v : s.dropped_tokens) dropped += v;
      fmt::format_to(it, " {} {:.6g} ({:.2f}%)", s.name, dropped, 100 * s.dropped_fraction());
    }
    o += '\n';
  }
  for (const auto& n : r.notes) fmt::format_to(it, "{}\n", n);
  fmt::format_to(it, "\nbreakdown along the critical path (ms per iteration, mean)\n{:<{}}", "strategy", w);
  for (int c = 0; c < strategy::kNumComponents; ++c)
    fmt::format_to(it, " {:>15}", strategy::component_name(static_cast<strategy::Component>(c)));
  o += '\n';
  for (const auto& s : r.strategies) {
    fmt::format_to(it, "{:<{}}", s.name, w);
    for (int c = 0; c < strategy::kNumComponents; ++c) fmt::format_to(it, " {:>15.2f}", s.breakdown[c] * 1e3);
    o += '\n';
  }
  if (r.work.tokens > 0) {
    fmt::format_to(it,
                   "\nthroughput ({:.6g} tokens per iteration on {} GPUs; {:.4g} GFLOP per token by Megatron-LM's count)\n"
                   "{:<{}} {:>14} {:>14} {:>26}\n",
                   r.work.tokens, r.work.gpus, r.work.flops_per_token / 1e9, "strategy", w, "tokens/s/GPU",
                   "TFLOPS/GPU", "GPU-hours per 1e12 tokens");
    for (const auto& s : r.strategies) {
      const Throughput t = throughput(r.work, s.mean);
      fmt::format_to(it, "{:<{}} {:>14.1f} {:>14.1f} {:>26.0f}\n", s.name, w, t.tokens_per_s_per_gpu, t.model_tflops_per_gpu,
                     t.gpu_hours_per_trillion_tokens);
    }
  }
  fmt::format_to(it, "\ncommunication hidden behind compute (ms per iteration, not in the breakdown's sum)\n");
  for (const auto& s : r.strategies) fmt::format_to(it, "{:<{}} {:.2f}\n", s.name, w, s.hidden_comm * 1e3);
  const double G = 1024.0 * 1024 * 1024;
  const auto labels = cost::MemoryBreakdown{}.terms();
  fmt::format_to(it, "\npeak memory per GPU (GiB):");
  for (size_t k = 0; k < labels.size(); ++k) fmt::format_to(it, "{} {}", k ? " /" : "", labels[k].label);
  o += '\n';
  for (const auto& s : r.strategies) {
    fmt::format_to(it, "{:<{}}", s.name, w);
    const auto terms = s.peak_memory.terms();
    for (size_t k = 0; k < terms.size(); ++k) fmt::format_to(it, "{}{:.2f}", k ? " / " : " ", terms[k].bytes / G);
    const double capacity = r.topo ? r.topo->gpu_model().memory.value() : 0;
    if (!s.fits_memory) o += "   DOES NOT FIT\n";
    else if (capacity > 0) fmt::format_to(it, "   fits, {:.2f} GiB to spare\n", (capacity - s.peak_memory.total()) / G);
    else o += '\n';
  }
  for (const auto& s : r.strategies)
    if (const std::string v = memory_verdict(s, r.topo ? r.topo->gpu_model().memory.value() : 0); !v.empty())
      fmt::format_to(it, "{}\n", v);
  fmt::format_to(it, "\nbusiest link of the slowest all-to-all\n");
  for (const auto& s : r.strategies) fmt::format_to(it, "{:<{}} {}\n", s.name, w, link_name(r, s.bottleneck_link));
  fmt::format_to(it, "\nresolved settings (automatic knobs and derived choices, as of the last iteration)\n");
  if (r.interference) fmt::format_to(it, "every strategy\n  {:<26} {}\n", "interference", engine::describe(*r.interference));
  for (const auto& s : r.strategies) {
    fmt::format_to(it, "{}\n", s.name);
    for (const auto& k : s.resolved) fmt::format_to(it, "  {:<26} {}\n", k.key, k.text);
  }
  return o;
}

std::string render_json(const RunReport& r) {
  std::string o;
  auto it = std::back_inserter(o);
  const auto* ep = find_ep(r);
  fmt::format_to(it, "{{\n  \"format\": \"hecate-sim/run-result\", \"version\": \"1.0\",\n");
  fmt::format_to(it, "  \"tool\": {{\"name\": \"hecate-sim\", \"version\": \"{}\"}},\n", HECATE_VERSION);
  fmt::format_to(it,
                 "  \"inputs\": {{\"topology\": {{\"file\": \"{}\", \"fnv1a64\": \"{}\", \"name\": \"{}\", \"gpus\": {}, "
                 "\"nodes\": {}}}, \"trace\": {{\"file\": \"{}\", \"fnv1a64\": \"{}\"}}, \"model\": {{\"name\": \"{}\", "
                 "\"source\": \"{}\"}}, \"seed\": {}, \"network\": \"{}\", \"calibration\": {}}},\n",
                 json_escape(r.inputs.topology_file), r.inputs.topology_hash, json_escape(r.topo ? r.topo->name() : ""),
                 r.topo ? r.topo->num_gpus() : 0, r.topo ? r.topo->num_nodes() : 0, json_escape(r.inputs.trace_file),
                 r.inputs.trace_hash, json_escape(r.inputs.model_name), json_escape(r.inputs.model_source),
                 r.inputs.seed, r.inputs.network,
                 r.inputs.calibration_file.empty()
                     ? std::string("null")
                     : fmt::format("{{\"file\": \"{}\", \"fnv1a64\": \"{}\"}}", json_escape(r.inputs.calibration_file),
                                   r.inputs.calibration_hash));
  fmt::format_to(it, "  \"warnings\": [");
  std::vector<std::string> warnings = r.inputs.warnings;
  warnings.insert(warnings.end(), r.notes.begin(), r.notes.end());
  for (size_t i = 0; i < warnings.size(); ++i) fmt::format_to(it, "{}\"{}\"", i ? ", " : "", json_escape(warnings[i]));
  fmt::format_to(it, "],\n");
  if (r.interference) fmt::format_to(it, "  \"resolved\": {{\"interference\": {}}},\n", engine::to_json(*r.interference));
  fmt::format_to(it, "  \"iterations\": {},\n", r.inputs.iterations);
  fmt::format_to(it, "  \"work_per_iteration\": {{\"tokens\": {}, \"model_flops_per_token\": {}, \"gpus\": {}}},\n",
                 num(r.work.tokens), num(r.work.flops_per_token), r.work.gpus);
  o += "  \"strategies\": [\n";
  for (size_t i = 0; i < r.strategies.size(); ++i) {
    const auto& s = r.strategies[i];
    fmt::format_to(it, "    {{\"name\": \"{}\",\n", json_escape(s.name));
    fmt::format_to(it, "     \"iteration_time_s\": {{\"mean\": {}, \"p50\": {}, \"p99\": {}}},\n", num(s.mean),
                   num(s.p50), num(s.p99));
    fmt::format_to(it, "     \"speedup_vs_ep\": {},\n", ep ? num(ep->mean / s.mean) : "null");
    const Throughput tp = throughput(r.work, s.mean);
    fmt::format_to(it,
                   "     \"throughput\": {{\"tokens_per_s_per_gpu\": {}, \"model_tflops_per_gpu\": {}, "
                   "\"gpu_hours_per_trillion_tokens\": {}}},\n",
                   num(tp.tokens_per_s_per_gpu), num(tp.model_tflops_per_gpu), num(tp.gpu_hours_per_trillion_tokens));
    fmt::format_to(it, "     \"breakdown_s\": {{");
    for (int c = 0; c < strategy::kNumComponents; ++c)
      fmt::format_to(it, "{}\"{}\": {}", c ? ", " : "", strategy::component_name(static_cast<strategy::Component>(c)),
                     num(s.breakdown[c]));
    const auto& m = s.peak_memory;
    fmt::format_to(it, "}},\n     \"hidden_comm_s\": {},\n", num(s.hidden_comm));
    fmt::format_to(it, "     \"peak_memory_bytes\": {},\n", num(m.total()));
    fmt::format_to(it, "     \"peak_memory_composition_bytes\": {{");
    const auto terms = m.terms();
    for (size_t k = 0; k < terms.size(); ++k) fmt::format_to(it, "{}\"{}\": {}", k ? ", " : "", terms[k].key, num(terms[k].bytes));
    fmt::format_to(it, "}},\n");
    fmt::format_to(it, "     \"fits_memory\": {},\n", s.fits_memory ? "true" : "false");
    fmt::format_to(it, "     \"peak_memory_rematerialized_bytes\": {},\n",
                   s.peak_memory_rematerialized ? num(s.peak_memory_rematerialized->total()) : "null");
    const std::string verdict = memory_verdict(s, r.topo ? r.topo->gpu_model().memory.value() : 0);
    fmt::format_to(it, "     \"memory_verdict\": {},\n",
                   verdict.empty() ? std::string("null") : fmt::format("\"{}\"", json_escape(verdict)));
    fmt::format_to(it, "     \"bottleneck\": {{\"gpu\": {}, \"link\": \"{}\"}},\n",
                   s.bottleneck_gpu >= 0 ? fmt::format("{}", s.bottleneck_gpu) : std::string("null"),
                   json_escape(link_name(r, s.bottleneck_link)));
    fmt::format_to(it, "     \"resolved\": {{");
    for (size_t k = 0; k < s.resolved.size(); ++k)
      fmt::format_to(it, "{}\"{}\": {}", k ? ", " : "", s.resolved[k].key, s.resolved[k].json);
    fmt::format_to(it, "}},\n");
    if (!s.dropped_tokens.empty()) {  // token dropping: only with a capacity_factor, so dropless output is unchanged
      auto list = [](const std::vector<double>& v) {
        std::string t;
        for (size_t l = 0; l < v.size(); ++l) t += (l ? ", " : "") + num(v[l]);
        return t;
      };
      fmt::format_to(it, "     \"dropped_tokens\": {{\"per_layer\": [{}], \"routed_per_layer\": [{}], \"fraction\": {}}},\n",
                     list(s.dropped_tokens), list(s.routed_tokens), num(s.dropped_fraction()));
    }
    fmt::format_to(it, "     \"simulated_iterations\": {}}}{}\n", s.simulated_iterations,
                   i + 1 < r.strategies.size() ? "," : "");
  }
  o += "  ]\n}\n";
  return o;
}

std::string render_csv(const RunReport& r) {
  std::string o = "strategy,mean_s,p50_s,p99_s,speedup_vs_ep";
  for (int c = 0; c < strategy::kNumComponents; ++c)
    o += fmt::format(",{}_s", strategy::component_name(static_cast<strategy::Component>(c)));
  o += ",peak_memory_bytes,fits_memory,bottleneck_gpu,dropped_fraction,tokens_per_s_per_gpu,model_tflops_per_gpu,"
       "gpu_hours_per_trillion_tokens\n";
  const auto* ep = find_ep(r);
  for (const auto& s : r.strategies) {
    std::string name = s.name;
    if (name.find(',') != std::string::npos) name = "\"" + name + "\"";
    o += fmt::format("{},{},{},{},{}", name, num(s.mean), num(s.p50), num(s.p99), ep ? num(ep->mean / s.mean) : "");
    for (int c = 0; c < strategy::kNumComponents; ++c) o += "," + num(s.breakdown[c]);
    const Throughput tp = throughput(r.work, s.mean);
    o += fmt::format(",{},{},{},{},{},{},{}\n", num(s.peak_memory.total()), s.fits_memory ? "true" : "false", s.bottleneck_gpu,
                     num(s.dropped_fraction()), num(tp.tokens_per_s_per_gpu), num(tp.model_tflops_per_gpu),
                     num(tp.gpu_hours_per_trillion_tokens));
  }
  return o;
}

}  // namespace hs::report
