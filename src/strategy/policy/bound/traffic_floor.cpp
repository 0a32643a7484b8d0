#include "strategy/policy/bound/traffic_floor.hpp"

#include <algorithm>
#include <functional>
#include <vector>

#include "cost/memory_model.hpp"

namespace hs::strategy {

namespace {

// Least bytes one level's units send for one expert: c holds c(u, e) for the units with tokens.
double expert_bytes(std::vector<double>& c, double token_bytes, double p_e) {
  if (c.empty()) return 0;
  std::sort(c.begin(), c.end(), std::greater<>());
  double rest = 0;
  for (double x : c) rest += x;
  rest -= c[0];
  double best = 2 * token_bytes * rest;  // one holder: the unit with the most tokens
  for (size_t k = 1; k < c.size(); ++k) {
    rest -= c[k];
    best = std::min(best, static_cast<double>(k + 1) * p_e + 2 * token_bytes * rest);
  }
  return best;
}

}  // namespace

TrafficFloorModel::TrafficFloorModel(const topology::Topology& topo, const workload::ModelSpec& m)
    : gpus_(topo.num_gpus()), experts_(m.experts), layers_(m.moe_layers()) {
  const int n = gpus_;
  const auto vertices = topo.vertices();
  if (n >= 2) {
    Level g{"GPU links", n, {}, 0};
    std::vector<int> gpu_of_vertex(vertices.size(), -1);
    for (int i = 0; i < n; ++i) g.unit_of.push_back(i), gpu_of_vertex[topo.gpu_vertex(i)] = i;
    double out = 0, in = 0;
    for (const auto& l : topo.links()) {
      if (gpu_of_vertex[l.from] >= 0) out += l.bandwidth.value();
      if (gpu_of_vertex[l.to] >= 0) in += l.bandwidth.value();
    }
    g.capacity = std::min(out, in);
    levels_.push_back(std::move(g));
  }
  if (topo.num_nodes() >= 2) {
    Level nd{"node links", topo.num_nodes(), {}, 0};
    for (int i = 0; i < n; ++i) nd.unit_of.push_back(topo.node_of(i));
    double out = 0, in = 0;
    for (const auto& l : topo.links()) {
      const int a = vertices[l.from].node, b = vertices[l.to].node;
      if (a == b) continue;
      if (a >= 0) out += l.bandwidth.value();
      if (b >= 0) in += l.bandwidth.value();
    }
    nd.capacity = std::min(out, in);
    levels_.push_back(std::move(nd));
  }
  const auto params = cost::count_params(m);
  const double min_bytes = std::min(m.precision.param_bytes, m.precision.grad_bytes);
  p_expert_ = params.per_expert * min_bytes;
  p_dense_ = params.dense * min_bytes;
  token_bytes_ = m.d_model * m.precision.activation_bytes;
}

TrafficFloor TrafficFloorModel::evaluate(std::span<const double> counts) const {
  const int n = gpus_, E = experts_, L = layers_;
  TrafficFloor best;
  std::vector<double> per_unit, c;
  for (const Level& lv : levels_) {
    if (lv.capacity <= 0) continue;
    double bytes = lv.units * p_dense_;
    per_unit.assign(static_cast<size_t>(lv.units) * E, 0.0);
    for (int l = 0; l < L; ++l) {
      std::fill(per_unit.begin(), per_unit.end(), 0.0);
      const double* layer = counts.data() + static_cast<size_t>(l) * n * E;
      for (int g = 0; g < n; ++g)
        for (int e = 0; e < E; ++e) per_unit[static_cast<size_t>(lv.unit_of[g]) * E + e] += layer[static_cast<size_t>(g) * E + e];
      for (int e = 0; e < E; ++e) {
        c.clear();
        for (int u = 0; u < lv.units; ++u)
          if (const double x = per_unit[static_cast<size_t>(u) * E + e]; x > 0) c.push_back(x);
        bytes += expert_bytes(c, token_bytes_, p_expert_);
      }
    }
    const double seconds = bytes / lv.capacity;
    if (seconds > best.seconds) best = {seconds, bytes, lv.name};
  }
  return best;
}

TrafficFloor traffic_floor(const topology::Topology& topo, const workload::ModelSpec& m, std::span<const double> counts) {
  return TrafficFloorModel(topo, m).evaluate(counts);
}

}  // namespace hs::strategy
