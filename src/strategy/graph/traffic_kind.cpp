#include "strategy/graph/traffic_kind.hpp"

namespace hs::strategy {

engine::Traffic traffic_of(const topology::Topology& topo, const collective::Coflow& flows) {
  for (const auto& f : flows)
    if (f.bytes > 0 && topo.node_of(f.src) != topo.node_of(f.dst)) return engine::Traffic::kNetwork;
  return engine::Traffic::kIntraNode;
}

engine::Traffic matrix_traffic(const topology::Topology& topo, const std::vector<double>& matrix) {
  const int n = topo.num_gpus();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (static_cast<size_t>(i) * n + j < matrix.size() && matrix[static_cast<size_t>(i) * n + j] > 0 &&
          topo.node_of(i) != topo.node_of(j))
        return engine::Traffic::kNetwork;
  return engine::Traffic::kIntraNode;
}

}  // namespace hs::strategy
