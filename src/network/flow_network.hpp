// The flow-level network tier: every transfer of a running communication task is a flow over its
// route (ECMP branches as consumption coefficients), and rates are max-min fair over all link
// capacities, shared by every task in flight on every stream (solver/max_min_solver.hpp). Rates are
// re-solved only when a flow starts or ends, on the component it touches. This is what sees NIC
// sharing, incast onto a hot GPU, and an all-to-all slowed by a concurrent sparse all-gather or
// data-parallel all-reduce; the analytic tier cannot.
//
// A task's duration = time until its last flow drains + its latency (the largest route latency of
// its transfers, plus any extra the collective layer adds, e.g. the per-step latencies of a ring).
// With a single coflow and no contention between its flows this equals the analytic tier's
// alpha + max over links (bytes / bandwidth).
//
// Cost per event: O(F) to advance flows plus one component re-solve, F = flows in flight.
#pragma once

#include <vector>

#include "collective/transfer.hpp"
#include "engine/activity_model.hpp"
#include "solver/max_min_solver.hpp"
#include "topology/topology.hpp"

namespace hs::network {

struct FlowStats {
  uint64_t flows = 0;           // flows started
  uint64_t solver_updates = 0;  // component re-solves
  uint64_t events = 0;          // flow completions
};

class FlowNetwork final : public engine::ActivityModel {
 public:
  explicit FlowNetwork(const topology::Topology& topo);
  // The transfers task `t` carries when it starts (replaces any previous assignment) and latency
  // added on top of its route latencies.
  void assign(engine::TaskId t, collective::Coflow transfers, double extra_latency = 0);

  void reset(const engine::TaskGraph& g) override;
  void start(engine::TaskId t, double now) override;
  double next_completion() override;
  void advance_to(double now, std::vector<engine::TaskId>& finished) override;
  const FlowStats& stats() const { return stats_; }
  const solver::SolverStats& solver_stats() const { return solver_.stats(); }

 private:
  struct ActiveFlow {
    int solver_id;
    engine::TaskId task;
    double bytes, remaining, last;
  };
  void progress(double now);
  const topology::Topology& topo_;
  solver::MaxMinSolver solver_;
  std::vector<collective::Coflow> coflow_;
  std::vector<double> extra_;
  std::vector<double> alpha_;       // per task, at start
  std::vector<int> pending_;        // per task: flows not yet drained
  std::vector<ActiveFlow> flows_;
  struct Timer {
    double time;
    engine::TaskId task;
    bool operator>(const Timer& o) const { return time != o.time ? time > o.time : task > o.task; }
  };
  std::vector<Timer> timers_;       // min-heap: tasks whose flows drained, waiting out latency
  bool dirty_ = false;
  double next_flow_ = 0;
  std::vector<solver::Element> scratch_;
  FlowStats stats_;
};

}  // namespace hs::network
