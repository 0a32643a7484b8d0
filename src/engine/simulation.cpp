#include "engine/simulation.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace hs::engine {

Simulation::Simulation(const TaskGraph& graph) : graph_(graph) { models_.push_back(&fixed_); }

ModelId Simulation::add_model(ActivityModel* model) {
  models_.push_back(model);
  return static_cast<ModelId>(models_.size() - 1);
}

void Simulation::try_start(TaskId t) {
  if (started_[t] || deps_left_[t] > 0 || heads_at_[t] < graph_.resources(t).size()) return;
  started_[t] = 1;
  ready_.push_back(t);
}

void Simulation::land(ResourceId r) {
  auto q = graph_.queue(r);
  if (head_[r] >= q.size()) return;
  // A task that lists r k times sits k times in a row in r's queue: its head counts k.
  const TaskId t = q[head_[r]];
  for (size_t i = head_[r]; i < q.size() && q[i] == t; ++i) ++heads_at_[t];
}

namespace {
// 0 = compute, 1 = communication, -1 = neither.
int side(Activity a) { return a == Activity::kCompute ? 0 : a == Activity::kCommunication ? 1 : -1; }
}  // namespace

void Simulation::update_speed(TaskId t) {
  double s = 0;
  if (side(graph_.activity(t)) == 0) {
    const int c = static_cast<int>(graph_.kernel_class(t));
    for (int k = 0; k < kTrafficKinds; ++k)
      if (busy_[t][k] > 0) s = std::max(s, interference_.compute[c][k]);
  } else if (busy_[t][0] > 0) {
    s = interference_.communication_slowdown(graph_.traffic(t));
  }
  if (s == slow_[t]) return;
  slow_[t] = s;
  if (!models_[graph_.model(t)]->set_speed(t, 1.0 / (1.0 + s), now_))
    throw std::logic_error("interference: the model of task " + std::to_string(t) + " cannot vary its speed");
}

void Simulation::set_busy(TaskId t, int k, int delta) {
  const int before = busy_[t][k];
  busy_[t][k] += delta;
  if ((before > 0) != (busy_[t][k] > 0)) update_speed(t);
}

// A task of one side starts: count the devices where the other side is active; devices where its
// side (a communication task: its traffic kind) becomes active for the first time slow the other
// side's running tasks.
void Simulation::interfere_start(TaskId t) {
  const int me = side(graph_.activity(t));
  if (me < 0) return;
  const int kind = static_cast<int>(graph_.traffic(t));
  busy_[t] = {0, 0};
  slow_[t] = 0;
  for (ResourceId r : graph_.resources(t)) {
    const int d = graph_.device(r);
    if (d < 0) continue;
    running_[me][d].push_back(t);
    if (me == 0) {
      for (int k = 0; k < kTrafficKinds; ++k) busy_[t][k] += active_comm_[k][d] > 0;
      if (active_compute_[d]++ == 0)
        for (TaskId o : running_[1][d]) set_busy(o, 0, +1);
    } else {
      busy_[t][0] += active_compute_[d] > 0;
      if (active_comm_[kind][d]++ == 0)
        for (TaskId o : running_[0][d]) set_busy(o, kind, +1);
    }
  }
  update_speed(t);
}

void Simulation::interfere_end(TaskId t) {
  const int me = side(graph_.activity(t));
  if (me < 0) return;
  const int kind = static_cast<int>(graph_.traffic(t));
  for (ResourceId r : graph_.resources(t)) {
    const int d = graph_.device(r);
    if (d < 0) continue;
    auto& run = running_[me][d];
    run.erase(std::find(run.begin(), run.end(), t));
    if (me == 0) {
      if (--active_compute_[d] == 0)
        for (TaskId o : running_[1][d]) set_busy(o, 0, -1);
    } else if (--active_comm_[kind][d] == 0) {
      for (TaskId o : running_[0][d]) set_busy(o, kind, -1);
    }
  }
}

void Simulation::run() {
  graph_.seal();
  const int n = graph_.num_tasks();
  start_.assign(n, 0.0);
  end_.assign(n, 0.0);
  crit_.assign(n, kNoTask);
  deps_left_.resize(n);
  started_.assign(n, 0);
  head_.assign(graph_.num_resources(), 0);
  heads_at_.assign(n, 0);
  for (ResourceId r = 0; r < static_cast<ResourceId>(graph_.num_resources()); ++r) land(r);
  for (TaskId t = 0; t < n; ++t) deps_left_[t] = graph_.num_dependencies(t);
  for (auto* m : models_) m->reset(graph_);
  const bool interfere = interference_.active();
  if (interfere) {
    busy_.assign(n, {0, 0});
    slow_.assign(n, 0.0);
    active_compute_.assign(graph_.num_devices(), 0);
    for (auto& a : active_comm_) a.assign(graph_.num_devices(), 0);
    for (auto& r : running_) {  // (cleared, not replaced: a kept Simulation reuses the lists)
      r.resize(graph_.num_devices());
      for (auto& v : r) v.clear();
    }
  }
  now_ = 0;
  events_ = 0;
  ready_.clear();
  for (TaskId t = 0; t < n; ++t) try_start(t);
  int done = 0;
  while (true) {
    std::sort(ready_.begin(), ready_.end());
    for (TaskId t : ready_) {
      start_[t] = now_;
      models_[graph_.model(t)]->start(t, now_);
      if (interfere) interfere_start(t);
      for (auto* o : observers_) o->on_task_start(t, now_);
    }
    ready_.clear();
    double next = std::numeric_limits<double>::infinity();
    for (auto* m : models_) next = std::min(next, m->next_completion());
    if (next == std::numeric_limits<double>::infinity()) break;
    now_ = next;
    finished_.clear();
    for (auto* m : models_)
      if (m->next_completion() <= now_) m->advance_to(now_, finished_);
    for (TaskId f : finished_) {
      ++events_;
      ++done;
      end_[f] = now_;
      if (interfere) interfere_end(f);
      for (auto* o : observers_) o->on_task_end(f, now_);
      for (TaskId s : graph_.successors(f)) {
        crit_[s] = f;  // finishes come in time order: the last one to arrive is the critical one
        --deps_left_[s];
        try_start(s);
      }
      for (ResourceId r : graph_.resources(f)) {
        auto q = graph_.queue(r);
        ++head_[r];
        land(r);
        if (head_[r] < q.size()) {
          TaskId nxt = q[head_[r]];
          crit_[nxt] = f;
          try_start(nxt);
        }
      }
    }
  }
  if (done != n) {
    for (TaskId t = 0; t < n; ++t)
      if (!started_[t])
        throw std::logic_error("task graph deadlock: task " + std::to_string(t) + " (tag " +
                               std::to_string(graph_.tag(t)) + ") never became ready");
  }
  makespan_ = now_;
}

std::vector<TaskId> Simulation::critical_path() const {
  std::vector<TaskId> path;
  const int n = graph_.num_tasks();
  if (n == 0) return path;
  TaskId last = 0;
  for (TaskId t = 1; t < n; ++t)
    if (end_[t] > end_[last]) last = t;
  for (TaskId t = last; t != kNoTask; t = crit_[t]) path.push_back(t);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace hs::engine
