// A model decides how long the tasks assigned to it take once started (SimGrid's Model -> Action).
// The simulation loop asks every model for its next completion time, advances the clock to the
// earliest, and collects finished tasks. FixedDurationModel runs each task for its graph duration
// at speed 1, or longer while the simulation slows it (interference from overlapped work); a
// network model instead shares link capacity among the tasks it is running.
#pragma once

#include <cstdint>
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
// remaining work (seconds at speed 1) and is re-projected in place: the heap is 4-ary and indexed,
// one entry per running task. A running task holds a slot (its work, pace and heap position) in a
// dense array as large as the most tasks ever running at once, reused as tasks finish: the heap's
// moves update positions there, in cache, not in a per-task array of the whole graph's size.
// (It was a binary heap with a new entry per re-projection and stale ones skipped: on a DeepSeek-V3
// step, where compute beside traffic re-projects most tasks twice, popping stale entries and the
// larger heap were 15% of the simulation.) The pop order is the (end, sequence) order either way:
// the same results bit for bit.
class FixedDurationModel final : public ActivityModel {
 public:
  void reset(const TaskGraph& g) override;
  void start(TaskId t, double now) override;
  double next_completion() override;
  void advance_to(double now, std::vector<TaskId>& finished) override;
  bool set_speed(TaskId t, double speed, double now) override;

 private:
  static constexpr uint32_t kIdle = 0xffffffffu;  // slot_of_: the task is not running
  struct Event {
    double time;
    uint64_t seq;
    uint32_t slot;
    bool operator<(const Event& o) const { return time != o.time ? time < o.time : seq < o.seq; }
  };
  struct Slot {
    double left = 0;   // work left at `since`, seconds at speed 1
    double since = 0, speed = 1;
    TaskId task = 0;
    uint32_t pos = 0;  // its entry in heap_
  };
  // Moves heap_[i] up or down to its place, keeping every moved slot's pos.
  void sift_up(size_t i);
  void sift_down(size_t i);
  void place(size_t i, const Event& e) {
    heap_[i] = e;
    slots_[e.slot].pos = static_cast<uint32_t>(i);
  }
  const TaskGraph* graph_ = nullptr;
  std::vector<Event> heap_;  // 4-ary min-heap by (time, seq): children of i at 4i + 1 .. 4i + 4
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<uint32_t> slot_of_;  // per task: its slot while running, else kIdle
  uint64_t seq_ = 0;
};

}  // namespace hs::engine
