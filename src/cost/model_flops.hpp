// Model FLOPs per trained token as Megatron-LM counts them, the figure behind its "TFLOP/s/GPU" log
// line and the per-GPU TFLOPS that Megatron-Core, Megatron-Bridge and DeepSeek publish (docs/model.md
// §7). Megatron-LM's num_floating_point_operations (megatron/training/training.py, non-MLA branch)
// divided by batch x seq_len, for a block of hidden size h, a query heads of head_dim c, g key/value
// heads, sequence s:
//     attention   12 h^2 (1 + g/a + s/h) q,   q = a c / h   (QKV and output projections, and QK^T and
//                                                           PV over the full s x s square: causal
//                                                           masking and sliding windows not discounted)
//     MoE MLP     12 h^2 (f / h) top_k m,      m = 3/2 for a gated (SwiGLU) MLP, else 1
//     shared      12 h^2 (f / h) shared m
//     dense MLP   12 h^2 (f_dense / h)        (this project's dense FFN has two matrices)
//     logits      6 h V per token, once       (12 h^2 V / (2 L h) per block in Megatron's form)
// summed over the model's blocks (MoE blocks and dense blocks as the model lists them, as Megatron's
// newer form does with moe_layer_freq). 12 = 6 x 2: each multiply-add is 2 FLOPs in each of 3 passes
// (forward, data gradient, weight gradient), and each term pairs two matrices (Q and the output
// projection, with K and V in g/a of it; an MLP's up and down; QK^T and PV). A model with MLA (`mla`,
// workload::MlaGeometry) takes Megatron-LM's MLA branch for its attention term, 6 x 2 x (q_term +
// kv_r (h + H (n + v) + 1) + h r + H v h + s H (n + r) / 2 + s H v / 2) per token, q_term = q_r (h +
// H (n + r) + 1): that branch halves the core attention for the causal mask (the multi-head branch
// above is the older form without it, as the published Megatron-Core figures used).
// Multi-token prediction (ModelSpec::mtp_layers = D), as Megatron-LM adds it: each module's block
// like any block above, its norms and 2h -> h projection 6 (3 h + 2 h^2), and the logits D + 1 times.
#pragma once

#include "workload/model_spec.hpp"

namespace hs::cost {

double megatron_flops_per_token(const workload::ModelSpec& m);

}  // namespace hs::cost
