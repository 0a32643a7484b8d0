#include "cost/model_flops.hpp"

namespace hs::cost {

// See the header: Megatron-LM's count, block by block, divided by the tokens.
double megatron_flops_per_token(const workload::ModelSpec& m) {
  const double h = m.d_model, s = m.seq_len;
  const double q = m.q_width() / h;                                        // query width / hidden
  const double g = static_cast<double>(m.key_value_heads()) / m.heads;     // kv heads / heads
  const double glu = m.expert_mlp == workload::ExpertMlp::kSwiGlu ? 1.5 : 1.0;
  double attention = (1 + g + s / h) * q;
  if (m.mla.on()) {
    // Megatron-LM's MLA branch, per token and block, over 12 h^2 (it counts 6 x the multiply-adds):
    // q_term + kv_r (h + H (n + v) + 1) + h r + H v h + s H (n + r) / 2 + s H v / 2, q_term =
    // q_r (h + H (n + r) + 1) (h H (n + r) without a q latent); the "+ 1"s are the latents' norms.
    const auto& a = m.mla;
    const double heads = m.heads, n = a.qk_nope_head_dim, r = a.qk_rope_head_dim, v = a.v_head_dim;
    const double q_term = a.q_lora_rank > 0 ? a.q_lora_rank * (h + heads * (n + r) + 1) : h * heads * (n + r);
    const double macs = q_term + a.kv_lora_rank * (h + heads * (n + v) + 1) + h * r + heads * v * h +
                        s * heads * (n + r) / 2 + s * heads * v / 2;
    attention = macs / (2.0 * h * h);
  }
  const double moe = static_cast<double>(m.d_ffn) / h * (m.top_k + m.shared_experts) * glu;
  const double dense = static_cast<double>(m.d_ffn_dense) / h;
  double per_block_sum = 0;
  for (int b = 0; b < m.blocks(); ++b) per_block_sum += attention + (m.is_moe(b) ? moe : dense);
  // Each MTP module (its block counted above): its norms and 2h -> h projection, 3 x 2 x (3 h + 2 h^2),
  // and one more pass through the output head (Megatron-LM's mtp_num_layers terms).
  const double mtp = m.mtp_layers;
  return 12.0 * h * h * per_block_sum + mtp * 6.0 * (3.0 * h + 2.0 * h * h) + 6.0 * h * m.vocab * (mtp + 1.0);
}

}  // namespace hs::cost
