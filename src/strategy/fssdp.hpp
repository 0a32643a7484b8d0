// FSSDP, the Hecate system (Fully Sharded Sparse Data Parallelism, arXiv 2502.02581), as a strategy.
//
// Every expert of every MoE layer is owned by exactly one GPU (its parameters, gradients' final sum
// and optimizer state: one copy of MoE optimizer state in the cluster; no all-reduce for MoE
// parameters, the optimizer updates only owned experts). Every iteration, per MoE layer:
//   1. predict expert loads as the mean of the last `window` iterations (uniform before any history);
//   2. overlap degree t = floor(T_attention * bw / expert_bytes) (or `overlap_degree`), where bw is
//      the per-GPU inter-node bandwidth when it is much lower than the intra-node one (> 2x), else
//      the intra-node bandwidth; memory capacity m = extra experts that fit in free memory (or
//      `memory_budget`); materialize (strategy/materialization.hpp);
//   3. SparseAllGather the copies during the attention before the layer (sparse stream), dispatch
//      tokens topology-aware (local copy, same-node copy, else any holder), compute, and in backward
//      SparseReduceScatter the copies' gradients into the owners during the attention backward;
//   4. optional calibration stage (`calibrate`): after the gate, re-plan with the actual loads into
//      the remaining free slots; accept only when the predicted layer time (slowest GPU's expert
//      compute + all-to-alls) plus the now exposed extra spAG beats the current plan;
//   5. optional re-materialization (`rematerialize`): copies are freed after forward and gathered
//      again during the attention backward before the layer; only one layer's buffer is resident;
//   6. heterogeneous sharding (`heterogeneous`, every `reshard_every` iterations, only when the plan
//      changes): strategy/sharding.hpp; moved experts migrate with their optimizer states on the
//      critical path before the iteration.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "strategy/strategy.hpp"

namespace hs::strategy {

std::unique_ptr<Strategy> make_fssdp(const Context& ctx, const std::map<std::string, std::string>& knobs);

}  // namespace hs::strategy
