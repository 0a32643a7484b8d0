// Expert parallelism (the reference; Megatron-LM, DeepSpeed-MoE, FastMoE): expert e of every MoE
// layer lives on one GPU of each EP group (contiguous blocks: GPU e / (E/ep) of the group); every
// token goes to its expert's GPU in its own group. Imbalance shows up as compute straggling (the
// most loaded GPU gates every collective) and as all-to-all incast.
//
// Knobs: ep_size (0 = as many GPUs as possible: N if E % N == 0, else E if N % E == 0).
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "strategy/strategy.hpp"

namespace hs::strategy {

struct LayerPlan;

// The EP group size for the knob value `requested` (0 = automatic, as above); InputError naming
// `spec` when the experts cannot be spread over the GPUs that way.
int resolve_ep_size(const Context& ctx, int requested, const std::string& spec);
// Sizes `p` for EP groups of `ep` (E / ep experts per GPU) and routes one layer's counts[source][expert]
// (n x E, row-major): a source's tokens for expert e go to GPU group_base + e / (E / ep) of its group.
// `shadowed`, when not empty, is [group * E + expert]: such an expert's tokens stay on their source
// GPU, in p.shadow_tokens[source][expert], and send nothing (FasterMoE's shadowing).
void route_ep_layer(const double* counts, int n, int experts, int ep, double token_bytes,
                    const std::vector<char>& shadowed, LayerPlan& p);

// The oracle's routing of one layer: the same total assignments of the GPUs `gpus`, spread
// perfectly: each of them computes their total / |gpus| (E/ep experts alike), each sends an equal
// share of its assignments to every GPU of its EP group (of `ep` consecutive GPUs); other GPUs
// nothing.
void balance_ep_layer(const double* counts, int n, int experts, int ep, double token_bytes, std::span<const int> gpus,
                      LayerPlan& p);

}  // namespace hs::strategy
