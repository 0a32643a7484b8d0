#include "strategy/graph/path_breakdown.hpp"

#include <algorithm>

namespace hs::strategy {

void StreamPredecessors::build(const engine::TaskGraph& g) {
  const int nt = g.num_tasks();
  std::vector<uint32_t> count(nt + 1, 0);
  for (engine::ResourceId r = 0; r < g.num_resources(); ++r) {
    const auto q = g.queue(r);
    for (size_t i = 1; i < q.size(); ++i) ++count[q[i] + 1];
  }
  off.assign(nt + 1, 0);
  for (int t = 0; t < nt; ++t) off[t + 1] = off[t] + count[t + 1];
  prev.assign(off[nt], engine::kNoTask);
  std::vector<uint32_t> fill(off.begin(), off.end() - 1);
  // Resources in id order, as the per-task lists were always built.
  for (engine::ResourceId r = 0; r < g.num_resources(); ++r) {
    const auto q = g.queue(r);
    for (size_t i = 1; i < q.size(); ++i) prev[fill[q[i]]++] = q[i - 1];
  }
}

void walk_critical_path(const engine::TaskGraph& g, const engine::Simulation& sim, const StreamPredecessors& prev,
                        const std::function<TaskCharge(engine::TaskId)>& charge, int gpus, IterationResult& res,
                        const std::function<void(engine::TaskId, double)>& on_charged) {
  const int nt = g.num_tasks();
  if (nt == 0) return;
  std::vector<TaskCharge> info(nt);
  std::vector<double> overlappable_total(1, 0.0), overlappable_charged(1, 0.0);  // per group
  for (engine::TaskId t = 0; t < nt; ++t) {
    info[t] = charge(t);
    if (!info[t].overlappable) continue;
    const auto k = static_cast<size_t>(info[t].group);
    if (k >= overlappable_total.size()) overlappable_total.resize(k + 1, 0.0), overlappable_charged.resize(k + 1, 0.0);
    overlappable_total[k] += sim.end_time(t) - sim.start_time(t);
  }
  std::vector<double> gpu_expert(std::max(gpus, 0), 0.0);
  auto add = [&](engine::TaskId task, double d) {
    const TaskCharge& in = info[task];
    if (!in.communication) {
      const double own = g.duration(task).value();
      if (d > own * (1 + 1e-9)) {  // below that, rounding of the re-projected end
        res.breakdown[static_cast<int>(Component::kOverlapSlowdown)] += d - own;
        d = own;
      }
    }
    if (in.mean >= 0) {
      const double base = d - in.mean > 1e-9 * d ? in.mean : d;
      res.breakdown[static_cast<int>(Component::kExpertCompute)] += base;
      res.breakdown[static_cast<int>(Component::kStragglerWait)] += d - base;
      if (in.gpu >= 0 && in.gpu < gpus) gpu_expert[in.gpu] += d;
    } else {
      res.breakdown[static_cast<int>(in.component)] += d;
    }
    if (in.overlappable) overlappable_charged[static_cast<size_t>(in.group)] += d;
    if (on_charged) on_charged(task, d);
  };
  engine::TaskId t = 0;
  for (engine::TaskId i = 1; i < nt; ++i)
    if (sim.end_time(i) > sim.end_time(t)) t = i;
  while (t != engine::kNoTask) {
    engine::TaskId p = engine::kNoTask, q = engine::kNoTask;  // latest, latest non-overlappable
    auto consider = [&](engine::TaskId c) {
      if (p == engine::kNoTask || sim.end_time(c) > sim.end_time(p) ||
          (sim.end_time(c) == sim.end_time(p) && c == sim.critical_predecessor(t)))
        p = c;
      if (!info[c].overlappable && (q == engine::kNoTask || sim.end_time(c) > sim.end_time(q))) q = c;
    };
    for (engine::TaskId c : g.predecessors(t)) consider(c);
    for (uint32_t i = prev.off[t]; i < prev.off[t + 1]; ++i) consider(prev.prev[i]);
    add(t, sim.end_time(t) - sim.start_time(t));
    if (p == engine::kNoTask) break;  // idle before t is possible only at time 0
    if (info[p].overlappable && q != engine::kNoTask && sim.end_time(q) >= sim.start_time(p)) {
      add(p, sim.end_time(p) - sim.end_time(q));
      t = q;
      continue;
    }
    t = p;
  }
  for (size_t k = 0; k < overlappable_total.size(); ++k)
    res.hidden_comm = std::max(res.hidden_comm, overlappable_total[k] - overlappable_charged[k]);
  if (res.breakdown[static_cast<int>(Component::kStragglerWait)] > 0) {
    double best = 0;
    for (int x = 0; x < gpus; ++x)
      if (gpu_expert[x] > best) best = gpu_expert[x], res.bottleneck_gpu = x;
  }
}

}  // namespace hs::strategy
