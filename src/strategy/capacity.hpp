// Token dropping at a capacity factor (GShard, arXiv 2006.16668 §2.2 and Algorithm 1; Switch
// Transformer, arXiv 2101.03961 §2.2 eq. 3; docs/model.md §2).
//
// Capacity per expert and micro-batch: C = ceil(factor x T x top_k / E), with T the tokens the gate
// sees at once. GShard's gate splits a batch into G groups of S tokens and gives each group a
// capacity of 2S/E per expert (top-2: factor 1 x S x k / E); Switch writes it (tokens per batch /
// experts) x capacity factor for top-1. A group never spans devices in their implementations
// (GShard shards the group dimension G of its [G, S, E, C] dispatch mask over the devices;
// Megatron-Core's get_capacity takes a rank's tokens x top_k), and one group per GPU is what is
// modelled: T is one GPU's tokens of one micro-batch,
// micro_batch x seq_len / tp (with TP a rank routes its 1/tp of the sequence). Rounding: ceil, as
// Megatron-Core's get_capacity (math.ceil) and DeepSpeed's _capacity round; Mesh-TensorFlow's
// Switch floors instead. No minimum capacity (Megatron-Core's default min_capacity is none).
//
// First come by position: a GPU keeps its first C assignments to expert e in position order of the
// micro-batch and drops the rest. A load trace holds counts, not positions, and every assignment a
// GPU keeps counts alike, so a GPU sending c to e keeps min(c, C); no order across GPUs is needed,
// as each GPU applies its own capacity to its own tokens before the dispatch (nothing is padded:
// Megatron-Core's default, moe_pad_expert_input_to_capacity off).
//
// Replicas: where a strategy runs r instances of an expert in the group a GPU dispatches to (FSSDP's
// copies, FasterMoE's shadows, FlexMoE's replicas) the tokens can go to any of them, so the GPU's
// capacity for the expert is r x C (capacity per replica group). A dropped assignment is not
// dispatched, computed or combined.
//
// Planners that predict loads (FSSDP, SmartMoE, FlexMoE) and FasterMoE's shadow choice see the
// gate's counts before the cut; only routing is cut.
#pragma once

#include <limits>
#include <span>

#include "workload/model_spec.hpp"

namespace hs::strategy {

// ceil(factor x tokens x top_k / experts).
double expert_capacity(double factor, double tokens, int top_k, int experts);

struct TokenCapacity {
  // C: assignments one GPU (its trace rows / tp) may send one instance of an expert in one
  // micro-batch; infinite when the model is dropless (no capacity_factor).
  double micro_batch = std::numeric_limits<double>::infinity();
  int grad_accum = 1;
  bool dropless() const { return micro_batch == std::numeric_limits<double>::infinity(); }
  // The cap of whole-iteration counts, of which every micro-batch routes 1 / grad_accum: cutting each
  // micro-batch's c / G at C keeps G x min(c / G, C) = min(c, G x C).
  double iteration() const { return micro_batch * grad_accum; }
};

// The model's capacity for a GPU routing its rows / tp (dropless without capacity_factor).
TokenCapacity token_capacity(const workload::ModelSpec& model, int tp);

// Assignments routed and dropped by a cut, summed over its rows and experts.
struct CapacityTally {
  double routed = 0, dropped = 0;
};

// Cuts counts[row][expert] (row-major, `experts` columns) in place to min(count, cap x instances[e])
// (instances empty: one each) and returns what it routed and dropped.
CapacityTally cut_to_capacity(std::span<double> counts, int experts, double cap, std::span<const int> instances = {});

}  // namespace hs::strategy
