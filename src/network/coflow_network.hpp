// The analytic network tier as an engine model: every communication task is one coflow that runs
// as a rigid fluid, and concurrent coflows share the links they have in common.
//
// Alone, a coflow takes latency + D with D = max over links (bytes on the link / capacity): the
// analytic closed form (collective/analytic_network.hpp), exactly. Running beside others, each
// coflow k progresses at a rate r_k (fraction of its work per second) and puts r_k x bytes_k(l) on
// every link l it crosses; the rates are max-min fair under sum_k r_k x bytes_k(l) <= capacity(l)
// (progressive filling, solver/max_min_solver.hpp, one solver flow per coflow), re-solved whenever a
// coflow starts or drains, weighted so that on a shared bottleneck each coflow's bandwidth is
// proportional to the transfers it has there (NCCL connections share a link per connection, as the
// flow tier's flows do). Two equal collectives on one link therefore take twice as long together
// as alone, and a spAG beside a dispatch all-to-all on the same NIC slows both; a coflow that shares
// nothing runs at its own speed. The latency is paid after the drain, as on the flow tier.
//
// What it does not see, and the flow tier does: inside one coflow every transfer keeps the same
// pace (the bottleneck link's), so when a coflow is slowed on one link its transfers elsewhere are
// slowed too rather than finishing early and freeing capacity. The cost is one small solve per
// event over the few coflows in flight, independent of the GPU count apart from the link loads; a
// coflow that starts alone on its links skips the solver altogether until another joins it.
//
// Speed (engine interference): a communication task slowed by compute beside it gets a rate cap of
// speed / D, so it never runs faster than that share of its solo pace.
//
// Rate caps: a coflow whose slowest transfer is held by its own rate cap (CoflowLoads::floor: an
// NCCL connection's channels) longer than any link holds it has D = that floor and a progress cap of
// 1 / D: sharing can slow it further, never speed it up.
#pragma once

#include <vector>

#include "network/transfer.hpp"
#include "engine/activity_model.hpp"
#include "solver/max_min_solver.hpp"
#include "topology/topology.hpp"
#include "util/exact_memo.hpp"

namespace hs::network {

class CoflowNetwork final : public engine::ActivityModel {
 public:
  explicit CoflowNetwork(const topology::Topology& topo);
  // Defines a coflow for this run; ids are valid until clear(). Links with no bytes are ignored.
  int define(CoflowLoads loads);
  // Task `t` runs coflow `id` when it starts (a task never assigned runs no bytes: 0 s).
  void assign(engine::TaskId t, int id);
  // Forgets every definition and assignment (before the next iteration's are made).
  void clear();
  // Standalone time of a defined coflow: latency + max over links bytes / capacity (0 if empty).
  double solo_time(int id) const;
  // Writes everything a run of the engine on this network depends on into `key`
  // (util/exact_memo.hpp): every defined coflow's link loads, latency and floor, in id order, and
  // the coflow each task runs. Equal keys: every task's communication is timed the same way.
  void append_key(MemoKey& key) const;

  void reset(const engine::TaskGraph& g) override;
  void start(engine::TaskId t, double now) override;
  double next_completion() override;
  void advance_to(double now, std::vector<engine::TaskId>& finished) override;
  bool set_speed(engine::TaskId t, double speed, double now) override;

 private:
  struct Def {
    CoflowLoads loads;
    double drain = 0;  // D: seconds alone
    double phi = 1;    // progress per unit of solver rate (see the .cpp)
    bool floored = false;  // drain set by loads.floor (a capped transfer), not by a link
  };
  int add_flow(const Def& d, double speed);
  struct Running {
    engine::TaskId task = 0;
    int flow = -1;          // solver flow; -1 while alone on its links (not in the solver)
    double left = 1;        // fraction of the coflow still to drain at `since`
    double since = 0, rate = 0, finish = 0;
    double speed = 1;
  };
  void settle();
  void progress(Running& r, double now);

  const topology::Topology& topo_;
  solver::MaxMinSolver solver_;
  std::vector<Def> defs_;
  std::vector<int> task_def_;          // per task, -1 = none
  std::vector<int> slot_of_;           // per task: index in running_, -1
  std::vector<int> link_users_;        // per link: coflows draining through it
  std::vector<Running> running_;       // coflows draining
  std::vector<std::pair<double, engine::TaskId>> timers_;  // drained, paying latency (unordered, few)
  std::vector<solver::Element> scratch_;
  double now_ = 0;
  bool dirty_ = false;
};

}  // namespace hs::network
