// Where an iteration's time went: the critical path of a simulated task graph walked back from the
// last task, every task on it charged to a Component, so that the components sum to the iteration
// time. One walk for every iteration graph (strategy/graph/layout_iteration.hpp).
//
// The walk, from the task that ends last: its predecessors are its dependencies and the task before
// it on each of its streams; the one that ended last held it back (ties: the engine's critical
// predecessor). Rules:
//   * a compute task slowed by communication beside it (engine interference) is charged its own
//     duration, and the excess to overlap_slowdown;
//   * an expert task is charged the mean expert time of its GPUs (TaskCharge::mean) to
//     expert_compute and the rest to straggler_wait (an excess below 1e-9 relative is rounding);
//   * when the walk enters an overlappable communication task p (one that runs beside compute:
//     spAG, spRS, data-parallel reductions) and some non-overlappable predecessor q ended while p ran
//     (end(q) >= start(p)), p is charged only what it outlasted q by ("exposed") and the walk goes on
//     along q, the compute that ran meanwhile. The overlapped part of the overlappable tasks is
//     reported as hidden communication: per group of tasks that run one after another (a pipeline
//     stage: TaskCharge::group), the sum of their durations less what the path charged them, and
//     of the groups the largest (the stages run at once: their sum would count parallel time
//     several times over, more than the iteration under a deep pipeline).
// A bottleneck GPU exists only where some expert task straggled: the GPU whose expert tasks on the
// path took longest.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/simulation.hpp"
#include "engine/task_graph.hpp"
#include "strategy/strategy.hpp"

namespace hs::strategy {

// How one task is charged.
struct TaskCharge {
  Component component = Component::kAttention;
  bool overlappable = false;   // communication that runs beside compute (see above)
  bool communication = false;  // never charged overlap_slowdown
  double mean = -1;            // expert tasks: the mean over the GPUs that run the same work; else < 0
  int gpu = -1;                // expert tasks: the GPU, for the bottleneck
  int group = 0;               // overlappable tasks: the pipeline stage they run on (0 .. stages - 1)
};

// Stream predecessors of every task of a sealed graph (the task before it on each of its
// resources), in CSR form: prev[off[t] .. off[t + 1]).
struct StreamPredecessors {
  std::vector<uint32_t> off;
  std::vector<engine::TaskId> prev;
  void build(const engine::TaskGraph& g);
};

// Walks the critical path of `sim` (a run of `g`) and adds to res.breakdown, res.hidden_comm and
// res.bottleneck_gpu (GPUs 0..gpus-1). `charge(t)` classifies task t; `on_charged(t, seconds)`, when
// given, is told every charge as it is made (the seconds a task got on the path).
void walk_critical_path(const engine::TaskGraph& g, const engine::Simulation& sim, const StreamPredecessors& prev,
                        const std::function<TaskCharge(engine::TaskId)>& charge, int gpus, IterationResult& res,
                        const std::function<void(engine::TaskId, double)>& on_charged = {});

}  // namespace hs::strategy
