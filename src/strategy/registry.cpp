// The table of strategies: one line each, with its knobs and their defaults.
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "strategy/policy/ep/ep.hpp"
#include "strategy/layout_strategy.hpp"
#include "strategy/strategy.hpp"
#include "util/diagnostics.hpp"
#include "layout/parallel_layout.hpp"

namespace hs::strategy {

const char* component_name(Component c) {
  switch (c) {
    case Component::kAttention: return "attention";
    case Component::kRouting: return "routing";
    case Component::kExpertCompute: return "expert_compute";
    case Component::kStragglerWait: return "straggler_wait";
    case Component::kAllToAll: return "all_to_all";
    case Component::kDenseAllReduce: return "dense_allreduce";
    case Component::kOptimizer: return "optimizer";
    case Component::kExposedSpag: return "exposed_spag";
    case Component::kExposedSprs: return "exposed_sprs";
    case Component::kCalibrationSpag: return "calibration_spag";
    case Component::kReshard: return "reshard_migration";
    case Component::kMaterializeCopy: return "materialize_copy";
    case Component::kOverlapSlowdown: return "overlap_slowdown";
    case Component::kCount: break;
  }
  return "?";
}

ResolvedSetting resolved_list(const std::string& key, const std::vector<int>& v) {
  // Compact text: "3 (all layers)" when uniform, else the per-layer list.
  bool uniform = !v.empty() && std::all_of(v.begin(), v.end(), [&](int x) { return x == v[0]; });
  std::string text = uniform ? fmt::format("{} (every layer)", v[0]) : fmt::format("{} (per layer)", fmt::join(v, " "));
  return {key, text, fmt::format("[{}]", fmt::join(v, ", "))};
}

ResolvedSetting resolved_value(const std::string& key, double value) {
  return {key, fmt::format("{:g}", value), fmt::format("{:.17g}", value)};
}

ResolvedSetting resolved_text(const std::string& key, const std::string& value) {
  return {key, value, fmt::format("\"{}\"", value)};
}

const std::vector<StrategyInfo>& registry() {
  static const std::vector<StrategyInfo> kTable = {
      {"ep", "expert parallelism: each expert on one GPU per EP group (Megatron-LM, DeepSpeed-MoE, FastMoE)",
       {{"ep_size", "0", "GPUs per EP group; 0 = N if E % N == 0, else E", KnobDomain::integer(0, 1 << 20)}}, make_layout_ep},
      {"oracle", "balanced EP: EP with every GPU computing exactly the mean load and an even all-to-all (a reference, not a lower bound: strategies that keep tokens local can beat it)",
       {{"ep_size", "0", "as for ep", KnobDomain::integer(0, 1 << 20)}}, make_layout_oracle},
      {"fssdp", "FSSDP (Hecate): sharded experts, sparse materialization with spAG/spRS, topology-aware dispatch",
       {{"window", "5", "iterations in the sliding-window load prediction", KnobDomain::integer(1, 100000).tuned({"1", "2", "5", "10", "20"})},
        {"overlap_degree", "hidden", "experts materialized per layer and iteration (t): hidden = per layer the largest t whose spAG as simulated (latency, rate caps, broadcast) fits in the attention forward; formula = the paper's floor(T_attn x bw / expert bytes), bw the network bandwidth per GPU; best = per layer the t of least predicted layer time, exposed spAG/spRS included, within memory; an integer fixes t; auto = hidden", KnobDomain::integer_or(0, 1 << 20, {"hidden", "formula", "best", "auto"}).tuned({"hidden", "formula", "best", "0", "1", "2", "4", "8", "16", "64", "256"})},
        {"memory_budget", "auto", "bytes per GPU for copies and their gradient buffers at their peak (auto: memory less owned state, activations, all-to-all and NCCL buffers, reserve); the memory cap per layer is water-filled into it", KnobDomain::size(true)},
        {"rematerialize", "false", "free copies after forward, gather again for backward (two layers' copies resident at a time)", KnobDomain::boolean()},
        {"calibrate", "false", "re-plan after the gate with actual loads when it pays off", KnobDomain::boolean()},
        {"heterogeneous", "true", "heterogeneous sharding of owned experts", KnobDomain::boolean()},
        {"reshard_every", "100", "iterations between heterogeneous re-sharding decisions (the first once `window` iterations are known)", KnobDomain::integer(1, 1 << 30).tuned({"10", "25", "50", "100", "200"})},
        {"dispatch", "topology", "topology (local, same node, remote) or even", KnobDomain::choice({"topology", "even"})},
        {"broadcast", "chain", "spAG/spRS per expert: chain (pipelined, as NCCL broadcast) or direct (owner sends each copy)", KnobDomain::choice({"chain", "direct"})},
        {"comm_queue", "single", "single: spAG/spRS share the all-to-all's NCCL queue (the Hecate runtime); separate: their own stream", KnobDomain::choice({"single", "separate"})}},
       make_layout_fssdp},
      {"smartmoe", "SmartMoE: EP with the placement re-planned every `period` iterations (migrations on the critical path)",
       {{"period", "10", "iterations between placement re-plans", KnobDomain::integer(1, 1 << 30).tuned({"1", "2", "5", "10", "20", "50"})},
        {"window", "5", "iterations in the load prediction", KnobDomain::integer(1, 100000).tuned({"1", "2", "5", "10", "20"})}},
       make_layout_smartmoe},
      {"flexmoe", "FlexMoE: EP with replicas of hot experts expanded, shrunk and migrated within reserved slots every `period` iterations (moves with optimizer state on the critical path, replicas' gradients all-reduced)",
       {{"reserve_slots", "2", "extra expert slots per GPU and MoE layer for replicas (memory for full copies: params, grads, optimizer state)", KnobDomain::integer(0, 1 << 20).tuned({"0", "1", "2", "4", "8"})},
        {"period", "10", "iterations between re-plans", KnobDomain::integer(1, 1 << 30).tuned({"1", "2", "5", "10", "20", "50"})},
        {"window", "5", "iterations in the load prediction", KnobDomain::integer(1, 100000).tuned({"1", "2", "5", "10", "20"})},
        {"trigger_pct", "10", "re-plan a layer only when its max GPU load exceeds the mean by more than this many percent (balance-ratio trigger)", KnobDomain::integer(0, 100000).tuned({"0", "5", "10", "25", "50"})},
        {"dispatch", "even", "even (an expert's tokens split over all its replicas) or topology (local, same node, remote)", KnobDomain::choice({"even", "topology"})}},
       make_layout_flexmoe},
      {"fsdp", "FSDP of experts: every expert all-gathered everywhere, gradients reduce-scattered (reference)",
       {{"rematerialize", "true", "gather again for backward (FSDP's reshard after forward)", KnobDomain::boolean()}},
       make_layout_fsdp},
      {"fastermoe", "FasterMoE: EP with hot experts shadowed (broadcast to every GPU after the gate, computed locally, gradients reduced to the owner) by FastMoE's latency model",
       {{"trigger", "true", "shadowing on (FastMoE's FMOE_FASTER_SHADOW_ENABLE); false = plain EP", KnobDomain::boolean()},
        {"bandwidth", "auto", "network bandwidth in the policy's model (FMOE_FASTER_GLBPLC_NETBW; auto: the route a GPU's tokens leave through)", KnobDomain::quantity(Dimension::kBandwidth, true)},
        {"gemm_throughput", "auto", "GEMM FLOP/s in the policy's model (FMOE_FASTER_GLBPLC_GPUTP; auto: the cost model's expert GEMM at the balanced load)", KnobDomain::quantity(Dimension::kFlopRate, true)},
        {"alpha", "auto", "expert hidden size / d_model in the policy's model (FMOE_FASTER_GLBPLC_ALPHA; auto: d_ffn / d_model)", KnobDomain::number(1e-6, 1e6, true)},
        {"ep_size", "0", "as for ep", KnobDomain::integer(0, 1 << 20)}},
       make_layout_fastermoe},
      {"bound", "lower bound: the larger of a compute floor (every GPU computes the mean expert work, no token leaves its GPU) and a traffic floor (the least bytes any placement must move, at the fabric's full capacity); no strategy can be faster: how far each one is from the best possible",
       {}, make_layout_bound},
  };
  return kTable;
}

StrategySpec parse_strategy_spec(const std::string& text) {
  StrategySpec s;
  s.full = text;
  size_t pos = text.find(':');
  s.name = text.substr(0, pos);
  if (s.name.empty()) throw InputError({"--strategy", 0, 0}, text, "expected NAME[:KNOB=VALUE...]");
  while (pos != std::string::npos) {
    size_t next = text.find(':', pos + 1);
    std::string kv = text.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      throw InputError({"--strategy", 0, 0}, text, fmt::format("expected KNOB=VALUE, got '{}'", kv));
    std::string key = kv.substr(0, eq);
    if (s.knobs.count(key)) throw InputError({"--strategy", 0, 0}, text, fmt::format("knob '{}' given twice", key));
    s.knobs[key] = kv.substr(eq + 1);
    pos = next;
  }
  return s;
}

const StrategyInfo* find_strategy(const std::string& name) {
  for (const auto& info : registry())
    if (info.name == name) return &info;
  return nullptr;
}

const StrategyInfo& check_strategy_spec(const StrategySpec& spec) {
  const StrategyInfo* info = find_strategy(spec.name);
  if (!info) {
    std::vector<std::string> names;
    for (const auto& i : registry()) names.push_back(i.name);
    throw InputError({"--strategy", 0, 0}, spec.full,
                     fmt::format("unknown strategy '{}' (implemented: {})", spec.name, fmt::join(names, ", ")));
  }
  for (const auto& [k, v] : spec.knobs) {
    const Knob* knob = nullptr;
    for (const auto& kn : info->knobs)
      if (kn.name == k) knob = &kn;
    if (!knob) {
      std::vector<std::string> names;
      for (const auto& kn : info->knobs) names.push_back(kn.name);
      throw InputError({"--strategy", 0, 0}, spec.full,
                       fmt::format("strategy '{}' has no knob '{}' (knobs: {})", info->name, k,
                                   names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
    }
    if (auto expected = knob->domain.check(v))
      throw InputError({"--strategy", 0, 0}, fmt::format("{}:{}", info->name, k),
                       fmt::format("expected {}, got '{}'", *expected, v));
  }
  return *info;
}

workload::ParallelLayout default_layout(const StrategySpec& spec, const Context& ctx) {
  const StrategyInfo& info = check_strategy_spec(spec);
  int requested = 0;
  if (auto it = spec.knobs.find("ep_size"); it != spec.knobs.end()) requested = std::stoi(it->second);
  const int ep = resolve_ep_size(ctx, requested, info.name);
  const SourceLocation where{"--strategy", 0, 0};
  // PyTorch DDP's gradient buckets: bucket_cap_mb = 25 (MiB of gradients) per bucket.
  const auto bucket = static_cast<long long>(25.0 * 1024 * 1024 / ctx.model.precision.grad_bytes);
  workload::ParallelLayout l = workload::parse_parallel_layout(
      fmt::format("tp=1,pp=1,ep={},dist_opt=off,overlap_grad_reduce=on,bucket_size={}", ep, bucket), where);
  workload::resolve_layout(l, ctx.topo.num_gpus(), ctx.topo.num_gpus() / ctx.topo.num_nodes(), ctx.model, where);
  return l;
}

std::unique_ptr<Strategy> make_strategy(const StrategySpec& spec, const Context& ctx,
                                        const workload::ParallelLayout& layout) {
  return check_strategy_spec(spec).make(spec, ctx, layout);
}

std::unique_ptr<Strategy> make_strategy(const StrategySpec& spec, const Context& ctx) {
  return make_strategy(spec, ctx, default_layout(spec, ctx));
}

}  // namespace hs::strategy
