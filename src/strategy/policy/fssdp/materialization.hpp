// FSSDP sparse materialization (Hecate, arXiv 2502.02581; docs/model.md §4): which experts of one MoE
// layer get materialized copies on which GPUs for one iteration, and how tokens are dispatched to
// the copies.
//
// materialize(load, owner, node_of, t, m):
//   t = how many expert transfers hide behind the attention that precedes the layer (overlap degree),
//   m = how many extra experts fit in a GPU's free memory. t = min(t, E), m = min(m, t).
//   * t <= m: the t most-loaded experts are replicated on every GPU.
//   * t >  m: the top-t experts share N*m slots, replica counts proportional to load (largest
//     remainder, at most N-1 copies each); each expert's copies go first to nodes that do not hold it
//     yet (relieving the inter-node all-to-all), the node with the most free slots first, then to any
//     GPU with a free slot; within a node, the GPU with the most free slots. Ties: lowest id.
// materialize(load, owner, node_of, t, slots) is the same with a cap per GPU (the memory cap of one
// layer, cost::copy_cap_level): when every GPU has a slot for each top-t expert it does not own,
// the top t are replicated everywhere; else the top t share min(slots[g], t) slots on each GPU as
// above. With slots[g] = m everywhere it is materialize(..., m).
// Loads are ranked by value, ties by expert id, so the plan is deterministic.
//
// extend(...) is the calibration stage's variant: given actual loads, the current placement and
// each GPU's remaining free slots, it adds copies the same way (case t > m) without moving any.
//
// dispatch(...): topology-aware token routing. A source's tokens for expert e stay on the source if
// it holds e; else they go to the holders in the source's node; else to all holders; split evenly
// across the chosen holders. The `even` rule splits across all holders regardless of topology.
// With a finite `cap` (strategy/capacity.hpp) a source first keeps at most cap x (e's holders) of
// its tokens for e: the replica group's capacity.
#pragma once

#include <limits>
#include <span>
#include <vector>

#include "collective/sparse_plan.hpp"

namespace hs::strategy {

collective::SparsePlacement materialize(const std::vector<double>& load, const std::vector<int>& owner,
                                        const std::vector<int>& node_of, int t, int m);
collective::SparsePlacement materialize(const std::vector<double>& load, const std::vector<int>& owner,
                                        const std::vector<int>& node_of, int t, std::span<const int> slots);

// Adds copies for the `t` most-loaded experts within `free_slots` (per GPU, decremented). Returns
// the number of copies added.
int extend_placement(collective::SparsePlacement& p, const std::vector<double>& load, const std::vector<int>& node_of,
                     int t, std::vector<int>& free_slots);

// A placement planned over a group of GPUs in the group's own ids (0..gpus.size()-1) on the
// topology's GPUs: id i becomes gpus[i] (replica lists stay sorted).
collective::SparsePlacement on_gpus(const collective::SparsePlacement& p, std::span<const int> gpus);

enum class DispatchRule { kTopology, kEven };

struct DispatchResult {
  std::vector<std::vector<double>> expert_tokens;  // [gpu] -> tokens per expert instance held
  std::vector<double> bytes;                       // n x n dispatch bytes (row = source)
  std::vector<double> received;                    // [gpu] tokens computed
  double routed = 0, dropped = 0;                  // assignments given and dropped at the capacity
};

// counts: [source][expert] of one layer (n x E, row-major). token_bytes = d_model x activation bytes.
// cap: assignments a source may send one instance of an expert (infinite: dropless).
void dispatch(std::span<const double> counts, int n, const collective::SparsePlacement& p,
              const std::vector<int>& node_of, DispatchRule rule, double token_bytes, DispatchResult& out,
              double cap = std::numeric_limits<double>::infinity());

}  // namespace hs::strategy
