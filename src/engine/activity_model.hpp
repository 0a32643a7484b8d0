// A model decides how long the tasks assigned to it take once started (SimGrid's Model -> Action).
// The simulation loop asks every model for its next completion time, advances the clock to the
// earliest, and collects finished tasks. FixedDurationModel runs each task for its graph duration;
// a network model can instead share link capacity among the tasks it is running.
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
};

// Every task runs for exactly its duration. Completions are kept in a heap ordered by
// (end time, start sequence), so equal end times resolve in start order.
class FixedDurationModel final : public ActivityModel {
 public:
  void reset(const TaskGraph& g) override;
  void start(TaskId t, double now) override;
  double next_completion() override;
  void advance_to(double now, std::vector<TaskId>& finished) override;

 private:
  struct Event {
    double time;
    uint64_t seq;
    TaskId task;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  const TaskGraph* graph_ = nullptr;
  std::vector<Event> heap_;
  uint64_t seq_ = 0;
};

}  // namespace hs::engine
