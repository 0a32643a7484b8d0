#include "solver/max_min_solver.hpp"

#include <algorithm>
#include <functional>
#include <queue>

namespace hs::solver {

int MaxMinSolver::add_link(double capacity) {
  cap_.push_back(capacity);
  link_flows_.emplace_back();
  link_dirty_.push_back(0);
  link_stamp_.push_back(0);
  rem_.push_back(0);
  sumw_.push_back(0);
  return static_cast<int>(cap_.size() - 1);
}

void MaxMinSolver::mark(int flow) {
  for (const auto& e : elems_[flow])
    if (!link_dirty_[e.link]) {
      link_dirty_[e.link] = 1;
      dirty_links_.push_back(e.link);
    }
}

int MaxMinSolver::add_flow(std::span<const Element> elements, double weight, double rate_cap) {
  int id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<int>(alive_.size());
    elems_.emplace_back();
    weight_.push_back(0);
    rate_cap_.push_back(0);
    rate_.push_back(0);
    alive_.push_back(0);
    flow_stamp_.push_back(0);
    frozen_.push_back(0);
  }
  elems_[id].assign(elements.begin(), elements.end());
  weight_[id] = weight;
  rate_cap_[id] = rate_cap;
  rate_[id] = 0;
  alive_[id] = 1;
  for (const auto& e : elements) link_flows_[e.link].push_back(id);
  added_ = true;
  if (elements.empty()) rate_[id] = rate_cap;  // crosses nothing: only its cap limits it
  mark(id);
  return id;
}

void MaxMinSolver::remove_flow(int flow) {
  mark(flow);
  min_removed_rate_ = std::min(min_removed_rate_, rate_[flow]);
  for (const auto& e : elems_[flow]) {
    auto& v = link_flows_[e.link];
    auto it = std::find(v.begin(), v.end(), flow);
    if (it != v.end()) {
      *it = v.back();
      v.pop_back();
    }
  }
  alive_[flow] = 0;
  rate_[flow] = 0;
  elems_[flow].clear();
  free_ids_.push_back(flow);
}

double MaxMinSolver::link_load(int link) const {
  double s = 0;
  for (int f : link_flows_[link])
    for (const auto& e : elems_[f])
      if (e.link == link) s += weight_[f] * e.coef * rate_[f];
  return s;
}

void MaxMinSolver::solve() {
  if (dirty_links_.empty()) return;
  // Collect the component(s) of the dirty links (BFS over link -> flows -> links).
  ++stamp_;
  comp_links_.clear();
  comp_flows_.clear();
  for (int l : dirty_links_) {
    link_dirty_[l] = 0;
    if (link_stamp_[l] == stamp_) continue;
    link_stamp_[l] = stamp_;
    comp_links_.push_back(l);
  }
  dirty_links_.clear();
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    for (int f : link_flows_[comp_links_[i]]) {
      if (flow_stamp_[f] == stamp_) continue;
      flow_stamp_[f] = stamp_;
      comp_flows_.push_back(f);
      for (const auto& e : elems_[f])
        if (link_stamp_[e.link] != stamp_) {
          link_stamp_[e.link] = stamp_;
          comp_links_.push_back(e.link);
        }
    }
  }
  ++stats_.solves;
  stats_.flows_recomputed += comp_flows_.size();
  // Progressive filling: initial remaining capacities and unfrozen weights per link.
  active_.clear();
  for (int l : comp_links_) {
    rem_[l] = cap_[l];
    sumw_[l] = 0;
  }
  // Removal-only: flows strictly below the smallest removed rate keep their rates (see header).
  const double keep_below = added_ ? 0.0 : min_removed_rate_ * (1 - 1e-9);
  added_ = false;
  min_removed_rate_ = kUnlimited;
  for (int f : comp_flows_) {
    if (rate_[f] < keep_below && !elems_[f].empty()) {
      frozen_[f] = 1;
      ++stats_.flows_kept;
      for (const auto& e : elems_[f]) rem_[e.link] = std::max(0.0, rem_[e.link] - weight_[f] * e.coef * rate_[f]);
      continue;
    }
    frozen_[f] = 0;
    for (const auto& e : elems_[f]) sumw_[e.link] += weight_[f] * e.coef;
  }
  for (int l : comp_links_)
    if (sumw_[l] > 0) active_.push_back(l);
  // Flow caps, smallest first.
  capped_.clear();
  for (int f : comp_flows_)
    if (rate_cap_[f] < kUnlimited && !frozen_[f]) capped_.push_back(f);
  std::sort(capped_.begin(), capped_.end(), [&](int a, int b) {
    return rate_cap_[a] != rate_cap_[b] ? rate_cap_[a] < rate_cap_[b] : a < b;
  });
  size_t next_cap = 0;
  auto freeze = [&](int f, double r) {
    frozen_[f] = 1;
    rate_[f] = r;
    for (const auto& e : elems_[f]) {
      ++stats_.elements_visited;
      rem_[e.link] = std::max(0.0, rem_[e.link] - weight_[f] * e.coef * r);
      sumw_[e.link] -= weight_[f] * e.coef;
    }
  };
  // Links in a min-heap keyed by fair share. Freezing flows at level s only raises the shares of the
  // links they cross ((rem - w s) / (sumw - w) >= rem / sumw when s <= rem / sumw), so a popped key is
  // either current, and then the global minimum, or stale and too small: re-push it with its current
  // share. Pushes happen on pops only, not on every element update.
  using Entry = std::pair<double, int>;
  heap_.clear();
  for (int l : active_) heap_.push_back({rem_[l] / sumw_[l], l});
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
  while (!heap_.empty() || next_cap < capped_.size()) {
    while (next_cap < capped_.size() && frozen_[capped_[next_cap]]) ++next_cap;
    const double cap_level = next_cap < capped_.size() ? rate_cap_[capped_[next_cap]] : kUnlimited;
    if (heap_.empty()) {
      if (cap_level == kUnlimited) break;
      freeze(capped_[next_cap], cap_level);
      continue;
    }
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const Entry top = heap_.back();
    heap_.pop_back();
    const int l = top.second;
    if (sumw_[l] <= 1e-12) continue;
    const double current = rem_[l] / sumw_[l];
    if (current > top.first * (1 + 1e-12)) {
      heap_.push_back({current, l});
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      continue;
    }
    if (cap_level < current) {
      freeze(capped_[next_cap], cap_level);
      heap_.push_back(top);
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      continue;
    }
    ++stats_.rounds;
    for (int f : link_flows_[l])
      if (!frozen_[f]) freeze(f, std::min(current, rate_cap_[f]));
  }
  for (int f : comp_flows_)
    if (!frozen_[f]) rate_[f] = elems_[f].empty() ? rate_cap_[f] : 0.0;
}

}  // namespace hs::solver
