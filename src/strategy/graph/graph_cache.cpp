// The built graphs of the shapes an iteration graph has met (LayoutIterationGraph::use_shape).
//
// build() depends only on the shape and on what the constructor fixed (context, layout, sparse
// settings): never on an iteration's loads, which run() sets on the built graph afterwards (every
// expert, copy and optimizer duration, every communication task's binding). So a graph built for a
// shape earlier is the graph build() would make now, task for task in the same order, and taking it
// back gives the same simulation (tests/unit/strategy/layout_test.cpp checks kept against fresh
// graphs while shapes alternate). What is kept besides the tasks: the analytic loads of the fixed
// patterns (FixedComm::loads), pure functions of their transfers.
//
// Why: the stateful strategies change shape back and forth (SmartMoE's migrations come every
// `period` iterations and are gone the next one; FlexMoE's replica all-reduces and FSSDP's copies
// come and go per layer), and each change rebuilt the graph: ~5 % of a 32-GPU SmartMoE run.
#include <algorithm>
#include <utility>

#include "strategy/graph/layout_iteration.hpp"

namespace hs::strategy {

void LayoutIterationGraph::swap_built(KeptGraph& k) {
  std::swap(g_, k.g);
  std::swap(comp_, k.comp);
  std::swap(labels_, k.labels);
  std::swap(cls_, k.cls);
  std::swap(mean_, k.mean);
  std::swap(fixed_, k.fixed);
  std::swap(bindings_, k.bindings);
  std::swap(vars_, k.vars);
  std::swap(prev_, k.prev);
  std::swap(first_compute_, k.first_compute);
  std::swap(dp_tasks_, k.dp_tasks);
  std::swap(step_, k.step);
  std::swap(dense_buckets_, k.dense_buckets);
  std::swap(expert_buckets_, k.expert_buckets);
}

void LayoutIterationGraph::use_shape(const std::vector<char>& shape) {
  if (builds_ > 0 && shape == shape_) return;
  if (builds_ > 0) {  // the graph in use is kept under its shape
    KeptGraph& out = kept_[shape_];
    swap_built(out);
    out.used = runs_;
  }
  auto it = kept_.find(shape);
  if (it != kept_.end()) {
    swap_built(it->second);
    kept_.erase(it);
  } else {
    build(shape);
  }
  shape_ = shape;
  // Bounded: the graph least recently used goes first (ties cannot occur: one graph leaves use per run).
  while (kept_.size() > kKeptShapes) {
    auto oldest = std::min_element(kept_.begin(), kept_.end(),
                                   [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
    kept_.erase(oldest);
  }
}

}  // namespace hs::strategy
