// MoE model architecture and training setup (models/*.yaml, schema hecate-sim/model@1).
//
// Derived quantities (parameter counts, FLOPs) live in cost/; this is the validated input value.
#pragma once

#include <algorithm>

#include <optional>
#include <string>
#include <vector>

#include "util/diagnostics.hpp"

namespace hs::workload {

enum class ExpertMlp { kPlain, kSwiGlu };  // 2 or 3 weight matrices per expert
enum class OptimizerKind { kAdam, kSgd };

// How the attention scores are computed (model field `attention`).
//  * kFlash: a fused kernel (FlashAttention 2/3, cuDNN fused attention) that keeps the s x s scores
//    on chip and, for a causal mask, skips the masked tiles.
//  * kStandard: unfused, as Megatron's core attention without flash: QK^T and PV as batched GEMMs
//    over the full s x s square, scale+mask+softmax and dropout as memory-bound kernels, the
//    softmax output, dropout mask and dropout output kept for backward.
//  * kAuto: kFlash where the GPU can run FlashAttention 2 (compute capability >= 8.0), else
//    kStandard; see resolve_attention().
enum class AttentionImpl { kAuto, kFlash, kStandard };
const char* attention_name(AttentionImpl a);  // "auto", "flash", "standard"

// FlashAttention 2 (and the cuDNN / Transformer Engine fused kernels) need sm80+. V100 (sm70) was
// never supported, not even by FlashAttention 1 (Turing sm75 and newer): Dao-AILab/flash-attention
// issues #148 and #524 ("No V100 isn't supported"; Volta's m8n8k4 tensor-core MMA needs other
// shared-memory layouts).
inline constexpr double kFlashAttentionMinCapability = 8.0;

// kAuto -> kFlash if compute_capability >= 8.0 else kStandard; kFlash / kStandard are kept as given.
AttentionImpl resolve_attention(AttentionImpl requested, double compute_capability);

// The number format the linear layers' GEMMs run in (model field `precision.compute`).
//  * kBf16: bf16 (or fp16) tensor cores, every GEMM at the GPU's bf16 peak.
//  * kFp8: FP8 mixed precision as DeepSeek-V3 trains (arXiv 2412.19437, §3.3; docs/model.md §3): the
//    Fprop, Dgrad and Wgrad GEMMs of the linear layers (attention projections, dense FFNs, shared and
//    routed experts) run on FP8 tensor cores with fine-grained scaling (1x128 tiles of activations,
//    128x128 blocks of weights, FP32 accumulation promoted to CUDA cores every 128 elements of K);
//    the attention core, embedding, output head, router and norms stay in bf16/fp32. Needs a GPU with
//    FP8 tensor cores (gpu.peak_fp8 in the topology; checked where model meets topology,
//    cost::check_precision).
enum class ComputeDtype { kBf16, kFp8 };
const char* compute_dtype_name(ComputeDtype c);  // "bf16", "fp8"

struct Precision {
  double param_bytes = 2;      // bf16 working copy
  double grad_bytes = 2;       // bf16 gradients
  double master_bytes = 4;     // fp32 master weights (0 = none)
  OptimizerKind optimizer = OptimizerKind::kAdam;  // Adam: 2 moments
  double moment_bytes = 4;     // bytes of each Adam moment (`precision.moments`; DeepSeek-V3 §3.3.3: bf16)
  double activation_bytes = 2; // bf16 activations
  ComputeDtype compute = ComputeDtype::kBf16;
  bool fp8() const { return compute == ComputeDtype::kFp8; }
  double optimizer_bytes() const { return optimizer == OptimizerKind::kAdam ? 2.0 * moment_bytes : 0.0; }
  // Bytes per parameter of params + grads + master + optimizer states (16 for bf16 mixed Adam).
  double state_bytes_per_param() const { return param_bytes + grad_bytes + master_bytes + optimizer_bytes(); }
};

// What the backward pass recomputes instead of keeping (model field `recompute`, a list), as
// DeepSeek-V3 trains (arXiv 2412.19437, §3.2.3 "Recomputation of RMSNorm and MLA Up-Projection"):
//  * rmsnorm: every norm's output is recomputed from its input in backward: the input is kept (the
//    residual stream), the output (the QKV projection's input, the MLP's input) is not.
//  * attention_up_proj: the attention projections producing Q, K and V are recomputed in backward,
//    so Q, K and V are not kept; what is kept instead is the projections' input, which for MLA is the
//    compressed latents (ModelSpec::mla_latent() elements per token) and for plain multi-head attention the
//    norm output (dropped too under rmsnorm).
// This is separate from the layout's `recompute` (none / selective / full, Korthikanti et al.), which
// applies on top of it under --layout.
struct ActivationRecompute {
  bool rmsnorm = false;
  bool attention_up_proj = false;
};

// Exponential moving average of the parameters (model field `ema`): none, kept on the GPU (one fp32
// copy of the GPU's parameters) or on the CPU, updated asynchronously after each step (DeepSeek-V3
// §3.2.3 "Exponential Moving Average in CPU": no GPU memory, no step time).
enum class EmaPlacement { kNone, kGpu, kCpu };

// Multi-head latent attention (MLA; DeepSeek-V2/V3, arXiv 2412.19437 §2.1.1; model field `mla` with
// the names of DeepSeek's config.json). Per block, for H query heads of hidden size d:
//   queries   d -> q_lora_rank (down, then an RMSNorm) -> H x (qk_nope_head_dim + qk_rope_head_dim)
//             (up); q_lora_rank 0: d -> H x (nope + rope) directly (DeepSeek-V2-Lite)
//   keys, values  d -> kv_lora_rank + qk_rope_head_dim (down; the rope part is one key shared by
//             every head), the latent (RMSNorm) -> H x (qk_nope_head_dim + v_head_dim) (up)
//   output    H x v_head_dim -> d
// so the attention core's QK^T runs over H (nope + rope) per query and PV over H x v_head_dim
// (DeepSeek-V3: 128 x 192 and 128 x 128, against d = 7,168 for a multi-head count), and the
// projections hold d q_r + q_r H (n + r) + d (kv_r + r) + kv_r H (n + v) + H v d weights (187.1M in
// DeepSeek-V3, against 4 d^2 = 205.5M). Under recompute: [attention_up_proj] the up-projections are
// recomputed in backward from the kept latents, q_lora_rank + kv_lora_rank + qk_rope_head_dim
// elements per token (2,112 in DeepSeek-V3).
struct MlaGeometry {
  int q_lora_rank = 0;
  int kv_lora_rank = 0;  // > 0 when MLA is on
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  bool on() const { return kv_lora_rank > 0; }
};

struct ModelSpec {
  std::string name;
  int layers = 0;                   // transformer blocks of the main model
  // Multi-token prediction (model field `mtp_layers`; Megatron-Core's --mtp-num-layers, DeepSeek-V3's
  // num_nextn_predict_layers: 1; arXiv 2412.19437 §2.2): D sequential modules after the main model,
  // module k predicting token i + k + 1 from the previous module's hidden state (the main model's
  // for k = 1) and the embedding of token i + k: two RMSNorms, their concatenation projected from 2d
  // to d (M_k), one transformer block of the main model's last block's kind (an MoE block in
  // DeepSeek-V3) and the output head shared with the main model, then its loss. The blocks of the
  // modules are numbered after the main model's: blocks [layers, blocks()) (is_mtp).
  int mtp_layers = 0;
  std::vector<int> moe_layer_ids;   // which blocks are MoE (sorted; MTP blocks included)
  int d_model = 0;
  int d_ffn = 0;                    // per expert
  int d_ffn_dense = 0;              // FFN width of non-MoE blocks (default 4 x d_model)
  ExpertMlp expert_mlp = ExpertMlp::kPlain;
  int experts = 0;
  int top_k = 0;
  // Node-limited routing (DeepSeek-V3, arXiv 2412.19437 §2.1.2; its Hugging Face config's n_group /
  // topk_group): the router splits the experts into `route_groups` contiguous groups, one per node
  // of an EP group as DeepSeek-V3 lays them out, scores each group by the sum of its top_k /
  // max_nodes highest affinities, keeps the max_nodes best groups and picks the top_k experts among
  // theirs, so a token's copies land on at most max_nodes nodes. 0 / 0: no limit (plain top-k).
  int route_groups = 0;
  int max_nodes = 0;
  int shared_experts = 0;
  int heads = 0;                    // query heads
  // Grouped-query attention (GQA): key/value heads shared by heads / kv_heads query heads each
  // (Mixtral: 8 of 32; GPT-OSS: 8 of 64). 0 = heads (multi-head attention).
  int kv_heads = 0;
  // Width of one head. 0 = d_model / heads; given, it may differ (GPT-OSS-120B: 64 heads of 64 = 4096
  // query width on a 2880 hidden size), and the Q/K/V/output projections are d_model x heads x
  // head_dim and d_model x kv_heads x head_dim wide.
  int head_dim = 0;
  // Sliding-window (banded) attention: in the blocks listed, each query attends to at most
  // `sliding_window` keys (the previous ones, itself included, when causal), as GPT-OSS's
  // alternating banded layers (window 128) and Mistral's. 0 = every block attends to the full
  // sequence. Its cost: the flash kernels skip the tiles outside the band (cost/compute_cost.hpp).
  int sliding_window = 0;
  std::vector<int> sliding_window_layer_ids;  // sorted; the blocks with a window
  // Attention sinks (GPT-OSS): one learned logit per head added to the softmax's denominator; heads
  // parameters per block and no measurable compute (one more term per softmax row).
  bool attention_sinks = false;
  int seq_len = 0;
  int micro_batch = 1;              // sequences per GPU per micro-batch
  int grad_accum = 1;               // micro-batches per iteration
  int vocab = 50257;
  // The word embedding and the output head: one tensor (`tie_embeddings: true`, GPT-2, BERT,
  // Megatron-LM's default) or two (`false`: Hugging Face `tie_word_embeddings: false`, Megatron's
  // --untie-embeddings-and-output-weights; DeepSeek-V3, Mixtral, GPT-OSS).
  bool tied_embeddings = true;
  // A learned position-embedding table of seq_len x d_model beside the word embedding
  // (`position_embedding: learned`, Megatron's learned_absolute, the default) or none (`rope`,
  // rotary embeddings computed in the attention: DeepSeek-V3, Mixtral, GPT-OSS).
  bool learned_positions = true;
  Precision precision;
  std::optional<double> capacity_factor;  // nullopt = dropless; else tokens beyond capacity dropped (strategy/capacity.hpp)
  // The caching allocator's fragmentation as a fraction of what it holds, (reserved - allocated) /
  // reserved (cost/memory_model.hpp, add_allocator_slack); 0 = none beyond the fixed reserve.
  double allocator_slack = 0;
  // `attention` as given (auto | flash | standard) until resolved for a GPU: cost::resolve_attention
  // rewrites kAuto where the model meets a topology (the CLI, once); ComputeCost resolves its own copy
  // from its GpuModel; activation_bytes() counts a still-kAuto model as kFlash.
  AttentionImpl attention = AttentionImpl::kAuto;
  // Dropout probability on the attention probabilities (model field `attention_dropout`; Megatron's
  // --attention-dropout, default 0.1). It matters where the attention is unfused (standard): with it,
  // a dropout kernel after the softmax and, kept for backward, its mask and output beside the softmax
  // output (Korthikanti et al. 2022: 5 a s^2 b bytes per block in 16-bit); at 0 neither, only the
  // softmax output (2 a s^2 b). Flash kernels fuse it (nothing kept either way).
  double attention_dropout = 0.1;
  bool has_attention_dropout() const { return attention_dropout > 0; }
  // Causal (decoder, GPT-like) self-attention. Default true: MoE LMs are decoders; encoder models
  // (BERT) set false. Flash kernels skip the masked half; the standard path computes the full square.
  bool causal = true;
  ActivationRecompute recompute;
  // Multi-head latent attention (model field `mla`); off unless given.
  MlaGeometry mla;
  EmaPlacement ema = EmaPlacement::kNone;
  // Where the router's probabilities multiply the expert outputs (model field `probs_in_activation`).
  // false (default): in the unpermute / combine, which keeps each returned copy (top_k x d_model
  // activations per token) for the probabilities' gradient, as Megatron-LM's moe_unpermute does.
  // true: inside the experts' activation kernel (Megatron-Core v0.13's "memory efficient token
  // permutation": weighted_bias_swiglu), whose output the backward has (kept or recomputed), so the
  // combine keeps nothing per copy.
  bool probs_in_activation = false;

  int moe_layers() const { return static_cast<int>(moe_layer_ids.size()); }
  // Every block the iteration computes: the main model's, then the MTP modules'.
  int blocks() const { return layers + mtp_layers; }
  bool is_mtp(int block) const { return block >= layers; }
  // MoE layers of the MTP modules (mtp_layers when the main model's last block is MoE, else 0).
  int mtp_moe_layers() const { return moe_layers() - static_cast<int>(std::lower_bound(moe_layer_ids.begin(), moe_layer_ids.end(), layers) - moe_layer_ids.begin()); }
  bool is_moe(int block) const;
  bool has_window(int block) const;  // a sliding window applies to this block
  int head_width() const { return head_dim > 0 ? head_dim : (heads > 0 ? d_model / heads : 0); }
  int key_value_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  double q_width() const { return static_cast<double>(heads) * head_width(); }            // Q and the output projection's input
  double kv_width() const { return static_cast<double>(key_value_heads()) * head_width(); }  // K (and V) each
  // The attention core's widths per query: QK^T's inner length summed over heads, and PV's output
  // (the output projection's input). q_width() for both unless MLA: H (nope + rope) and H v.
  double qk_width() const;
  double v_width() const;
  // Elements per token of the MLA latents the backward keeps when the up-projections are recomputed
  // (q_lora_rank + kv_lora_rank + qk_rope_head_dim); 0 without MLA.
  double mla_latent() const;
  // Weights of the Q, K, V and output projections of one block: d (q + 2 kv) + q d (4 d^2 for
  // multi-head attention with head_dim = d / heads); MLA: see MlaGeometry.
  double attention_proj_params() const;
  // Their biases (q + 2 kv + d) and the sinks (heads when attention_sinks); MLA: no biases, the two
  // latents' RMSNorm weights (q_lora_rank + kv_lora_rank).
  double attention_bias_params() const;
  // The projections' GEMM inputs and output (gradients), elements per token summed over the GEMMs,
  // as FP8 quantizes them (cost::fp8_quantize_bytes): multi-head d + q in (the QKV GEMM's and the
  // output projection's), q + 2 kv + d out; MLA: d (both down-projections read the norm output,
  // quantized once) + q_lora_rank + kv_lora_rank + H v in, q_lora_rank + H (n + r) + kv_lora_rank +
  // r + H (n + v) + d out.
  double attention_gemm_in_width() const;
  double attention_gemm_out_width() const;
  int n_mats() const { return expert_mlp == ExpertMlp::kSwiGlu ? 3 : 2; }
  // Tokens one GPU routes per MoE layer per iteration.
  long long tokens_per_gpu_iteration() const {
    return static_cast<long long>(micro_batch) * seq_len * grad_accum;
  }
  long long tokens_per_micro_batch() const { return static_cast<long long>(micro_batch) * seq_len; }
  double expert_params() const { return static_cast<double>(n_mats()) * d_model * d_ffn; }
};

// Loads and validates a model YAML. `file` names it in diagnostics. Overrides are "key=value"
// strings (e.g. "experts=32") applied on top of the file, validated like the file itself.
ModelSpec load_model(const std::string& text, const std::string& file,
                     const std::vector<std::string>& overrides = {});
ModelSpec load_model_file(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace hs::workload
