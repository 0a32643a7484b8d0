// Per-GPU memory (model.md §6): parameters, gradients, optimizer states (master weights + Adam
// moments), activations kept for backward, replica/materialization buffers and a fixed runtime
// reserve. Strategies fill a MemoryBreakdown; the report prints the peak and its composition and
// marks a configuration that exceeds the GPU's memory as infeasible, naming the largest term.
//
// Activation accounting (bytes, one micro-batch in flight; micro-batches of a gradient-accumulation
// step run one after another): per block, attention + norms keep 15*s*b*h*(act_bytes/2) bytes
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §4.1,
// eq. 1 / Table 2: attention 11sbh + two layer norms 4sbh, in 2-byte elements). With standard
// (unfused) attention each block also keeps 5*a*s^2*b*(act_bytes/2) bytes, the paper's 5as^2b:
// softmax output 2as^2b, dropout mask as^2b, dropout output 2as^2b (s x s per head); flash attention
// keeps no s^2 tensor. The implementation is m.attention as resolved where the model met the
// topology (cost::resolve_attention); a still-kAuto model counts as flash, what a GPU of unknown
// compute capability (assumed 8.0) runs. An MoE layer keeps, per routed token received, its input (h)
// and the FFN intermediates (n_mats * d_ffn), plus the permuted token copies on the sending side; the
// LM head keeps fp32 logits (tokens x vocab x 4). Runtime reserve: CUDA context, NCCL buffers,
// allocator fragmentation, 1 GiB by default.
#pragma once

#include <string>

#include "util/units.hpp"
#include "workload/model_spec.hpp"

namespace hs::cost {

struct MemoryBreakdown {
  double params = 0;        // working-precision parameters resident (dense + owned experts)
  double grads = 0;
  double optimizer = 0;     // master weights + optimizer moments
  double activations = 0;
  double buffers = 0;       // replica / materialization / shadow buffers
  double reserve = 0;       // runtime reserve
  double total() const { return params + grads + optimizer + activations + buffers + reserve; }
  // Name of the largest term, for "does not fit: activations dominate".
  std::string largest() const;
};

struct ParamCounts {
  double dense = 0;              // attention, norms, router gates, dense FFNs, shared experts, embeddings
  double dense_per_block = 0;    // what one block contributes (for per-block gradient buckets)
  double per_expert = 0;         // one routed expert
};

ParamCounts count_params(const workload::ModelSpec& m);

// Activation bytes for one micro-batch, given the routed tokens this GPU receives per MoE layer
// (summed over MoE layers) and the tokens it sends (permuted copies).
double activation_bytes(const workload::ModelSpec& m, double received_tokens_all_layers);

inline constexpr double kRuntimeReserveBytes = 1024.0 * 1024 * 1024;

}  // namespace hs::cost
