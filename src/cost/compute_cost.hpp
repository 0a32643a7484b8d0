// Compute cost models: how long a GPU takes for the kernels of one training step (model.md §3).
//
// * Expert FFN (grouped GEMM over the experts of one GPU, one launch):
//     per expert with t > 0 tokens, t padded up to the kernel tile (128 rows),
//     FLOPs = 2 * t_pad * d_model * d_ffn * n_mats (x2 in backward: data-grad + weight-grad),
//     bytes = weights (+ grads in backward) + activations in and out,
//     time  = max(FLOPs / (eta_c(t) * peak), bytes / (eta_m * hbm_bw)), summed over experts,
//     plus one launch. eta_c(t) = eta_max * t / (t + t_half) models the poor tensor-core occupancy of
//     skinny GEMMs. With weights dominating bytes, arithmetic intensity is ~t FLOP/B, so the roofline
//     alone makes a GEMM memory-bound below peak/hbm_bw tokens (153 on A100, 295 on H100), which is
//     what hardware.md reports.
// * Attention (per micro-batch, per layer): 8*s*d^2 (QKV/out projections) + 4*s^2*d (scores, values)
//   FLOPs per sequence at eta_attn, plus memory-bound norms/residuals; backward 2x.
// * Memory-bound kernels (router, permute/unpermute, optimizer step, materialization copies):
//   bytes / (eta_m * hbm_bw) + launch.
// Defaults are hardware.md's figures and are meant to be replaced by calibration.
#pragma once

#include <span>

#include "topology/topology.hpp"
#include "util/units.hpp"
#include "workload/model_spec.hpp"

namespace hs::cost {

struct ComputeParams {
  double eta_max = 0.80;     // large-GEMM fraction of peak (hardware.md: 0.75-0.85)
  double t_half = 48;        // tokens/expert at which eta_c reaches eta_max / 2
  int tile_rows = 128;       // token padding of the grouped GEMM
  double eta_attn = 0.55;    // attention block efficiency (flash-attention + projections)
  double eta_mem = 0.85;     // achievable fraction of HBM bandwidth
  Seconds launch{5e-6};      // per kernel launch / grouped launch
  double norm_bytes_factor = 12;  // memory-bound bytes per token per d_model in one block (norms, residual, dropout, bias)
};

class ComputeCost {
 public:
  ComputeCost(const topology::GpuModel& gpu, const workload::ModelSpec& model, ComputeParams p = {});

  // Expert FFN of one GPU for one layer: token counts per local expert (after replica splits).
  Seconds expert_forward(std::span<const double> tokens_per_expert) const;
  Seconds expert_backward(std::span<const double> tokens_per_expert) const;
  // Same for a uniform split (cheaper; used by the balanced oracle and shared experts).
  Seconds expert_forward_uniform(double tokens_each, int experts) const;
  Seconds expert_backward_uniform(double tokens_each, int experts) const;

  // Attention block (incl. norms, residual) of one layer for one micro-batch.
  Seconds attention_forward() const;
  Seconds attention_backward() const;
  // Router GEMM + softmax/top-k + token permute (forward) for `tokens` tokens; unpermute/combine.
  Seconds router_and_permute(double tokens) const;
  Seconds unpermute(double tokens) const;
  // Dense FFN of a non-MoE block (one micro-batch).
  Seconds dense_ffn_forward() const;
  Seconds dense_ffn_backward() const;
  // Embedding + LM head (one micro-batch), forward and backward.
  Seconds head_forward() const;
  Seconds head_backward() const;
  // Optimizer step over `params` parameters (memory-bound: reads/writes params, grads, states).
  Seconds optimizer_step(double params) const;
  // A memory-bound copy of `bytes` (read + write).
  Seconds memory_copy(Bytes bytes) const;

  double expert_param_bytes() const;  // one expert's parameters in the working precision
  const ComputeParams& params() const { return p_; }

 private:
  Seconds gemm(double tokens, double k, double n, double mats, double flop_mult, double extra_bytes_per_weight) const;
  topology::GpuModel gpu_;
  workload::ModelSpec m_;
  ComputeParams p_;
};

}  // namespace hs::cost
