// Compute cost models: how long a GPU takes for the kernels of one training step (docs/model.md §3).
//
// * GEMMs, by default (GemmModel::kTiles): the tile/wave model of cost/gemm_tiles.hpp, one launch per
//   weight matrix over all of a GPU's experts (forward; backward a data-gradient and a weight-gradient
//   launch each, the latter with the tokens as its inner length), each call + max(waves of 128 x 128
//   tiles on the GPU's SMs, HBM bytes / (eta_m x hbm_bw)); the expert FFN, the dense FFN and the
//   LM head alike. Bytes per launch: the weights of every problem with tokens (param bytes; the
//   weight gradient writes grad bytes) and t (k + n) activation bytes in and out.
// * Expert FFN under GemmModel::kCurve (a calibration's `gemm: {eta_max, t_half}`; the model before
//   the tile model), a grouped GEMM over the experts of one GPU, one launch:
//     per expert with t > 0 tokens (t may be fractional: an iteration's counts / grad_accum),
//     FLOPs(t) = 2 * t * d_model * d_ffn * n_mats (x2 in backward: data-grad + weight-grad),
//     compute  = max(FLOPs(t) / (eta_c(t) * peak), FLOPs(t_pad) / (eta_max * peak)),
//     bytes    = weights (+ grads in backward) + activations in and out,
//     time     = max(compute, bytes / (eta_m * hbm_bw)), summed over experts, plus one launch.
//     eta_c(t) = eta_max * t / (t + t_half) is useful FLOPs over time x peak, exactly what
//     `calibrate` / `validate` fit from measured times (cost/gemm_fit.hpp), so the first term is
//     FLOPs(t + t_half) at eta_max: a skinny GEMM costs as if it had t_half more tokens (its fixed
//     tail: tile set-up, poor tensor-core occupancy). The second term is the kernel's tile padding
//     (t_pad = t rounded up to 128 rows) at full efficiency, so t <= 128 never costs less than one
//     tile. (Until this version the padded FLOPs were divided by eta_c(t), counting the small-GEMM
//     penalty twice: the time diverged as t -> 0, 4 ms for a quarter token on a V100, and the fitted
//     H100 curve over-predicted 16-token GEMMs by 4.6x.) With weights dominating bytes, arithmetic
//     intensity is ~t FLOP/B, so the roofline makes a GEMM memory-bound below peak/hbm_bw tokens
//     (153 on A100, 295 on H100), which is what hardware.md reports.
// * Attention (per micro-batch of b sequences, per layer; s tokens, d = d_model, a heads, ab bytes per
//   activation element, E = b*a*s^2 score elements). The implementation is the model's `attention`
//   resolved for this GPU (workload::resolve_attention: flash on compute capability >= 8.0, else
//   standard). Both add the memory-bound norms/residual/dropout/bias traffic
//   (norm_bytes_factor * b*s*d*ab at eta_m) and the QKV/output projections, 8*s*d^2 FLOPs per sequence
//   at eta_attn.
//   - flash (FlashAttention 2/3): scores and values 4*s^2*d FLOPs per sequence at eta_attn, nothing of
//     size s^2 in HBM. Causal: the kernels skip the tiles above the diagonal, so the term is exactly
//     halved, 2*s^2*d (the diagonal tiles, computed whole, add ~B/s of it, 128/2048 = 6%: ignored).
//     6 launches.
//   - standard (Megatron's unfused core attention, what sm70 runs: FlashAttention never supported
//     V100, Dao-AILab/flash-attention #148, #524): QK^T and PV as batched GEMMs over the full s x s
//     square whether causal or not (the mask is applied to a full score matrix), each
//     2*s^2*d FLOPs per sequence, timed as a roofline max(FLOPs / (eta_attn * peak),
//     bytes / (eta_m * hbm_bw)) with bytes = E*ab (scores written / probabilities read) + 2*b*s*d*ab
//     (the two thin operands): with a 64-wide head they are memory-bound on V100 and A100. Then the
//     element-wise kernels over E elements at eta_m * hbm_bw (bytes per element, Megatron's
//     FusedScaleMaskSoftmax and torch dropout, Korthikanti et al. 2022 §4.1 for what is kept):
//       scale+mask+softmax (fused): read scores ab, write probabilities ab           = 2*ab
//       dropout: read probabilities ab, write dropped probabilities ab, mask 1 byte  = 2*ab + 1
//     i.e. (4*ab + 1)*E bytes forward, 9 B per element in bf16, with attention dropout (the model's
//     attention_dropout > 0: Megatron's default 0.1 and Korthikanti's count); 9 launches (flash's 6
//     less the flash kernel, plus QK^T, softmax, dropout, PV). Without it (attention_dropout: 0, as
//     GPT-OSS trains) 2*ab*E and 8 launches.
//   Backward: flash 2x the forward's FLOPs and memory-bound bytes, 10 launches. Standard: projections
//   2x; four score GEMMs (dP = dO V^T, dV = P'^T dO, dQ = dS K, dK = dS^T Q), each 2*s^2*d FLOPs per
//   sequence with the same roofline bytes as forward; element-wise
//       dropout backward: read dP ab and the mask 1, write ab                        = 2*ab + 1
//       softmax backward: read probabilities ab and their gradient ab, write ab      = 3*ab
//     i.e. (5*ab + 1)*E bytes, 11 B per element in bf16; norms 2x; 15 launches (without attention
//     dropout 3*ab*E and 14).
// * FP8 (model precision.compute: fp8; DeepSeek-V3, arXiv 2412.19437, §3.3, and Transformer Engine's
//   block scaling). The linear layers' GEMMs (expert FFNs, shared experts, dense FFNs, the attention
//   projections; Fprop, Dgrad and Wgrad alike) run at the GPU's FP8 peak (gpu.peak_fp8: 1,979 TFLOPS
//   dense on H100/H800/H200, twice bf16) with their own efficiency, DeepGEMM's published FP8 GEMMs
//   with DeepSeek-V3's fine-grained scaling on H800 (deepseek-ai/DeepGEMM README, first release,
//   "Performance": tensor-core MMA with the CUDA-core FP32 promotion every 128 elements of K included):
//     eta_max_fp8  = grouped GEMMs, contiguous layout (the MoE training forward), mean of the four
//                    shapes (4 x 8192 x 4096 x 7168: 1297, 4 x 8192 x 7168 x 2048: 1099, 8 x 4096 x
//                    4096 x 7168: 1288, 8 x 4096 x 7168 x 2048: 1093 TFLOPS) = 1194 / 1979 = 0.603,
//                    in place of eta_max for the expert and dense-FFN GEMMs (same t_half and tiles);
//     eta_attn_fp8 = normal dense GEMMs with M = 4096 (1058, 990, 590, 1358, 1304, 1025 TFLOPS),
//                    mean 1054 / 1979 = 0.533, for the attention projections (the flash kernel
//                    stays bf16 at eta_attn).
//   The GEMM reads FP8 weights (1 B each). The quantization kernels are memory-bound (HBM read +
//   write at eta_m; quantize_bytes): each quantized element reads 2 B (bf16), writes 1 B and one fp32
//   scale per 128 elements (1x128 tiles: kFp8QuantizeBytes = 3 + 4/128) or per 128x128 block
//   (weights: 3 + 4/16384). Weights are quantized each micro-batch (no FP8 weight cache is kept),
//   once for Fprop and once transposed for Dgrad. Forward: the weights and every GEMM input
//   (tokens x in_width); backward: the weights again, every output gradient twice (row tiles for
//   Dgrad, column tiles for Wgrad) and the cached FP8 inputs re-tiled for Wgrad (read 1 B + scale,
//   write 1 B + scale). Router, attention core, embedding and output head stay bf16 (§3.3.1).
// * The MLP's activation kernel, between its first and second GEMM: GeLU (two-matrix MLPs) or
//   SwiGLU's silu(gate) x up (three), one memory-bound launch over all of a GPU's tokens of the layer
//   (Megatron-Core's GroupedMLP and dense MLP run it as one fused elementwise kernel: bias_gelu /
//   bias_swiglu), f the MLP's width, ab the activation bytes:
//     forward   GeLU 2 f ab per token (read, write)   SwiGLU 3 f ab (read gate and up, write)
//     backward  GeLU 3 f ab (read input and gradient, write)   SwiGLU 5 f ab (read gate, up and the
//               gradient, write both gradients)
//   at eta_mem x hbm_bw, plus one launch. Part of expert_forward / expert_backward, the *_uniform
//   forms and the dense FFN.
// * Memory-bound kernels (router, permute/unpermute, optimizer step, materialization copies):
//   bytes / (eta_m * hbm_bw) + launch.
// Defaults are hardware.md's figures and are meant to be replaced by calibration.
#pragma once

#include <span>
#include <string>

#include "cost/gemm_tiles.hpp"
#include "topology/topology.hpp"
#include "util/units.hpp"
#include "workload/model_spec.hpp"

namespace hs::cost {

// Which GEMM model times the linear layers (expert, dense FFN and output-head GEMMs):
//   kTiles  the tile/wave model (cost/gemm_tiles.hpp): per launch, output tiles in waves of the
//           GPU's SMs, a pipeline fill per tile and a fixed call time; the default.
//   kCurve  the efficiency curve eta_c(t) = eta_max t / (t + t_half) with tile padding (above), what
//           a calibration's `gemm: {eta_max, t_half}` selects (calibrations fitted before the tile
//           model keep meaning what they meant).
enum class GemmModel { kTiles, kCurve };

// SMs assumed for a GPU whose model names none (gpu.sms absent, infer_sm_count unknown): an H100
// SXM5's 132, the GPU the tile parameters were fitted on.
inline constexpr int kDefaultSms = 132;

struct ComputeParams {
  GemmModel gemm_model = GemmModel::kTiles;
  GemmTileParams tiles;      // the tile/wave model's parameters (gemm_tiles.hpp cites them)
  double eta_max = 0.80;     // large-GEMM fraction of peak (hardware.md: 0.75-0.85); kCurve, and the router GEMM
  double t_half = 48;        // tokens/expert at which eta_c reaches eta_max / 2 (kCurve)
  int tile_rows = 128;       // token padding of the grouped GEMM (kCurve)
  double eta_attn = 0.55;    // attention block GEMM efficiency (projections, flash kernel or score/value GEMMs)
  double eta_mem = 0.85;     // achievable fraction of HBM bandwidth
  Seconds launch{5e-6};      // per kernel launch / grouped launch
  double norm_bytes_factor = 12;  // memory-bound bytes per token per d_model in one block (norms, residual, dropout, bias)
  double eta_max_fp8 = 1194.25 / 1979;  // FP8 grouped-GEMM fraction of the FP8 peak (DeepGEMM on H800; see above)
  double eta_attn_fp8 = 1054.17 / 1979; // FP8 attention projections (DeepGEMM dense, M = 4096)
};

// Bytes the FP8 quantization kernels move per element: read bf16 (2), write fp8 (1), one fp32 scale
// per 1x128 tile (activations, gradients) or per 128x128 block (weights). Re-tiling a cached FP8
// tensor reads and writes 1 B and a scale.
inline constexpr double kFp8QuantizeBytes = 3.0 + 4.0 / 128;
inline constexpr double kFp8QuantizeWeightBytes = 3.0 + 4.0 / (128 * 128);
inline constexpr double kFp8RetileBytes = 2.0 + 8.0 / 128;

// HBM bytes of the quantization kernels around one FP8 linear-layer group of `weights` parameters
// run over `tokens` rows, whose GEMM inputs add up to in_width elements per token and output
// gradients to out_width (an expert MLP: in k + n, out n (mats - 1) + k).
//   forward  = weights x kFp8QuantizeWeightBytes + tokens x in_width x kFp8QuantizeBytes
//   backward = weights x kFp8QuantizeWeightBytes + tokens x out_width x 2 x kFp8QuantizeBytes
//              + tokens x in_width x kFp8RetileBytes
double fp8_quantize_bytes(double tokens, double in_width, double out_width, double weights, bool backward);

// Where a model meets a topology: precision.compute fp8 needs FP8 tensor cores (gpu.peak_fp8 > 0);
// throws InputError naming `topology_source` and the GPU otherwise (V100 and A100 have none).
void check_precision(const workload::ModelSpec& m, const topology::GpuModel& gpu, const std::string& model_source,
                     const std::string& topology_source);

// Where a model meets a topology (the CLI, once): rewrites m.attention == kAuto to what this GPU runs
// (workload::resolve_attention with gpu.compute_capability), so that activation_bytes(m, ...) and the
// strategies see the same implementation as ComputeCost. Idempotent; flash / standard are kept.
void resolve_attention(workload::ModelSpec& m, const topology::GpuModel& gpu);

class ComputeCost {
 public:
  // Resolves the model's `attention` for `gpu` on its own copy (resolve_attention), so a ComputeCost
  // never costs kAuto.
  ComputeCost(const topology::GpuModel& gpu, const workload::ModelSpec& model, ComputeParams p = {});

  // Expert FFN of one GPU for one layer: token counts per local expert (after replica splits).
  Seconds expert_forward(std::span<const double> tokens_per_expert) const;
  Seconds expert_backward(std::span<const double> tokens_per_expert) const;
  // The launch time a GPU with any expert tokens pays whole, whatever its share: the curve's grouped
  // launch (p.launch, x2 backward), or the tile model's call time per launch (n_mats forward,
  // 2 n_mats backward). The lower bound divides only the rest among a stage's GPUs.
  Seconds expert_fixed(bool backward) const;
  // One grouped GEMM (one launch): per expert e, [t_e x k] x [k x n] forward (what the validation
  // backend's materialize suite times with unequal tokens per expert).
  Seconds grouped_gemm_forward(std::span<const double> tokens_per_expert, double k, double n) const;
  // Same for a uniform split (cheaper; used by the balanced oracle and shared experts).
  Seconds expert_forward_uniform(double tokens_each, int experts) const;
  Seconds expert_backward_uniform(double tokens_each, int experts) const;

  // Attention block (incl. norms, residual) of block `block` for one micro-batch, with the resolved
  // implementation (attention()); blocks differ only by a sliding window (ModelSpec::has_window).
  Seconds attention_forward(int block) const;
  Seconds attention_backward(int block) const;
  // The weight-gradient part of attention_backward (W of a split backward: ZB-H1, DualPipe): the
  // QKV / output projections' weight-gradient GEMMs, 2*s*P FLOPs per sequence for P projection
  // weights (8*s*d^2 for multi-head attention: the forward's projection FLOPs) at eta_attn (FP8
  // models: eta_attn_fp8 of peak_fp8, as the backward's projections run), and their two launches; the core attention and the norms have no weights, so the rest of the
  // backward is the input gradient (B). The same for every block.
  Seconds attention_weight_grad() const;
  // Keys one query attends to on average in `block` (the score and value GEMMs' inner length), as
  // the flash kernels compute them: s (full, non-causal), s/2 (causal), and with a window w <= s,
  // causal: (s w - w (w - 1) / 2) / s (the first w queries see fewer), non-causal: w.
  double keys_per_query(int block) const;
  // The implementation costed: the model's `attention` resolved for this GPU (never kAuto).
  workload::AttentionImpl attention() const { return m_.attention; }
  // Router GEMM + softmax/top-k + token permute (forward) for `tokens` tokens; unpermute/combine.
  Seconds router_and_permute(double tokens) const;
  Seconds unpermute(double tokens) const;
  // Dense FFN of a non-MoE block (one micro-batch).
  Seconds dense_ffn_forward() const;
  Seconds dense_ffn_backward() const;
  // Embedding + LM head (one micro-batch), forward and backward.
  Seconds head_forward() const;
  Seconds head_backward() const;
  // An MTP module's own work around its block (ModelSpec::mtp_layers; DeepSeek-V3 §2.2), one
  // micro-batch: the embedding lookup of the shifted tokens, the two RMSNorms and the concatenated
  // [t x 2d] x [2d x d] projection M_k at the model's compute precision (FP8 quantization kernels
  // included for FP8 models; the report keeps only the embedding, head, gates, norms and attention
  // core in bf16); memory-bound traffic of 7 d activations per token forward (lookup written d, norms
  // read and written 4 d, the projection input written 2 d), twice that backward. Its block is costed
  // as any block, its second head pass by head_forward / head_backward. mtp_weight_grad is the
  // projection's weight-gradient GEMM (the W of a split backward).
  Seconds mtp_forward() const;
  Seconds mtp_backward() const;
  Seconds mtp_weight_grad() const;
  // Optimizer step over `params` parameters (memory-bound: reads/writes params, grads, states).
  Seconds optimizer_step(double params) const;
  // A memory-bound copy of `bytes` (read + write).
  Seconds memory_copy(Bytes bytes) const;

  // The MLP activation kernel over `tokens` rows of width f (see above); 0 without tokens.
  Seconds activation(double tokens, double f, bool gated, bool backward) const;
  // The FP8 quantization kernels' time (memory-bound) around one expert GEMM group of `tokens` rows;
  // 0 for a bf16 model. Part of expert_forward / expert_backward and the *_uniform forms.
  Seconds expert_quantize(double tokens, bool backward) const;

  double expert_param_bytes() const;  // one expert's parameters in the working precision
  const ComputeParams& params() const { return p_; }

 private:
  Seconds gemm(double tokens, double k, double n, double mats, double flop_mult, double extra_bytes_per_weight,
               bool keep_bf16 = false) const;
  // The tile/wave model (kTiles). One launch over the problems rows[i] x n x k (forward, data
  // gradient), or, weight_grad, the weight gradients k x n with inner length rows[i]; problems with
  // no rows are skipped and a launch without any costs 0. HBM traffic: weight_bytes per problem
  // with rows, act_bytes per row.
  Seconds tiled_call(std::span<const double> rows, double n, double k, bool weight_grad, double weight_bytes,
                     double act_bytes, bool keep_bf16) const;
  class Rows;  // a launch's problems summarized for tiled_call (compute_cost.cpp)
  Seconds tiled_call(Rows& rows, double n, double k, bool weight_grad, double weight_bytes, double act_bytes,
                     bool keep_bf16) const;
  // An MLP of `mats` matrices (mats - 1 of d x f, one f x d) over the problems `rows`: one launch per
  // matrix forward, two backward (data and weight gradient).
  Seconds tiled_mlp(std::span<const double> rows, double d, double f, int mats, bool backward) const;
  // FP8 quantization kernels of a dense FFN over `tokens` rows (0 for bf16).
  Seconds dense_quantize(double tokens, bool backward) const;
  // Forward (backward = false) or backward attention block, launches included.
  Seconds attention_time(bool backward, int block) const;
  // FLOP/s of the attention projections' GEMMs: eta_attn_fp8 x peak_fp8 for FP8 models, else
  // eta_attn x the bf16 peak (attention_time and attention_weight_grad alike).
  double projection_rate() const;
  topology::GpuModel gpu_;
  workload::ModelSpec m_;
  ComputeParams p_;
  int sms_;  // gpu.sms, else kDefaultSms
};

}  // namespace hs::cost
