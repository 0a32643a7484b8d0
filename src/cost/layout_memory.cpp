#include "cost/layout_memory.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace hs::cost {

namespace {

// Whether the stage holds model piece `piece` (DualPipe: its own and its mirror's).
bool holds_piece(const workload::ParallelLayout& l, int stage, int piece) {
  for (int k = 0; k < l.stage_chunks(); ++k)
    if (l.piece_of(stage, k) == piece) return true;
  return false;
}
// The model's last piece (its loss): pp - 1, and under DualPipe stage 0 too; its first (the
// embeddings): stage 0, and under DualPipe pp - 1 too.
bool holds_loss(const workload::ParallelLayout& l, int stage) { return holds_piece(l, stage, l.pieces() - 1); }
bool holds_embedding(const workload::ParallelLayout& l, int stage) { return holds_piece(l, stage, 0); }

// The word embedding (or an output head of the same shape), vocab-parallel over TP.
double word_params(const workload::ModelSpec& m, const workload::ParallelLayout& l) {
  return static_cast<double>(m.vocab) * m.d_model / l.tp;
}

}  // namespace

StageParams stage_params(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage) {
  const double d = m.d_model, t = l.tp;
  StageParams p;
  const auto blocks = l.stage_block_ids(stage, m.layers, m.mtp_layers);
  for (int b : blocks) {
    p.dense += (m.attention_proj_params() + m.attention_bias_params()) / t + 4 * d;  // QKV + out projections (with biases, sinks) / TP; two norms
    if (m.is_mtp(b)) p.dense += mtp_extra_params(m, l.tp);
    if (m.is_moe(b)) {
      p.dense += d * m.experts;                          // router gate, replicated
      p.dense += m.shared_experts * m.expert_params() / t;
      p.experts += m.expert_params() * (static_cast<double>(m.experts) / l.ep);
    } else {
      p.dense += (2 * d * m.d_ffn_dense + m.d_ffn_dense) / t + d;
    }
  }
  const double word = word_params(m, l);
  const bool embedding = holds_embedding(l, stage), loss = holds_loss(l, stage);
  if (embedding) p.dense += embedding_params(m, l);
  if (loss) p.dense += head_params(m, l, stage);
  // An MTP module on another stage than the loss's (a pipeline_layout may put it there) needs its own
  // copy of the shared head and of the shared embedding (one tensor when tied, held here or copied).
  if (!loss && !blocks.empty() && m.is_mtp(blocks.back()))
    p.dense += (m.tied_embeddings ? 0.0 : word) + (embedding ? 0.0 : word);
  return p;
}

BlockParams block_params(const workload::ModelSpec& m, const workload::ParallelLayout& l, int block) {
  const double d = m.d_model, t = l.tp;
  BlockParams p;
  p.attention = (m.attention_proj_params() + m.attention_bias_params()) / t + 2 * d;  // QKV + out projections (with biases, sinks) / TP; its norm
  if (m.is_mtp(block)) p.attention += mtp_extra_params(m, l.tp);  // its projection and norms, with the attention
  p.mlp = 2 * d;                                   // the norm before the MLP
  if (m.is_moe(block)) {
    p.mlp += d * m.experts + m.shared_experts * m.expert_params() / t;
    p.experts = m.expert_params() * (static_cast<double>(m.experts) / l.ep);
  } else {
    p.mlp += (2 * d * m.d_ffn_dense + m.d_ffn_dense) / t + d;
  }
  return p;
}

double embedding_params(const workload::ModelSpec& m, const workload::ParallelLayout& l) {
  return word_params(m, l) + (m.learned_positions ? static_cast<double>(m.seq_len) * m.d_model : 0.0);
}

double head_params(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage) {
  if (!m.tied_embeddings) return word_params(m, l);
  return holds_embedding(l, stage) ? 0.0 : word_params(m, l);
}

double optimizer_shard_params(const workload::ParallelLayout& l, const StageParams& p) {
  if (!l.distributed_optimizer) return p.total();
  const double copies = l.piece_copies();
  return p.dense / (copies * l.dp) + p.experts / (copies * l.edp());
}

StageActivation stage_activation(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage) {
  const double s = m.seq_len, b = m.micro_batch, h = m.d_model, ab = m.precision.activation_bytes, t = l.tp;
  const double half = ab / 2.0;  // Korthikanti's coefficients count 2-byte elements
  const double sbh = s * b * h;
  const double tokens = s * b / t;  // tokens of the GPU's sequence shard (MoE needs sp with tp > 1)
  const auto blocks = l.stage_block_ids(stage, m.layers, m.mtp_layers);
  const bool swiglu = m.expert_mlp == workload::ExpertMlp::kSwiGlu;
  const AttentionKept attn = attention_kept_per_token(m);
  auto block = [&](int blk) {
    double bytes = (l.sequence_parallel ? attn.total() / t : attn.replicated + attn.split / t) * s * b;
    if (m.is_mtp(blk)) bytes += mtp_kept_per_token(m) * s * b / t;  // its norms' and projection's inputs
    if (m.attention == workload::AttentionImpl::kStandard && l.recompute == workload::Recompute::kNone)
      bytes += attention_score_kept_bytes(m) * m.heads * s * s * b / t;
    if (m.is_moe(blk)) {
      bytes += tokens * combine_kept_per_token(m);                                         // returned copies
      bytes += tokens * m.shared_experts * mlp_kept_per_token(m, m.d_ffn, swiglu, true);  // shared experts
    } else {
      bytes += s * b / t * mlp_kept_per_token(m, m.d_ffn_dense, false, true);
    }
    return bytes;
  };
  StageActivation a;
  double largest = 0;
  for (int blk : blocks) {
    const double x = block(blk);
    largest = std::max(largest, x);
    a.blocks_bytes += x;
  }
  a.routed_kept = mlp_kept_per_token(m, m.d_ffn, swiglu, false);
  a.full = l.recompute == workload::Recompute::kFull;
  a.blocks = static_cast<int>(blocks.size());
  // Full recompute: each block's input kept; one block (and its routed tokens) re-materialized at a
  // time. (The sum's first two terms, added first as the formula reads.)
  a.full_kept = a.blocks * 2.0 * sbh / (l.sequence_parallel ? t : 1.0) * half + largest;
  return a;
}

double StageActivation::bytes(double received_tokens) const {
  if (full) {
    const double per_block_routed = blocks > 0 ? received_tokens / blocks : 0.0;
    return full_kept + per_block_routed * routed_kept;
  }
  return blocks_bytes + received_tokens * routed_kept;
}

double stage_activation_bytes(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage,
                              double received_tokens) {
  return stage_activation(m, l, stage).bytes(received_tokens);
}

double stage_logits_bytes(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage) {
  const double one = static_cast<double>(m.seq_len) * m.micro_batch * static_cast<double>(m.vocab) * 4.0 / l.tp;
  double losses = holds_loss(l, stage) ? 1.0 : 0.0;
  for (int b : l.stage_block_ids(stage, m.layers, m.mtp_layers)) losses += m.is_mtp(b) ? 1.0 : 0.0;
  return losses * one;
}

namespace {

// 1F1B's count (interleaved when vpp > 1), whatever the layout's schedule: the header's formula.
double one_f_one_b_in_flight(const workload::ParallelLayout& l, int stage, int micro_batches) {
  if (l.vpp == 1) return std::max(1, std::min(l.pp - stage, micro_batches));
  // Interleaved: Megatron's warm-up of (pp - s - 1) x 2 + (vpp - 1) x pp chunk forwards, then one more
  // before the first backward frees one; a chunk holds 1/vpp of the stage's blocks.
  // (With m == pp every forward runs before the first backward: all m x vpp chunks.)
  const int chunks = micro_batches == l.pp ? micro_batches * l.vpp
                                           : std::min((l.pp - stage - 1) * 2 + (l.vpp - 1) * l.pp + 1, micro_batches * l.vpp);
  return static_cast<double>(std::max(1, chunks)) / l.vpp;
}

}  // namespace

double in_flight_micro_batches(const workload::ParallelLayout& l, int stage, int micro_batches) {
  return in_flight_micro_batches(l.schedule == workload::Schedule::kDualPipe ? kScheduleDualPipe : k1F1B, l, stage,
                                 micro_batches);
}

double in_flight_micro_batches(std::string_view schedule, const workload::ParallelLayout& l, int stage,
                               int micro_batches) {
  if (schedule == kScheduleDualPipe) return (l.pp + 1) / 2.0;
  if (schedule == k1F1B || schedule == kScheduleZbH1) return one_f_one_b_in_flight(l, stage, micro_batches);
  throw std::invalid_argument(fmt::format("in_flight_micro_batches: unknown pipeline schedule '{}'", schedule));
}

std::vector<int> device_stages(std::string_view schedule, int pp, int rank_stage) {
  if (schedule == kScheduleDualPipe && pp - 1 - rank_stage != rank_stage) return {rank_stage, pp - 1 - rank_stage};
  return {rank_stage};
}

StageMemory::StageMemory(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage)
    : params(stage_params(m, l, stage)), activation(stage_activation(m, l, stage)),
      // DualPipe: stage_activation counts both pieces the GPU holds (stage_block_ids), so its
      // (pp + 1) / 2 micro-batches per piece pair are the report's PP + 1 of one piece (Table 2).
      in_flight(in_flight_micro_batches(l, stage, m.grad_accum)), logits(stage_logits_bytes(m, l, stage)) {}

MemoryBreakdown layout_memory(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage,
                              double received_tokens, double received_max_layer, double extra_experts) {
  return layout_memory(m, l, StageMemory(m, l, stage), received_tokens, received_max_layer, extra_experts);
}

MemoryBreakdown layout_memory(const workload::ModelSpec& m, const workload::ParallelLayout& l, const StageMemory& stage,
                              double received_tokens, double received_max_layer, double extra_experts) {
  const auto& pr = m.precision;
  StageParams p = stage.params;
  p.experts += extra_experts * m.expert_params();
  MemoryBreakdown mem;
  mem.params = p.total() * pr.param_bytes;
  mem.grads = p.total() * pr.grad_bytes;
  const double state = optimizer_state_bytes_per_param(m);
  mem.optimizer = state * optimizer_shard_params(l, p);
  mem.activations = stage.in_flight * stage.activation.bytes(received_tokens) + stage.logits;
  const double tokens = static_cast<double>(m.seq_len) * m.micro_batch / l.tp;
  if (m.moe_layers() > 0) mem.comm_buffers = (tokens * m.top_k + received_max_layer) * m.d_model * pr.activation_bytes;
  mem.reserve = kRuntimeReserveBytes;
  return mem;
}

}  // namespace hs::cost
