#include "engine/activity_model.hpp"

#include <algorithm>
#include <functional>
#include <limits>

namespace hs::engine {

void FixedDurationModel::reset(const TaskGraph& g) {
  graph_ = &g;
  heap_.clear();
  seq_ = 0;
}

void FixedDurationModel::start(TaskId t, double now) {
  heap_.push_back({now + graph_->duration(t).value(), seq_++, t});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
}

double FixedDurationModel::next_completion() {
  return heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.front().time;
}

void FixedDurationModel::advance_to(double now, std::vector<TaskId>& finished) {
  while (!heap_.empty() && heap_.front().time <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    finished.push_back(heap_.back().task);
    heap_.pop_back();
  }
}

}  // namespace hs::engine
