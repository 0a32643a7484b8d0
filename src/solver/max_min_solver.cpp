#include "solver/max_min_solver.hpp"

#include <algorithm>
#include <functional>

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
  const uint32_t b = ebegin_[flow], e = b + ecount_[flow];
  for (uint32_t i = b; i < e; ++i) {
    const int l = e_link_[i];
    if (!link_dirty_[l]) {
      link_dirty_[l] = 1;
      dirty_links_.push_back(l);
    }
  }
}

uint32_t MaxMinSolver::alloc_elements(uint32_t count) {
  if (count < free_ranges_.size() && !free_ranges_[count].empty()) {
    const uint32_t b = free_ranges_[count].back();
    free_ranges_[count].pop_back();
    return b;
  }
  const auto b = static_cast<uint32_t>(e_link_.size());
  e_link_.resize(b + count);
  e_wc_.resize(b + count);
  e_pos_.resize(b + count);
  return b;
}

int MaxMinSolver::add_flow(std::span<const Element> elements, double weight, double rate_cap) {
  int id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<int>(alive_.size());
    ebegin_.push_back(0);
    ecount_.push_back(0);
    rate_cap_.push_back(0);
    rate_.push_back(0);
    alive_.push_back(0);
    flow_stamp_.push_back(0);
    frozen_.push_back(0);
  }
  const auto n = static_cast<uint32_t>(elements.size());
  const uint32_t b = alloc_elements(n);
  ebegin_[id] = b;
  ecount_[id] = n;
  for (uint32_t i = 0; i < n; ++i) {
    const int l = elements[i].link;
    e_link_[b + i] = l;
    e_wc_[b + i] = weight * elements[i].coef;
    e_pos_[b + i] = static_cast<uint32_t>(link_flows_[l].size());
    link_flows_[l].push_back(id);
  }
  rate_cap_[id] = rate_cap;
  rate_[id] = 0;
  alive_[id] = 1;
  added_ = true;
  if (n == 0) {
    // Crosses nothing: only its cap limits it; no solve involves it.
    rate_[id] = rate_cap;
    added_free_.push_back(id);
  }
  mark(id);
  return id;
}

void MaxMinSolver::remove_flow(int flow) {
  mark(flow);
  min_removed_rate_ = std::min(min_removed_rate_, rate_[flow]);
  const uint32_t b = ebegin_[flow], n = ecount_[flow];
  for (uint32_t i = b; i < b + n; ++i) {
    auto& v = link_flows_[e_link_[i]];
    const uint32_t pos = e_pos_[i];
    const int32_t moved = v.back();
    v[pos] = moved;
    v.pop_back();
    if (moved != flow) {
      // The moved flow's element for this link now sits at `pos`.
      const uint32_t mb = ebegin_[moved], me = mb + ecount_[moved];
      for (uint32_t j = mb; j < me; ++j)
        if (e_link_[j] == e_link_[i]) {
          e_pos_[j] = pos;
          break;
        }
    }
  }
  if (n >= free_ranges_.size()) free_ranges_.resize(n + 1);
  free_ranges_[n].push_back(b);
  ecount_[flow] = 0;
  alive_[flow] = 0;
  rate_[flow] = 0;
  free_ids_.push_back(flow);
}

double MaxMinSolver::link_load(int link) const {
  double s = 0;
  for (int f : link_flows_[link]) {
    const uint32_t b = ebegin_[f], e = b + ecount_[f];
    for (uint32_t i = b; i < e; ++i)
      if (e_link_[i] == link) s += e_wc_[i] * rate_[f];
  }
  return s;
}

void MaxMinSolver::freeze(int f, double r) {
  frozen_[f] = 1;
  if (r != rate_[f]) {
    rate_[f] = r;
    frozen_[f] = 2;  // frozen at a new rate: listed in changed_ after filling, in component order
  }
  const uint32_t b = ebegin_[f], e = b + ecount_[f];
  stats_.elements_visited += ecount_[f];
  for (uint32_t i = b; i < e; ++i) {
    const int l = e_link_[i];
    rem_[l] = std::max(0.0, rem_[l] - e_wc_[i] * r);
    sumw_[l] -= e_wc_[i];
  }
}

void MaxMinSolver::solve() {
  // changed_ lists what this solve changes, plus element-less flows added since the last solve.
  changed_.clear();
  for (int f : added_free_)
    if (alive_[f]) changed_.push_back(f);
  added_free_.clear();
  if (dirty_links_.empty()) {
    added_ = false;
    return;
  }
  // Collect the component(s) of the dirty links (BFS over link -> flows -> links). When the last
  // solve's component held 90% of the (1,024+) live flows (one all-to-all spans everything), skip the
  // search and re-solve every live flow, in id order: a union of components solves exactly as
  // each one does alone, and the sequential sweep costs less than the search would.
  ++stamp_;
  comp_links_.clear();
  comp_flows_.clear();
  const size_t live = alive_.size() - free_ids_.size();
  if (live >= 1024 && 10 * last_component_ >= 9 * live) {
    for (int l : dirty_links_) link_dirty_[l] = 0;
    dirty_links_.clear();
    for (size_t f = 0; f < alive_.size(); ++f)
      if (alive_[f] && ecount_[f] > 0) comp_flows_.push_back(static_cast<int>(f));
    for (size_t l = 0; l < link_flows_.size(); ++l)
      if (!link_flows_[l].empty()) comp_links_.push_back(static_cast<int>(l));
  } else {
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
        const uint32_t fb = ebegin_[f], fe = fb + ecount_[f];
        for (uint32_t j = fb; j < fe; ++j) {
          const int l = e_link_[j];
          if (link_stamp_[l] != stamp_) {
            link_stamp_[l] = stamp_;
            comp_links_.push_back(l);
          }
        }
      }
    }
  }
  last_component_ = comp_flows_.size();
  ++stats_.solves;
  stats_.flows_recomputed += comp_flows_.size();
  // Progressive filling: initial remaining capacities and unfrozen weights per link.
  for (int l : comp_links_) {
    rem_[l] = cap_[l];
    sumw_[l] = 0;
  }
  // Removal-only: flows strictly below the smallest removed rate keep their rates (see header).
  const double keep_below = added_ ? 0.0 : min_removed_rate_ * (1 - 1e-9);
  added_ = false;
  min_removed_rate_ = kUnlimited;
  for (int f : comp_flows_) {
    const uint32_t b = ebegin_[f], e = b + ecount_[f];
    if (rate_[f] < keep_below) {
      frozen_[f] = 1;
      ++stats_.flows_kept;
      const double r = rate_[f];
      for (uint32_t j = b; j < e; ++j) rem_[e_link_[j]] = std::max(0.0, rem_[e_link_[j]] - e_wc_[j] * r);
      continue;
    }
    frozen_[f] = 0;
    for (uint32_t j = b; j < e; ++j) sumw_[e_link_[j]] += e_wc_[j];
  }
  // Flow caps, smallest first.
  capped_.clear();
  for (int f : comp_flows_)
    if (rate_cap_[f] < kUnlimited && !frozen_[f]) capped_.push_back(f);
  std::sort(capped_.begin(), capped_.end(), [&](int a, int b) {
    return rate_cap_[a] != rate_cap_[b] ? rate_cap_[a] < rate_cap_[b] : a < b;
  });
  size_t next_cap = 0;
  // Links in a min-heap keyed by fair share. Freezing flows at level s only raises the shares of the
  // links they cross ((rem - w s) / (sumw - w) >= rem / sumw when s <= rem / sumw), so a popped key is
  // either current, and then the global minimum, or stale and too small: re-push it with its current
  // share. Pushes happen on pops only, not on every element update.
  using Entry = std::pair<double, int>;
  heap_.clear();
  for (int l : comp_links_)
    if (sumw_[l] > 0) heap_.push_back({rem_[l] / sumw_[l], l});
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
  for (int f : comp_flows_) {
    if (!frozen_[f]) {
      const double r = ecount_[f] == 0 ? rate_cap_[f] : 0.0;
      if (r != rate_[f]) rate_[f] = r, frozen_[f] = 2;
    }
    if (frozen_[f] == 2) changed_.push_back(f);
  }
  stats_.rates_changed += changed_.size();
}

}  // namespace hs::solver
