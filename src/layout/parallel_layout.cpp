#include "layout/parallel_layout.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

#include "layout/layout_presets.hpp"

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

std::pair<int, int> ParallelLayout::chunk_blocks(int chunk, int layers) const {
  const int chunks = pp * vpp;
  const int base = layers / chunks, extra = layers % chunks;
  const int first = chunk * base + std::min(chunk, extra);
  return {first, first + base + (chunk < extra ? 1 : 0)};
}

std::vector<int> ParallelLayout::stage_block_ids(int stage, int layers) const {
  std::vector<int> out;
  for (int k = 0; k < vpp; ++k) {
    const auto [first, last] = chunk_blocks(k * pp + stage, layers);
    for (int b = first; b < last; ++b) out.push_back(b);
  }
  return out;
}

int ParallelLayout::stage_of_block(int block, int layers) const {
  for (int c = 0; c < pp * vpp; ++c) {
    const auto [first, last] = chunk_blocks(c, layers);
    if (block >= first && block < last) return c % pp;
  }
  return pp - 1;
}

namespace {

template <class Int>
bool parse_positive(const std::string& v, Int& out) {
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, out);
  return ec == std::errc() && p == end && out >= 1;
}

constexpr const char* kKeys =
    "tp, pp, dp, ep, vpp, etp, sp, tp_span, dist_opt, recompute, overlap_grad_reduce, overlap_param_gather, bucket_size, dispatcher";

}  // namespace

ParallelLayout parse_parallel_layout(const std::string& given, const SourceLocation& source) {
  ParallelLayout l;
  l.text = given;
  Diagnostics d;
  const std::string text = given.empty() ? given : expand_layout_preset(given, source);
  if (text.empty()) d.error(source, "layout", "empty layout: expected KEY=VALUE[,KEY=VALUE...], e.g. tp=8,pp=16,ep=64");
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() : comma + 1;
    const size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0) {
      d.error(source, "layout", fmt::format("'{}' is not KEY=VALUE (keys: {})", part, kKeys));
      continue;
    }
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    const std::string field = "layout." + key;
    auto integer = [&](auto& out) {
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
    else if (key == "vpp") integer(l.vpp);
    else if (key == "etp") {  // expert tensor parallelism: only whole experts are built
      int etp = 1;
      integer(etp);
      if (etp > 1)
        d.error(source, field,
                fmt::format("etp {} is not built: experts are never tensor-sliced here (every strategy moves whole "
                            "experts; their tensor-parallel all-reduce / all-gather and split memory are not "
                            "modelled); etp=1 runs",
                            etp));
    }
    else if (key == "sp") on_off(l.sequence_parallel);
    else if (key == "dist_opt") on_off(l.distributed_optimizer);
    else if (key == "overlap_grad_reduce") on_off(l.overlap_grad_reduce);
    else if (key == "overlap_param_gather") on_off(l.overlap_param_gather);
    else if (key == "bucket_size") integer(l.bucket_size);
    else if (key == "tp_span") {
      if (value == "node") l.tp_across_nodes = false;
      else if (value == "any") l.tp_across_nodes = true;
      else d.error(source, field, fmt::format("'{}' is not node or any", value));
    } else if (key == "dispatcher") {
      if (value == "nccl") l.dispatcher = Dispatcher::kNccl;
      else if (value == "deepep") l.dispatcher = Dispatcher::kDeepEp;
      else d.error(source, field, fmt::format("'{}' is not nccl or deepep", value));
    } else if (key == "recompute") {
      if (value == "none") l.recompute = Recompute::kNone;
      else if (value == "selective") l.recompute = Recompute::kSelective;
      else if (value == "full") l.recompute = Recompute::kFull;
      else d.error(source, field, fmt::format("'{}' is not none, selective or full", value));
    } else {
      d.error(source, field, fmt::format("unknown key '{}' (keys: {})", key, kKeys));
    }
  }
  d.throw_if_errors();
  return l;
}

void resolve_layout(ParallelLayout& l, int n, int gpus_per_node, const ModelSpec& m, const SourceLocation& source) {
  Diagnostics d;
  // Products in 64 bits: each size is any positive int until checked here.
  const long long tp_pp = static_cast<long long>(l.tp) * l.pp;
  if (n % tp_pp != 0) {
    d.error(source, "layout.tp", fmt::format("tp {} x pp {} = {} does not divide the {} GPUs", l.tp, l.pp, tp_pp, n));
  } else if (l.dp == 0) {
    l.dp = static_cast<int>(n / tp_pp);
  } else if (tp_pp * l.dp != n) {
    d.error(source, "layout.dp", fmt::format("tp {} x pp {} x dp {} = {} GPUs, the topology has {}", l.tp, l.pp, l.dp,
                                             tp_pp * l.dp, n));
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
  // Interleaved 1F1B (Megatron-LM, megatron/training/arguments.py and core/pipeline_parallel/schedules.py):
  // the blocks split evenly into pp x vpp chunks, and micro-batches go through the pipeline in groups
  // of pp, so m must be a multiple of pp.
  if (l.vpp > 1) {
    if (l.pp < 2)
      d.error(source, "layout.vpp", fmt::format("vpp {} interleaves pipeline stages: it needs pp >= 2", l.vpp));
    const long long chunks = static_cast<long long>(l.pp) * l.vpp;  // vpp is any positive int until here
    if (chunks > m.layers || m.layers % chunks != 0)
      d.error(source, "layout.vpp", fmt::format("the model's {} blocks do not split evenly into pp {} x vpp {} = {} "
                                                "chunks (interleaving needs equal chunks)", m.layers, l.pp, l.vpp, chunks));
    if (m.grad_accum % l.pp != 0)
      d.error(source, "layout.vpp", fmt::format("interleaved 1F1B runs micro-batches in groups of pp: grad_accum {} "
                                                "(micro-batches) must be a multiple of pp {}", m.grad_accum, l.pp));
  }
  if (m.moe_layers() > 0 && m.experts % l.ep != 0)
    d.error(source, "layout.ep", fmt::format("ep {} must divide the {} experts", l.ep, m.experts));
  if (l.dp > 0 && (static_cast<long long>(l.tp) * l.dp) % l.ep != 0)
    d.error(source, "layout.ep", fmt::format("ep {} must divide the {} GPUs of a pipeline stage (tp {} x dp {}): "
                                             "EP groups are carved from a stage's ranks, as Megatron-Core's "
                                             "expert rank generator does", l.ep, static_cast<long long>(l.tp) * l.dp, l.tp, l.dp));
  // Megatron-LM, megatron/training/arguments.py: "--overlap-param-gather only supported with
  // distributed optimizer", "Must use --overlap-param-gather with --overlap-grad-reduce".
  if (l.overlap_param_gather && !l.distributed_optimizer)
    d.error(source, "layout.overlap_param_gather", "overlap_param_gather=on all-gathers the distributed optimizer's "
                                                   "updated parameters: it needs dist_opt=on (Megatron-LM asserts it)");
  if (l.overlap_param_gather && !l.overlap_grad_reduce)
    d.error(source, "layout.overlap_param_gather", "overlap_param_gather=on needs overlap_grad_reduce=on (Megatron-LM "
                                                   "asserts it: the all-gathers use the gradient buckets)");
  // DistributedDataParallel's default bucket: max(40M, 1M x dp) parameters (larger DP groups need
  // larger buckets to stay bandwidth-bound).
  if (l.bucket_size == 0 && l.dp > 0) l.bucket_size = std::max(40000000LL, 1000000LL * l.dp);
  d.throw_if_errors();
}

std::string describe(const ParallelLayout& l) {
  return fmt::format("tp={},pp={},dp={},ep={},{}sp={},tp_span={},dist_opt={},recompute={},overlap_grad_reduce={},"
                     "overlap_param_gather={}{}{}",
                     l.tp, l.pp, l.dp, l.ep, l.vpp > 1 ? fmt::format("vpp={},", l.vpp) : std::string(),
                     l.sequence_parallel ? "on" : "off", l.tp_across_nodes ? "any" : "node",
                     l.distributed_optimizer ? "on" : "off", recompute_name(l.recompute),
                     l.overlap_grad_reduce ? "on" : "off", l.overlap_param_gather ? "on" : "off",
                     l.overlap_grad_reduce ? fmt::format(",bucket_size={}", l.bucket_size) : std::string(),
                     l.dispatcher == Dispatcher::kDeepEp ? ",dispatcher=deepep" : "");
}

}  // namespace hs::workload
