#include "engine/activity_model.hpp"

#include <algorithm>
#include <limits>

namespace hs::engine {

void FixedDurationModel::reset(const TaskGraph& g) {
  graph_ = &g;
  heap_.clear();
  slots_.clear();
  free_slots_.clear();
  slot_of_.assign(g.num_tasks(), kIdle);
  seq_ = 0;
}

void FixedDurationModel::sift_up(size_t i) {
  const Event e = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!(e < heap_[parent])) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, e);
}

void FixedDurationModel::sift_down(size_t i) {
  const Event e = heap_[i];
  const size_t n = heap_.size();
  while (true) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t last = std::min(first + 4, n);
    for (size_t c = first + 1; c < last; ++c)
      if (heap_[c] < heap_[best]) best = c;
    if (!(heap_[best] < e)) break;
    place(i, heap_[best]);
    i = best;
  }
  place(i, e);
}

void FixedDurationModel::start(TaskId t, double now) {
  uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& r = slots_[slot];
  r.left = graph_->duration(t).value();
  r.since = now;
  r.speed = 1;
  r.task = t;
  slot_of_[t] = slot;
  heap_.push_back({now + r.left, seq_++, slot});
  sift_up(heap_.size() - 1);
}

bool FixedDurationModel::set_speed(TaskId t, double speed, double now) {
  const uint32_t slot = slot_of_[t];
  if (slot == kIdle) return true;  // finished at this instant: nothing to slow
  Slot& r = slots_[slot];
  if (speed == r.speed) return true;
  r.left = std::max(0.0, r.left - (now - r.since) * r.speed);
  r.since = now;
  r.speed = speed;
  heap_[r.pos].time = now + r.left / speed;
  sift_up(r.pos);
  sift_down(r.pos);
  return true;
}

double FixedDurationModel::next_completion() {
  return heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.front().time;
}

void FixedDurationModel::advance_to(double now, std::vector<TaskId>& finished) {
  while (!heap_.empty() && heap_.front().time <= now) {
    const uint32_t slot = heap_.front().slot;
    const TaskId t = slots_[slot].task;
    slot_of_[t] = kIdle;
    free_slots_.push_back(slot);
    finished.push_back(t);
    const Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) {
      heap_.front() = last;
      sift_down(0);
    }
  }
}

}  // namespace hs::engine
