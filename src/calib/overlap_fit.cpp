#include "calib/overlap_fit.hpp"

#include <algorithm>

namespace hs::calib {

engine::InterferenceOverride OverlapFit::cells() const {
  engine::InterferenceOverride o;
  const int k = static_cast<int>(traffic);
  o.compute[static_cast<int>(engine::KernelClass::kGemm)][k] = compute_slowdown;
  o.communication[k] = communication_slowdown;
  return o;
}

std::optional<OverlapFit> fit_overlap(std::span<const OverlapRow> rows, int ranks, int nodes, int gpus_per_node) {
  for (const char* preferred : {"nccl_all_reduce", "copy_kernel", "copy_engine"})
    for (const auto& r : rows)
      if (r.comm == preferred) {
        const bool network =
            r.comm == "nccl_all_reduce" && (nodes > 1 || (nodes <= 0 && gpus_per_node > 0 && ranks > gpus_per_node));
        return OverlapFit{r.comm, network ? engine::Traffic::kNetwork : engine::Traffic::kIntraNode,
                          std::max(0.0, r.gemm_slowdown() - 1), std::max(0.0, r.comm_slowdown() - 1)};
      }
  return std::nullopt;
}

}  // namespace hs::calib
