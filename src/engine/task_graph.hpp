// A task graph: the work of one simulated interval (e.g. one training iteration), independent of
// what the tasks mean. The engine knows nothing about MoE; strategies build these graphs.
//
// * A resource is an in-order execution queue (a GPU's compute stream, a communication stream):
//   it runs one task at a time, in the order tasks were added to it (like a CUDA stream).
// * A task occupies one or more resources at once (a collective spans every participant's
//   communication stream, so it starts only when all participants reach it: the straggler effect).
// * A task starts when all its dependencies have finished and it is at the head of every one of its
//   resources. How long it runs is decided by the model it is assigned to (kFixedModel: its
//   `duration`; a network model may instead decide by contention).
// * `tag` is opaque to the engine; builders use it to map tasks back to what they represent.
//
// * A resource may belong to a device (a GPU), and a task may be marked as compute or
//   communication. While a communication task is active on a device, the compute tasks running there
//   progress more slowly, and the reverse (Simulation::set_interference): communication kernels take
//   SMs and memory bandwidth from the compute beside them. How much depends on the kinds: a compute
//   task's kernel class (GEMM, attention, memory-bound) and a communication task's traffic (inside
//   a node or across the network), engine/interference.hpp. Tasks left as kOther are never slowed.
//
// Ids are dense and assigned in construction order; that order breaks every tie, which makes a run
// deterministic by construction.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/interference.hpp"
#include "util/units.hpp"

namespace hs::engine {

using TaskId = int32_t;
using ResourceId = int32_t;
using ModelId = int16_t;
inline constexpr ModelId kFixedModel = 0;
inline constexpr TaskId kNoTask = -1;
inline constexpr int kNoDevice = -1;

// What a task does to the device it runs on, for interference between overlapped work: its side,
// and its kind on that side (a compute task's KernelClass, a communication task's Traffic;
// engine/interference.hpp). A task marked compute is a GEMM and one marked communication stays inside
// a node until told otherwise.
enum class Activity : uint8_t { kOther, kCompute, kCommunication };

class TaskGraph {
 public:
  ResourceId add_resource(std::string name, int device = kNoDevice);
  TaskId add_task(std::span<const ResourceId> resources, Seconds duration, uint32_t tag, ModelId model = kFixedModel);
  TaskId add_task(ResourceId resource, Seconds duration, uint32_t tag, ModelId model = kFixedModel) {
    return add_task(std::span<const ResourceId>(&resource, 1), duration, tag, model);
  }
  // `after` starts only once `before` has finished.
  void add_dependency(TaskId before, TaskId after);

  void set_duration(TaskId t, Seconds d) { duration_[t] = d.value(); }
  void set_activity(TaskId t, Activity a) { activity_[t] = a; }
  void set_kernel_class(TaskId t, KernelClass c) { kind_[t] = static_cast<uint8_t>(c); }
  void set_traffic(TaskId t, Traffic k) { kind_[t] = static_cast<uint8_t>(k); }
  Activity activity(TaskId t) const { return activity_[t]; }
  // The kind on the task's side (meaningful for compute / communication tasks respectively).
  KernelClass kernel_class(TaskId t) const { return static_cast<KernelClass>(kind_[t]); }
  Traffic traffic(TaskId t) const { return static_cast<Traffic>(kind_[t]); }
  int device(ResourceId r) const { return device_[r]; }
  int num_devices() const { return num_devices_; }
  Seconds duration(TaskId t) const { return Seconds(duration_[t]); }
  uint32_t tag(TaskId t) const { return tag_[t]; }
  ModelId model(TaskId t) const { return model_[t]; }
  int num_tasks() const { return static_cast<int>(tag_.size()); }
  int num_resources() const { return static_cast<int>(resource_names_.size()); }
  const std::string& resource_name(ResourceId r) const { return resource_names_[r]; }
  // Inline: the simulation's event loop reads them for every task it starts and ends.
  std::span<const ResourceId> resources(TaskId t) const {
    return {res_list_.data() + res_offset_[t], res_offset_[t + 1] - res_offset_[t]};
  }
  std::span<const TaskId> successors(TaskId t) const {
    seal();
    return {succ_.data() + succ_offset_[t], succ_offset_[t + 1] - succ_offset_[t]};
  }
  std::span<const TaskId> predecessors(TaskId t) const {
    seal();
    return {pred_.data() + pred_offset_[t], pred_offset_[t + 1] - pred_offset_[t]};
  }
  // Tasks of a resource in issue order.
  std::span<const TaskId> queue(ResourceId r) const {
    seal();
    return {queue_.data() + queue_offset_[r], queue_offset_[r + 1] - queue_offset_[r]};
  }
  int num_dependencies(TaskId t) const {
    seal();
    return static_cast<int>(pred_offset_[t + 1] - pred_offset_[t]);
  }

  // Builds the adjacency arrays; called by the simulation (cheap when nothing changed).
  void seal() const {
    if (!sealed_) build_adjacency();
  }

 private:
  std::vector<std::string> resource_names_;
  std::vector<int> device_;
  int num_devices_ = 0;
  std::vector<Activity> activity_;
  std::vector<uint8_t> kind_;  // KernelClass or Traffic, by activity_
  std::vector<double> duration_;
  std::vector<uint32_t> tag_;
  std::vector<ModelId> model_;
  std::vector<uint32_t> res_offset_{0};
  std::vector<ResourceId> res_list_;
  std::vector<std::pair<TaskId, TaskId>> edges_;
  void build_adjacency() const;  // seal()'s work
  // Sealed CSR views (mutable: derived data).
  mutable bool sealed_ = false;
  mutable std::vector<uint32_t> succ_offset_, pred_offset_, queue_offset_;
  mutable std::vector<TaskId> succ_, pred_, queue_;
};

}  // namespace hs::engine
