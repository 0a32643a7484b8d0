// FlexMoE's policy maker for one MoE layer (Nie et al., "FlexMoE: Scaling Large-scale Sparse
// Pre-trained Model Training via Dynamic Device Placement", SIGMOD 2023, arXiv 2304.03946): which
// GPUs hold an instance ("vExpert") of each expert, re-planned from predicted loads with the
// paper's three primitives:
//   Expand  — a new replica of an expert in a free slot (its parameters AND optimizer state copied
//             from a current holder: every replica is a full data-parallel copy);
//   Shrink  — a replica dropped (nothing moves; its slot becomes free);
//   Migrate — an instance moved to another GPU's free slot (state moves with it).
// Each GPU has `slots` instance slots (its E/N own experts + the reserve). An expert's tokens are
// split evenly among its instances (the planner's load model), so GPU g's load is
// sum over instances e on g of load[e] / replicas[e]; the balance ratio is max / mean GPU load.
//
// Scheduling (the paper's trigger + greedy heuristic, with our cost model):
//   0. trigger: a layer is re-planned only when its balance ratio exceeds `trigger_ratio`;
//   1. greedy: on the GPU with the slowest expert time, for each instance e it holds, consider
//      Expand(e -> g) and Migrate(e: busiest -> g) into every GPU g with a free slot that lacks e,
//      and, on a full g, Shrink of a replica f on g (f != e, f replicated) followed by Expand(e -> g).
//      Take the candidate with the lowest resulting slowest-GPU time (ties: migrate before expand,
//      a source in g's node, lower expert and GPU ids) if its gain per iteration, over the `period`
//      iterations the plan serves, beats its cost: the state copy (timed alone) plus `period` times
//      the growth of the expert's gradient all-reduce (timed alone, charged as if fully exposed,
//      the conservative side: it overlaps backward when there is backward left to hide behind).
//      Repeat until no candidate pays.
//   2. shrink pass: replicas whose removal does not raise the layer's slowest-GPU expert time
//      (least per-replica load first; each removed from its busiest holder) are dropped: their
//      gradient all-reduce is pure cost. (Run after the greedy: run before it, a replica dropped
//      could be expanded back at once for a marginal gain, charged as a copy.)
// Time is the slowest GPU's expert forward + backward (gpu_time, from the compute cost model), not
// raw tokens, so small-GEMM inefficiency counts. Deterministic: every choice is ranked by value,
// then by ids.
#pragma once

#include <functional>
#include <vector>

namespace hs::strategy {

using Holders = std::vector<std::vector<int>>;  // [expert] -> GPUs holding an instance, sorted

struct ReplicaCosts {
  // Expert compute (forward + backward, one iteration) of a GPU running instances with these tokens.
  std::function<double(const std::vector<double>& instance_tokens)> gpu_time;
  // Copying one expert's parameters + optimizer state from src to dst, alone on the network.
  std::function<double(int src, int dst)> move_time;
  // One iteration's gradient all-reduce of one expert among `group` (0 for fewer than 2 GPUs).
  std::function<double(const std::vector<int>& group)> allreduce_time;
};

struct ExpertMove {
  int expert = 0, src = 0, dst = 0;  // state copied src -> dst
};

struct ReplicaPlan {
  Holders holders;
  std::vector<ExpertMove> moves;  // state transfers, in the order planned
  int expands = 0, shrinks = 0, migrations = 0;
  bool triggered = false;          // the balance ratio exceeded the trigger
  double ratio_before = 1, ratio_after = 1;
};

// The planner's load model: tokens each GPU computes when every expert's load is split evenly
// among its holders.
std::vector<double> gpu_loads(const std::vector<double>& load, const Holders& holders, int gpus);
// max / mean of gpu_loads (1 when there is no load).
double balance_ratio(const std::vector<double>& load, const Holders& holders, int gpus);
// EP's placement: expert e on GPU e / (E/N).
Holders ep_holders(int experts, int gpus);
// The replica groups whose gradients are all-reduced: holders of every expert held more than once.
std::vector<std::vector<int>> replica_groups(const Holders& holders);

ReplicaPlan plan_replicas(const std::vector<double>& load, const Holders& current, const std::vector<int>& node_of,
                          int slots, double trigger_ratio, int period, const ReplicaCosts& costs);

}  // namespace hs::strategy
