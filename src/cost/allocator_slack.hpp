// The caching allocator's slack (docs/model.md §6): memory a GPU's allocator holds but cannot hand
// out. PyTorch's CUDA caching allocator rounds and splits cudaMalloc'ed segments and never moves a
// tensor, so after the irregular allocations of training (recomputation, sharded gathers, varying
// routed-token counts) part of what it has reserved is free but unusable. GMLake (Guo et al.,
// "Efficient and Transparent GPU Memory Defragmentation for Large-scale DNN Training with Virtual
// Memory Stitching", ASPLOS 2024, abstract) measures that stitching the fragments back saves 15% of
// the memory on average and up to 33% (9.2 GB, up to 25 GB) over eight LLMs on A100-80GB: what the
// caching allocator loses to fragmentation there.
//
// The model field `allocator_slack` is that fraction f = (reserved - allocated) / reserved of what
// the caching allocator serves: every term but NCCL's own buffers (cudaMalloc'ed by NCCL) and the
// fixed runtime reserve. The allocator then reserves allocated / (1 - f), and the difference goes
// to `reserve`, the term that already names fragmentation. f = 0 (the default) adds nothing.
#pragma once

#include "cost/memory_model.hpp"

namespace hs::cost {

// Bytes the caching allocator hands out: the breakdown less NCCL's buffers and the reserve.
inline double allocator_allocated(const MemoryBreakdown& m) {
  return m.params + m.grads + m.optimizer + m.activations + m.copy_params + m.copy_grads + m.comm_buffers;
}

// Adds the slack of `slack` = f to m.reserve: allocated x f / (1 - f).
inline void add_allocator_slack(MemoryBreakdown& m, double slack) {
  m.reserve += allocator_allocated(m) * slack / (1 - slack);
}

// How much less a GPU of `gpu_memory` bytes can allocate than its free bytes say, when `fixed` of
// them (NCCL buffers, the runtime reserve) are outside the allocator: (A + C) / (1 - f) <= G - fixed
// gives C <= (G - fixed - A) - f x (G - fixed), so the room shrinks by f x (G - fixed).
inline double allocator_slack_cut(double gpu_memory, double fixed, double slack) {
  return slack * (gpu_memory - fixed);
}

}  // namespace hs::cost
