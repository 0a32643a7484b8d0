// The discrete-event simulation of one task graph (SimGrid's main loop, in miniature).
//
//   while something runs or can start:
//     start every task whose dependencies are done and which heads all its resource queues
//     (in task-id order), handing it to its model;
//     advance the clock to the earliest completion any model reports; collect finished tasks.
//
// Simulated time is a double in seconds. Ties are broken by task id and by start order, so the same
// graph always produces the same schedule. A Simulation owns all its state (no globals): many can
// run at once on different threads. For each task it records start and end time and its critical
// predecessor (the dependency or resource predecessor that finished last before it started), so the
// critical path, and hence a breakdown of where time went, can be recovered.
//
// Interference (set_interference, engine/interference.hpp): a compute task progresses at
// 1 / (1 + compute[its kernel class][k]) of its speed while communication of traffic kind k is
// active on one of its devices (the largest such slowdown when both kinds are), and a
// communication task at 1 / (1 + communication[its traffic]) while compute is active on one of its
// devices (NCCL runs its channels as thread blocks beside the compute kernels, taking SMs and HBM
// bandwidth). The engine keeps, per running task, how many of its devices host the other side (a
// compute task: per traffic kind); speeds change only when such a count crosses zero, so the cost is
// O(devices) per start or finish.
#pragma once

#include <vector>

#include "engine/activity_model.hpp"
#include "engine/interference.hpp"
#include "engine/task_graph.hpp"

namespace hs::engine {

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_task_start(TaskId, double /*time*/) {}
  virtual void on_task_end(TaskId, double /*time*/) {}
};

class Simulation {
 public:
  explicit Simulation(const TaskGraph& graph);
  // Registers a model for tasks whose model id is the returned id (the fixed model is id 0).
  ModelId add_model(ActivityModel* model);
  // Forgets the models add_model registered (the fixed model stays id 0): a Simulation kept for
  // several runs of one graph (its buffers reused) gets the next run's models anew.
  void clear_models() { models_.resize(1); }
  void add_observer(Observer* o) { observers_.push_back(o); }
  void set_interference(Interference i) { interference_ = i; }

  // Runs the graph to completion. Throws std::logic_error if some task can never start (a cycle or
  // inconsistent issue order across resources: a bug in the graph's builder, not bad input).
  void run();

  double start_time(TaskId t) const { return start_[t]; }
  double end_time(TaskId t) const { return end_[t]; }
  double makespan() const { return makespan_; }
  TaskId critical_predecessor(TaskId t) const { return crit_[t]; }
  // From the last-finishing task back to a task with no predecessor, in time order.
  std::vector<TaskId> critical_path() const;
  uint64_t events() const { return events_; }

 private:
  void try_start(TaskId t);
  void interfere_start(TaskId t);
  void interfere_end(TaskId t);
  // Task t's count of devices hosting the other side (for a compute task, communication of traffic
  // kind k; for a communication task k is 0) changes by delta; its speed follows.
  void set_busy(TaskId t, int k, int delta);
  void update_speed(TaskId t);

  const TaskGraph& graph_;
  FixedDurationModel fixed_;
  std::vector<ActivityModel*> models_;
  std::vector<Observer*> observers_;
  std::vector<double> start_, end_;
  std::vector<TaskId> crit_;
  std::vector<int> deps_left_;
  std::vector<uint32_t> head_;
  // Per task: the resources' queue heads resting on it (a resource listed twice counts twice); it may
  // start when that is all of its resources and no dependency is left.
  std::vector<uint32_t> heads_at_;
  void land(ResourceId r);  // resource r's head has moved: count it on the task it rests on
  std::vector<char> started_;
  std::vector<TaskId> ready_, finished_;
  Interference interference_;
  // Per device: compute tasks active, communication tasks active per traffic kind, and the running
  // tasks of each side (0 compute, 1 communication).
  std::vector<int> active_compute_;
  std::vector<int> active_comm_[kTrafficKinds];
  std::vector<std::vector<TaskId>> running_[2];
  // Per task: its devices where the other side is active (a compute task per traffic kind of the
  // communication there; a communication task in [0]) and the slowdown now applied.
  std::vector<std::array<int, kTrafficKinds>> busy_;
  std::vector<double> slow_;
  double now_ = 0, makespan_ = 0;
  uint64_t events_ = 0;
};

}  // namespace hs::engine
