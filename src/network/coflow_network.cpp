#include "network/coflow_network.hpp"

#include <algorithm>
#include <limits>

namespace hs::network {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

// Links are normalized to capacity 1. Coflow k's progress p_k (fraction drained per second) is
// phi_k x its solver rate, and its element on link l has coefficient phi_k x bytes_k(l) /
// capacity(l), so the solver's constraint is exactly sum_k p_k bytes_k(l) <= capacity(l). The
// solver equalizes rates on a shared bottleneck, so coflows there get bandwidth in proportion to
// phi_k x bytes_k(l). With phi_k = transfers / bytes on the coflow's own bottleneck link, a coflow
// gets a link's bandwidth in proportion to the transfers it has on it, as NCCL connections (and the
// flow tier's flows) share a link: an all-to-all with 64 transfers through a NIC gets 8x the share
// of a broadcast chain's 8. Alone, p = 1 / D whatever phi is.
CoflowNetwork::CoflowNetwork(const topology::Topology& topo) : topo_(topo) {
  for (size_t l = 0; l < topo.links().size(); ++l) solver_.add_link(1.0);
}

int CoflowNetwork::define(CoflowLoads loads) {
  Def d;
  auto& links = loads.links;
  links.erase(std::remove_if(links.begin(), links.end(), [](const LinkLoad& x) { return x.bytes <= 0; }),
              links.end());
  for (const auto& x : links) {
    const double t = x.bytes / topo_.links()[x.link].bandwidth.value();
    if (t > d.drain) {
      d.drain = t;
      d.phi = std::max(x.flows, 1.0) / x.bytes;
    }
  }
  // A transfer held to its rate cap (an NCCL connection's channels) sets a pace no sharing can beat.
  if (loads.floor > d.drain) {
    d.drain = loads.floor;
    d.floored = true;
  }
  d.loads = std::move(loads);
  defs_.push_back(std::move(d));
  return static_cast<int>(defs_.size() - 1);
}

void CoflowNetwork::assign(engine::TaskId t, int id) {
  if (static_cast<size_t>(t) >= task_def_.size()) task_def_.resize(t + 1, -1);
  task_def_[t] = id;
}

void CoflowNetwork::clear() {
  defs_.clear();
  std::fill(task_def_.begin(), task_def_.end(), -1);
}

void CoflowNetwork::append_key(MemoKey& key) const {
  key.add(static_cast<uint64_t>(defs_.size()));
  for (const Def& d : defs_) {
    key.add(static_cast<uint64_t>(d.loads.links.size()));
    for (const LinkLoad& x : d.loads.links) key.add(static_cast<uint64_t>(x.link)), key.add(x.bytes), key.add(x.flows);
    key.add(d.loads.latency);
    key.add(d.loads.floor);
  }
  key.add(static_cast<uint64_t>(task_def_.size()));
  for (int id : task_def_) key.add(static_cast<uint64_t>(static_cast<int64_t>(id)));
}

double CoflowNetwork::solo_time(int id) const {
  const Def& d = defs_[id];
  return d.drain > 0 ? d.loads.latency + d.drain : 0.0;
}

void CoflowNetwork::reset(const engine::TaskGraph& g) {
  for (auto& r : running_)
    if (r.flow >= 0) solver_.remove_flow(r.flow);
  solver_.solve();
  link_users_.assign(topo_.links().size(), 0);
  running_.clear();
  timers_.clear();
  slot_of_.assign(g.num_tasks(), -1);
  if (task_def_.size() < static_cast<size_t>(g.num_tasks())) task_def_.resize(g.num_tasks(), -1);
  now_ = 0;
  dirty_ = false;
}

void CoflowNetwork::start(engine::TaskId t, double now) {
  now_ = now;
  const int id = task_def_[t];
  if (id < 0 || defs_[id].drain <= 0) {  // nothing to send: done at once, no latency
    timers_.push_back({now, t});
    return;
  }
  const Def& d = defs_[id];
  Running r;
  r.task = t;
  r.since = now;
  bool shared = false;
  for (const auto& x : d.loads.links) shared = shared || link_users_[x.link]++ > 0;
  if (shared) {
    // Everything running that is still off the solver joins it, then this coflow.
    for (auto& o : running_)
      if (o.flow < 0) {
        progress(o, now);
        o.flow = add_flow(defs_[task_def_[o.task]], o.speed);
        o.rate = -1;
      }
    r.flow = add_flow(d, 1.0);
    dirty_ = true;
  } else {
    // Alone on its links: its solo pace, no solve (the common case: most collectives run alone).
    r.rate = 1.0 / d.drain;
    r.finish = now + d.drain;
  }
  slot_of_[t] = static_cast<int>(running_.size());
  running_.push_back(r);
}

int CoflowNetwork::add_flow(const Def& d, double speed) {
  scratch_.clear();
  for (const auto& x : d.loads.links)
    scratch_.push_back({x.link, d.phi * x.bytes / topo_.links()[x.link].bandwidth.value()});
  // Progress capped at speed / D: solver rate <= speed / (phi D) (D includes a rate-cap floor).
  return solver_.add_flow(scratch_, 1.0,
                          speed < 1 || d.floored ? speed / (d.phi * d.drain) : solver::MaxMinSolver::kUnlimited);
}

void CoflowNetwork::progress(Running& r, double now) {
  if (now > r.since) r.left = std::max(0.0, r.left - (now - r.since) * r.rate);
  r.since = now;
}

void CoflowNetwork::settle() {
  if (!dirty_) return;
  dirty_ = false;
  solver_.solve();
  // Few coflows are in flight: re-project those whose rate moved.
  for (auto& r : running_) {
    if (r.flow < 0) continue;  // alone on its links: keeps its pace
    const double rate = defs_[task_def_[r.task]].phi * solver_.rate(r.flow);
    if (rate == r.rate) continue;
    progress(r, now_);
    r.rate = rate;
    r.finish = rate > 0 ? r.since + r.left / rate : kInf;
  }
}

double CoflowNetwork::next_completion() {
  settle();
  double next = kInf;
  for (const auto& r : running_) next = std::min(next, r.finish);
  for (const auto& tm : timers_) next = std::min(next, tm.first);
  return next;
}

void CoflowNetwork::advance_to(double now, std::vector<engine::TaskId>& finished) {
  now_ = now;
  // Drained coflows pay their latency; keep the running list in start order.
  size_t keep = 0;
  for (size_t i = 0; i < running_.size(); ++i) {
    Running& r = running_[i];
    if (r.finish <= now) {
      const Def& d = defs_[task_def_[r.task]];
      for (const auto& x : d.loads.links) --link_users_[x.link];
      if (r.flow >= 0) {
        solver_.remove_flow(r.flow);
        dirty_ = true;
      }
      slot_of_[r.task] = -1;
      timers_.push_back({now + d.loads.latency, r.task});
      continue;
    }
    slot_of_[r.task] = static_cast<int>(keep);
    running_[keep++] = r;
  }
  running_.resize(keep);
  std::sort(timers_.begin(), timers_.end());
  size_t done = 0;
  while (done < timers_.size() && timers_[done].first <= now) finished.push_back(timers_[done++].second);
  timers_.erase(timers_.begin(), timers_.begin() + static_cast<std::ptrdiff_t>(done));
}

bool CoflowNetwork::set_speed(engine::TaskId t, double speed, double now) {
  const int slot = slot_of_[t];
  if (slot < 0) return true;  // paying latency, or nothing to send
  now_ = now;
  settle();
  Running& r = running_[slot];
  progress(r, now);
  r.speed = speed;
  const Def& d = defs_[task_def_[t]];
  if (r.flow < 0) {  // alone: the capped pace directly
    r.rate = speed / d.drain;
    r.finish = now + r.left / r.rate;
    return true;
  }
  solver_.remove_flow(r.flow);
  r.flow = add_flow(d, speed);
  r.rate = -1;  // re-projected at the next settle
  dirty_ = true;
  return true;
}

}  // namespace hs::network
