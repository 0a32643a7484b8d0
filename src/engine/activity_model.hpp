// A model decides how long the tasks assigned to it take once started (SimGrid's Model -> Action).
// The simulation loop asks every model for its next completion time, advances the clock to the
// earliest, and collects finished tasks. FixedDurationModel runs each task for its graph duration
// at speed 1, or longer while the simulation slows it (interference from overlapped work); a
// network model instead shares link capacity among the tasks it is running.
#pragma once

#include <queue>
#include <vector>

#include "engine/task_graph.hpp"

namespace hs::engine {

class ActivityModel {
 public:
  virtual ~ActivityModel() = default;
  virtual void reset(const TaskGraph& g) = 0;
  virtual void start(TaskId t, double now) = 0;
  // +infinity when nothing is running. Not const: a model may settle pending work (re-solve rates).
  virtual double next_completion() = 0;
  // Appends the tasks that finish at `now` (== next_completion()) in a deterministic order.
  virtual void advance_to(double now, std::vector<TaskId>& finished) = 0;
  // From `now` on, running task `t` progresses at `speed` (0 < speed <= 1) times the pace it would
  // have alone. Returns false if the model cannot slow its tasks (the simulation then refuses an
  // interference setting that would need it).
  virtual bool set_speed(TaskId /*t*/, double /*speed*/, double /*now*/) { return false; }
};

// Every task runs for exactly its duration at speed 1. Completions are kept in a heap ordered by
// (end time, start sequence), so equal end times resolve in start order. A slowed task keeps its
// remaining work (seconds at speed 1) and is re-projected; stale heap entries are skipped.
class FixedDurationModel final : public ActivityModel {
 public:
  void reset(const TaskGraph& g) override;
  void start(TaskId t, double now) override;
  double next_completion() override;
  void advance_to(double now, std::vector<TaskId>& finished) override;
  bool set_speed(TaskId t, double speed, double now) override;

 private:
  struct Event {
    double time;
    uint64_t seq;
    TaskId task;
    uint32_t version;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct Running {
    double left = 0;   // work left at `since`, seconds at speed 1
    double since = 0, speed = 1, end = 0;
    uint64_t seq = 0;
    uint32_t version = 0;
    bool running = false;
  };
  void pop_stale();
  const TaskGraph* graph_ = nullptr;
  std::vector<Event> heap_;
  std::vector<Running> run_;  // per task (sized lazily, only slowed tasks use more than `end`)
  uint64_t seq_ = 0;
};

}  // namespace hs::engine
