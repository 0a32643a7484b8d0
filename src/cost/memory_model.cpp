#include "cost/memory_model.hpp"

#include <array>
#include <utility>

namespace hs::cost {

std::string MemoryBreakdown::largest() const {
  std::array<std::pair<double, const char*>, 6> terms{{{params, "params"}, {grads, "grads"}, {optimizer, "optimizer"},
                                                       {activations, "activations"}, {buffers, "buffers"},
                                                       {reserve, "reserve"}}};
  auto best = terms[0];
  for (auto& t : terms)
    if (t.first > best.first) best = t;
  return best.second;
}

ParamCounts count_params(const workload::ModelSpec& m) {
  ParamCounts c;
  const double d = m.d_model;
  const double attn = 4 * d * d + 4 * d + 4 * d;  // QKV + out projections with biases, two norms
  c.per_expert = m.expert_params();
  double blocks = 0;
  for (int b = 0; b < m.layers; ++b) {
    double p = attn;
    if (m.is_moe(b)) {
      p += d * m.experts;                                   // router gate
      p += m.shared_experts * m.expert_params();            // shared experts are dense (replicated)
    } else {
      p += 2 * d * m.d_ffn_dense + m.d_ffn_dense + d;        // dense FFN
    }
    blocks += p;
  }
  c.dense_per_block = blocks / m.layers;
  c.dense = blocks + static_cast<double>(m.vocab) * d + static_cast<double>(m.seq_len) * d;
  return c;
}

double activation_bytes(const workload::ModelSpec& m, double received_tokens_all_layers) {
  const double s = m.seq_len, b = m.micro_batch, h = m.d_model, ab = m.precision.activation_bytes;
  const double tokens = s * b;
  double bytes = m.layers * 15.0 * s * b * h * (ab / 2.0);
  if (m.attention == workload::AttentionImpl::kStandard)  // scores kept: Korthikanti's 5as^2b per block
    bytes += m.layers * 5.0 * m.heads * s * s * b * (ab / 2.0);
  for (int blk = 0; blk < m.layers; ++blk) {
    if (m.is_moe(blk)) {
      bytes += tokens * m.top_k * h * ab;                                 // permuted copies sent
      bytes += tokens * m.shared_experts * (h + m.n_mats() * m.d_ffn) * ab; // shared experts
    } else {
      bytes += tokens * (h + 2.0 * m.d_ffn_dense) * ab;
    }
  }
  bytes += received_tokens_all_layers * (h + m.n_mats() * static_cast<double>(m.d_ffn)) * ab;
  bytes += tokens * static_cast<double>(m.vocab) * 4.0;  // fp32 logits
  return bytes;
}

}  // namespace hs::cost
