#include "engine/activity_model.hpp"

#include <algorithm>
#include <functional>
#include <limits>

namespace hs::engine {

void FixedDurationModel::reset(const TaskGraph& g) {
  graph_ = &g;
  heap_.clear();
  run_.assign(g.num_tasks(), Running{});
  seq_ = 0;
}

void FixedDurationModel::start(TaskId t, double now) {
  Running& r = run_[t];
  r.left = graph_->duration(t).value();
  r.since = now;
  r.speed = 1;
  r.end = now + r.left;
  r.seq = seq_++;
  r.running = true;
  heap_.push_back({r.end, r.seq, t, ++r.version});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
}

bool FixedDurationModel::set_speed(TaskId t, double speed, double now) {
  Running& r = run_[t];
  if (!r.running || speed == r.speed) return true;  // finished at this instant: nothing to slow
  r.left = std::max(0.0, r.left - (now - r.since) * r.speed);
  r.since = now;
  r.speed = speed;
  r.end = now + r.left / speed;
  heap_.push_back({r.end, r.seq, t, ++r.version});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  return true;
}

void FixedDurationModel::pop_stale() {
  while (!heap_.empty() && heap_.front().version != run_[heap_.front().task].version) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    heap_.pop_back();
  }
}

double FixedDurationModel::next_completion() {
  pop_stale();
  return heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.front().time;
}

void FixedDurationModel::advance_to(double now, std::vector<TaskId>& finished) {
  pop_stale();
  while (!heap_.empty() && heap_.front().time <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const Event e = heap_.back();
    heap_.pop_back();
    ++run_[e.task].version;  // finished: any later entry of it is stale
    run_[e.task].running = false;
    finished.push_back(e.task);
    pop_stale();
  }
}

}  // namespace hs::engine
