#include "sweep/sweep_spec.hpp"

#include <cstdlib>
#include <fmt/format.h>

#include "strategy/strategy.hpp"
#include "util/yaml_reader.hpp"
#include "layout/parallel_layout.hpp"

namespace hs::sweep {

const char* objective_name(Objective o) {
  switch (o) {
    case Objective::kMeanTime: return "mean_iteration_time";
    case Objective::kP99Time: return "p99_iteration_time";
    case Objective::kTokensPerSecond: return "tokens_per_second";
  }
  return "?";
}

namespace {

// A scalar or a list of scalars, as text. Booleans and numbers keep their YAML spelling.
std::vector<AxisValue> values_of(const YAML::Node& n, const std::string& field, YamlContext& ctx) {
  std::vector<AxisValue> out;
  auto one = [&](const YAML::Node& v, const std::string& f) {
    if (!v.IsScalar() || v.Scalar().empty()) {
      ctx.diags->error(ctx.at(v), f, fmt::format("expected a scalar value, got {}", describe_yaml_type(v)));
      return;
    }
    out.push_back({v.Scalar(), ctx.at(v)});
  };
  if (n.IsSequence()) {
    if (n.size() == 0) ctx.diags->error(ctx.at(n), field, "expected at least one value");
    for (size_t i = 0; i < n.size(); ++i) one(n[i], fmt::format("{}[{}]", field, i));
  } else {
    one(n, field);
  }
  return out;
}

}  // namespace

SweepSpec parse_sweep(const std::string& text, const std::string& file) {
  SweepSpec s;
  s.file = file;
  Diagnostics diags;
  YamlContext ctx{file, &diags};
  YAML::Node root = parse_yaml(text, ctx);
  diags.throw_if_errors();
  if (!root.IsMap()) throw InputError({file, 1, 1}, "", "expected a YAML map describing a sweep (schema: hecate-sim/sweep@1)");
  MapReader r(root, "", ctx);
  if (auto schema = r.str("schema"); schema && *schema != "hecate-sim/sweep@1")
    r.error("schema", fmt::format("expected hecate-sim/sweep@1, got '{}'", *schema));
  if (auto n = r.child("topologies"); n) s.topologies = values_of(n, "topologies", ctx);
  if (auto n = r.child("traces"); n) s.traces = values_of(n, "traces", ctx);
  if (auto n = r.child("models", false); n) s.models = values_of(n, "models", ctx);
  else s.models = {{"", r.where()}};
  if (auto n = r.child("calibrations", false); n) {
    s.calibrations = values_of(n, "calibrations", ctx);
    for (auto& v : s.calibrations)
      if (v.text == "none") v.text.clear();
  } else {
    s.calibrations = {{"", r.where()}};
  }
  if (auto n = r.child("layout", false); n) {
    s.layouts = values_of(n, "layout", ctx);
    for (auto& v : s.layouts) {
      if (v.text == "none") {
        v.text.clear();
        continue;
      }
      try {
        (void)workload::parse_parallel_layout(v.text, v.at);
      } catch (const InputError& e) {
        for (const auto& d : e.diagnostics()) diags.error(d.where, d.field, d.message);
      }
    }
  } else {
    s.layouts = {{"", r.where()}};
  }
  if (auto n = r.child("network", false); n) {
    s.networks = values_of(n, "network", ctx);
    for (const auto& v : s.networks)
      if (v.text != "analytic" && v.text != "flow")
        diags.error(v.at, "network", fmt::format("expected analytic or flow, got '{}'", v.text));
  } else {
    s.networks = {{"analytic", r.where()}};
  }
  SourceLocation strategies_at = r.where();
  if (auto n = r.child("strategies"); n) {
    strategies_at = ctx.at(n);
    if (!n.IsMap() || n.size() == 0) {
      diags.error(ctx.at(n), "strategies", "expected a map NAME: {KNOB: [VALUES...]} with at least one strategy");
    } else {
      for (const auto& entry : n) {
        const YAML::Node key = entry.first, knobs = entry.second;
        StrategyAxes sa;
        sa.name = key.Scalar();
        sa.at = ctx.at(key);
        const std::string f = "strategies." + sa.name;
        const strategy::StrategyInfo* info = strategy::find_strategy(sa.name);
        if (!info) {
          std::string names;
          for (const auto& i : strategy::registry()) names += std::string(names.empty() ? "" : ", ") + i.name;
          diags.error(sa.at, f, fmt::format("unknown strategy '{}' (implemented: {})", sa.name, names));
          continue;
        }
        if (knobs.IsNull()) {
          s.strategies.push_back(sa);
          continue;
        }
        if (!knobs.IsMap()) {
          diags.error(ctx.at(knobs), f, fmt::format("expected a map of knobs to values, got {}", describe_yaml_type(knobs)));
          continue;
        }
        for (const auto& kv : knobs) {
          const YAML::Node kname = kv.first, kvalues = kv.second;
          const std::string name = kname.Scalar();
          const strategy::Knob* knob = nullptr;
          for (const auto& kn : info->knobs)
            if (kn.name == name) knob = &kn;
          if (!knob) {
            std::string names;
            for (const auto& kn : info->knobs) names += std::string(names.empty() ? "" : ", ") + kn.name;
            diags.error(ctx.at(kname), f + "." + name,
                        fmt::format("strategy '{}' has no knob '{}' (knobs: {})", sa.name, name, names.empty() ? "none" : names));
            continue;
          }
          Axis a{name, values_of(kvalues, f + "." + name, ctx)};
          for (auto& v : a.values) {
            if (auto expected = knob->domain.check(v.text))
              diags.error(v.at, f + "." + name, fmt::format("expected {}, got '{}'", *expected, v.text));
            else
              v.text = knob->domain.canonical(v.text);
          }
          sa.knobs.push_back(std::move(a));
        }
        s.strategies.push_back(std::move(sa));
      }
    }
  }
  if (auto n = r.child("model", false); n) {
    if (!n.IsMap()) {
      diags.error(ctx.at(n), "model", "expected a map FIELD: [VALUES...] of model fields (as run --set FIELD=VALUE)");
    } else {
      for (const auto& kv : n) {
        const YAML::Node field = kv.first, values = kv.second;
        s.model.push_back({field.Scalar(), values_of(values, "model." + field.Scalar(), ctx)});
      }
    }
  }
  if (r.has("iterations")) s.iterations = static_cast<int>(r.integer("iterations", false, 1, 1 << 30).value_or(0));
  if (r.has("seed")) s.seed = static_cast<uint64_t>(r.integer("seed", false, 0, INT64_MAX).value_or(1));
  if (auto o = r.choice("objective", {"mean_iteration_time", "p99_iteration_time", "tokens_per_second"}, false))
    s.objective = *o == "p99_iteration_time" ? Objective::kP99Time
                  : *o == "tokens_per_second" ? Objective::kTokensPerSecond
                                              : Objective::kMeanTime;
  if (auto n = r.child("constraints", false); n) {
    MapReader c(n, "constraints", ctx);
    if (c.valid()) {
      if (c.has("fits_memory")) s.must_fit = c.boolean("fits_memory", false).value_or(true);
      if (c.has("peak_memory")) s.peak_memory_cap = c.quantity("peak_memory", Dimension::kBytes, false).value_or(0);
      c.finish();
    }
  }
  if (auto n = r.child("search", false); n) {
    if (n.IsScalar() && n.Scalar() == "grid") {
      s.random = false;
    } else if (n.IsMap()) {
      MapReader m(n, "search", ctx);
      if (auto rn = m.child("random"); rn) {
        MapReader rr(rn, "search.random", ctx);
        if (rr.valid()) {
          s.random = true;
          s.samples = static_cast<int>(rr.integer("samples", true, 1, 1 << 30).value_or(1));
          if (rr.has("seed")) s.search_seed = static_cast<uint64_t>(rr.integer("seed", false, 0, INT64_MAX).value_or(1));
          rr.finish();
        }
      }
      m.finish();
    } else {
      diags.error(ctx.at(n), "search", "expected grid or {random: {samples: N, seed: S}}");
    }
  }
  if (auto n = r.child("batch", false); n) {
    s.batch_at = ctx.at(n);
    if (n.IsScalar() && n.Scalar() == "max-fit") s.batch_max_fit = true;
    else diags.error(ctx.at(n), "batch", fmt::format("expected max-fit (the Hecate paper's batch rule), got {}",
                                                     n.IsScalar() ? "'" + n.Scalar() + "'" : describe_yaml_type(n)));
  }
  if (auto n = r.child("batch_candidates", false); n) {
    if (!s.batch_max_fit && !r.has("batch")) diags.error(ctx.at(n), "batch_candidates", "needs batch: max-fit");
    for (const auto& v : values_of(n, "batch_candidates", ctx)) {
      char* end = nullptr;
      const long x = std::strtol(v.text.c_str(), &end, 10);
      if (*end != '\0' || x < 1 || x > (1 << 20))
        diags.error(v.at, "batch_candidates", fmt::format("expected a micro-batch (sequences per GPU) of at least 1, got '{}'", v.text));
      else
        s.batch_candidates.push_back(static_cast<int>(x));
    }
  }
  if (s.batch_max_fit)
    for (const auto& m : s.model)
      if (m.name == "micro_batch")
        diags.error(m.values.front().at, "model.micro_batch", "batch: max-fit chooses micro_batch itself: drop this axis");
  // Every point of the grid is held in memory (a random search samples from the expanded grid), so
  // a grid beyond kMaxSweepPoints is refused here, before anything is expanded.
  double points = static_cast<double>(s.topologies.size()) * s.traces.size() * s.networks.size() * s.models.size() *
                  s.calibrations.size() * s.layouts.size();
  for (const auto& m : s.model) points *= static_cast<double>(m.values.size());
  double per_setting = 0;
  for (const auto& st : s.strategies) {
    double n = 1;
    for (const auto& k : st.knobs) n *= static_cast<double>(k.values.size());
    per_setting += n;
  }
  points *= per_setting;
  if (points > kMaxSweepPoints)
    diags.error(strategies_at, "strategies",
                fmt::format("the grid has {:.3g} points, more than {} (split the study into several sweeps)", points,
                            kMaxSweepPoints));
  r.finish();
  diags.throw_if_errors();
  return s;
}

}  // namespace hs::sweep
