#include "workload/parallel_layout.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

namespace hs::workload {

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

std::vector<std::vector<int>> ParallelLayout::tp_groups() const {
  std::vector<std::vector<int>> out;
  for (int p = 0; p < pp; ++p)
    for (int d = 0; d < dp; ++d) {
      out.emplace_back();
      for (int t = 0; t < tp; ++t) out.back().push_back(rank(t, d, p));
    }
  return out;
}

std::vector<std::vector<int>> ParallelLayout::dp_groups() const {
  std::vector<std::vector<int>> out;
  for (int p = 0; p < pp; ++p)
    for (int t = 0; t < tp; ++t) {
      out.emplace_back();
      for (int d = 0; d < dp; ++d) out.back().push_back(rank(t, d, p));
    }
  return out;
}

std::vector<std::vector<int>> ParallelLayout::ep_groups() const {
  std::vector<std::vector<int>> out;
  for (int r = 0; r < world(); r += ep) {
    out.emplace_back();
    for (int k = 0; k < ep; ++k) out.back().push_back(r + k);
  }
  return out;
}

std::vector<std::vector<int>> ParallelLayout::edp_groups() const {
  std::vector<std::vector<int>> out;
  for (int p = 0; p < pp; ++p)
    for (int e = 0; e < ep; ++e) {
      out.emplace_back();
      for (int k = 0; k < edp(); ++k) out.back().push_back(p * stage_size() + k * ep + e);
    }
  return out;
}

std::vector<int> ParallelLayout::stage_gpus(int stage) const {
  std::vector<int> out(stage_size());
  for (int i = 0; i < stage_size(); ++i) out[i] = stage * stage_size() + i;
  return out;
}

std::pair<int, int> ParallelLayout::stage_blocks(int stage, int layers) const {
  const int base = layers / pp, extra = layers % pp;
  const int first = stage * base + std::min(stage, extra);
  return {first, first + base + (stage < extra ? 1 : 0)};
}

namespace {

bool parse_positive(const std::string& v, int& out) {
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, out);
  return ec == std::errc() && p == end && out >= 1;
}

}  // namespace

ParallelLayout parse_parallel_layout(const std::string& text, const SourceLocation& source) {
  ParallelLayout l;
  l.text = text;
  Diagnostics d;
  if (text.empty()) d.error(source, "layout", "empty layout: expected KEY=VALUE[,KEY=VALUE...], e.g. tp=8,pp=16,ep=64");
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() : comma + 1;
    const size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0) {
      d.error(source, "layout", fmt::format("'{}' is not KEY=VALUE (keys: tp, pp, dp, ep, sp, tp_span, dist_opt, recompute)", part));
      continue;
    }
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    const std::string field = "layout." + key;
    auto integer = [&](int& out) {
      if (!parse_positive(value, out)) d.error(source, field, fmt::format("'{}' is not a positive integer", value));
    };
    auto on_off = [&](bool& out) {
      if (value == "on") out = true;
      else if (value == "off") out = false;
      else d.error(source, field, fmt::format("'{}' is not on or off", value));
    };
    if (key == "tp") integer(l.tp);
    else if (key == "pp") integer(l.pp);
    else if (key == "dp") integer(l.dp);
    else if (key == "ep") integer(l.ep);
    else if (key == "sp") on_off(l.sequence_parallel);
    else if (key == "dist_opt") on_off(l.distributed_optimizer);
    else if (key == "tp_span") {
      if (value == "node") l.tp_across_nodes = false;
      else if (value == "any") l.tp_across_nodes = true;
      else d.error(source, field, fmt::format("'{}' is not node or any", value));
    } else if (key == "recompute") {
      if (value == "none") l.recompute = Recompute::kNone;
      else if (value == "selective") l.recompute = Recompute::kSelective;
      else if (value == "full") l.recompute = Recompute::kFull;
      else d.error(source, field, fmt::format("'{}' is not none, selective or full", value));
    } else {
      d.error(source, field, fmt::format("unknown key '{}' (keys: tp, pp, dp, ep, sp, tp_span, dist_opt, recompute)", key));
    }
  }
  d.throw_if_errors();
  return l;
}

void resolve_layout(ParallelLayout& l, int n, int gpus_per_node, const ModelSpec& m, const SourceLocation& source) {
  Diagnostics d;
  if (n % (l.tp * l.pp) != 0) {
    d.error(source, "layout.tp", fmt::format("tp {} x pp {} = {} does not divide the {} GPUs", l.tp, l.pp, l.tp * l.pp, n));
  } else if (l.dp == 0) {
    l.dp = n / (l.tp * l.pp);
  } else if (l.tp * l.pp * l.dp != n) {
    d.error(source, "layout.dp", fmt::format("tp {} x pp {} x dp {} = {} GPUs, the topology has {}", l.tp, l.pp, l.dp,
                                             l.tp * l.pp * l.dp, n));
  }
  if (!l.tp_across_nodes && (l.tp > gpus_per_node || gpus_per_node % l.tp != 0))
    d.error(source, "layout.tp", fmt::format("tp {} does not fit inside a node of {} GPUs (TP groups would cross the "
                                             "network every layer; add tp_span=any to allow it)", l.tp, gpus_per_node));
  if (m.heads % l.tp != 0)
    d.error(source, "layout.tp", fmt::format("tp {} must divide the model's {} attention heads", l.tp, m.heads));
  if (m.layers - m.moe_layers() > 0 && m.d_ffn_dense % l.tp != 0)
    d.error(source, "layout.tp", fmt::format("tp {} must divide the dense FFN width {}", l.tp, m.d_ffn_dense));
  if (l.sequence_parallel && m.seq_len % l.tp != 0)
    d.error(source, "layout.sp", fmt::format("sequence parallelism splits the {} tokens of a sequence over tp {}: "
                                             "tp must divide seq_len", m.seq_len, l.tp));
  if (!l.sequence_parallel && l.tp > 1 && m.moe_layers() > 0)
    d.error(source, "layout.sp", "MoE layers with tensor parallelism need sequence parallelism (Megatron-Core asserts "
                                 "it): remove sp=off or use tp=1");
  if (l.pp > m.layers)
    d.error(source, "layout.pp", fmt::format("pp {} exceeds the model's {} blocks", l.pp, m.layers));
  if (m.moe_layers() > 0 && m.experts % l.ep != 0)
    d.error(source, "layout.ep", fmt::format("ep {} must divide the {} experts", l.ep, m.experts));
  if (l.dp > 0 && (l.tp * l.dp) % l.ep != 0)
    d.error(source, "layout.ep", fmt::format("ep {} must divide the {} GPUs of a pipeline stage (tp {} x dp {}): "
                                             "EP groups are carved from a stage's ranks, as Megatron-Core's "
                                             "expert rank generator does", l.ep, l.tp * l.dp, l.tp, l.dp));
  d.throw_if_errors();
}

std::string describe(const ParallelLayout& l) {
  return fmt::format("tp={},pp={},dp={},ep={},sp={},tp_span={},dist_opt={},recompute={}", l.tp, l.pp, l.dp, l.ep,
                     l.sequence_parallel ? "on" : "off", l.tp_across_nodes ? "any" : "node",
                     l.distributed_optimizer ? "on" : "off", recompute_name(l.recompute));
}

}  // namespace hs::workload
