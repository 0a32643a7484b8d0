#include "network/flow_network.hpp"

#include <algorithm>
#include <functional>
#include <limits>

namespace hs::network {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

FlowNetwork::FlowNetwork(const topology::Topology& topo) : topo_(topo) {
  for (const auto& l : topo.links()) solver_.add_link(l.bandwidth.value());
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
  for (const auto& f : flows_) solver_.remove_flow(f.solver_id);
  solver_.solve();
  flows_.clear();
  timers_.clear();
  const size_t n = static_cast<size_t>(g.num_tasks());
  if (coflow_.size() < n) coflow_.resize(n), extra_.resize(n, 0.0);
  alpha_.assign(n, 0.0);
  pending_.assign(n, 0);
  dirty_ = false;
}

void FlowNetwork::progress(double now) {
  for (auto& f : flows_) {
    f.remaining -= solver_.rate(f.solver_id) * (now - f.last);
    f.last = now;
  }
}

void FlowNetwork::start(engine::TaskId t, double now) {
  progress(now);
  double alpha = 0;
  int count = 0;
  for (const auto& tr : coflow_[t]) {
    if (tr.src == tr.dst || tr.bytes <= 0) continue;
    const auto r = topo_.route(tr.src, tr.dst);
    alpha = std::max(alpha, r.latency.value());
    scratch_.clear();
    for (const auto& h : r.hops) scratch_.push_back({h.link, h.fraction});
    const int id = solver_.add_flow(scratch_);
    flows_.push_back({id, t, tr.bytes, tr.bytes, now});
    ++count;
  }
  stats_.flows += count;
  alpha_[t] = alpha + extra_[t];
  pending_[t] = count;
  if (count == 0) {
    timers_.push_back({now + (coflow_[t].empty() ? extra_[t] : alpha_[t]), t});
    std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
  }
  dirty_ = true;
}

double FlowNetwork::next_completion() {
  if (dirty_) {
    solver_.solve();
    ++stats_.solver_updates;
    dirty_ = false;
    next_flow_ = kInf;
    for (const auto& f : flows_) {
      const double r = solver_.rate(f.solver_id);
      if (r > 0) next_flow_ = std::min(next_flow_, f.last + f.remaining / r);
    }
  }
  const double timer = timers_.empty() ? kInf : timers_.front().time;
  return std::min(next_flow_, timer);
}

void FlowNetwork::advance_to(double now, std::vector<engine::TaskId>& finished) {
  progress(now);
  // Drain flows that are done (relative tolerance absorbs rounding in rate x time).
  size_t w = 0;
  bool any = false;
  for (size_t i = 0; i < flows_.size(); ++i) {
    auto& f = flows_[i];
    if (f.remaining <= 1e-9 * f.bytes + 1e-6) {
      solver_.remove_flow(f.solver_id);
      ++stats_.events;
      any = true;
      if (--pending_[f.task] == 0) {
        timers_.push_back({now + alpha_[f.task], f.task});
        std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
      }
    } else {
      flows_[w++] = f;
    }
  }
  flows_.resize(w);
  if (any) dirty_ = true;
  else if (next_flow_ <= now) dirty_ = true;  // recompute the cached next completion
  while (!timers_.empty() && timers_.front().time <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<>());
    finished.push_back(timers_.back().task);
    timers_.pop_back();
  }
}

}  // namespace hs::network
