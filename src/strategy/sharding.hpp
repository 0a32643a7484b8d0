// FSSDP expert sharding: which GPU owns (parameters + optimizer state of) each expert of each layer.
//
// homogeneous_owners: E/N experts per GPU per layer in contiguous blocks when E % N == 0 (the same
// placement as EP, so FSSDP without materialization does EP's expert work); otherwise experts are
// dealt round-robin over all layers pooled ((layer * E + e) mod N), which keeps slot counts balanced.
//
// heterogeneous_owners (Hecate §heterogeneous sharding; model.md §4): per layer the top-t experts are
// "overlappable" (materialization replicates them anyway). The other experts are placed first:
// layers ordered by their max load (descending), each expert by load (descending) onto the
// least-loaded node (tie: fewer free slots, then lowest id), least-loaded GPU in it (same ties),
// loads counted within the layer. The overlappable experts then fill the remaining slots (GPU with the
// most free slots first). Slot capacity is balanced per GPU across all layers pooled
// (ceil/floor of L*E/N), so a GPU may own 0..E experts of one layer. Every expert is owned exactly once.
// One addition of ours: within a layer a GPU takes at most ceil(free slots / layers left) + 1
// non-overlappable experts while some GPU is under its quota; without it the layers placed last were
// crammed onto the GPUs that still had room, which made FSSDP slower than EP on the SmartMoE trace.
#pragma once

#include <vector>

namespace hs::strategy {

using Owners = std::vector<std::vector<int>>;  // [layer][expert] -> GPU

Owners homogeneous_owners(int layers, int experts, int gpus);
// loads[layer][expert] (predicted), t[layer] overlap degree per layer.
Owners heterogeneous_owners(const std::vector<std::vector<double>>& loads, const std::vector<int>& t,
                            const std::vector<int>& node_of);
// Slot capacity of each GPU for L x E experts over N GPUs (the first L*E % N GPUs get one more).
std::vector<int> slot_capacity(int layers, int experts, int gpus);

}  // namespace hs::strategy
