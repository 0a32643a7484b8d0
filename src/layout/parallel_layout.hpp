// The parallel layout of a training run: how its N GPUs split into tensor- (TP), pipeline- (PP),
// data- (DP) and expert-parallel (EP) groups, given once per run (`--layout tp=8,pp=16,ep=64`).
//
// Rank-to-GPU mapping. Rank r is topology GPU r (GPUs are numbered node by node), and ranks are
// assigned in Megatron-Core's default order "tp-cp-ep-dp-pp", TP fastest-varying (NVIDIA/Megatron-LM,
// megatron/core/parallel_state.py, initialize_model_parallel: the decoder RankGenerator(tp, ep=1, dp,
// pp, cp) with order "tp-cp-ep-dp-pp"; no context parallelism here, cp = 1):
//   rank = tp_rank + tp * (dp_rank + dp * pp_rank)
// so a TP group is tp consecutive GPUs (inside one node when tp divides the GPUs per node), a DP
// group strides by tp, and pipeline stage s is the block of tp*dp consecutive GPUs starting at
// s*tp*dp. Which groups share a NIC decides the result: TP's per-layer collectives stay on NVLink
// only when the TP group stays in a node.
//
// Expert parallelism is carved out of the same ranks as Megatron-Core's expert RankGenerator does it
// (same file: RankGenerator(tp=expert_tensor_parallel_size, ep, dp=world/(etp*ep*pp), pp), same
// order, and it raises unless world % (etp*ep*pp) == 0). Experts here are never tensor-sliced
// (etp = 1: every strategy moves whole experts, and DeepSeek-V3 runs no TP at all), so
//   rank = ep_rank + ep * (edp_rank + edp * pp_rank),   edp = tp*dp / ep
// An EP group is ep consecutive GPUs of one stage; ep must divide tp*dp (the ranks of a stage) and
// the experts. The expert-data-parallel group (edp ranks holding the same experts) strides by ep.
//
// Values are parsed once (parse_parallel_layout: syntax, each field's type and range) and resolved
// against the cluster and the model once (resolve_layout: dp derived, divisibility, TP inside a
// node unless tp_span=any; overlap_param_gather needs dist_opt=on and overlap_grad_reduce=on, as
// Megatron-LM's argument checks assert); both collect every problem before throwing InputError (exit 2), naming
// the source ("--layout" or a sweep file) and the field ("layout.tp").
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "workload/model_spec.hpp"

namespace hs::workload {

// Activation recomputation (Korthikanti et al. 2022): none keeps every activation; selective drops
// the attention core's s^2 tensors (recomputed in backward); full keeps only each layer's input.
enum class Recompute { kNone, kSelective, kFull };
const char* recompute_name(Recompute r);

// How the MoE dispatch / combine move tokens (layout key `dispatcher`): NCCL's all-to-all-v, one
// copy per token x expert straight to the expert's GPU (Megatron-Core's alltoall dispatcher), or
// DeepEP's normal kernels, one copy per destination node over the network and NVLink forwarding
// inside it (strategy/deepep_dispatch.hpp).
enum class Dispatcher { kNccl, kDeepEp };

// The pipeline schedule (schedule=...; strategy/graph/layout_iteration.hpp):
// 1F1B (PipeDream-Flush), Megatron's interleaved 1F1B (vpp > 1), ZB-H1 (Qi et al., "Zero Bubble
// Pipeline Parallelism", arXiv 2401.10241 §3.1: the backward split into B, the input gradient, and
// W, the weight gradient, W deferred to fill the cool-down bubble) and DualPipe (DeepSeek-V3
// technical report, arXiv 2412.19437 §3.2.1: micro-batches fed from both ends, each stage holding
// the model piece of its own position and of the mirrored one, forward and backward chunks of the
// two directions overlapped in pairs).
enum class Schedule { kOneFOneB, kInterleaved, kZbH1, kDualPipe };
const char* schedule_name(Schedule s);

struct ParallelLayout {
  int tp = 1;
  int pp = 1;
  int dp = 0;  // 0 until resolved: N / (tp * pp)
  int ep = 1;
  int vpp = 1;  // virtual pipeline stages (model chunks) per stage: Megatron's interleaved 1F1B
  bool sequence_parallel = true;       // sp=on|off (Megatron --sequence-parallel)
  bool tp_across_nodes = false;        // tp_span=node (default) | any
  bool distributed_optimizer = true;   // dist_opt=on|off (Megatron --use-distributed-optimizer)
  Recompute recompute = Recompute::kNone;
  Dispatcher dispatcher = Dispatcher::kNccl;  // dispatcher=nccl|deepep
  // Megatron-Core's DistributedDataParallel (megatron/core/distributed): gradients and parameters
  // live in buckets; with overlap_grad_reduce a bucket's reduce-scatter (all-reduce without the
  // distributed optimizer) is issued as soon as the last micro-batch's backward has produced all its
  // gradients; with overlap_param_gather the updated parameters' all-gathers run beside the next
  // iteration's forward. Defaults as DistributedDataParallelConfig's: both off.
  bool overlap_grad_reduce = false;    // overlap_grad_reduce=on|off (--overlap-grad-reduce)
  bool overlap_param_gather = false;   // overlap_param_gather=on|off (--overlap-param-gather)
  // Parameters per bucket (--ddp-bucket-size); 0 until resolved: Megatron-Core's default
  // max(40,000,000, 1,000,000 x dp).
  long long bucket_size = 0;
  // schedule=1f1b|interleaved|zb-h1|dualpipe; unless given, resolve_layout sets interleaved when
  // vpp > 1, else 1f1b.
  Schedule schedule = Schedule::kOneFOneB;
  bool schedule_given = false;
  bool vpp_given = false;
  // Megatron-Core's --pipeline-model-parallel-layout (pipeline_layout=...: E embedding, t transformer
  // block, m MTP layer, L loss; '|' ends a virtual stage; (..)*n and x*n repeat; Megatron's cosmetic
  // commas may be left out or kept) as given, and Megatron's --decoder-first-pipeline-num-layers /
  // --decoder-last-pipeline-num-layers (first_stage_layers=, last_stage_layers=; 0: not given).
  std::string pipeline_layout;
  int first_stage_layers = 0, last_stage_layers = 0;
  // Resolved uneven split: the first block of every model piece and the model's block count last
  // (pieces() + 1 entries); empty: the even split of chunk_blocks.
  std::vector<int> piece_start;
  std::string text;                    // as given, for outputs

  int stage_size() const { return tp * dp; }        // GPUs per pipeline stage
  int world() const { return tp * dp * pp; }
  int edp() const { return tp * dp / ep; }          // expert-data-parallel size
  // Rank of the GPU at these coordinates, and back.
  int rank(int tp_rank, int dp_rank, int pp_rank) const { return tp_rank + tp * (dp_rank + dp * pp_rank); }
  int tp_rank(int r) const { return r % tp; }
  int dp_rank(int r) const { return (r / tp) % dp; }
  int pp_rank(int r) const { return r / (tp * dp); }
  int ep_rank(int r) const { return (r % stage_size()) % ep; }
  // Groups, each a sorted list of ranks, in order of their lowest rank. The (expert-)data-parallel
  // groups are the ranks holding the same parameters, whose gradients are summed and over which
  // the distributed optimizer shards its state: dp (edp) ranks of one stage, and under DualPipe
  // those of the stage and of its mirror pp - 1 - s, which holds the same two pieces
  // (piece_copies() x dp ranks, listed once, from the lower stage).
  std::vector<std::vector<int>> tp_groups() const;
  std::vector<std::vector<int>> dp_groups() const;
  std::vector<std::vector<int>> ep_groups() const;
  std::vector<std::vector<int>> edp_groups() const;
  // Copies of each model piece along the pipeline: 1; DualPipe 2 (stage s and its mirror).
  int piece_copies() const { return schedule == Schedule::kDualPipe ? 2 : 1; }
  // ZB-H1 and DualPipe split backwards into B (input gradients) and W (weight gradients).
  bool splits_backward() const { return schedule == Schedule::kZbH1 || schedule == Schedule::kDualPipe; }
  // The stage of a mirrored pair that lists their data-parallel groups (the lower one), and the
  // stages holding the same pieces as `stage` (itself first; DualPipe: and its mirror).
  int dp_owner_stage(int stage) const { return piece_copies() == 2 ? std::min(stage, pp - 1 - stage) : stage; }
  std::vector<int> copy_stages(int stage) const {
    if (piece_copies() == 2) return {stage, pp - 1 - stage};
    return {stage};
  }
  std::vector<int> stage_gpus(int stage) const;
  // The GPU holding the other copy of rank r's pieces: DualPipe's GPU at r's (tp, dp) coordinates on
  // the mirrored stage pp - 1 - s (the same experts in the same places); r itself otherwise.
  int mirror_rank(int r) const {
    return piece_copies() == 2 ? r + (pp - 1 - 2 * pp_rank(r)) * stage_size() : r;
  }
  // Model pieces (virtual stages): pp x vpp; DualPipe: pp (every stage holds two of them).
  int pieces() const { return schedule == Schedule::kDualPipe ? pp : pp * vpp; }
  // Model chunks a stage holds: vpp; DualPipe: 2 (its own piece and its mirror's, 2x parameters).
  int stage_chunks() const { return schedule == Schedule::kDualPipe ? 2 : vpp; }
  // The piece chunk k of stage s runs: k x pp + s (Megatron's interleaving); DualPipe: chunk 0 is
  // piece s (micro-batches fed from stage 0), chunk 1 piece pp - 1 - s (those fed from stage pp - 1).
  int piece_of(int stage, int chunk) const {
    return schedule == Schedule::kDualPipe ? (chunk == 0 ? stage : pp - 1 - stage) : chunk * pp + stage;
  }
  // Blocks [first, last) of piece c (0 <= c < pieces()) for `layers` blocks and `mtp` MTP blocks
  // after them (ModelSpec::mtp_layers): piece_start's split when resolved from pipeline_layout or
  // first/last_stage_layers, else the `layers` split as evenly as possible, the first layers %
  // pieces() pieces taking one more, and the MTP blocks on the last piece (which also runs the LM
  // head; Megatron-Core places MTP layers on the last pipeline stage). Chunk k of
  // stage s is virtual stage k x pp + s (Megatron's interleaved assignment: stage s holds chunks s,
  // s + pp, s + 2pp, ...), so a micro-batch's forward visits stages 0..pp-1 vpp times. With vpp = 1,
  // chunk s is stage s.
  std::pair<int, int> chunk_blocks(int chunk, int layers, int mtp = 0) const;
  std::pair<int, int> stage_blocks(int stage, int layers, int mtp = 0) const { return chunk_blocks(stage, layers, mtp); }  // vpp = 1
  // Every block of stage s, in model order (its stage_chunks() pieces).
  std::vector<int> stage_block_ids(int stage, int layers, int mtp = 0) const;
  // The stage running the block (DualPipe: the one of the micro-batches fed from stage 0; the
  // mirror pp - 1 - s holds the other copy).
  int stage_of_block(int block, int layers, int mtp = 0) const;
};

// Syntax "[PRESET,]KEY=VALUE[,KEY=VALUE...]" (a preset of layout/layout_presets.hpp, then
// overrides: a later key wins), keys tp, pp, dp, ep, vpp (positive integers), sp (on|off),
// tp_span (node|any), dist_opt (on|off), recompute (none|selective|full), overlap_grad_reduce and
// overlap_param_gather (on|off), bucket_size (a positive integer: parameters per bucket), dispatcher
// (nccl|deepep), schedule
// (1f1b|interleaved|zb-h1|dualpipe), pipeline_layout (Megatron's layout string), first_stage_layers and
// last_stage_layers (positive integers). `source` names where the
// text came from in diagnostics ("--layout", "sweep.yaml:12:3").
ParallelLayout parse_parallel_layout(const std::string& text, const SourceLocation& source);

// Megatron-Core's pipeline layout string unrolled into its virtual stages' symbols ("Et*2|(t|)*2L" ->
// "Ett", "t", "tL"); on a syntax error `error` says what and where, and the result is empty.
std::vector<std::string> expand_pipeline_layout(const std::string& text, std::string& error);

// Checks the layout against the cluster (N GPUs, gpus_per_node) and the model and fills dp.
// Every violated rule is reported, each naming its field.
void resolve_layout(ParallelLayout& layout, int num_gpus, int gpus_per_node, const ModelSpec& model,
                    const SourceLocation& source);

// "tp=8,pp=16,dp=8,ep=64,sp=on,..." with every field resolved, for outputs (dispatcher only when
// not nccl, so that outputs from before the key keep their text).
std::string describe(const ParallelLayout& layout);

}  // namespace hs::workload
