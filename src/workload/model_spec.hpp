// MoE model architecture and training setup (models/*.yaml, schema hecate-sim/model@1).
//
// Derived quantities (parameter counts, FLOPs) live in cost/; this is the validated input value.
#pragma once

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

struct Precision {
  double param_bytes = 2;      // bf16 working copy
  double grad_bytes = 2;       // bf16 gradients
  double master_bytes = 4;     // fp32 master weights (0 = none)
  OptimizerKind optimizer = OptimizerKind::kAdam;  // Adam: 2 fp32 moments (8 B/param)
  double activation_bytes = 2; // bf16 activations
  double optimizer_bytes() const { return optimizer == OptimizerKind::kAdam ? 8.0 : 0.0; }
  // Bytes per parameter of params + grads + master + optimizer states (16 for bf16 mixed Adam).
  double state_bytes_per_param() const { return param_bytes + grad_bytes + master_bytes + optimizer_bytes(); }
};

struct ModelSpec {
  std::string name;
  int layers = 0;                   // transformer blocks
  std::vector<int> moe_layer_ids;   // which blocks are MoE (sorted)
  int d_model = 0;
  int d_ffn = 0;                    // per expert
  int d_ffn_dense = 0;              // FFN width of non-MoE blocks (default 4 x d_model)
  ExpertMlp expert_mlp = ExpertMlp::kPlain;
  int experts = 0;
  int top_k = 0;
  int shared_experts = 0;
  int heads = 0;
  int seq_len = 0;
  int micro_batch = 1;              // sequences per GPU per micro-batch
  int grad_accum = 1;               // micro-batches per iteration
  int vocab = 50257;
  Precision precision;
  std::optional<double> capacity_factor;  // nullopt = dropless; else tokens beyond capacity dropped (strategy/capacity.hpp)
  // `attention` as given (auto | flash | standard) until resolved for a GPU: cost::resolve_attention
  // rewrites kAuto where the model meets a topology (the CLI, once); ComputeCost resolves its own copy
  // from its GpuModel; activation_bytes() counts a still-kAuto model as kFlash.
  AttentionImpl attention = AttentionImpl::kAuto;
  // Causal (decoder, GPT-like) self-attention. Default true: MoE LMs are decoders; encoder models
  // (BERT) set false. Flash kernels skip the masked half; the standard path computes the full square.
  bool causal = true;

  int moe_layers() const { return static_cast<int>(moe_layer_ids.size()); }
  bool is_moe(int block) const;
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
