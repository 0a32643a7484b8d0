// SmartMoE (Zhai et al., USENIX ATC'23) as simulated here, and FSDP of experts.
//
// SmartMoE: expert parallelism whose placement is re-planned every `period` iterations from the
// loads predicted over the last `window` iterations: per layer, experts by load (descending) go to
// the least-loaded GPU that still has one of its E/N slots (greedy longest-processing-time), which
// pairs hot experts with cold ones. An expert that changes GPU migrates its parameters, master
// weights and optimizer states on the critical path before the iteration (only when the plan
// changes). Needs at least 2 experts per GPU.
//
// FSDP of experts (`fsdp`): the "why not plain FSDP" reference: every expert all-gathered to every
// GPU for each layer (FSSDP with everything materialized, no memory limit, homogeneous sharding),
// gradients reduce-scattered back; tokens never leave their GPU. `rematerialize` (default true, as
// FSDP's reshard-after-forward) gathers again for backward.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "strategy/strategy.hpp"

namespace hs::strategy {

// SmartMoE's placement of one layer: experts by predicted load (descending), each to the
// least-loaded of `gpus` GPUs that still has one of its `slots` free (greedy longest-processing-
// time); ties go to GPUs in an order rotated by `rotate`. Returns [expert] -> GPU (0..gpus-1).
std::vector<int> lpt_placement(const std::vector<double>& pred, int gpus, int slots, int rotate);


}  // namespace hs::strategy
