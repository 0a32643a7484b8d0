#include "cost/compute_cost.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <vector>

#include "util/diagnostics.hpp"

namespace hs::cost {

double fp8_quantize_bytes(double tokens, double in_width, double out_width, double weights, bool backward) {
  if (!backward) return weights * kFp8QuantizeWeightBytes + tokens * in_width * kFp8QuantizeBytes;
  return weights * kFp8QuantizeWeightBytes + tokens * out_width * 2.0 * kFp8QuantizeBytes +
         tokens * in_width * kFp8RetileBytes;
}

void check_precision(const workload::ModelSpec& m, const topology::GpuModel& gpu, const std::string& model_source,
                     const std::string& topology_source) {
  if (!m.precision.fp8() || gpu.peak_fp8.value() > 0) return;
  throw InputError({topology_source, 0, 0}, "gpu.peak_fp8",
                   fmt::format("model {} ({}) sets precision.compute: fp8, but the topology's GPU {} has no FP8 tensor "
                               "cores (no gpu.peak_fp8; FP8 needs Hopper, compute capability 8.9 or newer): run it "
                               "with --set precision.compute=bf16, or give gpu.peak_fp8",
                               m.name, model_source, gpu.model));
}

void resolve_attention(workload::ModelSpec& m, const topology::GpuModel& gpu) {
  m.attention = workload::resolve_attention(m.attention, gpu.compute_capability);
}

ComputeCost::ComputeCost(const topology::GpuModel& gpu, const workload::ModelSpec& model, ComputeParams p)
    : gpu_(gpu), m_(model), p_(p), sms_(gpu.sms > 0 ? gpu.sms : kDefaultSms) {
  resolve_attention(m_, gpu_);
  if (m_.precision.fp8() && !(gpu_.peak_fp8.value() > 0))  // check_precision refuses it at the input
    throw std::invalid_argument("ComputeCost: an FP8 model on a GPU without gpu.peak_fp8");
}

// One GEMM group of `mats` matrices k x n applied to `tokens` rows; flop_mult = 1 forward, 2 backward.
// FP8 models run it at the FP8 peak and efficiency with FP8 weights unless keep_bf16 (the output head).
// extra_bytes_per_weight: bytes touched per weight beyond reading it once (backward writes grads).
Seconds ComputeCost::gemm(double tokens, double k, double n, double mats, double flop_mult,
                          double extra_bytes_per_weight, bool keep_bf16) const {
  if (tokens <= 0) return Seconds(0);
  const double tile = p_.tile_rows;
  const double t_pad = std::ceil(tokens / tile) * tile;
  const double flops_per_token = 2.0 * k * n * mats * flop_mult;
  // FLOPs(t) / eta_c(t) = FLOPs(t + t_half) / eta_max; the padded tile at eta_max is the floor.
  const double effective_tokens = std::max(tokens + p_.t_half, t_pad);
  const bool fp8 = m_.precision.fp8() && !keep_bf16;
  const double pb = fp8 ? 1.0 : m_.precision.param_bytes, ab = m_.precision.activation_bytes;
  const double weight_bytes = k * n * mats * (pb * flop_mult + extra_bytes_per_weight);
  const double act_bytes = tokens * (k + n * mats) * ab * flop_mult * 2;  // in and out
  const double rate = fp8 ? p_.eta_max_fp8 * gpu_.peak_fp8.value() : p_.eta_max * gpu_.peak_flops.value();
  const double t_compute = flops_per_token * effective_tokens / rate;
  const double t_memory = (weight_bytes + act_bytes) / (p_.eta_mem * gpu_.hbm_bandwidth.value());
  return Seconds(std::max(t_compute, t_memory));
}

// The problems of one grouped launch as tiled_call needs them, gathered once for all the launches
// of an MLP over the same rows (tiled_mlp): how many have rows, their rows summed in order, their
// tile rows (ceil(rows / tile_m)) summed, and, for weight gradients, the rows sorted largest first.
// The sorted rows live in a buffer on the stack up to kInline problems (no allocation per launch).
class ComputeCost::Rows {
 public:
  Rows(std::span<const double> rows, int tile_m) : rows_(rows) {
    for (double t : rows) {
      if (!(t > 0)) continue;
      problems += 1, all_rows += t;
      tile_rows += std::ceil(t / tile_m);
    }
  }
  // The rows > 0, largest first (sorted on the first call).
  std::span<const double> sorted() {
    if (sorted_.empty() && problems > 0) {
      const size_t p = static_cast<size_t>(problems);
      double* buf = p <= kInline ? inline_ : (heap_.resize(p), heap_.data());
      size_t i = 0;
      for (double t : rows_)
        if (t > 0) buf[i++] = t;
      std::sort(buf, buf + p, std::greater<>());
      sorted_ = {buf, p};
    }
    return sorted_;
  }
  std::span<const double> all() const { return rows_; }
  double problems = 0, all_rows = 0, tile_rows = 0;

 private:
  static constexpr size_t kInline = 256;
  std::span<const double> rows_;
  double inline_[kInline];
  std::vector<double> heap_;
  std::span<const double> sorted_;
};

Seconds ComputeCost::tiled_call(std::span<const double> rows, double n, double k, bool weight_grad, double weight_bytes,
                                double act_bytes, bool keep_bf16) const {
  Rows r(rows, p_.tiles.tile_m);
  return tiled_call(r, n, k, weight_grad, weight_bytes, act_bytes, keep_bf16);
}

// gemm_waves_time over the groups {ceil(rows[i] / tile_m) x ceil(n / tile_n) tiles, k} (forward,
// data gradient) or {ceil(k / tile_m) x ceil(n / tile_n), rows[i]} (weight gradient), rows[i] > 0,
// without building them, to the bit:
//  - every forward group has the same inner length k, so the waves' sums do not depend on their
//    order: tile counts are integers, so the running position c, each wave's start ceil(c / sms) and
//    (k an integer) each starts x k are integers, exact in doubles below 2^53, and the sums telescope
//    to starts = ceil(T / sms), k_sum = starts x k, T the tiles in all (ceil(n / tile_n) x the tile
//    rows: a product of integers). Otherwise (k not an integer, or too large) the groups are built;
//  - every weight-gradient group has the same tile count, so sorting the rows largest first orders
//    the groups as gemm_wave_sums does (equal rows are equal groups), and its loop runs on them.
Seconds ComputeCost::tiled_call(Rows& rows, double n, double k, bool weight_grad, double weight_bytes, double act_bytes,
                                bool keep_bf16) const {
  if (rows.problems == 0) return Seconds(0);
  // FP8: DeepGEMM's large-GEMM efficiency (eta_max_fp8) as the per-tile rate at the FP8 peak.
  const bool fp8 = m_.precision.fp8() && !keep_bf16;
  GemmTileParams tp = p_.tiles;
  if (fp8) tp.eta_tile = p_.eta_max_fp8;
  const double peak = fp8 ? gpu_.peak_fp8.value() : gpu_.peak_flops.value();
  WaveSums w;
  if (!weight_grad) {
    const double tiles = gemm_tile_count(1, n, p_.tiles) * rows.tile_rows;
    if (k == std::floor(k) && tiles * std::max(k, 1.0) < 0x1p52) {
      w.starts = std::ceil(tiles / sms_);
      w.k_sum = w.starts * k;
    } else {
      std::vector<TileGroup> groups;  // in the rows' order: gemm_wave_sums sorts them as ever
      for (double t : rows.all())
        if (t > 0) groups.push_back({gemm_tile_count(t, n, p_.tiles), k});
      w = gemm_wave_sums(groups, sms_);
    }
  } else {
    const double weight_tiles = gemm_tile_count(k, n, p_.tiles);  // a k x n output per expert
    if (weight_tiles > 0) {
      WaveCounter waves(sms_);
      for (double t : rows.sorted()) waves.add(weight_tiles, t);
      w = waves.sums();
    }
  }
  const Seconds compute = gemm_waves_time(w, sms_, peak, tp);
  const double bytes = rows.problems * weight_bytes + rows.all_rows * act_bytes;
  return p_.tiles.call + Seconds(std::max(compute.value(), bytes / (p_.eta_mem * gpu_.hbm_bandwidth.value())));
}

Seconds ComputeCost::tiled_mlp(std::span<const double> rows_in, double d, double f, int mats, bool backward) const {
  const double pb = m_.precision.fp8() ? 1.0 : m_.precision.param_bytes, ab = m_.precision.activation_bytes;
  Rows rows(rows_in, p_.tiles.tile_m);
  Seconds total(0);
  for (int i = 0; i < mats; ++i) {
    const double k = i + 1 < mats ? d : f, n = i + 1 < mats ? f : d;  // [rows x k] x [k x n]
    if (!backward) {
      total += tiled_call(rows, n, k, false, k * n * pb, (k + n) * ab, false);
    } else {
      // Data gradient [rows x n] x [n x k]; weight gradient [k x rows] x [rows x n], written in grad_bytes.
      total += tiled_call(rows, k, n, false, k * n * pb, (k + n) * ab, false) +
               tiled_call(rows, n, k, true, k * n * m_.precision.grad_bytes, (k + n) * ab, false);
    }
  }
  return total;
}

Seconds ComputeCost::expert_quantize(double tokens, bool backward) const {
  if (!m_.precision.fp8() || tokens <= 0) return Seconds(0);
  const double k = m_.d_model, n = m_.d_ffn, mats = m_.n_mats();
  const double bytes = fp8_quantize_bytes(tokens, k + n, n * (mats - 1) + k, k * n * mats, backward);
  return Seconds(bytes / (p_.eta_mem * gpu_.hbm_bandwidth.value()));
}

Seconds ComputeCost::activation(double tokens, double f, bool gated, bool backward) const {
  if (tokens <= 0) return Seconds(0);
  const double per_token = (gated ? (backward ? 5.0 : 3.0) : (backward ? 3.0 : 2.0)) * f * m_.precision.activation_bytes;
  return Seconds(tokens * per_token / (p_.eta_mem * gpu_.hbm_bandwidth.value())) + p_.launch;
}

Seconds ComputeCost::expert_forward(std::span<const double> tokens) const {
  if (p_.gemm_model == GemmModel::kTiles) {
    Seconds total = tiled_mlp(tokens, m_.d_model, m_.d_ffn, m_.n_mats(), false);
    double all = 0;
    for (double t : tokens) total += expert_quantize(t, false), all += t;
    return total + activation(all, m_.d_ffn, m_.n_mats() == 3, false);
  }
  Seconds total = p_.launch;
  double all = 0;
  for (double t : tokens) {
    total += gemm(t, m_.d_model, m_.d_ffn, m_.n_mats(), 1.0, 0.0) + expert_quantize(t, false);
    all += t;
  }
  return total + activation(all, m_.d_ffn, m_.n_mats() == 3, false);
}

Seconds ComputeCost::expert_fixed(bool backward) const {
  const double launches = backward ? 2.0 : 1.0;
  if (p_.gemm_model == GemmModel::kTiles) return p_.tiles.call * (launches * m_.n_mats());
  return p_.launch * launches;
}

Seconds ComputeCost::grouped_gemm_forward(std::span<const double> tokens, double k, double n) const {
  if (p_.gemm_model == GemmModel::kTiles) {
    const double pb = m_.precision.fp8() ? 1.0 : m_.precision.param_bytes;
    return tiled_call(tokens, n, k, false, k * n * pb, (k + n) * m_.precision.activation_bytes, false);
  }
  Seconds total = p_.launch;
  for (double t : tokens) total += gemm(t, k, n, 1.0, 1.0, 0.0);
  return total;
}

Seconds ComputeCost::expert_backward(std::span<const double> tokens) const {
  if (p_.gemm_model == GemmModel::kTiles) {
    Seconds total = tiled_mlp(tokens, m_.d_model, m_.d_ffn, m_.n_mats(), true);
    double all = 0;
    for (double t : tokens) total += expert_quantize(t, true), all += t;
    return total + activation(all, m_.d_ffn, m_.n_mats() == 3, true);
  }
  Seconds total = p_.launch * 2;  // data-grad and weight-grad grouped launches
  double all = 0;
  for (double t : tokens) {
    total += gemm(t, m_.d_model, m_.d_ffn, m_.n_mats(), 2.0, m_.precision.grad_bytes) + expert_quantize(t, true);
    all += t;
  }
  return total + activation(all, m_.d_ffn, m_.n_mats() == 3, true);
}

Seconds ComputeCost::expert_forward_uniform(double tokens_each, int experts) const {
  if (p_.gemm_model == GemmModel::kTiles) {
    const std::vector<double> rows(static_cast<size_t>(std::max(experts, 0)), tokens_each);
    return tiled_mlp(rows, m_.d_model, m_.d_ffn, m_.n_mats(), false) + expert_quantize(tokens_each, false) * experts +
           activation(tokens_each * experts, m_.d_ffn, m_.n_mats() == 3, false);
  }
  return p_.launch + (gemm(tokens_each, m_.d_model, m_.d_ffn, m_.n_mats(), 1.0, 0.0) + expert_quantize(tokens_each, false)) * experts +
         activation(tokens_each * experts, m_.d_ffn, m_.n_mats() == 3, false);
}

Seconds ComputeCost::expert_backward_uniform(double tokens_each, int experts) const {
  if (p_.gemm_model == GemmModel::kTiles) {
    const std::vector<double> rows(static_cast<size_t>(std::max(experts, 0)), tokens_each);
    return tiled_mlp(rows, m_.d_model, m_.d_ffn, m_.n_mats(), true) + expert_quantize(tokens_each, true) * experts +
           activation(tokens_each * experts, m_.d_ffn, m_.n_mats() == 3, true);
  }
  return p_.launch * 2 + (gemm(tokens_each, m_.d_model, m_.d_ffn, m_.n_mats(), 2.0, m_.precision.grad_bytes) +
                          expert_quantize(tokens_each, true)) * experts +
         activation(tokens_each * experts, m_.d_ffn, m_.n_mats() == 3, true);
}

double ComputeCost::keys_per_query(int block) const {
  const double s = m_.seq_len;
  if (m_.has_window(block) && m_.sliding_window < m_.seq_len) {
    const double w = m_.sliding_window;
    return m_.causal ? (s * w - w * (w - 1) / 2) / s : w;
  }
  return m_.causal ? 0.5 * s : s;
}

// See the header for the formulas and byte counts. With grouped-query attention or another head
// width, the projections are P = d (2 q + 2 kv) weights (q = heads x head_dim, kv = kv_heads x
// head_dim; 4 d^2 for multi-head attention) and the score / value GEMMs run over q; with MLA P is
// ModelSpec::attention_proj_params and QK^T runs over qk = H (nope + rope), PV over v = H v_head_dim.
Seconds ComputeCost::attention_time(bool backward, int block) const {
  const double s = m_.seq_len, d = m_.d_model, b = m_.micro_batch, a = m_.heads;
  const double qk = m_.qk_width(), v = m_.v_width();
  const double ab = m_.precision.activation_bytes;
  const double gemm_rate = p_.eta_attn * gpu_.peak_flops.value();
  const double mem_rate = p_.eta_mem * gpu_.hbm_bandwidth.value();
  const double pass = backward ? 2.0 : 1.0;  // backward: data- and weight-gradients
  const double proj_flops = pass * b * 2.0 * s * m_.attention_proj_params();
  double norm_bytes = pass * b * s * d * ab * p_.norm_bytes_factor;
  // Projections: bf16 at eta_attn, or FP8 at eta_attn_fp8 with their quantization kernels (inputs:
  // the QKV projection's d and the output projection's q; output gradients: Q, K, V and the
  // output's d; MLA's five GEMMs: ModelSpec::attention_gemm_in_width / out_width).
  const Seconds proj(proj_flops / projection_rate());
  if (m_.precision.fp8()) {
    norm_bytes += fp8_quantize_bytes(b * s, m_.attention_gemm_in_width(), m_.attention_gemm_out_width(),
                                     m_.attention_proj_params(), backward);
  }
  if (m_.attention != workload::AttentionImpl::kStandard) {
    // QK^T over qk and PV over v per key: 2 s keys (qk + v) per sequence (4 s keys q when qk = v = q).
    const double score_flops = pass * b * 2.0 * s * keys_per_query(block) * (qk + v);
    return proj + Seconds(score_flops / gemm_rate + norm_bytes / mem_rate) + p_.launch * (backward ? 10 : 6);
  }
  // Standard: the QK^T and PV GEMMs forward, each twice backward (dQ, dK over qk; dP, dV over v),
  // each over the full square (a window is a mask on it).
  const double elems = b * a * s * s;
  const auto bmm = [&](double width) {
    const double flops = 2.0 * b * s * s * width;
    const double bytes = elems * ab + 2.0 * b * s * width * ab;
    return Seconds(std::max(flops / gemm_rate, bytes / mem_rate));
  };
  const Seconds bmms = bmm(qk) + bmm(v);
  // Softmax forward 2 ab, backward 3 ab per element; attention dropout adds 2 ab + 1 each way and
  // one launch (none at attention_dropout 0).
  const bool dropout = m_.has_attention_dropout();
  const double elementwise_bytes =
      elems * ((backward ? 3.0 * ab : 2.0 * ab) + (dropout ? 2.0 * ab + 1.0 : 0.0));
  return proj + Seconds((elementwise_bytes + norm_bytes) / mem_rate) + bmms * (backward ? 2 : 1) +
         p_.launch * ((backward ? 15 : 9) - (dropout ? 0 : 1));
}

Seconds ComputeCost::attention_forward(int block) const { return attention_time(false, block); }

Seconds ComputeCost::attention_backward(int block) const { return attention_time(true, block); }

double ComputeCost::projection_rate() const {
  return m_.precision.fp8() ? p_.eta_attn_fp8 * gpu_.peak_fp8.value() : p_.eta_attn * gpu_.peak_flops.value();
}

Seconds ComputeCost::attention_weight_grad() const {
  const double s = m_.seq_len, b = m_.micro_batch;
  return Seconds(b * 2.0 * s * m_.attention_proj_params() / projection_rate()) + p_.launch * 2;
}

Seconds ComputeCost::router_and_permute(double tokens) const {
  const double d = m_.d_model, e = m_.experts, ab = m_.precision.activation_bytes;
  const double flops = 2.0 * tokens * d * e;
  const double t_c = flops / (p_.eta_max * gpu_.peak_flops.value());
  // Read tokens for the router, softmax/top-k over E logits, then write top_k copies (permute).
  const double bytes = tokens * (d * ab + e * 4 * 2 + m_.top_k * d * ab * 2);
  return Seconds(std::max(t_c, bytes / (p_.eta_mem * gpu_.hbm_bandwidth.value()))) + p_.launch * 3;
}

Seconds ComputeCost::unpermute(double tokens) const {
  const double bytes = tokens * m_.top_k * m_.d_model * m_.precision.activation_bytes * 2;
  return Seconds(bytes / (p_.eta_mem * gpu_.hbm_bandwidth.value())) + p_.launch;
}

Seconds ComputeCost::dense_ffn_forward() const {
  const double tok = static_cast<double>(m_.tokens_per_micro_batch());
  if (p_.gemm_model == GemmModel::kTiles)
    return tiled_mlp(std::span<const double>(&tok, 1), m_.d_model, m_.d_ffn_dense, 2, false) + dense_quantize(tok, false) +
           activation(tok, m_.d_ffn_dense, false, false);
  return p_.launch + gemm(tok, m_.d_model, m_.d_ffn_dense, 2, 1.0, 0.0) + dense_quantize(tok, false) +
         activation(tok, m_.d_ffn_dense, false, false);
}

Seconds ComputeCost::dense_ffn_backward() const {
  const double tok = static_cast<double>(m_.tokens_per_micro_batch());
  if (p_.gemm_model == GemmModel::kTiles)
    return tiled_mlp(std::span<const double>(&tok, 1), m_.d_model, m_.d_ffn_dense, 2, true) + dense_quantize(tok, true) +
           activation(tok, m_.d_ffn_dense, false, true);
  return p_.launch * 2 + gemm(tok, m_.d_model, m_.d_ffn_dense, 2, 2.0, m_.precision.grad_bytes) + dense_quantize(tok, true) +
         activation(tok, m_.d_ffn_dense, false, true);
}

Seconds ComputeCost::dense_quantize(double tokens, bool backward) const {
  if (!m_.precision.fp8()) return Seconds(0);
  const double d = m_.d_model, f = m_.d_ffn_dense;
  return Seconds(fp8_quantize_bytes(tokens, d + f, f + d, 2.0 * d * f, backward) / (p_.eta_mem * gpu_.hbm_bandwidth.value()));
}

// An MTP module's memory-bound kernels: its lookup and norms (7 d activations per token forward,
// twice that backward) and, for FP8 models, its projection's quantization.
static double mtp_memory_bytes(const workload::ModelSpec& m, bool backward) {
  const double tok = static_cast<double>(m.tokens_per_micro_batch()), d = m.d_model;
  const double quantize = m.precision.fp8() ? fp8_quantize_bytes(tok, 2 * d, d, 2 * d * d, backward) : 0.0;
  return tok * (backward ? 14 : 7) * d * m.precision.activation_bytes + quantize;
}

Seconds ComputeCost::mtp_forward() const {
  const double tok = static_cast<double>(m_.tokens_per_micro_batch()), d = m_.d_model;
  const Seconds memory = p_.launch * 3 + Seconds(mtp_memory_bytes(m_, false) / (p_.eta_mem * gpu_.hbm_bandwidth.value()));
  if (p_.gemm_model == GemmModel::kTiles) {
    const double pb = m_.precision.fp8() ? 1.0 : m_.precision.param_bytes, ab = m_.precision.activation_bytes;
    return memory + tiled_call(std::span<const double>(&tok, 1), d, 2 * d, false, 2 * d * d * pb, 3 * d * ab, false);
  }
  return memory + p_.launch + gemm(tok, 2 * d, d, 1, 1.0, 0.0);
}

Seconds ComputeCost::mtp_backward() const {
  const double tok = static_cast<double>(m_.tokens_per_micro_batch()), d = m_.d_model;
  const Seconds memory = p_.launch * 3 + Seconds(mtp_memory_bytes(m_, true) / (p_.eta_mem * gpu_.hbm_bandwidth.value()));
  if (p_.gemm_model == GemmModel::kTiles) {
    const double pb = m_.precision.fp8() ? 1.0 : m_.precision.param_bytes, ab = m_.precision.activation_bytes;
    return memory + tiled_call(std::span<const double>(&tok, 1), 2 * d, d, false, 2 * d * d * pb, 3 * d * ab, false) +
           mtp_weight_grad();
  }
  return memory + p_.launch * 2 + gemm(tok, 2 * d, d, 1, 2.0, m_.precision.grad_bytes);
}

Seconds ComputeCost::mtp_weight_grad() const {
  const double tok = static_cast<double>(m_.tokens_per_micro_batch()), d = m_.d_model;
  if (p_.gemm_model == GemmModel::kTiles) {
    const double ab = m_.precision.activation_bytes;
    return tiled_call(std::span<const double>(&tok, 1), d, 2 * d, true, 2 * d * d * m_.precision.grad_bytes, 3 * d * ab,
                      false);
  }
  // The curve model's backward GEMMs are one call of twice the forward's FLOPs: half of it.
  return Seconds((p_.launch * 2 + gemm(tok, 2 * d, d, 1, 2.0, m_.precision.grad_bytes)).value() / 2);
}

// The output head stays bf16 under FP8 (DeepSeek-V3 §3.3.1): its GEMM at the bf16 peak.
Seconds ComputeCost::head_forward() const {
  const double tok = static_cast<double>(m_.tokens_per_micro_batch());
  if (p_.gemm_model == GemmModel::kTiles) {
    const double d = m_.d_model, v = m_.vocab, pb = m_.precision.param_bytes, ab = m_.precision.activation_bytes;
    return tiled_call(std::span<const double>(&tok, 1), v, d, false, d * v * pb, (d + v) * ab, true);
  }
  return p_.launch + gemm(tok, m_.d_model, m_.vocab, 1, 1.0, 0.0, true);
}

Seconds ComputeCost::head_backward() const {
  const double tok = static_cast<double>(m_.tokens_per_micro_batch());
  if (p_.gemm_model == GemmModel::kTiles) {
    const double d = m_.d_model, v = m_.vocab, pb = m_.precision.param_bytes, ab = m_.precision.activation_bytes;
    const std::span<const double> rows(&tok, 1);
    return tiled_call(rows, d, v, false, d * v * pb, (d + v) * ab, true) +
           tiled_call(rows, v, d, true, d * v * m_.precision.grad_bytes, (d + v) * ab, true);
  }
  return p_.launch * 2 + gemm(tok, m_.d_model, m_.vocab, 1, 2.0, m_.precision.grad_bytes, true);
}

Seconds ComputeCost::optimizer_step(double params) const {
  const auto& pr = m_.precision;
  // Adam (mixed precision): read grad, master, m, v; write master, m, v, working param.
  const double per_param = pr.grad_bytes + 2 * pr.master_bytes + 2 * pr.optimizer_bytes() + pr.param_bytes;
  return Seconds(params * per_param / (p_.eta_mem * gpu_.hbm_bandwidth.value())) + p_.launch * 4;
}

Seconds ComputeCost::memory_copy(Bytes bytes) const {
  return Seconds(2.0 * bytes.value() / (p_.eta_mem * gpu_.hbm_bandwidth.value())) + p_.launch;
}

double ComputeCost::expert_param_bytes() const { return m_.expert_params() * m_.precision.param_bytes; }

}  // namespace hs::cost
