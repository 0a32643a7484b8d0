#include "engine/task_graph.hpp"

#include <algorithm>

namespace hs::engine {

ResourceId TaskGraph::add_resource(std::string name, int device) {
  resource_names_.push_back(std::move(name));
  device_.push_back(device);
  num_devices_ = std::max(num_devices_, device + 1);
  sealed_ = false;
  return static_cast<ResourceId>(resource_names_.size() - 1);
}

TaskId TaskGraph::add_task(std::span<const ResourceId> resources, Seconds duration, uint32_t tag, ModelId model) {
  duration_.push_back(duration.value());
  tag_.push_back(tag);
  model_.push_back(model);
  activity_.push_back(Activity::kOther);
  kind_.push_back(0);
  res_list_.insert(res_list_.end(), resources.begin(), resources.end());
  res_offset_.push_back(static_cast<uint32_t>(res_list_.size()));
  sealed_ = false;
  return static_cast<TaskId>(tag_.size() - 1);
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  edges_.emplace_back(before, after);
  sealed_ = false;
}

void TaskGraph::build_adjacency() const {
  const size_t n = tag_.size();
  auto build = [&](bool forward, std::vector<uint32_t>& off, std::vector<TaskId>& out) {
    off.assign(n + 1, 0);
    for (auto [a, b] : edges_) ++off[(forward ? a : b) + 1];
    for (size_t i = 0; i < n; ++i) off[i + 1] += off[i];
    out.assign(edges_.size(), 0);
    std::vector<uint32_t> pos(off.begin(), off.end() - 1);
    for (auto [a, b] : edges_) out[pos[forward ? a : b]++] = forward ? b : a;
  };
  build(true, succ_offset_, succ_);
  build(false, pred_offset_, pred_);
  const size_t nr = resource_names_.size();
  queue_offset_.assign(nr + 1, 0);
  for (ResourceId r : res_list_) ++queue_offset_[r + 1];
  for (size_t i = 0; i < nr; ++i) queue_offset_[i + 1] += queue_offset_[i];
  queue_.assign(res_list_.size(), 0);
  std::vector<uint32_t> pos(queue_offset_.begin(), queue_offset_.end() - 1);
  for (size_t t = 0; t < n; ++t)
    for (uint32_t i = res_offset_[t]; i < res_offset_[t + 1]; ++i) queue_[pos[res_list_[i]]++] = static_cast<TaskId>(t);
  sealed_ = true;
}

}  // namespace hs::engine
