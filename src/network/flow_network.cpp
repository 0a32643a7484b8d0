#include "network/flow_network.hpp"

#include <algorithm>
#include <functional>
#include <limits>

namespace hs::network {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

FlowNetwork::FlowNetwork(const topology::Topology& topo, double precision) : topo_(topo), precision_(precision) {
  for (const auto& l : topo.links()) solver_.add_link(l.bandwidth.value());
  link_bytes_.assign(topo.links().size(), 0.0);
}

void FlowNetwork::assign(engine::TaskId t, collective::Coflow transfers, double extra_latency) {
  if (static_cast<size_t>(t) >= coflow_.size()) {
    coflow_.resize(t + 1);
    extra_.resize(t + 1, 0.0);
  }
  coflow_[t] = std::move(transfers);
  extra_[t] = extra_latency;
}

void FlowNetwork::reset(const engine::TaskGraph& g) {
  for (size_t id = 0; id < flow_.size(); ++id)
    if (flow_[id].live) {
      solver_.remove_flow(static_cast<int>(id));
      flow_[id].live = false;
      tag_[id] = 0;
      ++removed_;
    }
  solver_.solve();
  heap_.clear();
  timers_.clear();
  const size_t n = static_cast<size_t>(g.num_tasks());
  if (coflow_.size() < n) coflow_.resize(n), extra_.resize(n, 0.0);
  alpha_.assign(n, 0.0);
  scale_.assign(n, 0.0);
  pending_.assign(n, 0);
  now_ = 0;
  dirty_ = false;
  cached_ = false;
}

void FlowNetwork::start(engine::TaskId t, double now) {
  now_ = now;
  double alpha = 0;
  int count = 0;
  for (const auto& tr : coflow_[t]) {
    if (tr.src == tr.dst || tr.bytes <= 0) continue;
    const auto r = topo_.route(tr.src, tr.dst);
    alpha = std::max(alpha, r.latency.value());
    scratch_.clear();
    for (const auto& h : r.hops)
      if (topo_.may_bind(h.link)) {
        scratch_.push_back({h.link, h.fraction});
        if (link_bytes_[h.link] == 0) bytes_links_.push_back(h.link);
        link_bytes_[h.link] += tr.bytes * h.fraction;
      }
    stats_.elements += scratch_.size();
    const int id = solver_.add_flow(scratch_);
    if (static_cast<size_t>(id) >= flow_.size()) flow_.resize(id + 1);
    Flow& f = flow_[id];
    f.task = t;
    f.src = tr.src;
    f.dst = tr.dst;
    f.bytes = f.remaining = tr.bytes;
    stats_.bytes_offered += tr.bytes;
    f.since = f.start = now;
    f.rate = 0;
    f.finish = kInf;
    if (static_cast<size_t>(id) >= tag_.size()) tag_.resize(id + 1, 0);
    f.live = true;
    bump(id);
    ++count;
  }
  stats_.flows += count;
  // The task's duration scale: its most loaded link's bytes / capacity (its analytic-tier time
  // without latency), a lower bound on how long it runs.
  double scale = 0;
  for (int l : bytes_links_) {
    scale = std::max(scale, link_bytes_[l] / solver_.capacity(l));
    link_bytes_[l] = 0;
  }
  bytes_links_.clear();
  scale_[t] = scale;
  alpha_[t] = alpha + extra_[t];
  pending_[t] = count;
  if (count == 0) {
    timers_.push_back({now + (coflow_[t].empty() ? extra_[t] : alpha_[t]), t});
    std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
  }
  if (count > 0) dirty_ = true;
  cached_ = false;
}

void FlowNetwork::settle() {
  if (!dirty_) return;
  dirty_ = false;
  cached_ = false;
  solver_.solve();
  ++stats_.solver_updates;
  // New projections are appended, then either sifted up one by one (few) or the heap is rebuilt,
  // dropping stale entries (many: O(heap) beats O(changed x log heap)).
  const size_t old_size = heap_.size();
  for (int id : solver_.changed()) {
    Flow& f = flow_[id];
    if (!f.live) continue;
    f.remaining = std::max(0.0, f.remaining - f.rate * (now_ - f.since));
    f.since = now_;
    f.rate = solver_.rate(id);
    if (f.remaining <= 1e-12 * f.bytes) f.finish = now_;
    else f.finish = f.rate > 0 ? now_ + f.remaining / f.rate : kInf;
    bump(id);
    if (f.finish < kInf) heap_.push_back({f.finish, id, f.version});
  }
  const size_t added = heap_.size() - old_size;
  if (added * 16 > heap_.size()) {
    size_t w = 0;
    for (const Due& d : heap_)
      if (valid(d)) heap_[w++] = d;
    heap_.resize(w);
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
    return;
  }
  for (size_t i = old_size + 1; i <= heap_.size(); ++i) std::push_heap(heap_.begin(), heap_.begin() + i, std::greater<>());
  // Stale entries (superseded projections) are dropped when they surface; when they outnumber the
  // live ones, rebuild the heap so it stays O(flows in flight).
  const size_t live = stats_.flows - stats_.events - removed_;
  if (heap_.size() > 64 && heap_.size() > 2 * live) {
    size_t w = 0;
    for (const Due& d : heap_)
      if (valid(d)) heap_[w++] = d;
    heap_.resize(w);
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
  }
}

void FlowNetwork::pop_stale() {
  while (!heap_.empty() && !valid(heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    heap_.pop_back();
  }
}

double FlowNetwork::next_completion() {
  settle();
  if (!cached_) {
    cached_ = true;
    pop_stale();
    if (heap_.empty()) {
      next_flow_ = kInf;
    } else {
      const Due first = heap_.front();
      next_flow_ = first.time;
      if (precision_ > 0) {
        // Merge every completion projected within precision x (the earliest's elapsed time, or its
        // task's duration scale if longer).
        const Flow& ff = flow_[first.id];
        const double bound = first.time + precision_ * std::max(first.time - ff.start, scale_[ff.task]);
        window_.clear();
        while (!heap_.empty() && heap_.front().time <= bound) {
          std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
          const Due d = heap_.back();
          heap_.pop_back();
          if (!valid(d)) continue;
          window_.push_back(d);
          next_flow_ = std::max(next_flow_, d.time);
        }
        for (const Due& d : window_) {
          heap_.push_back(d);
          std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
        }
      }
    }
  }
  const double timer = timers_.empty() ? kInf : timers_.front().time;
  return std::min(next_flow_, timer);
}

void FlowNetwork::finish_flow(int id, double now) {
  Flow& f = flow_[id];
  // Bytes carried: those delivered before `since`, plus rate x time up to the projected finish.
  stats_.bytes_delivered += (f.bytes - f.remaining) + std::min(f.remaining, f.rate * (f.finish - f.since));
  f.live = false;
  tag_[id] = 0;
  solver_.remove_flow(id);
  ++stats_.events;
  if (--pending_[f.task] == 0) {
    timers_.push_back({now + alpha_[f.task], f.task});
    std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
  }
}

void FlowNetwork::advance_to(double now, std::vector<engine::TaskId>& finished) {
  now_ = now;
  bool any = false;
  while (true) {
    pop_stale();
    if (heap_.empty() || heap_.front().time > now) break;
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const Due d = heap_.back();
    heap_.pop_back();
    finish_flow(d.id, now);
    any = true;
  }
  if (any) {
    ++stats_.completion_events;
    dirty_ = true;
  }
  cached_ = false;
  while (!timers_.empty() && timers_.front().time <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<>());
    finished.push_back(timers_.back().task);
    timers_.pop_back();
  }
}

}  // namespace hs::network
