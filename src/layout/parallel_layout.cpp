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

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::kOneFOneB: return "1f1b";
    case Schedule::kInterleaved: return "interleaved";
    case Schedule::kZbH1: return "zb-h1";
    case Schedule::kDualPipe: return "dualpipe";
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
  for (int p = 0; p < pp; ++p) {
    if (dp_owner_stage(p) != p) continue;  // listed with its mirror
    for (int t = 0; t < tp; ++t) {
      out.emplace_back();
      for (int q : copy_stages(p))
        for (int d = 0; d < dp; ++d) out.back().push_back(rank(t, d, q));
    }
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
  for (int p = 0; p < pp; ++p) {
    if (dp_owner_stage(p) != p) continue;  // listed with its mirror
    for (int e = 0; e < ep; ++e) {
      out.emplace_back();
      for (int q : copy_stages(p))
        for (int k = 0; k < edp(); ++k) out.back().push_back(q * stage_size() + k * ep + e);
    }
  }
  return out;
}

std::vector<int> ParallelLayout::stage_gpus(int stage) const {
  std::vector<int> out(stage_size());
  for (int i = 0; i < stage_size(); ++i) out[i] = stage * stage_size() + i;
  return out;
}

std::pair<int, int> ParallelLayout::chunk_blocks(int chunk, int layers, int mtp) const {
  if (!piece_start.empty() && piece_start.back() == layers + mtp) return {piece_start[chunk], piece_start[chunk + 1]};
  const int chunks = pieces();
  const int base = layers / chunks, extra = layers % chunks;
  const int first = chunk * base + std::min(chunk, extra);
  return {first, first + base + (chunk < extra ? 1 : 0) + (chunk == chunks - 1 ? mtp : 0)};
}

std::vector<int> ParallelLayout::stage_block_ids(int stage, int layers, int mtp) const {
  std::vector<int> out;
  for (int k = 0; k < stage_chunks(); ++k) {
    const auto [first, last] = chunk_blocks(piece_of(stage, k), layers, mtp);
    for (int b = first; b < last; ++b) out.push_back(b);
  }
  std::sort(out.begin(), out.end());  // DualPipe's second half holds its mirror's earlier piece
  return out;
}

int ParallelLayout::stage_of_block(int block, int layers, int mtp) const {
  for (int c = 0; c < pieces(); ++c) {
    const auto [first, last] = chunk_blocks(c, layers, mtp);
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
    "tp, pp, dp, ep, vpp, etp, sp, tp_span, dist_opt, recompute, overlap_grad_reduce, overlap_param_gather, bucket_size, "
    "dispatcher, schedule, pipeline_layout, first_stage_layers, last_stage_layers";

}  // namespace

std::vector<std::string> expand_pipeline_layout(const std::string& text, std::string& error) {
  // Megatron-Core (megatron/core/transformer/pipeline_parallel_layer_layout.py, parse_str_to_list):
  // commas are cosmetic; "(X)*n" repeats X n times (X without parentheses), then "x*n" repeats one
  // symbol; '|' separates virtual stages; symbols E, t, m, L.
  std::string s;
  for (char c : text)
    if (c != ',') s += c;
  auto count_at = [&](size_t& i, int& n) {
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j == i || j - i > 6) return false;
    n = std::stoi(s.substr(i, j - i));
    i = j;
    return true;
  };
  std::string flat;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '(') {
      const size_t close = s.find(')', i);
      if (close == std::string::npos || s.find('(', i + 1) < close) {
        error = fmt::format("'(' at character {} has no ')' before the next '(' (groups do not nest)", i + 1);
        return {};
      }
      const std::string body = s.substr(i + 1, close - i - 1);
      size_t k = close + 1;
      int n = 1;
      if (k < s.size() && s[k] == '*') {
        ++k;
        if (!count_at(k, n)) {
          error = fmt::format("'*' after the group ending at character {} is not followed by a count", close + 1);
          return {};
        }
      }
      for (int r = 0; r < n; ++r) flat += body;
      i = k;
    } else if (s[i] == '*') {
      size_t k = i + 1;
      int n = 0;
      if (flat.empty() || flat.back() == '|' || !count_at(k, n) || n < 1) {
        error = fmt::format("'*' at character {} must follow a symbol and be followed by a positive count", i + 1);
        return {};
      }
      flat.append(static_cast<size_t>(n - 1), flat.back());
      i = k;
    } else if (s[i] == ')') {
      error = fmt::format("')' at character {} closes no group", i + 1);
      return {};
    } else {
      flat += s[i++];
    }
  }
  std::vector<std::string> stages(1);
  for (char c : flat) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L') {
      stages.back() += c;
    } else {
      error = fmt::format("unknown symbol '{}' (E embedding, t transformer block, m MTP layer, L loss, | stage end)", c);
      return {};
    }
  }
  return stages;
}

ParallelLayout parse_parallel_layout(const std::string& given, const SourceLocation& source) {
  ParallelLayout l;
  l.text = given;
  Diagnostics d;
  const std::string text = given.empty() ? given : expand_layout_preset(given, source);
  if (text.empty()) d.error(source, "layout", "empty layout: expected KEY=VALUE[,KEY=VALUE...], e.g. tp=8,pp=16,ep=64");
  size_t start = 0;
  std::string last_key;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() : comma + 1;
    const size_t eq = part.find('=');
    if (eq == std::string::npos && last_key == "pipeline_layout" && !part.empty()) {
      l.pipeline_layout += part;  // Megatron's cosmetic commas inside the layout string
      continue;
    }
    last_key.clear();
    if (eq == std::string::npos || eq == 0) {
      d.error(source, "layout", fmt::format("'{}' is not KEY=VALUE (keys: {})", part, kKeys));
      continue;
    }
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    const std::string field = "layout." + key;
    last_key = key;
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
    else if (key == "vpp") integer(l.vpp), l.vpp_given = true;
    else if (key == "first_stage_layers") integer(l.first_stage_layers);
    else if (key == "last_stage_layers") integer(l.last_stage_layers);
    else if (key == "pipeline_layout") {
      l.pipeline_layout = value;
      if (value.empty()) d.error(source, field, "empty: expected Megatron's layout string, e.g. Et*3|(tt|)*29|L");
    } else if (key == "schedule") {
      l.schedule_given = true;
      if (value == "1f1b") l.schedule = Schedule::kOneFOneB;
      else if (value == "interleaved") l.schedule = Schedule::kInterleaved;
      else if (value == "zb-h1") l.schedule = Schedule::kZbH1;
      else if (value == "dualpipe") l.schedule = Schedule::kDualPipe;
      else d.error(source, field, fmt::format("'{}' is not 1f1b, interleaved, zb-h1 or dualpipe", value));
    }
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
  if (!l.pipeline_layout.empty()) {
    std::string error;
    expand_pipeline_layout(l.pipeline_layout, error);
    if (!error.empty()) d.error(source, "layout.pipeline_layout", fmt::format("'{}': {}", l.pipeline_layout, error));
  }
  d.throw_if_errors();
  return l;
}

namespace {

// Stage layer counts -> piece_start (each stage's blocks split evenly over its vpp chunks).
void split_stages(ParallelLayout& l, const std::vector<int>& per_stage) {
  const int v = l.schedule == Schedule::kDualPipe ? 1 : l.vpp;
  std::vector<int> per_piece(static_cast<size_t>(l.pp) * v);
  for (int s = 0; s < l.pp; ++s)
    for (int k = 0; k < v; ++k) per_piece[k * l.pp + s] = per_stage[s] / v;
  l.piece_start.assign(1, 0);
  for (int c : per_piece) l.piece_start.push_back(l.piece_start.back() + c);
}

// The schedule, vpp and the split of the blocks into pieces, with every rule of the combination.
void resolve_pipeline(ParallelLayout& l, const ModelSpec& m, const SourceLocation& source, Diagnostics& d) {
  std::vector<std::string> pieces;
  if (!l.pipeline_layout.empty()) {
    std::string error;
    pieces = expand_pipeline_layout(l.pipeline_layout, error);
    const int n = static_cast<int>(pieces.size());
    if (l.first_stage_layers > 0 || l.last_stage_layers > 0)
      d.error(source, "layout.pipeline_layout", "give either pipeline_layout or first_stage_layers / last_stage_layers, "
                                                "not both (Megatron-LM refuses the combination too)");
    if (l.schedule == Schedule::kDualPipe) {
      if (n != l.pp)
        d.error(source, "layout.pipeline_layout", fmt::format("{} virtual stages for schedule=dualpipe with pp {}: "
                                                              "DualPipe splits the model into pp pieces (expected {})",
                                                              n, l.pp, l.pp));
    } else if (n % l.pp != 0) {
      d.error(source, "layout.pipeline_layout", fmt::format("{} virtual stages is not a multiple of pp {} (Megatron-Core "
                                                            "derives vpp = stages / pp)", n, l.pp));
    } else if (l.vpp_given && n / l.pp != l.vpp) {
      d.error(source, "layout.pipeline_layout", fmt::format("{} virtual stages = pp {} x vpp {}, but vpp {} is given",
                                                            n, l.pp, n / l.pp, l.vpp));
    } else {
      l.vpp = n / l.pp;
    }
  }
  if (!l.schedule_given) l.schedule = l.vpp > 1 ? Schedule::kInterleaved : Schedule::kOneFOneB;
  const char* name = schedule_name(l.schedule);
  switch (l.schedule) {
    case Schedule::kOneFOneB:
      if (l.vpp > 1)
        d.error(source, "layout.schedule", fmt::format("schedule=1f1b with vpp {}: model chunks per stage run the "
                                                       "interleaved schedule (schedule=interleaved, or vpp=1)", l.vpp));
      break;
    case Schedule::kInterleaved:
      if (l.vpp < 2)
        d.error(source, "layout.schedule", "schedule=interleaved needs vpp >= 2 model chunks per stage");
      break;
    case Schedule::kZbH1:
    case Schedule::kDualPipe:
      if (l.vpp > 1)
        d.error(source, "layout.schedule", fmt::format("schedule={} runs one model chunk per stage{}: remove vpp {}", name,
                                                       l.schedule == Schedule::kDualPipe ? " and its mirror's" : "", l.vpp));
      break;
  }
  // DualPipe (deepseek-ai/DualPipe, dualpipe.py, DualPipe.step: asserts num_ranks % 2 == 0,
  // num_chunks % 2 == 0 and num_chunks >= num_ranks * 2): half the micro-batches enter at each end.
  if (l.schedule == Schedule::kDualPipe) {
    if (l.pp < 2 || l.pp % 2 != 0)
      d.error(source, "layout.schedule", fmt::format("schedule=dualpipe needs an even pp >= 2 (stage s pairs with "
                                                     "stage pp - 1 - s), got pp {}", l.pp));
    if (m.grad_accum % 2 != 0 || m.grad_accum < 2 * l.pp)
      d.error(source, "layout.schedule", fmt::format("schedule=dualpipe needs an even number of micro-batches, at least "
                                                     "2 x pp = {} (DualPipe asserts it): grad_accum is {}",
                                                     2LL * l.pp, m.grad_accum));
  }
  // Interleaved 1F1B (Megatron-LM, megatron/training/arguments.py and core/pipeline_parallel/schedules.py):
  // micro-batches go through the pipeline in groups of pp, so m must be a multiple of pp; without a
  // given split the blocks split evenly into pp x vpp chunks.
  if (l.vpp > 1) {
    if (l.pp < 2)
      d.error(source, "layout.vpp", fmt::format("vpp {} interleaves pipeline stages: it needs pp >= 2", l.vpp));
    const long long chunks = static_cast<long long>(l.pp) * l.vpp;  // vpp is any positive int until here
    if (pieces.empty() && l.first_stage_layers == 0 && l.last_stage_layers == 0 &&
        (chunks > m.layers || m.layers % chunks != 0))
      d.error(source, "layout.vpp", fmt::format("the model's {} blocks do not split evenly into pp {} x vpp {} = {} "
                                                "chunks (interleaving needs equal chunks)", m.layers, l.pp, l.vpp, chunks));
    if (m.grad_accum % l.pp != 0)
      d.error(source, "layout.vpp", fmt::format("interleaved 1F1B runs micro-batches in groups of pp: grad_accum {} "
                                                "(micro-batches) must be a multiple of pp {}", m.grad_accum, l.pp));
  }
  if (!pieces.empty() && static_cast<int>(pieces.size()) == l.pieces()) {
    // Megatron-Core's validate_layer_layout: E first and L last, each once; t as many as the model's
    // blocks, and m as many as its MTP modules, after every t (an MTP module reads the main model's
    // last hidden state; Megatron-Core's DeepSeek-V3 layout puts m on a virtual stage of its own).
    std::string flat;
    for (const auto& p : pieces) flat += p;
    auto count = [&](char c) { return static_cast<int>(std::count(flat.begin(), flat.end(), c)); };
    const std::string field = "layout.pipeline_layout";
    if (count('E') != 1 || flat.front() != 'E')
      d.error(source, field, fmt::format("the embedding E must appear once, as the first layer (found {})", count('E')));
    if (count('L') != 1 || flat.back() != 'L')
      d.error(source, field, fmt::format("the loss L must appear once, as the last layer (found {})", count('L')));
    if (count('t') != m.layers)
      d.error(source, field, fmt::format("{} transformer blocks (t) in the layout, the model has {} (layers)",
                                         count('t'), m.layers));
    if (count('m') != m.mtp_layers)
      d.error(source, field, fmt::format("{} MTP layer(s) (m) in the layout, the model has {} (mtp_layers)", count('m'),
                                         m.mtp_layers));
    else if (count('m') > 0 && flat.rfind('t') != std::string::npos && flat.find('m') < flat.rfind('t'))
      d.error(source, field, "the MTP layers (m) must follow every transformer block (t): they read the main model's "
                             "output");
    l.piece_start.assign(1, 0);
    for (const auto& p : pieces)
      l.piece_start.push_back(l.piece_start.back() + static_cast<int>(std::count(p.begin(), p.end(), 't') +
                                                                      std::count(p.begin(), p.end(), 'm')));
  } else if (l.first_stage_layers > 0 || l.last_stage_layers > 0) {
    // Megatron-LM (arguments.py, --decoder-first/last-pipeline-num-layers): the given stages take
    // their counts, the others share the rest equally; each stage's layers split over its vpp chunks.
    const int given = (l.first_stage_layers > 0) + (l.last_stage_layers > 0);
    const int rest = m.layers - l.first_stage_layers - l.last_stage_layers, middle = l.pp - given;
    const std::string field = l.first_stage_layers > 0 ? "layout.first_stage_layers" : "layout.last_stage_layers";
    const int v = l.schedule == Schedule::kDualPipe ? 1 : l.vpp;
    if (middle < 0 || rest < 0 || (middle == 0 ? rest != 0 : rest % middle != 0)) {
      d.error(source, field, fmt::format("first_stage_layers {} + last_stage_layers {} leave {} of the model's {} blocks "
                                         "for the other {} stage(s): expected a multiple of {} (each takes the same)",
                                         l.first_stage_layers, l.last_stage_layers, rest, m.layers, middle, std::max(middle, 1)));
    } else {
      std::vector<int> per_stage(l.pp, middle > 0 ? rest / middle : 0);
      if (l.first_stage_layers > 0) per_stage.front() = l.first_stage_layers;
      if (l.last_stage_layers > 0) per_stage.back() = l.last_stage_layers;
      bool even = true;
      for (int c : per_stage) even = even && c % v == 0;
      if (!even)
        d.error(source, field, fmt::format("every stage's blocks must split evenly over its vpp {} chunks (stage "
                                           "counts: {})", v, fmt::join(per_stage, ", ")));
      else
        split_stages(l, per_stage);
      if (!l.piece_start.empty()) l.piece_start.back() += m.mtp_layers;  // the MTP blocks join the last piece
    }
  }
}

}  // namespace

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
  else if (m.key_value_heads() % l.tp != 0)
    d.error(source, "layout.tp", fmt::format("tp {} must divide the model's {} key/value heads (grouped-query attention)",
                                             l.tp, m.key_value_heads()));
  if (m.blocks() - m.moe_layers() > 0 && m.d_ffn_dense % l.tp != 0)
    d.error(source, "layout.tp", fmt::format("tp {} must divide the dense FFN width {}", l.tp, m.d_ffn_dense));
  if (l.sequence_parallel && m.seq_len % l.tp != 0)
    d.error(source, "layout.sp", fmt::format("sequence parallelism splits the {} tokens of a sequence over tp {}: "
                                             "tp must divide seq_len", m.seq_len, l.tp));
  if (!l.sequence_parallel && l.tp > 1 && m.moe_layers() > 0)
    d.error(source, "layout.sp", "MoE layers with tensor parallelism need sequence parallelism (Megatron-Core asserts "
                                 "it): remove sp=off or use tp=1");
  if (l.pp > m.layers)
    d.error(source, "layout.pp", fmt::format("pp {} exceeds the model's {} blocks", l.pp, m.layers));
  resolve_pipeline(l, m, source, d);
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
  // The schedule and the split only when they are not the defaults (outputs of runs without them
  // stay as they were).
  const bool default_schedule = l.schedule == (l.vpp > 1 ? Schedule::kInterleaved : Schedule::kOneFOneB);
  std::string tail = l.dispatcher == Dispatcher::kDeepEp ? ",dispatcher=deepep" : "";
  if (!default_schedule) tail += fmt::format(",schedule={}", schedule_name(l.schedule));
  if (!l.pipeline_layout.empty()) tail += fmt::format(",pipeline_layout={}", l.pipeline_layout);
  if (l.first_stage_layers > 0) tail += fmt::format(",first_stage_layers={}", l.first_stage_layers);
  if (l.last_stage_layers > 0) tail += fmt::format(",last_stage_layers={}", l.last_stage_layers);
  return fmt::format("tp={},pp={},dp={},ep={},{}sp={},tp_span={},dist_opt={},recompute={},overlap_grad_reduce={},"
                     "overlap_param_gather={}{}{}",
                     l.tp, l.pp, l.dp, l.ep, l.vpp > 1 ? fmt::format("vpp={},", l.vpp) : std::string(),
                     l.sequence_parallel ? "on" : "off", l.tp_across_nodes ? "any" : "node",
                     l.distributed_optimizer ? "on" : "off", recompute_name(l.recompute),
                     l.overlap_grad_reduce ? "on" : "off", l.overlap_param_gather ? "on" : "off",
                     l.overlap_grad_reduce ? fmt::format(",bucket_size={}", l.bucket_size) : std::string(), tail);
}

}  // namespace hs::workload
