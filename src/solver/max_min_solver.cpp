#include "solver/max_min_solver.hpp"

#include <algorithm>
#include <bit>
#include <functional>

#include "util/reserve.hpp"
#include "util/sort_by_cap.hpp"

namespace hs::solver {

int MaxMinSolver::add_link(double capacity) {
  ln_.emplace_back();
  ln_.back().cap = capacity;
  link_flows_.emplace_back();
  link_dirty_.push_back(0);
  gone_.push_back(0);
  uf_parent_.push_back(static_cast<int32_t>(ln_.size() - 1));
  uf_flows_.push_back(0);
  seed_.push_back(kUnlimited);
  pend_.emplace_back();
  seed_added_.push_back(0);
  return static_cast<int>(ln_.size() - 1);
}

int MaxMinSolver::uf_find(int l) {
  while (uf_parent_[l] != l) {
    uf_parent_[l] = uf_parent_[uf_parent_[l]];  // path halving
    l = uf_parent_[l];
  }
  return l;
}

void MaxMinSolver::uf_join(uint32_t ebegin, uint32_t ecount) {
  int root = uf_find(link_of(elems_[ebegin]));
  for (uint32_t i = ebegin + 1; i < ebegin + ecount; ++i) {
    int r = uf_find(link_of(elems_[i]));
    if (r == root) continue;
    if (uf_flows_[r] > uf_flows_[root]) std::swap(r, root);
    uf_parent_[r] = root;
    uf_flows_[root] += uf_flows_[r];
  }
  ++uf_flows_[root];
}

void MaxMinSolver::uf_rebuild() {
  for (size_t l = 0; l < uf_parent_.size(); ++l) uf_parent_[l] = static_cast<int32_t>(l), uf_flows_[l] = 0;
  for (size_t w = 0; w < live_bits_.size(); ++w)
    for (uint64_t bits = live_bits_[w]; bits != 0; bits &= bits - 1) {
      const Rec& r = rec_[64 * w + static_cast<size_t>(std::countr_zero(bits))];
      uf_join(r.ebegin, r.ecount);
    }
  uf_removed_ = 0;
}

uint32_t MaxMinSolver::alloc_elements(uint32_t count) {
  if (count < free_ranges_.size() && !free_ranges_[count].empty()) {
    const uint32_t b = free_ranges_[count].back();
    free_ranges_[count].pop_back();
    return b;
  }
  // The pool's used part is elems_used_; elems_ grows geometrically ahead of it, so a new range
  // costs no per-flow resize (a value-initializing memset call for two elements).
  const uint32_t b = elems_used_;
  elems_used_ += count;
  if (elems_used_ > elems_.size()) elems_.resize(std::max<size_t>(elems_used_, 2 * elems_.size()));
  return b;
}

void MaxMinSolver::reserve(size_t flows, size_t elements) {
  // Room for what add_flow() would grow one step at a time (each doubling copies and touches twice
  // the pages): new ids beyond the free ones, and a pool end past the elements.
  const size_t ids = rec_.size() + (flows > free_ids_.size() ? flows - free_ids_.size() : 0);
  reserve_geometric(rec_, ids);
  reserve_geometric(hot_, ids);
  reserve_geometric(state_, ids);
  reserve_geometric(old_rate_, ids);
  reserve_geometric(live_bits_, (ids + 63) / 64);
  reserve_geometric(comp_bits_, (ids + 63) / 64);
  if (elems_used_ + elements > elems_.size()) elems_.resize(elems_used_ + elements);
}

int MaxMinSolver::add_flow(std::span<const Element> elements, double weight, double rate_cap) {
  int id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<int>(rec_.size());
    rec_.emplace_back();
    hot_.emplace_back();
    state_.push_back(0);
    old_rate_.push_back(0);
    if (rec_.size() > 64 * live_bits_.size()) live_bits_.push_back(0), comp_bits_.push_back(0);
  }
  const auto n = static_cast<uint32_t>(elements.size());
  const uint32_t b = alloc_elements(n);
  Rec& r = rec_[id];
  r.ebegin = b;
  r.ecount = n;
  for (uint32_t i = 0; i < n; ++i) {
    const int l = elements[i].link;
    elems_[b + i] = {static_cast<uint32_t>(l) | (i + 1 == n ? kLast : 0u) | (i == 0 ? kFirst : 0u),
                     static_cast<uint32_t>(link_flows_[l].size()), weight * elements[i].coef};
    link_flows_[l].push_back({id, b + i, weight * elements[i].coef});
    seed_[l] = 0;
    seed_added_[l] = 1;
    if (!link_dirty_[l]) {  // mark(id), folded in
      link_dirty_[l] = 1;
      dirty_links_.push_back(l);
    }
  }
  if (n > 0) {
    live_bits_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    ++live_linked_;
    uf_join(b, n);
    added_ids_.push_back(id);
  }
  r.cap = rate_cap;
  hot_[id].rate = 0;
  r.alive = 1;
  set_bott(id, kBottNone);
  state_[id] = rate_cap < kUnlimited ? kCapped : 0;
  added_ = true;
  if (n == 0) {
    // Crosses nothing: only its cap limits it; no solve involves it.
    hot_[id].rate = rate_cap;
    added_free_.push_back(id);
  }
  return id;
}

void MaxMinSolver::remove_flows(std::span<const int> flows) {
  // Links that lose every flow they hold: their lists are cleared at the end instead of fixed up
  // element by element (the final lists are those of removing one by one: empty, or untouched here).
  for (int f : flows) {
    const Rec& r = rec_[f];
    for (uint32_t i = r.ebegin; i < r.ebegin + r.ecount; ++i) {
      const int l = link_of(elems_[i]);
      if (gone_[l]++ == 0) gone_links_.push_back(l);
    }
  }
  for (int l : gone_links_) gone_[l] = gone_[l] == link_flows_[l].size() ? kCleared : 0;
  for (int f : flows) remove_flow(f);
  for (int l : gone_links_) {
    if (gone_[l] == kCleared) link_flows_[l].clear();
    gone_[l] = 0;
  }
  gone_links_.clear();
}

void MaxMinSolver::remove_flow(int flow) {
  set_bott(flow, kBottNone);
  Rec& r = rec_[flow];
  min_removed_rate_ = std::min(min_removed_rate_, hot_[flow].rate);
  if (r.ecount > 0) {
    --uf_flows_[uf_find(link_of(elems_[r.ebegin]))];
    --live_linked_;
    ++uf_removed_;
  }
  for (uint32_t i = r.ebegin; i < r.ebegin + r.ecount; ++i) {
    const int l = link_of(elems_[i]);
    seed_[l] = std::min(seed_[l], hot_[flow].rate);
    if (!link_dirty_[l]) {  // mark(flow), folded in
      link_dirty_[l] = 1;
      dirty_links_.push_back(l);
    }
    if (gone_[l] == kCleared) continue;  // remove_flows() empties its list
    auto& v = link_flows_[l];
    const uint32_t pos = elems_[i].pos;
    const LinkRef moved = v.back();
    v[pos] = moved;
    v.pop_back();
    if (moved.flow != flow) elems_[moved.eidx].pos = pos;  // the moved flow's element for this link
  }
  if (r.ecount >= free_ranges_.size()) free_ranges_.resize(r.ecount + 1);
  free_ranges_[r.ecount].push_back(r.ebegin);
  r.ecount = 0;
  r.alive = 0;
  live_bits_[static_cast<size_t>(flow) >> 6] &= ~(uint64_t{1} << (flow & 63));
  hot_[flow].rate = 0;
  free_ids_.push_back(flow);
}

void MaxMinSolver::set_weight(int flow, std::span<const Element> elements, double weight) {
  const Rec& r = rec_[flow];
  const double rate = hot_[flow].rate;
  // Less weight: below its rate every link it crosses stays unsaturated either way (each has a
  // level at least its rate, and less weight only raises a share), so filling changes from its
  // rate on, a removal's seed. More weight can saturate a link lower: an add's (from 0).
  bool more = false;
  for (uint32_t i = 0; i < r.ecount; ++i) more = more || weight * elements[i].coef > elems_[r.ebegin + i].wc;
  const double seed = more ? 0.0 : rate;
  if (more) added_ = true, added_ids_.push_back(flow);  // (re-filled from 0, as an add)
  else min_removed_rate_ = std::min(min_removed_rate_, rate);
  for (uint32_t i = 0; i < r.ecount; ++i) {
    Elem& e = elems_[r.ebegin + i];
    e.wc = weight * elements[i].coef;
    const int l = link_of(e);
    link_flows_[l][e.pos].wc = e.wc;
    seed_[l] = std::min(seed_[l], seed);
    if (more) seed_added_[l] = 1;
    if (!link_dirty_[l]) {
      link_dirty_[l] = 1;
      dirty_links_.push_back(l);
    }
  }
}

void MaxMinSolver::set_rate_cap(int flow, double rate_cap) {
  Rec& r = rec_[flow];
  if (rate_cap == r.cap) return;
  r.cap = rate_cap;
  state_[flow] = static_cast<uint8_t>((state_[flow] & ~kCapped) | (rate_cap < kUnlimited ? kCapped : 0));
  if (r.ecount == 0) {  // crosses nothing: its cap is its rate (listed by the next solve)
    if (hot_[flow].rate != rate_cap) hot_[flow].rate = rate_cap, added_free_.push_back(flow);
    return;
  }
  const double rate = hot_[flow].rate;
  const int32_t bott = hot_[flow].bott;
  // Frozen at a link (its bottleneck) at a rate the new cap allows: that link freezes it there
  // again, at the same level, and nothing else sees the cap. (A flow not solved yet, kBottNone, is
  // re-filled below, from 0.)
  if (bott >= 0 && rate_cap >= rate) return;
  // Filling is unchanged below x: a removal's seed at x on its links (the component solve keeps
  // the flows below x), forced even where the flow bounds no other (seed_added_), and the flow is
  // touched by the re-fill from the start, so its new cap (or a link) freezes it again.
  const double x = bott == kBottNone ? 0.0 : std::min(rate, rate_cap);
  min_removed_rate_ = std::min(min_removed_rate_, x);
  recapped_ids_.push_back(flow);
  for (uint32_t i = r.ebegin; i < r.ebegin + r.ecount; ++i) {
    const int l = link_of(elems_[i]);
    seed_[l] = std::min(seed_[l], x);
    seed_added_[l] = 1;
    if (!link_dirty_[l]) {
      link_dirty_[l] = 1;
      dirty_links_.push_back(l);
    }
  }
}

double MaxMinSolver::link_load(int link) const {
  double s = 0;
  for (const LinkRef& lr : link_flows_[link]) s += lr.wc * hot_[lr.flow].rate;
  return s;
}

double MaxMinSolver::unfrozen_weight(int link) const {
  double s = 0;
  for (const LinkRef& lr : link_flows_[link])
    if (!(state_[lr.flow] & 3)) s += lr.wc;
  return s;
}

void MaxMinSolver::freeze(int f, uint32_t ebegin, double rate, int bott) {
  set_bott(f, bott);
  // Frozen at a new rate (2): listed in changed_ after filling, in component order.
  state_[f] = static_cast<uint8_t>((state_[f] & kCapped) | (rate != hot_[f].rate ? 2 : 1));
  hot_[f].rate = rate;
  for (uint32_t i = ebegin;; ++i) {
    const Elem& e = elems_[i];
    const int l = link_of(e);
    ln_[l].rem = std::max(0.0, ln_[l].rem - e.wc * rate);
    ln_[l].sumw -= e.wc;
    --ln_[l].unfrozen;
    ++stats_.elements_visited;
    if (e.link & kLast) break;
  }
}

void MaxMinSolver::solve() {
  // changed_ lists what this solve changes, plus element-less flows added since the last solve.
  changed_.clear();
  for (int f : added_free_)
    if (rec_[f].alive) changed_.push_back(f);
  added_free_.clear();
  if (dirty_links_.empty()) {
    added_ = false;
    added_ids_.clear();
    recapped_ids_.clear();
    return;
  }
  // The lazy re-fill's work follows the rates that change; a component solve's follows the
  // component. Many adds (a collective starting), or the last solve changing a large part of what
  // it visited (an all-to-all-v whose every completion moves most rates), favour the latter.
  if (mode_ == Mode::lazy || (mode_ == Mode::adaptive && !wide_ && 10 * added_ids_.size() <= 3 * live_linked_)) {
    refill();
    wide_ = 10 * touched_.size() > 3 * live_linked_;
    return;
  }
  const size_t added = added_ids_.size();
  added_ids_.clear();
  recapped_ids_.clear();  // their links are dirty: re-solved with their components
  // Collect the component(s) of the dirty links (BFS over link -> flows -> links). Rates in other
  // components depend on nothing that changed, and are kept. With 1,024+ live flows the component's
  // flows are listed in id order; when the union-find says the dirty links' component(s) hold 90%
  // of the live flows (one all-to-all spans everything), the search is skipped and every live flow
  // is re-solved, in id order: a union of components solves as each one does alone.
  ++stamp_;
  comp_links_.clear();
  comp_flows_.clear();
  // Removal-only: flows strictly below the smallest removed rate keep their rates (see header).
  const double keep_below = added_ ? 0.0 : min_removed_rate_ * (1 - 1e-9);
  added_ = false;
  min_removed_rate_ = kUnlimited;
  capped_.clear();
  // Progressive filling's start, per flow in component order: a kept flow's consumption leaves its
  // links' remaining capacity, the others' weights join their links' unfrozen weight. Capped flows
  // of a component found by search (not in id order) are marked by id, then listed in id order off
  // the bits (a stable pass by cap then gives the (cap, id) order without a sort).
  size_t cap_lo = comp_bits_.size(), cap_hi = 0, ncapped = 0;
  const auto init_link = [&](int l) {
    ln_[l].rem = ln_[l].cap;
    ln_[l].sumw = 0;
    ln_[l].unfrozen = 0;
  };
  const auto init_flow = [&](int f, bool by_id) {
    const Rec& r = rec_[f];
    const uint32_t b = r.ebegin, e = b + r.ecount;
    const double rate = hot_[f].rate;
    if (rate < keep_below) {
      state_[f] = static_cast<uint8_t>((state_[f] & kCapped) | 1);
      ++stats_.flows_kept;
      for (uint32_t j = b; j < e; ++j) {
        const int l = link_of(elems_[j]);
        ln_[l].rem = std::max(0.0, ln_[l].rem - elems_[j].wc * rate);
      }
      return;
    }
    state_[f] &= kCapped;
    for (uint32_t j = b; j < e; ++j) {
      const int l = link_of(elems_[j]);
      ln_[l].sumw += elems_[j].wc;
      ++ln_[l].unfrozen;
    }
    if (r.cap < kUnlimited) {
      if (by_id) {
        capped_.push_back({r.cap, f});
      } else {
        const size_t w = static_cast<size_t>(f) >> 6;
        comp_bits_[w] |= uint64_t{1} << (f & 63);
        cap_lo = std::min(cap_lo, w), cap_hi = std::max(cap_hi, w);
        ++ncapped;
      }
    }
  };
  const size_t live = rec_.size() - free_ids_.size();
  const bool large = live >= 1024;
  bool sweep = false;
  if (large) {
    if (live_linked_ == 0 && uf_removed_ > 0) uf_rebuild();
    const auto dirty_share = [&] {
      int64_t n = 0;
      for (int l : dirty_links_) {
        const int r = uf_find(l);
        if (ln_[r].stamp == stamp_) continue;  // roots counted once (stamps reset below)
        ln_[r].stamp = stamp_;
        n += uf_flows_[r];
      }
      ++stamp_;
      return n;
    };
    int64_t n = dirty_share();
    if (10 * static_cast<size_t>(n) >= 9 * live_linked_ && uf_removed_ >= uf_interval_) {
      // Removals may have split the class: rebuild, and rebuild less often while they split nothing.
      uf_rebuild();
      n = dirty_share();
      uf_interval_ = 10 * static_cast<size_t>(n) >= 9 * live_linked_ ? 2 * uf_interval_ : 64;
    }
    sweep = 10 * static_cast<size_t>(n) >= 9 * live_linked_;
  }
  if (sweep) {
    for (int l : dirty_links_) link_dirty_[l] = 0, seed_[l] = kUnlimited, seed_added_[l] = 0;
    dirty_links_.clear();
    // Live flows with elements, in id order, off a bitset (64 ids per word).
    for (size_t w = 0; w < live_bits_.size(); ++w)
      for (uint64_t bits = live_bits_[w]; bits != 0; bits &= bits - 1)
        comp_flows_.push_back(static_cast<int>(64 * w + static_cast<size_t>(std::countr_zero(bits))));
    for (size_t l = 0; l < link_flows_.size(); ++l)
      if (!link_flows_[l].empty()) comp_links_.push_back(static_cast<int>(l));
  } else {
    for (int l : dirty_links_) {
      link_dirty_[l] = 0, seed_[l] = kUnlimited, seed_added_[l] = 0;
      if (ln_[l].stamp == stamp_) continue;
      ln_[l].stamp = stamp_;
      comp_links_.push_back(l);
      if (!large) init_link(l);
    }
    dirty_links_.clear();
    // A small component starts filling as it is searched (its flows in search order: the same
    // sums per link as a pass over the list afterwards); a large one is listed in id order first.
    for (size_t i = 0; i < comp_links_.size(); ++i) {
      for (const LinkRef& lr : link_flows_[comp_links_[i]]) {
        const int f = lr.flow;
        Rec& r = rec_[f];
        if (r.stamp == stamp_) continue;
        r.stamp = stamp_;
        comp_flows_.push_back(f);
        for (uint32_t j = r.ebegin; j < r.ebegin + r.ecount; ++j) {
          const int l = link_of(elems_[j]);
          if (ln_[l].stamp != stamp_) {
            ln_[l].stamp = stamp_;
            comp_links_.push_back(l);
            if (!large) init_link(l);
          }
        }
        if (!large) init_flow(f, false);
      }
    }
    if (large) {
      // Id order, as the sweep lists them: a component solves the same whichever way it was found.
      size_t lo = comp_bits_.size(), hi = 0;
      for (int f : comp_flows_) {
        const size_t w = static_cast<size_t>(f) >> 6;
        comp_bits_[w] |= uint64_t{1} << (f & 63);
        lo = std::min(lo, w), hi = std::max(hi, w);
      }
      comp_flows_.clear();
      for (size_t w = lo; w <= hi && w < comp_bits_.size(); ++w) {
        for (uint64_t bits = comp_bits_[w]; bits != 0; bits &= bits - 1)
          comp_flows_.push_back(static_cast<int>(64 * w + static_cast<size_t>(std::countr_zero(bits))));
        comp_bits_[w] = 0;
      }
    }
  }
  ++stats_.solves;
  stats_.flows_recomputed += comp_flows_.size();
  if (large) {
    for (int l : comp_links_) init_link(l);
    for (int f : comp_flows_) init_flow(f, true);
  }
  for (size_t w = cap_lo; ncapped > 0 && w <= cap_hi; ++w) {
    for (uint64_t bits = comp_bits_[w]; bits != 0; bits &= bits - 1) {
      const auto f = static_cast<int>(64 * w + static_cast<size_t>(std::countr_zero(bits)));
      capped_.push_back({rec_[f].cap, f});
    }
    comp_bits_[w] = 0;
  }
  // Flow caps, smallest first: (cap, id) pairs sorted in place (a comparator reading the caps
  // from the records cost a cache miss per comparison).
  // Usually a few distinct caps (an NCCL connection's channels per locality) over flows listed in
  // id order: sorted by cap in one stable bucket pass, which is then the (cap, id) order.
  const auto cap_before = [](const std::pair<double, int>& a, const std::pair<double, int>& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;
  };
  if (!std::is_sorted(capped_.begin(), capped_.end(), cap_before)) sort_by_cap(capped_, capped_tmp_);
  size_t next_cap = 0;
  // Links in a min-heap keyed by fair share. Freezing flows at level s only raises the shares of the
  // links they cross ((rem - w s) / (sumw - w) >= rem / sumw when s <= rem / sumw), so a popped key is
  // either current, and then the global minimum, or stale and too small: re-push it with its current
  // share. Pushes happen on pops only, not on every element update.
  // (share, link) order without a branch (std::pair's synthesized three-way comparison of doubles
  // branches several times per comparison): the same order, NaN and signed zeros included, so the
  // same heap layouts.
  using Entry = std::pair<double, int>;
  const auto later = [](const Entry& a, const Entry& b) {
    return (a.first > b.first) | ((a.first == b.first) & (a.second > b.second));
  };
  heap_.clear();
  // A link popped and then pushed back unchanged (a capped flow froze first) is the heap's least
  // entry again (one entry per link: the pop order is the entries' order, whatever the layout): it
  // is kept in hand instead of pushed and popped.
  bool held = false;
  Entry top{};
  for (int l : comp_links_)
    if (ln_[l].unfrozen > 0) heap_.push_back({ln_[l].rem / ln_[l].sumw, l});
  std::make_heap(heap_.begin(), heap_.end(), later);
  while (held || !heap_.empty()) {
    while (next_cap < capped_.size() && (state_[capped_[next_cap].second] & 3)) ++next_cap;
    const double cap_level = next_cap < capped_.size() ? capped_[next_cap].first : kUnlimited;
    if (!held) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      top = heap_.back();
      heap_.pop_back();
    }
    held = false;
    const int l = top.second;
    // A link is done when its last unfrozen flow is: counted, not read off sumw (an absolute
    // threshold there skipped links whose flows all have tiny coefficients, e.g. the coflow tier's
    // bytes / capacity on a 1e13 B/s link, and left those flows at rate 0).
    if (ln_[l].unfrozen == 0) continue;
    if (!(ln_[l].sumw > 0)) ln_[l].sumw = unfrozen_weight(l);  // cancellation left nothing: sum it again
    const double current = ln_[l].rem / ln_[l].sumw;
    if (current > top.first * (1 + 1e-12)) {
      // Stale: back with its current share, in hand when it would be popped next anyway.
      top = {current, l};
      if (heap_.empty() || !later(top, heap_.front())) {
        held = true;
      } else {
        heap_.push_back(top);
        std::push_heap(heap_.begin(), heap_.end(), later);
      }
      continue;
    }
    if (cap_level < current) {
      const int f = capped_[next_cap].second;
      freeze(f, rec_[f].ebegin, cap_level, kBottCap);
      held = true;
      continue;
    }
    ++stats_.rounds;
    // A link's flows sit anywhere in the pools (an all-to-all's flows into one GPU are a
    // GPU-count apart): fetch the elements, rates (and caps) of unfrozen flows 32 ahead (no effect on
    // results); frozen ones are skipped on their (cached) state byte alone.
    const auto& v = link_flows_[l];
    const size_t nv = v.size();
    constexpr size_t kAhead = 32;
    for (size_t i = 0; i < nv; ++i) {
      if (i + kAhead < nv) {
        const uint8_t ahead = state_[v[i + kAhead].flow];
        if (!(ahead & 3)) {
          __builtin_prefetch(&elems_[v[i + kAhead].eidx]);
          __builtin_prefetch(&hot_[v[i + kAhead].flow]);
          if (ahead & kCapped) __builtin_prefetch(&rec_[v[i + kAhead].flow].cap);
        }
      }
      const LinkRef lr = v[i];
      const uint8_t st = state_[lr.flow];
      if (st & 3) continue;
      const bool capped = (st & kCapped) && rec_[lr.flow].cap < current;
      freeze(lr.flow, first_elem(lr.eidx), capped ? rec_[lr.flow].cap : current, capped ? kBottCap : l);
    }
    ln_[l].level = current;
  }
  // Capped flows no link froze (their links' weights vanished) run at their caps.
  for (; next_cap < capped_.size(); ++next_cap) {
    const auto [cap, f] = capped_[next_cap];
    if (!(state_[f] & 3)) freeze(f, rec_[f].ebegin, cap, kBottCap);
  }
  for (int f : comp_flows_) {
    const uint8_t st = state_[f] & 3;
    if (st == 0) {
      set_bott(f, kBottNone);
      const Rec& r = rec_[f];
      const double rate = r.ecount == 0 ? r.cap : 0.0;
      if (rate != hot_[f].rate) hot_[f].rate = rate, changed_.push_back(f);
    } else if (st == 2) {
      changed_.push_back(f);
    }
  }
  stats_.rates_changed += changed_.size();
  // 10%+ of the flows that were there before moved: solve the component whole again next time.
  wide_ = 10 * (changed_.size() - std::min(added, changed_.size())) >= comp_flows_.size() - std::min(added, comp_flows_.size());
}

}  // namespace hs::solver
