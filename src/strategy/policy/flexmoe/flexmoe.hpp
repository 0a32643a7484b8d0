// FlexMoE (Nie et al., "FlexMoE: Scaling Large-scale Sparse Pre-trained Model Training via Dynamic
// Device Placement", SIGMOD 2023, arXiv 2304.03946) as a strategy: expert parallelism whose experts
// may have several replicas ("vExperts"), re-planned during training by expanding, shrinking and
// migrating replicas within a reserved number of expert slots per GPU.
//
// What is simulated, per MoE layer:
//   * Slots. Every GPU holds its E/N experts (EP's contiguous placement at the start) and reserves
//     `reserve_slots` more instance slots per MoE layer for replicas (per layer, as FlexMoE plans
//     each MoE layer's placement on its own; a pooled budget across layers would let one layer take
//     every slot of a GPU). E/N + reserve_slots is capped at E (a GPU holds each expert once).
//   * Replicas are full data-parallel copies (the paper's vExperts): parameters, gradients, master
//     weights and optimizer states. Memory is charged for every slot, filled or not: the reserve is
//     memory set aside for the scheduler, not allocated on demand. The optimizer step updates every
//     instance a GPU holds.
//   * Re-planning (flexmoe_planner.hpp): every `period` iterations (the first at iteration
//     `period`), from the mean global loads of the last `window` iterations, a layer whose balance
//     ratio (max GPU load / mean, the paper's trigger) exceeds 1 + trigger_pct/100 is re-planned by
//     greedy Expand / Shrink / Migrate steps, each taken only when its predicted saving over the
//     `period` iterations beats its cost. Every new instance (expanded or migrated) copies the
//     expert's parameters, master weights and optimizer states from a GPU that held it (in the
//     same node when one does): all layers' copies run as one migration on the critical path
//     before the iteration, charged only when some placement changed (as SmartMoE's migrations).
//   * Dispatch: a token of expert e goes to one of e's holders; `dispatch=even` (default) splits
//     every source's tokens of e evenly over all holders, the balance the planner assumes (the
//     paper balances an expert's tokens over its vExperts); `dispatch=topology` prefers a holder on
//     the source GPU, then in its node (FSSDP's rule: less all-to-all, but the planner's load model
//     then errs).
//   * Gradient synchronisation: every iteration each replicated expert's gradient is all-reduced
//     among its holders (a ring per replica group, all groups of the layer at once), on the
//     data-parallel stream after the block's dense gradient all-reduce, overlapping the rest of
//     backward like any DP gradient reduction (layout_iteration.hpp). What it does not hide shows as
//     dense_allreduce.
// With reserve_slots = 0 nothing can be replicated or moved and the iteration is EP's, exactly.
// Applies when E % N == 0 (E/N own experts per GPU); else bad input, and `run` without --strategy
// skips it with a warning.
//
// Sources and choices. Only the paper's abstract was retrievable from the references at hand when
// this was written; the mechanism follows the paper as we know it (a scheduler that monitors the
// balance ratio and, above a threshold, applies Expand / Shrink / Migrate to the experts' replicas
// within per-GPU expert slots; replicas of an expert are data-parallel copies whose gradients are
// all-reduced; adjustments move parameters and optimizer states). Ours, where that leaves room:
//   * the trigger threshold (trigger_pct, default 10%) and the planner's cost model (compute time
//     from this simulator's cost model; state copies and all-reduces timed alone on the network,
//     the all-reduce growth charged as if exposed);
//   * migrations are synchronous, on the critical path (the brief's model; an implementation could
//     overlap them with the next iteration's forward).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <vector>

#include "collective/analytic_network.hpp"
#include "strategy/policy/flexmoe/flexmoe_planner.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "strategy/knobs.hpp"
#include "strategy/strategy.hpp"

namespace hs::strategy {


// FlexMoE's knobs, with and without a layout (InputError naming the knob when out of range).
struct FlexMoeKnobs {
  int reserve_slots = 2;
  int period = 10;
  int window = 5;
  int trigger_pct = 10;
  DispatchRule dispatch = DispatchRule::kEven;
};
FlexMoeKnobs flexmoe_knobs(const KnobValues& knobs);

// What FlexMoE's re-plans did, with and without a layout: layers re-planned (triggered), re-plans
// that moved state, the planner's steps and the instances copied.
struct FlexMoeCounts {
  int layers_replanned = 0, changes = 0, expands = 0, shrinks = 0, migrations = 0, moved = 0;
  void add(const ReplicaPlan& p) { ++layers_replanned, expands += p.expands, shrinks += p.shrinks, migrations += p.migrations; }
};
// FlexMoE's resolved settings: slots_per_gpu, replicas_per_layer, layer_replans, placement_changes,
// expands, shrinks, migrations, experts_moved.
std::vector<ResolvedSetting> flexmoe_resolved(int slots, const std::vector<int>& replicas_per_layer,
                                              const FlexMoeCounts& c);

// The planner's cost model for a set of GPUs (the planner's GPU i is gpus[i]): an expert's state
// copy and a replica group's gradient all-reduce timed alone on `net`, expert compute from ctx's
// cost model (an iteration's tokens over grad_accum micro-batches, forward + backward).
ReplicaCosts replica_costs(const Context& ctx, collective::AnalyticNetwork& net, std::vector<int> gpus);

}  // namespace hs::strategy
