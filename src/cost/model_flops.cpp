#include "cost/model_flops.hpp"

namespace hs::cost {

// See the header: Megatron-LM's count, block by block, divided by the tokens.
double megatron_flops_per_token(const workload::ModelSpec& m) {
  const double h = m.d_model, s = m.seq_len;
  const double q = m.q_width() / h;                                        // query width / hidden
  const double g = static_cast<double>(m.key_value_heads()) / m.heads;     // kv heads / heads
  const double glu = m.expert_mlp == workload::ExpertMlp::kSwiGlu ? 1.5 : 1.0;
  const double attention = (1 + g + s / h) * q;
  const double moe = static_cast<double>(m.d_ffn) / h * (m.top_k + m.shared_experts) * glu;
  const double dense = static_cast<double>(m.d_ffn_dense) / h;
  double per_block_sum = 0;
  for (int b = 0; b < m.layers; ++b) per_block_sum += attention + (m.is_moe(b) ? moe : dense);
  return 12.0 * h * h * per_block_sum + 6.0 * h * m.vocab;
}

}  // namespace hs::cost
