#include "workload/trace.hpp"

#include <cstdint>

namespace hs::workload {

uint64_t Trace::global_count(const TraceRecord& r, int layer, int expert) const {
  if (!per_source()) return r.counts[static_cast<size_t>(layer) * experts + expert];
  uint64_t s = 0;
  const size_t base = static_cast<size_t>(layer) * sources * experts;
  for (int src = 0; src < sources; ++src) s += r.counts[base + static_cast<size_t>(src) * experts + expert];
  return s;
}

bool sum_micro_batches(const Trace& t, TraceRecord& r) {
  const size_t n = t.record_size();
  std::vector<uint64_t> sum(n, 0);
  for (int mb = 0; mb < t.micro_batches; ++mb) {
    const uint32_t* s = t.micro_slice(r, mb);
    for (size_t i = 0; i < n; ++i) sum[i] += s[i];
  }
  r.counts.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (sum[i] > UINT32_MAX) return false;
    r.counts[i] = static_cast<uint32_t>(sum[i]);
  }
  return true;
}

void drop_micro_batches(Trace& t) {
  for (auto& r : t.records) r.micro = {};
  t.micro_batches = 0;
}

}  // namespace hs::workload
