// FSSDP expert sharding: which GPU owns (parameters + optimizer state of) each expert of each layer.
//
// homogeneous_owners: E/N experts per GPU per layer in contiguous blocks when E % N == 0 (the same
// placement as EP, so FSSDP without materialization does EP's expert work); otherwise experts are
// dealt round-robin over all layers pooled ((layer * E + e) mod N), which keeps slot counts balanced.
//
// heterogeneous_owners (Hecate §heterogeneous sharding; docs/model.md §4): per layer the top-t experts are
// "overlappable" (materialization replicates them anyway). The other experts are placed first:
// layers ordered by their max load (descending), each expert by load (descending) onto the
// least-loaded node (tie: fewer free slots, then lowest id), least-loaded GPU in it (same ties),
// loads counted within the layer. The overlappable experts then fill the remaining slots, each onto
// the GPU with free slots carrying the least load of its layer (tie: most free slots): the paper
// fills them by slots alone, but one that drops out of the top-t at a later iteration (t and the
// ranking move with the prediction) is then served by its owner alone, and by slots alone it landed
// on an already loaded GPU (gpt-moe-s collapsed trace on dgx-h100-4node: 40.3 -> 37.5 ms). Slot capacity is balanced per GPU across all layers pooled
// (ceil/floor of L*E/N), so a GPU may own 0..E experts of one layer. Every expert is owned exactly once.
// One addition of ours: within a layer a GPU takes at most ceil(free slots / layers left) + 1
// non-overlappable experts while some GPU is under its quota; without it the layers placed last were
// crammed onto the GPUs that still had room, which made FSSDP slower than EP on the SmartMoE trace.
//
// Re-sharding from a current placement (`current` given): every move carries the expert's optimizer
// state on the critical path, so an expert stays with its current owner unless that owner is not
// eligible or the GPU the greedy picked is lighter by more than kKeepTolerance of the layer's mean
// per-GPU load; an overlappable expert stays where it is while its owner has a free slot. Without
// this, re-planning from scratch moved almost every expert (~120 ms of migration on gpt-moe-s) for
// a placement only slightly better balanced.
#pragma once

#include <vector>

namespace hs::strategy {

using Owners = std::vector<std::vector<int>>;  // [layer][expert] -> GPU

Owners homogeneous_owners(int layers, int experts, int gpus);
// loads[layer][expert] (predicted), t[layer] overlap degree per layer.
inline constexpr double kKeepTolerance = 0.10;
Owners heterogeneous_owners(const std::vector<std::vector<double>>& loads, const std::vector<int>& t,
                            const std::vector<int>& node_of, const Owners* current = nullptr);
// Slot capacity of each GPU for L x E experts over N GPUs (the first L*E % N GPUs get one more).
std::vector<int> slot_capacity(int layers, int experts, int gpus);

}  // namespace hs::strategy
