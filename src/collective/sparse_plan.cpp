#include "collective/sparse_plan.hpp"

#include <cstddef>

namespace hs::collective {

Coflow sparse_allgather(const SparsePlacement& p, double chunk_bytes) {
  Coflow c;
  for (std::size_t e = 0; e < p.owner.size(); ++e)
    for (int g : p.replicas[e])
      if (g != p.owner[e]) c.push_back({p.owner[e], g, chunk_bytes});
  return c;
}

Coflow sparse_reduce_scatter(const SparsePlacement& p, double chunk_bytes) {
  Coflow c;
  for (std::size_t e = 0; e < p.owner.size(); ++e)
    for (int g : p.replicas[e])
      if (g != p.owner[e]) c.push_back({g, p.owner[e], chunk_bytes});
  return c;
}

GpuVolumes volumes(const Coflow& c, int gpus) {
  GpuVolumes v{std::vector<double>(gpus, 0.0), std::vector<double>(gpus, 0.0)};
  for (const auto& t : c) {
    v.sent[t.src] += t.bytes;
    v.received[t.dst] += t.bytes;
  }
  return v;
}

}  // namespace hs::collective
