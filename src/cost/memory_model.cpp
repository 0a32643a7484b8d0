#include "cost/memory_model.hpp"

#include <algorithm>
#include <vector>

namespace hs::cost {

std::array<MemoryTerm, kMemoryTerms> MemoryBreakdown::terms() const {
  return {{{"params", "params", params},
           {"grads", "grads", grads},
           {"optimizer", "optimizer", optimizer},
           {"activations", "activations", activations},
           {"copy_params", "copy params", copy_params},
           {"copy_grads", "copy grads", copy_grads},
           {"comm_buffers", "all-to-all buffers", comm_buffers},
           {"nccl", "NCCL buffers", nccl},
           {"reserve", "reserve", reserve}}};
}

double MemoryBreakdown::total() const {
  double sum = 0;
  for (const auto& t : terms()) sum += t.bytes;
  return sum;
}

std::string MemoryBreakdown::largest() const {
  const auto all = terms();
  const MemoryTerm* best = &all[0];
  for (const auto& t : all)
    if (t.bytes > best->bytes) best = &t;
  return best->label;
}

ParamCounts count_params(const workload::ModelSpec& m) {
  ParamCounts c;
  const double d = m.d_model;
  const double attn = m.attention_proj_params() + m.attention_bias_params() + 4 * d;  // QKV + out projections with biases (and sinks), two norms
  c.per_expert = m.expert_params();
  double blocks = 0;
  for (int b = 0; b < m.blocks(); ++b) {
    double p = attn + (m.is_mtp(b) ? mtp_extra_params(m, 1) : 0.0);
    if (m.is_moe(b)) {
      p += d * m.experts;                                   // router gate
      p += m.shared_experts * m.expert_params();            // shared experts are dense (replicated)
    } else {
      p += 2 * d * m.d_ffn_dense + m.d_ffn_dense + d;        // dense FFN
    }
    blocks += p;
  }
  c.dense_per_block = blocks / m.blocks();
  // The word embedding, the output head when untied, the position table when learned.
  c.dense = blocks + static_cast<double>(m.vocab) * d * (m.tied_embeddings ? 1 : 2) +
            (m.learned_positions ? static_cast<double>(m.seq_len) * d : 0.0);
  return c;
}

double optimizer_state_bytes_per_param(const workload::ModelSpec& m) {
  const auto& pr = m.precision;
  return pr.master_bytes + pr.optimizer_bytes() + (m.ema == workload::EmaPlacement::kGpu ? kEmaBytesPerParam : 0.0);
}

AttentionKept attention_kept_per_token(const workload::ModelSpec& m) {
  const double h = m.d_model, ab = m.precision.activation_bytes;
  const bool fp8 = m.precision.fp8();
  AttentionKept k;
  const double qkv_input = m.recompute.rmsnorm ? 0.0 : h * (fp8 ? kFp8CachedBytes : ab);
  k.replicated = 2.0 * h * ab + qkv_input + h * ab / 2.0;  // norm inputs, QKV input, dropout mask
  const double qkv_width = m.mla.on() ? 2.0 * m.qk_width() + m.v_width() : m.q_width() + 2.0 * m.kv_width();
  const double qkv = m.recompute.attention_up_proj ? m.mla_latent() * ab : qkv_width * ab;
  k.split = qkv + m.v_width() * (fp8 ? kE5M6CachedBytes : ab);  // Q, K, V (or the latents); output projection input
  return k;
}

double attention_score_kept_bytes(const workload::ModelSpec& m) {
  // Softmax output 2, dropout mask 1 and dropout output 2 per element in 16-bit (Korthikanti's 5).
  return (m.has_attention_dropout() ? 5.0 : 2.0) * m.precision.activation_bytes / 2.0;
}

double mtp_extra_params(const workload::ModelSpec& m, int tp) {
  const double d = m.d_model;
  return 2.0 * d * d / tp + 3.0 * d;
}

double mtp_kept_per_token(const workload::ModelSpec& m) {
  const double d = m.d_model, ab = m.precision.activation_bytes;
  return (m.recompute.rmsnorm ? 0.0 : 2.0 * d * ab) + 2.0 * d * (m.precision.fp8() ? kFp8CachedBytes : ab);
}

double combine_kept_per_token(const workload::ModelSpec& m) {
  return m.probs_in_activation ? 0.0 : m.top_k * static_cast<double>(m.d_model) * m.precision.activation_bytes;
}

double mlp_kept_per_token(const workload::ModelSpec& m, double d_ffn, bool swiglu, bool input_is_norm_output) {
  const double h = m.d_model, ab = m.precision.activation_bytes;
  const bool fp8 = m.precision.fp8();
  const double input = input_is_norm_output && m.recompute.rmsnorm ? 0.0 : h * (fp8 ? kFp8CachedBytes : ab);
  if (!fp8) return input + (swiglu ? 3.0 : 2.0) * d_ffn * ab;
  return input + (swiglu ? 2.0 * d_ffn * kFp8CachedBytes : d_ffn * (ab + kFp8CachedBytes));
}

double activation_bytes(const workload::ModelSpec& m, double received_tokens_all_layers) {
  const double s = m.seq_len, b = m.micro_batch;
  const double tokens = s * b;
  const bool swiglu = m.expert_mlp == workload::ExpertMlp::kSwiGlu;
  double bytes = m.blocks() * attention_kept_per_token(m).total() * tokens;
  if (m.attention == workload::AttentionImpl::kStandard)  // Korthikanti's 5as^2b per block: softmax output
    bytes += m.blocks() * attention_score_kept_bytes(m) * m.heads * s * s * b;
  bytes += m.mtp_layers * tokens * mtp_kept_per_token(m);
  for (int blk = 0; blk < m.blocks(); ++blk) {
    if (m.is_moe(blk)) {
      bytes += tokens * combine_kept_per_token(m);                                         // returned copies
      bytes += tokens * m.shared_experts * mlp_kept_per_token(m, m.d_ffn, swiglu, true);  // shared experts
    } else {
      bytes += tokens * mlp_kept_per_token(m, m.d_ffn_dense, false, true);
    }
  }
  bytes += received_tokens_all_layers * mlp_kept_per_token(m, m.d_ffn, swiglu, false);
  bytes += (1.0 + m.mtp_layers) * tokens * static_cast<double>(m.vocab) * 4.0;  // fp32 logits (and each MTP module's)
  return bytes;
}

CopyPeak copy_buffer_peak(std::span<const double> copies, double param_bytes, double grad_bytes, const CopyLifetime& life) {
  const int L = static_cast<int>(copies.size());
  auto at = [&](int l) { return l >= 0 && l < L ? copies[l] : 0.0; };
  CopyPeak best;
  auto consider = [&](double params, double grads) {
    if (params * param_bytes + grads * grad_bytes > best.total()) best = {params * param_bytes, grads * grad_bytes};
  };
  // Forward: without re-materialization copies accumulate (the last layer's instant holds them
  // all); with it, layer l in use and l + 1 being gathered.
  double held = 0;
  for (int l = 0; l < L; ++l) {
    held += copies[l];
    consider(life.rematerialize ? copies[l] + at(l + 1) : held, 0);
  }
  // Backward, last layer first: its copies (and, without re-materialization, every lower layer's),
  // its gradient buffers and, when spRS may still drain, the layer above's (a split backward: every
  // layer above's).
  double pending = 0;  // a split backward's gradient buffers, layers l..L-1
  for (int l = L - 1; l >= 0; --l) {
    pending += copies[l];
    const double grads = life.grads_pile_up ? pending : copies[l] + (life.grads_overlap_next ? at(l + 1) : 0.0);
    consider(life.rematerialize ? copies[l] + at(l - 1) : held, grads);
    held -= copies[l];
  }
  return best;
}

int copy_cap_level(std::span<const double> demand, double budget, double param_bytes, double grad_bytes,
                   const CopyLifetime& life, int max_level) {
  std::vector<double> capped(demand.size());
  auto fits = [&](int level) {
    for (size_t l = 0; l < demand.size(); ++l) capped[l] = std::min(demand[l], static_cast<double>(level));
    return copy_buffer_peak(capped, param_bytes, grad_bytes, life).total() <= budget;
  };
  if (fits(max_level)) return max_level;
  int lo = 0, hi = max_level;  // fits(hi) is false; fits(lo) is assumed (a level of 0 holds nothing)
  if (!fits(0)) return 0;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

double nccl_buffer_bytes(const NcclCommunicator& c) {
  double bytes = c.ring ? c.channels * kNcclConnectionBytes : 0.0;
  if (c.p2p) {
    bytes += c.intra_peers * kNcclP2pChannelsPerPeer * kNcclConnectionBytes;
    if (c.inter_peers > 0) {
      int p2p_channels = 1;
      while (p2p_channels < c.channels) p2p_channels *= 2;
      bytes += 2.0 * p2p_channels * kNcclSharedSteps * kNcclP2pNetChunkBytes;
    }
  }
  return bytes;
}

}  // namespace hs::cost
