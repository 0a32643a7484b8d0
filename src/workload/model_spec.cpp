#include "workload/model_spec.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "util/atomic_file.hpp"
#include "util/yaml_reader.hpp"

namespace hs::workload {

bool ModelSpec::has_window(int block) const {
  return sliding_window > 0 && std::binary_search(sliding_window_layer_ids.begin(), sliding_window_layer_ids.end(), block);
}

bool ModelSpec::is_moe(int block) const {
  return std::binary_search(moe_layer_ids.begin(), moe_layer_ids.end(), block);
}

double ModelSpec::qk_width() const {
  return mla.on() ? static_cast<double>(heads) * (mla.qk_nope_head_dim + mla.qk_rope_head_dim) : q_width();
}

double ModelSpec::v_width() const { return mla.on() ? static_cast<double>(heads) * mla.v_head_dim : q_width(); }

double ModelSpec::mla_latent() const {
  return mla.on() ? static_cast<double>(mla.q_lora_rank) + mla.kv_lora_rank + mla.qk_rope_head_dim : 0.0;
}

double ModelSpec::attention_proj_params() const {
  const double d = d_model;
  if (!mla.on()) return d * (2.0 * q_width() + 2.0 * kv_width());
  const double qr = mla.q_lora_rank, kvr = mla.kv_lora_rank, r = mla.qk_rope_head_dim;
  const double queries = qr > 0 ? d * qr + qr * qk_width() : d * qk_width();
  const double keys_values = d * (kvr + r) + kvr * heads * (static_cast<double>(mla.qk_nope_head_dim) + mla.v_head_dim);
  return queries + keys_values + v_width() * d;
}

double ModelSpec::attention_bias_params() const {
  if (mla.on()) return static_cast<double>(mla.q_lora_rank) + mla.kv_lora_rank + (attention_sinks ? heads : 0);
  return q_width() + 2.0 * kv_width() + d_model + (attention_sinks ? heads : 0);
}

double ModelSpec::attention_gemm_in_width() const {
  if (!mla.on()) return d_model + q_width();
  return static_cast<double>(d_model) + mla.q_lora_rank + mla.kv_lora_rank + v_width();
}

double ModelSpec::attention_gemm_out_width() const {
  if (!mla.on()) return q_width() + 2.0 * kv_width() + d_model;
  return static_cast<double>(mla.q_lora_rank) + qk_width() + mla.kv_lora_rank + mla.qk_rope_head_dim +
         static_cast<double>(heads) * (mla.qk_nope_head_dim + mla.v_head_dim) + d_model;
}

const char* attention_name(AttentionImpl a) {
  switch (a) {
    case AttentionImpl::kFlash: return "flash";
    case AttentionImpl::kStandard: return "standard";
    case AttentionImpl::kAuto: break;
  }
  return "auto";
}

AttentionImpl resolve_attention(AttentionImpl requested, double compute_capability) {
  if (requested != AttentionImpl::kAuto) return requested;
  return compute_capability >= kFlashAttentionMinCapability ? AttentionImpl::kFlash : AttentionImpl::kStandard;
}

const char* compute_dtype_name(ComputeDtype c) { return c == ComputeDtype::kFp8 ? "fp8" : "bf16"; }

namespace {

std::optional<double> dtype_bytes(const std::string& s) {
  if (s == "fp32") return 4.0;
  if (s == "bf16" || s == "fp16") return 2.0;
  if (s == "fp8") return 1.0;
  if (s == "none") return 0.0;
  return std::nullopt;
}

void apply_override(YAML::Node& root, const std::string& ov, Diagnostics& diags) {
  auto eq = ov.find('=');
  if (eq == std::string::npos || eq == 0) {
    diags.error({"--set", 0, 0}, ov, "expected KEY=VALUE, e.g. experts=32 or precision.params=fp16");
    return;
  }
  std::string key = ov.substr(0, eq);
  std::string value = ov.substr(eq + 1);
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception&) {
    parsed = YAML::Node(value);
  }
  // Walk dotted keys; yaml-cpp nodes are handles, so assigning through them edits the tree.
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!root.IsMap()) return;
  YAML::Node cur = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = cur[parts[i]];
    if (!next.IsDefined() || next.IsNull()) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = cur[parts[i]];
    }
    if (!next.IsMap()) {
      diags.error({"--set", 0, 0}, key, fmt::format("'{}' is not a map in this model", parts[i]));
      return;
    }
    cur.reset(next);
  }
  cur[parts.back()] = parsed;
}

// A set of block indices: all | "every N" (N-1, 2N-1, ...) | "from N" | [indices], sorted, no repeats.
std::vector<int> block_set(const YAML::Node& ml, const std::string& key, int layers, MapReader& r, YamlContext& ctx) {
  std::vector<int> ids;
  if (ml.IsScalar() && ml.Scalar() == "all") {
    for (int i = 0; i < layers; ++i) ids.push_back(i);
  } else if (ml.IsScalar() && ml.Scalar().rfind("every ", 0) == 0) {
    int every = std::atoi(ml.Scalar().c_str() + 6);
    if (every < 1) r.error(key, "expected 'every N' with N >= 1");
    else
      for (int i = every - 1; i < layers; i += every) ids.push_back(i);
  } else if (ml.IsScalar() && ml.Scalar().rfind("from ", 0) == 0) {
    int first = std::atoi(ml.Scalar().c_str() + 5);
    if (first < 0 || first >= layers) r.error(key, fmt::format("expected 'from N' with 0 <= N < {}", layers));
    else
      for (int i = first; i < layers; ++i) ids.push_back(i);
  } else if (ml.IsSequence()) {
    for (size_t i = 0; i < ml.size(); ++i) {
      auto v = yaml_integer(ml[i], fmt::format("{}[{}]", key, i), ctx, 0, std::max(0, layers - 1));
      if (v) ids.push_back(static_cast<int>(*v));
    }
    std::sort(ids.begin(), ids.end());
    if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) r.error(key, "a block index appears twice");
  } else {
    r.error(key, fmt::format("expected 'all', 'every N', 'from N' or a list of block indices, got {}",
                             describe_yaml_type(ml)));
  }
  return ids;
}

}  // namespace

ModelSpec load_model(const std::string& text, const std::string& file, const std::vector<std::string>& overrides) {
  Diagnostics diags;
  YamlContext ctx{file, &diags};
  YAML::Node root = parse_yaml(text, ctx);
  diags.throw_if_errors();
  if (!root.IsMap()) throw InputError({file, 1, 1}, "", "expected a YAML map describing a model (schema: hecate-sim/model@1)");
  for (const auto& ov : overrides) apply_override(root, ov, diags);

  ModelSpec m;
  MapReader r(root, "", ctx);
  if (auto s = r.str("schema")) {
    if (*s != "hecate-sim/model@1")
      r.error("schema", fmt::format("this version reads 'hecate-sim/model@1', got '{}'", *s));
  }
  m.name = r.str("name").value_or("");
  m.layers = static_cast<int>(r.integer("layers", true, 1, 100000).value_or(0));
  m.mtp_layers = static_cast<int>(r.integer("mtp_layers", false, 0, 64).value_or(0));
  m.d_model = static_cast<int>(r.integer("d_model", true, 1, 1 << 20).value_or(0));
  m.d_ffn = static_cast<int>(r.integer("d_ffn", true, 1, 1 << 22).value_or(0));
  m.d_ffn_dense = static_cast<int>(r.integer("d_ffn_dense", false, 1, 1 << 22).value_or(4LL * m.d_model));
  if (auto s = r.choice("expert_mlp", {"plain", "swiglu"}, false))
    m.expert_mlp = *s == "swiglu" ? ExpertMlp::kSwiGlu : ExpertMlp::kPlain;
  m.experts = static_cast<int>(r.integer("experts", true, 1, 1 << 20).value_or(0));
  m.top_k = static_cast<int>(r.integer("top_k", true, 1, 1024).value_or(0));
  m.route_groups = static_cast<int>(r.integer("route_groups", false, 1, 1 << 20).value_or(0));
  m.max_nodes = static_cast<int>(r.integer("max_nodes", false, 1, 1 << 20).value_or(0));
  m.shared_experts = static_cast<int>(r.integer("shared_experts", false, 0, 1024).value_or(0));
  m.heads = static_cast<int>(r.integer("heads", true, 1, 1 << 16).value_or(0));
  m.kv_heads = static_cast<int>(r.integer("kv_heads", false, 1, 1 << 16).value_or(0));
  m.head_dim = static_cast<int>(r.integer("head_dim", false, 1, 1 << 16).value_or(0));
  m.sliding_window = static_cast<int>(r.integer("sliding_window", false, 1, 1 << 24).value_or(0));
  m.attention_sinks = r.boolean("attention_sinks", false).value_or(false);
  m.seq_len = static_cast<int>(r.integer("seq_len", true, 1, 1 << 24).value_or(0));
  m.micro_batch = static_cast<int>(r.integer("micro_batch", false, 1, 1 << 20).value_or(1));
  // Micro-batches are simulated one by one (each routes its own counts), so their number is held to
  // what a pipeline schedule runs: 2^20 of them took 8 GiB and minutes before the first iteration.
  m.grad_accum = static_cast<int>(r.integer("grad_accum", false, 1, 4096).value_or(1));
  m.vocab = static_cast<int>(r.integer("vocab", false, 1, 1 << 24).value_or(50257));
  m.tied_embeddings = r.boolean("tie_embeddings", false).value_or(true);
  if (auto s = r.choice("position_embedding", {"learned", "rope"}, false)) m.learned_positions = *s == "learned";
  if (auto s = r.choice("attention", {"auto", "flash", "standard"}, false))
    m.attention = *s == "flash"      ? AttentionImpl::kFlash
                  : *s == "standard" ? AttentionImpl::kStandard
                                     : AttentionImpl::kAuto;
  m.causal = r.boolean("causal", false).value_or(true);
  m.attention_dropout = r.number("attention_dropout", false, 0, 0.99).value_or(0.1);
  if (YAML::Node mla = r.child("mla", false); mla.IsDefined()) {
    MapReader a(mla, "mla", ctx);
    if (a.valid()) {
      m.mla.q_lora_rank = static_cast<int>(a.integer("q_lora_rank", false, 0, 1 << 20).value_or(0));
      m.mla.kv_lora_rank = static_cast<int>(a.integer("kv_lora_rank", true, 1, 1 << 20).value_or(0));
      m.mla.qk_nope_head_dim = static_cast<int>(a.integer("qk_nope_head_dim", true, 1, 1 << 16).value_or(0));
      m.mla.qk_rope_head_dim = static_cast<int>(a.integer("qk_rope_head_dim", true, 0, 1 << 16).value_or(0));
      m.mla.v_head_dim = static_cast<int>(a.integer("v_head_dim", true, 1, 1 << 16).value_or(0));
      a.finish();
    }
  }
  if (auto s = r.choice("ema", {"none", "gpu", "cpu"}, false))
    m.ema = *s == "gpu" ? EmaPlacement::kGpu : *s == "cpu" ? EmaPlacement::kCpu : EmaPlacement::kNone;
  // recompute: [rmsnorm, attention_up_proj] (a list; [] or absent: nothing recomputed)
  if (YAML::Node rc = r.child("recompute", false); rc.IsDefined()) {
    if (!rc.IsSequence()) {
      r.error("recompute", fmt::format("expected a list of rmsnorm, attention_up_proj, got {}", describe_yaml_type(rc)));
    } else {
      for (size_t i = 0; i < rc.size(); ++i) {
        const std::string v = rc[i].IsScalar() ? rc[i].Scalar() : "";
        if (v == "rmsnorm") m.recompute.rmsnorm = true;
        else if (v == "attention_up_proj") m.recompute.attention_up_proj = true;
        else
          diags.error(ctx.at(rc[i]), fmt::format("recompute[{}]", i),
                      fmt::format("expected rmsnorm or attention_up_proj, got {}",
                                  rc[i].IsScalar() ? fmt::format("'{}'", v) : describe_yaml_type(rc[i])));
      }
    }
  }

  // moe_layers and sliding_window_layers: all | "every N" | "from N" | [block indices]
  YAML::Node ml = r.child("moe_layers", false);
  if (!ml.IsDefined()) {
    for (int i = 0; i < m.layers; ++i) m.moe_layer_ids.push_back(i);
  } else {
    m.moe_layer_ids = block_set(ml, "moe_layers", m.layers, r, ctx);
  }
  YAML::Node wl = r.child("sliding_window_layers", false);
  if (wl.IsDefined()) {
    m.sliding_window_layer_ids = block_set(wl, "sliding_window_layers", m.layers, r, ctx);
    if (m.sliding_window == 0) r.error("sliding_window_layers", "needs sliding_window (the window in tokens)");
  } else if (m.sliding_window > 0) {
    for (int i = 0; i < m.layers; ++i) m.sliding_window_layer_ids.push_back(i);
  }
  // An MTP module's block is built like the main model's last one (Megatron-Core builds it from the
  // decoder's layer spec; DeepSeek-V3's is an MoE block): MoE and windowed as that block is.
  if (m.layers > 0)
    for (int b = m.layers; b < m.blocks(); ++b) {
      if (m.is_moe(m.layers - 1)) m.moe_layer_ids.push_back(b);
      if (m.has_window(m.layers - 1)) m.sliding_window_layer_ids.push_back(b);
    }

  YAML::Node prec = r.child("precision", false);
  if (prec.IsDefined()) {
    MapReader p(prec, "precision", ctx);
    auto bytes_of = [&](const char* key, double& out) {
      if (auto s = p.str(key, false)) {
        if (auto b = dtype_bytes(*s)) out = *b;
        else p.error(key, fmt::format("expected fp32, bf16, fp16, fp8 or none, got '{}'", *s));
      }
    };
    bytes_of("params", m.precision.param_bytes);
    bytes_of("grads", m.precision.grad_bytes);
    bytes_of("master", m.precision.master_bytes);
    bytes_of("activations", m.precision.activation_bytes);
    if (auto s = p.choice("optimizer", {"adam", "sgd"}, false))
      m.precision.optimizer = *s == "adam" ? OptimizerKind::kAdam : OptimizerKind::kSgd;
    if (auto s = p.choice("moments", {"fp32", "bf16"}, false)) m.precision.moment_bytes = *s == "fp32" ? 4.0 : 2.0;
    if (auto s = p.choice("compute", {"bf16", "fp16", "fp8"}, false))
      m.precision.compute = *s == "fp8" ? ComputeDtype::kFp8 : ComputeDtype::kBf16;
    p.finish();
  }
  YAML::Node cf = r.child("capacity_factor", false);
  if (cf.IsDefined() && !(cf.IsScalar() && (cf.Scalar() == "null" || cf.Scalar() == "~"))) {
    if (auto v = r.number("capacity_factor", false, 0.01, 1000)) m.capacity_factor = *v;
  }
  m.allocator_slack = r.number("allocator_slack", false, 0, 0.9).value_or(0);
  m.probs_in_activation = r.boolean("probs_in_activation", false).value_or(false);
  r.finish();

  // Cross-field checks.
  if (m.heads > 0 && m.d_model > 0 && m.head_dim == 0 && m.d_model % m.heads != 0)
    r.error("heads", fmt::format("d_model {} is not divisible by heads {} (set head_dim for another head width)",
                                 m.d_model, m.heads));
  if (m.kv_heads > 0 && m.heads > 0 && (m.kv_heads > m.heads || m.heads % m.kv_heads != 0))
    r.error("kv_heads", fmt::format("kv_heads {} must divide heads {} (grouped-query attention)", m.kv_heads, m.heads));
  if (m.top_k > 0 && m.experts > 0 && m.top_k > m.experts)
    r.error("top_k", fmt::format("top_k {} exceeds the number of experts {}", m.top_k, m.experts));
  if ((m.route_groups > 0) != (m.max_nodes > 0))
    r.error(m.max_nodes > 0 ? "route_groups" : "max_nodes",
            "node-limited routing needs both route_groups (the router's expert groups, one per node) and max_nodes "
            "(groups a token may use), e.g. route_groups: 8 and max_nodes: 4 as DeepSeek-V3");
  if (m.route_groups > 0 && m.experts > 0 && m.experts % m.route_groups != 0)
    r.error("route_groups", fmt::format("route_groups {} must divide the {} experts (contiguous groups of equal size)",
                                        m.route_groups, m.experts));
  if (m.max_nodes > 0 && m.route_groups > 0 && m.max_nodes > m.route_groups)
    r.error("max_nodes", fmt::format("max_nodes {} exceeds route_groups {}", m.max_nodes, m.route_groups));
  if (m.max_nodes > 0 && m.route_groups > 0 && m.experts % m.route_groups == 0 && m.top_k > 0 &&
      static_cast<long long>(m.max_nodes) * (m.experts / m.route_groups) < m.top_k)
    r.error("max_nodes", fmt::format("max_nodes {} groups of {} experts hold fewer than top_k {} experts", m.max_nodes,
                                     m.experts / m.route_groups, m.top_k));
  if (m.seq_len > 0 && m.tokens_per_gpu_iteration() > (1LL << 40))
    r.error("seq_len", fmt::format("micro_batch x seq_len x grad_accum = {} tokens per GPU per iteration, more than 2^40",
                                   m.tokens_per_gpu_iteration()));
  if (m.mla.on() && m.kv_heads > 0)
    r.error("kv_heads", "MLA (mla) gives every query head its own key and value: kv_heads does not apply");
  if (m.mla.on() && m.head_dim > 0)
    r.error("head_dim", "MLA (mla) sets the head widths (qk_nope_head_dim, qk_rope_head_dim, v_head_dim): head_dim does not apply");
  if (m.layers > 0 && m.moe_layer_ids.empty() && !diags.has_errors())
    r.error("moe_layers", "the model has no MoE layer");
  diags.throw_if_errors();
  return m;
}

ModelSpec load_model_file(const std::string& path, const std::vector<std::string>& overrides) {
  return load_model(read_file(path), path, overrides);
}

}  // namespace hs::workload
