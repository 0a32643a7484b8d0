// FSSDP, the Hecate system (Fully Sharded Sparse Data Parallelism, arXiv 2502.02581), as a strategy.
//
// Every expert of every MoE layer is owned by exactly one GPU (its parameters, gradients' final sum
// and optimizer state: one copy of MoE optimizer state in the cluster; no all-reduce for MoE
// parameters, the optimizer updates only owned experts). Every iteration, per MoE layer:
//   1. predict expert loads as the mean of the last `window` iterations (uniform before any history);
//   2. overlap degree t per layer (`overlap_degree`, strategy/policy/fssdp/overlap_degree.hpp):
//      hidden (default): the largest t whose spAG, planned and timed as the iteration graph runs it
//      for the chosen broadcast (rate caps and chain latency included), fits in the attention
//      forward before the layer; formula: the paper's floor(T_attention x bw / expert_bytes), bw
//      the network bandwidth per GPU; best: the t of least predicted layer time, exposed spAG and
//      spRS included; or a fixed integer. The paper's formula is reported beside it; memory
//      cap m per GPU and layer: each GPU's copy budget is its memory less its owned state,
//      activations and all-to-all buffers (uniform load at first, then the last iteration's),
//      NCCL buffers and the reserve (or `memory_budget`); the copies every layer's plan wants are
//      water-filled into it under the copies' lifetimes (cost::copy_cap_level: a layer that wants
//      more than the level gets the level, one that wants less keeps its copies), and a layer cut
//      plans its overlap degree again within its slots; materialize within the slots;
//   3. SparseAllGather the copies during the attention before the layer (sparse stream), dispatch
//      tokens topology-aware (local copy, same-node copy, else any holder), compute, and in backward
//      SparseReduceScatter the copies' gradients into the owners during the attention backward;
//   4. optional calibration stage (`calibrate`): after the gate, re-plan with the actual loads into
//      the remaining free slots; accept only when the predicted layer time (slowest GPU's expert
//      compute + all-to-alls) plus what the forward spAG's remainder and the extra spAG leave
//      exposed beyond the dispatch (all of it with one queue) beats the current plan's; the extra
//      copies gate the expert GEMMs, not the dispatch;
//   5. optional re-materialization (`rematerialize`): copies are freed after forward and gathered
//      again during the attention backward before the layer; the layer in use and the one being
//      gathered are resident (cost::copy_buffer_peak). Without it, the run also evaluates the
//      same plan's memory with re-materialization's lifetimes, so the report can say whether
//      rematerialize=on would fit;
//   6. heterogeneous sharding (`heterogeneous`): first once `window` iterations of loads are known,
//      then every `reshard_every` iterations, only when the plan changes (strategy/policy/fssdp/sharding.hpp,
//      which keeps an expert with its owner unless moving it relieves more than 10% of a GPU's mean
//      load); moved experts migrate with their optimizer states on the critical path before the
//      iteration;
//   7. `comm_queue`: single (default, as the Hecate runtime issues every communication from one
//      queue to NCCL: spAG/spRS share the all-to-all's in-order stream) or separate streams.
// Materialized copies are copied into the expert-weight buffer before the expert GEMMs and their
// gradients out after them (memory-bound copies on the compute stream).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "collective/sparse_plan.hpp"
#include "strategy/policy/fssdp/materialization.hpp"
#include "strategy/policy/fssdp/overlap_degree.hpp"
#include "strategy/knobs.hpp"
#include "strategy/strategy.hpp"

namespace hs::strategy {

// FSSDP's knobs (docs/manual.md and the registry row), parsed and range-checked.
struct FssdpKnobs {
  int window = 5;
  OverlapMode overlap_mode = OverlapMode::kHidden;
  int overlap_degree = -1;       // kFixed: the knob's integer
  double memory_budget = -1;     // bytes for materialization buffers; -1 = auto (free memory)
  bool rematerialize = false;
  bool calibrate = false;
  bool heterogeneous = true;
  int reshard_every = 100;
  DispatchRule dispatch = DispatchRule::kTopology;
  collective::BroadcastAlgo broadcast = collective::BroadcastAlgo::kChain;
  bool single_queue = true;      // comm_queue=single: sparse collectives share the all-to-all's queue
  // An iteration depends on its own loads alone (Strategy::stateless): FSDP's, whose plan (every
  // expert on every GPU of its group, fixed owners, no memory limit, no calibration) ignores the
  // load history; its memory is the iteration's own. The runner then re-uses a repeated record.
  bool record_only = false;
};
// The registry row's knobs (defaults filled in) as FSSDP's settings.
FssdpKnobs parse_fssdp_knobs(const KnobValues& knobs);


}  // namespace hs::strategy
