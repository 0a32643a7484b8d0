// What a strategy's plan implies for the per-GPU memory model (cost/memory_model.hpp): its
// all-to-all buffers from the tokens it sends and computes, and the NCCL communicators a strategy
// opens (the memory itself: cost/layout_memory.hpp, set_layout_memory in layout_strategy.hpp).
//
// NCCL communicators per strategy (one per process group, as PyTorch creates them):
//   * EP-style (ep, oracle, smartmoe, flexmoe, fastermoe): the all-to-all over the GPU's EP group
//     (point-to-point to every peer of the group; FasterMoE's shadow broadcasts and reduces add
//     rings on it), the dense gradient all-reduce over every GPU (rings), and with ep_size < N the
//     expert-gradient all-reduce over the GPUs holding the same experts (rings). FlexMoE's replica
//     all-reduces are counted in the world rings.
//   * FSSDP and FSDP: one communicator over every GPU (Hecate's single queue) with rings for the
//     dense all-reduce and point-to-point for the all-to-all and the spAG/spRS chains.
//   * bound: the dense all-reduce's rings only.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "cost/memory_model.hpp"
#include "strategy/layer_plan.hpp"
#include "strategy/strategy.hpp"
#include "layout/parallel_layout.hpp"

namespace hs::strategy {

// All-to-all buffers of every GPU (cost/memory_model.hpp): per micro-batch, the largest over layers
// of the bytes it sends plus the bytes it receives, its own chunk included (the dispatcher's buffers
// hold every routed token). A layer that moves no token between GPUs issues no all-to-all: 0.
std::vector<double> a2a_buffer_bytes(std::span<const LayerPlan> plans, int gpus, int grad_accum);

// Whether layer p's all-to-all moves any token between GPUs (else it is not issued: no buffers).
bool layer_moves_tokens(const LayerPlan& p, int gpus);

// GPU g's view of a communicator over `group` (g must be in it).
cost::NcclCommunicator nccl_communicator(const topology::Topology& t, std::span<const int> group, int g, bool ring,
                                         bool p2p);
// Per GPU: NCCL buffer bytes of the EP-style communicators (see above); `ep_ring`: collectives on
// the EP group too (FasterMoE).
std::vector<double> ep_nccl_bytes(const topology::Topology& t, int ep, bool ep_ring);
// Per GPU: one communicator over every GPU, rings plus (with `p2p`) point-to-point to every peer.
std::vector<double> world_nccl_bytes(const topology::Topology& t, bool p2p);
// Per GPU: the communicators of a parallel layout, one per process group as Megatron-Core creates
// them: the DP group's rings (dense gradients), the EP group's point-to-point (`ep_p2p`: all-to-alls,
// spAG / spRS) and rings (`ep_ring`: FasterMoE's broadcasts), the expert-DP group's rings, the TP
// group's rings and the stage-to-stage sends to the neighbouring stages. Groups of one GPU open
// none. For the layout tp=1, pp=1 these are ep_nccl_bytes' communicators.
std::vector<double> layout_nccl_bytes(const topology::Topology& t, const workload::ParallelLayout& l, bool ep_p2p,
                                      bool ep_ring);

}  // namespace hs::strategy
