// The contract between a strategy's policy and the iteration graph (strategy/graph/layout_iteration.hpp):
// what the policy decided for one MoE layer in one iteration. A policy fills one LayerPlan per MoE
// layer, for every GPU of the cluster (a GPU outside the layer's pipeline stage routes and computes
// nothing); the graph times it. Whole-iteration token counts unless said otherwise.
#pragma once

#include <vector>

#include "collective/transfer.hpp"

namespace hs::strategy {

// What a strategy decided for one MoE layer in one iteration (whole-iteration token counts).
struct LayerPlan {
  std::vector<std::vector<double>> expert_tokens;  // [gpu] -> tokens of each expert instance it runs
  std::vector<double> dispatch_bytes;              // n x n, row = source GPU
  std::vector<double> received_tokens;             // [gpu] tokens it computes (for activation memory)
  // Token dropping (strategy/capacity.hpp): assignments the layer's routing was given and those it
  // dropped at the model's capacity (0 and 0 when dropless); the kept ones are in the fields above.
  double routed_tokens = 0, dropped_tokens = 0;
  // Sparse collectives of this layer (FSSDP, FSDP): the forward spAG of the copies, the spRS of
  // their gradients and the calibration stage's extra spAG (empty = none).
  collective::Coflow spag_flows, sprs_flows, calibration_flows;
  // Latency each adds beyond its largest route latency (a chain's hops: collective::sparse_finish).
  double spag_latency = 0, sprs_latency = 0, calibration_latency = 0;
  std::vector<double> copy_bytes;  // [gpu] parameter bytes of the copies it holds (empty = none)
  // FasterMoE: [gpu] -> tokens of each expert (all E) it computes locally as a shadow (empty = none);
  // spag_flows / sprs_flows then carry the shadows' broadcast and gradient reduce.
  std::vector<std::vector<double>> shadow_tokens;
  // FlexMoE: the replica groups' expert-gradient all-reduces of this layer (every replicated
  // expert's ring among its holders, all at once; collective::concurrent_ring_flows) and the ring
  // step latencies beyond the first. The graph all-reduces them once per iteration, after the layer's last backward.
  collective::Coflow replica_grad_flows;
  double replica_grad_latency = 0;
  // The lower bound (`bound`): [gpu] expert FFN seconds per micro-batch, forward and backward, used
  // instead of the cost model on expert_tokens (empty = from expert_tokens, every other strategy).
  std::vector<double> expert_fwd_seconds, expert_bwd_seconds;
  // Traces with a micro-batch axis: one entry per micro-batch (grad_accum of them), routed under this
  // iteration's placement. In an entry expert_tokens, dispatch_bytes, received_tokens, shadow_tokens
  // and (the bound) expert_fwd/bwd_seconds are that micro-batch's own, not divided by grad_accum;
  // FasterMoE, which decides its shadows per micro-batch, also sets there the shadows' broadcast and
  // reduce (spag_flows, sprs_flows) and copy_bytes; every other field is read from the iteration's
  // plan. Empty: every micro-batch routes this plan's iteration counts / grad_accum.
  std::vector<LayerPlan> micro;
};

}  // namespace hs::strategy
