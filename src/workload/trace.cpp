#include "workload/trace.hpp"

namespace hs::workload {

uint64_t Trace::global_count(const TraceRecord& r, int layer, int expert) const {
  if (!per_source()) return r.counts[static_cast<size_t>(layer) * experts + expert];
  uint64_t s = 0;
  const size_t base = static_cast<size_t>(layer) * sources * experts;
  for (int src = 0; src < sources; ++src) s += r.counts[base + static_cast<size_t>(src) * experts + expert];
  return s;
}

}  // namespace hs::workload
