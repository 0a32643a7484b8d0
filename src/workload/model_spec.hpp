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
  std::optional<double> capacity_factor;  // nullopt = dropless

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
