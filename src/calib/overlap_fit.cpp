#include "calib/overlap_fit.hpp"

#include <algorithm>

namespace hs::calib {

std::optional<OverlapFit> fit_overlap(std::span<const OverlapRow> rows) {
  for (const char* preferred : {"nccl_all_reduce", "copy_kernel", "copy_engine"})
    for (const auto& r : rows)
      if (r.comm == preferred)
        return OverlapFit{r.comm, std::max(0.0, r.gemm_slowdown() - 1), std::max(0.0, r.comm_slowdown() - 1)};
  return std::nullopt;
}

}  // namespace hs::calib
