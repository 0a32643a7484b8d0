// FasterMoE's dynamic shadowing (He et al., "FasterMoE: Modeling and Optimizing Training of
// Large-Scale Dynamic Pre-Trained Models", PPoPP'22), as its public implementation in FastMoE runs
// it: the policy of fmoe/fastermoe/shadow_policy.py (global_policy) and the schedule of
// cuda/fastermoe/smart_schedule.{h,cpp} (github.com/laekov/fastmoe).
//
// Expert parallelism (placement and EP groups exactly as `ep`) plus, per MoE layer and micro-batch,
// after the gate (FastMoE decides on every forward call: with a trace that records micro-batches each
// micro-batch's own counts decide its shadows, broadcast, reduce and copies; without, every
// micro-batch decides alike on the iteration's counts / grad_accum):
//   1. Policy. The counts of every expert over the EP group are known (FastMoE all-gathers them);
//      experts are sorted by count, descending (ties: lower id), and the next one is shadowed while
//      the modelled latency keeps falling strictly:
//          lat(S) = 3 * comp * B(S) + 4 * feat * B(S) + |S| * model
//      B(S)  = the largest number of tokens a GPU computes for its non-shadowed experts,
//      comp  = 2 * n_mats * alpha * d_model^2 / gemm_throughput   (seconds per token, forward;
//              3x for forward + backward),
//      feat  = d_model * activation_bytes / bandwidth              (seconds per token and all-to-all;
//              4 all-to-alls per layer),
//      model = n_mats * alpha * d_model^2 * param_bytes / bandwidth (one expert's broadcast).
//      As in the source, the last expert in the order is never shadowed, and the shadow cost is
//      additive (the model assumes nothing overlaps the broadcasts).
//   2. Broadcast. Each shadowed expert's parameters go from its owner to every other GPU of the
//      group (one NCCL broadcast each: a chain, collective::sparse_allgather with every other GPU as
//      a replica), on the all-to-all stream right after the dispatch, as smart_schedule.h issues
//      them; the owners' own expert GEMMs overlap it, the shadows' GEMMs wait for it.
//   3. Compute. Tokens for a shadowed expert never leave their GPU: every GPU (the owner included)
//      computes its own tokens of the shadowed experts after its regular experts, with the broadcast
//      parameters copied into its expert module (a memory copy per GPU).
//   4. Backward. Each GPU first computes its shadows' backward (its gradients need no all-to-all),
//      copies the gradients out and reduces them to the owner (ncclReduce, chain). FastMoE issues
//      the reduce on the compute stream, so the regular experts' backward waits for it: it runs beside
//      the combine-gradient all-to-all and is on the critical path beyond it. Per micro-batch.
//   Memory: every GPU keeps the shadowed experts' parameters of every layer from forward to backward
//   (FastMoE's ctx.shadows, re-used for their gradients: `copy_params`) plus one expert's gradient
//   while a shadow's backward runs (`copy_grads`); with per-micro-batch shadows, the micro-batch that
//   holds the most. `shadowed_per_layer` reports the last micro-batch's shadows,
//   `shadowed_max_per_layer` the most any micro-batch of any iteration had.
//
// Knobs (docs/model.md §4, fastermoe's parameters): trigger (FMOE_FASTER_SHADOW_ENABLE; FastMoE
// ships it off, here it defaults to on: the strategy is the shadowing), bandwidth
// (FMOE_FASTER_GLBPLC_NETBW; auto = the route bandwidth from GPU 0 to the first GPU of its EP group
// in another node, or to GPU 1 when the group is one node: the NIC or NVLink a GPU's tokens leave
// through), gemm_throughput (FMOE_FASTER_GLBPLC_GPUTP; auto = the FLOP/s the compute cost model
// gives one expert's forward GEMM at the balanced load, EP group tokens x top_k / E per micro-batch),
// alpha (FMOE_FASTER_GLBPLC_ALPHA; auto = d_ffn / d_model), ep_size (as `ep`).
//
// Where this differs from the code, deliberately:
//   * shadow_policy.py sums the gathered counts over axis 1, i.e. per *sending worker*; with top-k
//     routing every worker sends the same number of assignments, so as written it never shadows.
//     The paper and the docstring mean per-expert global counts; we use those.
//   * The code models one expert per worker (B = the next expert's count) in fp32 (data_size = 4)
//     with a 2-matrix MLP (constants 4 and 2); we take B per GPU (equal with one expert per GPU),
//     the model's activation / parameter bytes and n_mats (3 for SwiGLU).
//   * FasterMoE's smart schedule (group-wise pipelined all-to-all, FMOE_FASTER_GROUP_SIZE) and its
//     topology-aware gate are not modelled: the all-to-alls are EP's.
//   * The policy's all-gather of counts is a few bytes per expert and is not timed.
// Under a parallel layout each stage's EP groups shadow alike (strategy/policy/fastermoe/layout_fastermoe.cpp, with ShadowPlanner).
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "strategy/knobs.hpp"
#include "strategy/strategy.hpp"

namespace hs::strategy {

struct LayerPlan;

// The latency model of FastMoE's global_policy, per token and per expert (see above).
struct ShadowCostModel {
  double comp = 0;   // s per token, one expert forward
  double feat = 0;   // s per token and all-to-all
  double model = 0;  // s per expert broadcast
};

// The experts of one EP group (counts per micro-batch, E = counts.size(), expert e on group GPU
// e / experts_per_gpu) the policy shadows, in the order it chose them.
std::vector<int> fastermoe_shadow_policy(std::span<const double> counts, int experts_per_gpu,
                                         const ShadowCostModel& model);

struct FasterMoeKnobs {
  bool trigger = true;
  int ep_size = 0;
  double bandwidth = -1;        // B/s; -1 = auto
  double gemm_throughput = -1;  // FLOP/s; -1 = auto
  double alpha = -1;            // d_ffn / d_model; -1 = auto
};
// The knobs above from `--strategy fastermoe:...` (InputError naming the knob).
FasterMoeKnobs parse_fastermoe_knobs(const KnobValues& knobs);

// FasterMoE's shadowing of one MoE layer and micro-batch over EP groups of `ep` consecutive GPUs
// (of all n; experts in EP's blocks of E / ep): the policy per group on the group's counts, EP
// routing with the shadowed experts' tokens kept on their GPU, the shadows' broadcast (chain from
// the owner to the group's other GPUs), gradient reduce and the copies into every GPU's expert
// buffer. Shared by `fastermoe` and FasterMoE under a layout (whose groups are EP groups of a stage:
// ep consecutive GPUs too, the other stages' rows zero).
class ShadowPlanner {
 public:
  // tokens_per_gpu: the tokens a GPU routes per micro-batch (gemm_throughput's auto: one expert's
  // GEMM at the balanced load, ep x tokens_per_gpu x top_k / E tokens).
  ShadowPlanner(const Context& ctx, const FasterMoeKnobs& k, int ep, double tokens_per_gpu);
  // One layer's counts[source][expert] (n x E) and one forward call's share 1 / ga of them: fills
  // p's routing (the counts themselves, cut at the model's capacity, strategy/capacity.hpp: a
  // shadowed expert has an instance on each of the group's ep GPUs, so a source keeps up to ep x C of
  // its tokens for it), spag/sprs flows and copy_bytes (one forward call's); adds
  // the shadows' parameter bytes to held[group] (n / ep groups); returns the shadows over all groups.
  int plan(std::span<const double> layer, double ga, LayerPlan& p, std::vector<double>& held) const;
  // p's routing as the sum of its micro-batches' (p.micro, each with its own shadows).
  void sum_routing(LayerPlan& p) const;
  // The policy's model parameters as resolved: bandwidth, gemm_throughput, alpha.
  std::vector<ResolvedSetting> resolved_model() const;
  double expert_bytes() const { return expert_bytes_; }
  double grad_bytes() const { return grad_bytes_; }

 private:
  const Context& ctx_;
  bool trigger_;
  int n_, E_, ep_;
  std::vector<int> node_of_;
  int channels_ = 1;  // chains spanning nodes: collective::chain_channels
  double expert_bytes_ = 0, grad_bytes_ = 0;
  double bandwidth_ = 0, gemm_ = 0, alpha_ = 0;
  ShadowCostModel cost_;
  double capacity_;  // C per micro-batch of a GPU's tokens_per_gpu (infinite: dropless)
};


}  // namespace hs::strategy
