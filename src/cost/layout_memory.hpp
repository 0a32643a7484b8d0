// Per-GPU memory under a parallel layout (layout/parallel_layout.hpp), term by term as
// Megatron-Core allocates it; the terms are MemoryBreakdown's (cost/memory_model.hpp).
//
// State. A GPU of pipeline stage s holds its stage's blocks only: attention projections, dense
// FFNs and shared experts split over the TP group (column/row parallel linears; norms and the
// router gate, small, replicated), the word embeddings on the first stage and the output head on
// the last (its own weights when untied; tied, a copy of the embedding when pp > 1: Megatron keeps
// it and all-reduces its gradient in the embedding group), vocab-parallel over TP; a learned
// position table on the first stage, replicated (none with rotary embeddings); E/ep whole
// experts of each MoE block of the stage (etp = 1). Working-precision params and gradients are
// whole on every GPU; with the distributed optimizer (Megatron's --use-distributed-optimizer,
// ZeRO-1) the fp32 master weights and Adam moments are sharded over the data-parallel group for
// dense parameters (dp ranks) and over the expert-data-parallel group for experts (edp = tp*dp/ep
// ranks; DualPipe: both copies' ranks, 2 dp and 2 edp): optimizer bytes = (master + moments) x
// (dense / dp + experts / edp). Without it every
// rank keeps the whole state.
//
// Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models", §4: per block sbh(34 + 5as/h) without parallelism, split t-ways by TP with sequence
// parallelism; without sequence parallelism the norms' and dropouts' 10sbh stay whole). Attention
// and its norms keep 15sbh/t (sp on) or (7 + 8/t)sbh (sp off), in 2-byte elements; standard
// attention adds 5as^2b/t; an MoE block keeps the permuted copies of its sbh/t tokens' top-k and,
// per routed token the GPU computes, the expert's input and intermediates; dense FFN
// (h + 2 d_ffn) per token / t; the LM head fp32 logits / t on the last stage.
// Recomputation: selective drops the s^2 attention tensors (recomputed in backward); full keeps
// each block's input (2sbh/t with sp) plus one block's activations, recomputed in backward.
// 1F1B keeps min(pp - s, m) micro-batches in flight on stage s (warm-up forwards before the first
// backward frees one), so stage 0 holds pp of them: pp x (L/pp) blocks = one whole model's worth.
// Interleaved 1F1B (vpp > 1) keeps more: see in_flight_micro_batches.
#pragma once

#include <string_view>
#include <vector>

#include "cost/memory_model.hpp"
#include "layout/parallel_layout.hpp"

namespace hs::cost {

// Parameters one GPU of `stage` holds: dense (TP shard, embeddings, replicated small tensors) and
// routed experts.
struct StageParams {
  double dense = 0;
  double experts = 0;
  double total() const { return dense + experts; }
};
StageParams stage_params(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage);
// The parameters whose optimizer state one GPU of the stage keeps and steps: with the distributed
// optimizer its shard over the ranks holding the same parameters (ParallelLayout::dp_groups),
// dense / dp + experts / edp, under DualPipe over both copies' 2 dp and 2 edp; else all of them.
double optimizer_shard_params(const workload::ParallelLayout& l, const StageParams& p);

// The same parameters by where their gradients come from, for the gradient buckets
// (strategy/graph/layout_iteration.hpp): one block's attention (projections, its norm), its MLP side
// (the other norm and the dense FFN, or the router gate and shared experts) and its E/ep routed
// experts; embedding_params: the word embeddings (and the position table when learned) of the
// stages holding the first piece; head_params: the output head of a stage holding the last piece,
// its own weights when untied (ModelSpec::tied_embeddings), else nothing where the stage holds the
// embeddings too (one tensor: pp 1, DualPipe's stages 0 and pp - 1) and a tied copy where it does
// not (Megatron keeps it and all-reduces its gradient in the embedding group).
// Per stage they add up to stage_params (but an MTP module's copies of the head and embedding on a
// stage without the loss).
struct BlockParams {
  double attention = 0;
  double mlp = 0;
  double experts = 0;
};
BlockParams block_params(const workload::ModelSpec& m, const workload::ParallelLayout& l, int block);
double embedding_params(const workload::ModelSpec& m, const workload::ParallelLayout& l);
double head_params(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage);

// Activation bytes of one micro-batch of `stage` on one GPU; `received_tokens` = routed tokens the
// GPU computes in one micro-batch, summed over the stage's MoE blocks. The fp32 logits are not in it
// (stage_logits_bytes).
// The fp32 logits (vocab-parallel, / tp) the loss keeps for its backward on `stage`: the main
// model's where the stage holds the last piece (DualPipe: stages 0 and pp - 1 both do), and each
// MTP module's where it holds the module's block. One micro-batch's: every schedule runs the loss's
// backward before the next micro-batch reaches the loss on that stage (1F1B and ZB-H1 keep one
// micro-batch on the last stage; interleaved 1F1B's warm-up reaches the last chunk only as its
// steady state starts; DualPipe runs B1 after each F1 of the stage holding the last piece), so
// layout_memory adds them once, not per micro-batch in flight.
double stage_logits_bytes(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage);
double stage_activation_bytes(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage,
                              double received_tokens);
// stage_activation_bytes in two parts: what the stage's blocks keep (computed once per stage) and
// bytes(received_tokens), which adds the routed tokens' share the same way, bit for bit.
struct StageActivation {
  double blocks_bytes = 0;  // every block's kept bytes, summed in block order
  double routed_kept = 0;   // bytes kept per routed token
  double full_kept = 0;     // recompute=full: the blocks' inputs and the largest block
  int blocks = 0;
  bool full = false;
  double bytes(double received_tokens) const;
};
StageActivation stage_activation(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage);

// Micro-batches whose activations stage s keeps at once under 1F1B with m micro-batches; with
// interleaving (vpp > 1) chunks in flight / vpp, each chunk holding 1/vpp of the stage's blocks
// (stage 0: (2(pp - 1) + (vpp - 1) pp + 1) / vpp = pp + (pp - 1) / vpp = pp (1 + (pp - 1) / (pp vpp)),
// Korthikanti et al. 2022's figure for the interleaved schedule's first stage).
// Under schedule=dualpipe: the "dualpipe" count below.
double in_flight_micro_batches(const workload::ParallelLayout& l, int stage, int micro_batches);

// Pipeline schedules by name, for what a GPU keeps in flight and which stages it holds:
//  * "1f1b" (Megatron's 1F1B; interleaved when vpp > 1) and "zb-h1" (zero-bubble ZB-H1, Qi et al.
//    2023, which keeps 1F1B's peak activation memory, its Table 1 / DeepSeek-V3's Table 2: PP):
//    in_flight_micro_batches(l, stage, m) above, one stage per GPU.
//  * "dualpipe" (DeepSeek-V3, arXiv 2412.19437, §3.2.1, Table 2): GPU i holds two stages, i and
//    pp - 1 - i (the two directions' copies: "Parameter 2x"), and keeps PP + 1 micro-batches of
//    activations in all (Table 2, in units of one stage's micro-batch): (pp + 1) / 2 for each of its
//    two stages. A middle stage of an odd pp is held once (its copies coincide).
inline constexpr std::string_view k1F1B = "1f1b";
inline constexpr std::string_view kScheduleZbH1 = "zb-h1";
inline constexpr std::string_view kScheduleDualPipe = "dualpipe";
// Micro-batches of `stage` whose activations a GPU keeps at once under `schedule`; throws
// std::invalid_argument for an unknown name (names are validated where the layout is parsed).
double in_flight_micro_batches(std::string_view schedule, const workload::ParallelLayout& l, int stage,
                               int micro_batches);
// The stages whose parameters and activations a GPU of pipeline rank `rank_stage` holds.
std::vector<int> device_stages(std::string_view schedule, int pp, int rank_stage);

// The whole breakdown of one GPU of `stage`: state, activations of the micro-batches in flight,
// all-to-all buffers of the largest layer (received_max_layer: its routed tokens per micro-batch),
// the runtime reserve. NCCL buffers are not counted under a layout yet. `extra_experts`: whole
// experts the GPU holds beyond its E/ep per MoE block (FlexMoE's reserve slots, summed over the
// stage's blocks), counted as its own experts are (params, grads, optimizer state over expert-DP).
MemoryBreakdown layout_memory(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage,
                              double received_tokens, double received_max_layer, double extra_experts = 0);
// What layout_memory reads of the stage alone (its parameters, activations before the routed
// tokens, micro-batches in flight, logits): a strategy asks for every GPU of a stage, every
// iteration, with only the tokens changing, so it keeps these per stage (the same breakdown, bit
// for bit, as layout_memory(m, l, stage, ...)).
struct StageMemory {
  StageMemory(const workload::ModelSpec& m, const workload::ParallelLayout& l, int stage);
  StageParams params;
  StageActivation activation;
  double in_flight = 0;
  double logits = 0;
};
MemoryBreakdown layout_memory(const workload::ModelSpec& m, const workload::ParallelLayout& l, const StageMemory& stage,
                              double received_tokens, double received_max_layer, double extra_experts = 0);

}  // namespace hs::cost
