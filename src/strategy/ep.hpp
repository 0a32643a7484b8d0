// Expert parallelism (the reference; Megatron-LM, DeepSpeed-MoE, FastMoE): expert e of every MoE
// layer lives on one GPU of each EP group (contiguous blocks: GPU e / (E/ep) of the group); every
// token goes to its expert's GPU in its own group. Imbalance shows up as compute straggling (the
// most loaded GPU gates every collective) and as all-to-all incast.
//
// Knobs: ep_size (0 = as many GPUs as possible: N if E % N == 0, else E if N % E == 0).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "strategy/strategy.hpp"

namespace hs::strategy {

std::unique_ptr<Strategy> make_ep(const Context& ctx, const std::map<std::string, std::string>& knobs);
// Balanced EP (`oracle`): EP with every GPU computing exactly the mean load and sending the mean
// all-to-all: what EP would take without imbalance. Not a lower bound on every strategy: FSSDP's
// copies keep tokens local and can beat it.
std::unique_ptr<Strategy> make_oracle(const Context& ctx, const std::map<std::string, std::string>& knobs);

}  // namespace hs::strategy
