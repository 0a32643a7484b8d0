// The lazy re-fill: MaxMinSolver::solve() after adds and removals, doing only the work that the
// changed flows can cause.
//
// Progressive filling raises one level x from 0 and freezes each link's unfrozen flows when x
// reaches the link's share (remaining capacity / unfrozen weight). The last solve left, per flow,
// its rate and the link it froze at (its bottleneck, or its cap), and per link the level it froze
// at. A link's level in a new filling equals its old one unless (a) its flow set changed (an add
// or a removal: a *seed*, from the removed flow's rate, or 0 for an add), or (b) a flow crossing
// it gets a new rate: frozen elsewhere at another rate, or still unfrozen when x passes its old
// rate. Links that neither happens to keep their level, and their flows their rates, without being
// visited. So the re-fill runs progressive filling over events in level order:
//   seed l at x      the link's accounting changed from level x on: it joins the filling (*dirty*);
//   share of l       a dirty link's unfrozen flows freeze at its share;
//   cap              unfrozen capped flows freeze at their cap (a private link);
//   deadline of l    at l's old level, l's own flows (those that froze at l) still unfrozen will get
//                    a higher rate: their other links join the filling there;
// and a flow frozen at a rate other than its old one makes its links dirty at that level.
// A link joining at level x counts its flows as: frozen this solve (their new rate), unfrozen
// (weight), its own flows (unfrozen: their rate is this link's level, which x never exceeds), the
// others with old rate < x as final (their bottleneck reached that level unchanged), and the rest as
// *pending*: fixed at their old rate, which holds while their bottleneck stays clean and this link's
// share stays above it. When the link's share falls below a pending flow's rate, the flow is
// released (unfrozen; its bottleneck joins the filling, since it loses that flow's share), highest
// first, which raises the share, until none is above it. Every event happens at or below the level
// where its link's old accounting stops holding, so the filling equals a from-scratch one (up to
// the order of floating-point sums; rates within kSame = 1e-10 of their old value keep it exactly,
// so noise does not spread). The work follows the rates that change: a link's flow list is walked when it
// joins and when it freezes, untouched links and flows cost nothing.
#include <algorithm>
#include <cmath>
#include <functional>

#include "solver/max_min_solver.hpp"

namespace hs::solver {

namespace {
// Relative tolerances. Levels are sums of hundreds of rates subtracted from a capacity, so equal
// levels computed two ways differ by up to ~1e-11: a rate within kSame of its old value keeps it
// (noise must not spread as changes); a flow counts as frozen below a level only when its rate is
// below it by kFinal (treating it as pending instead is always safe, only slower).
constexpr double kTol = 1e-12;   // a link's queued share is current
constexpr double kSame = 1e-10;  // the same rate
constexpr double kFinal = 1e-9;  // clearly below a level
}

void MaxMinSolver::push_event(double level, EventKind kind, uint32_t id) {
  events_.push_back({level, (static_cast<uint64_t>(kind) << 32) | id});
  std::push_heap(events_.begin(), events_.end(), std::greater<>());
}

double MaxMinSolver::share(int l) const {
  if (unfrozen_[l] > 0) return rem_[l] / sumw_[l];
  // No unfrozen flow: nothing to freeze, unless pending flows overload the link.
  return rem_[l] < -kTol * cap_[l] && !pend_[l].empty() ? -kUnlimited : kUnlimited;
}

void MaxMinSolver::queue_link(int l) {
  if (unfrozen_[l] == 0 && !(rem_[l] < -kTol * cap_[l] && !pend_[l].empty())) return;
  if (unfrozen_[l] > 0 && !(sumw_[l] > 0)) {  // cancellation left nothing: sum it again
    double s = 0;
    for (const LinkRef& lr : link_flows_[l])
      if (touched(lr.flow) && !(state_[lr.flow] & 1)) s += elems_[lr.eidx].wc;
    sumw_[l] = s;
  }
  const double key = std::max(share(l), cur_);
  if (key < link_key_[l]) {
    link_key_[l] = key;
    push_event(key, kLink, static_cast<uint32_t>(l));
  }
}

void MaxMinSolver::touch(int f) {
  hot_[f].tstamp = stamp_;
  old_rate_[f] = hot_[f].rate;
  touched_.push_back(f);
  state_[f] &= static_cast<uint8_t>(~1u);
}

void MaxMinSolver::add_capped(int f) {
  if (!(state_[f] & kCapped)) return;
  const double cap = rec_[f].cap;
  size_t k = 0;
  while (k < group_cap_.size() && group_cap_[k] != cap) ++k;
  if (k == group_cap_.size()) {
    if (k == kCapGroups) {
      push_event(cap, kCapFlow, static_cast<uint32_t>(f));
      return;
    }
    group_cap_.push_back(cap);
    if (group_flows_.size() <= k) group_flows_.emplace_back(), group_queued_.push_back(0);
    group_flows_[k].clear();
    group_queued_[k] = 0;
  }
  group_flows_[k].push_back(f);
  if (!group_queued_[k]) {
    group_queued_[k] = 1;
    push_event(cap, kCapGroup, static_cast<uint32_t>(k));
  }
}

void MaxMinSolver::unfreeze(int f, int skip) {
  // f leaves its old rate r: on the dirty links (other than `skip`) it was pending, counted as r.
  touch(f);
  const double r = hot_[f].rate;
  const Rec& rec = rec_[f];
  for (uint32_t i = rec.ebegin; i < rec.ebegin + rec.ecount; ++i) {
    const int m = link_of(elems_[i]);
    if (m == skip || !in_refill(m)) continue;
    rem_[m] += elems_[i].wc * r;
    sumw_[m] += elems_[i].wc;
    ++unfrozen_[m];
    queue_link(m);
  }
  add_capped(f);
}

void MaxMinSolver::make_dirty(int l, double x) {
  link_stamp_[l] = stamp_;
  rem_[l] = cap_[l];
  sumw_[l] = 0;
  unfrozen_[l] = 0;
  link_key_[l] = kUnlimited;
  pend_[l].clear();
  pend_max_[l] = -kUnlimited;
  pend_heap_[l] = 0;
  // level_[l] stays until the link freezes again: flows frozen at it below x keep that rate.
  const double old_level = level_[l];
  bool own = false;
  const auto& v = link_flows_[l];
  for (size_t i = 0; i < v.size(); ++i) {
    const LinkRef lr = v[i];
    const int g = lr.flow;
    const double wc = elems_[lr.eidx].wc;
    if (touched(g)) {
      if (state_[g] & 1) {
        rem_[l] -= wc * hot_[g].rate;  // its new rate
      } else {
        sumw_[l] += wc;
        ++unfrozen_[l];
        own |= hot_[g].bott == l;
      }
      continue;
    }
    const double r = hot_[g].rate;
    if (hot_[g].bott == l) {
      // Its rate is this link's level, and x never exceeds that level (flows crossing a link
      // run at most at its level, and every cause of joining is a rate of one of them).
      unfreeze(g, l);
      sumw_[l] += wc;
      ++unfrozen_[l];
      own = true;
    } else if (r < x * (1 - kFinal)) {
      rem_[l] -= wc * r;  // final: frozen below x at its old rate
    } else {
      rem_[l] -= wc * r;
      pend_[l].push_back({r, g});
      pend_max_[l] = std::max(pend_max_[l], r);
    }
  }
  if (own && old_level < kUnlimited) push_event(std::max(old_level * (1 + 2 * kSame), x), kDeadline, static_cast<uint32_t>(l));
  queue_link(l);
}

void MaxMinSolver::refreeze(int f, uint32_t ebegin, double rate, int bott) {
  const double old = old_rate_[f];
  if (std::abs(rate - old) <= kSame * old) rate = old;
  state_[f] |= 1;
  hot_[f].rate = rate;
  set_bott(f, bott);
  for (uint32_t i = ebegin;; ++i) {
    const Elem& e = elems_[i];
    const int m = link_of(e);
    ++stats_.elements_visited;
    if (in_refill(m)) {
      rem_[m] -= e.wc * rate;
      sumw_[m] -= e.wc;
      --unfrozen_[m];
      if (unfrozen_[m] == 0 && rem_[m] < -kTol * cap_[m]) queue_link(m);
    } else if (rate != old) {
      make_dirty(m, rate);
    }
    if (e.link & kLast) break;
  }
}

void MaxMinSolver::link_event(int l, double key) {
  if (key <= link_key_[l]) link_key_[l] = kUnlimited;  // the link's smallest queued key is gone
  double s = share(l);
  // Pending flows above the share are released, highest first (each raises the share).
  auto& p = pend_[l];
  while (pend_max_[l] > s * (1 + kSame) || (s == -kUnlimited && !p.empty())) {
    if (!pend_heap_[l]) std::make_heap(p.begin(), p.end()), pend_heap_[l] = 1;
    while (!p.empty() && touched(p.front().second)) std::pop_heap(p.begin(), p.end()), p.pop_back();
    if (p.empty()) {
      pend_max_[l] = -kUnlimited;
      break;
    }
    const auto [r, g] = p.front();
    if (!(r > s * (1 + kSame)) && s != -kUnlimited) {
      pend_max_[l] = r;
      break;
    }
    std::pop_heap(p.begin(), p.end());
    p.pop_back();
    unfreeze(g, -1);  // converted on every dirty link, this one included
    if (hot_[g].bott >= 0 && !in_refill(hot_[g].bott)) make_dirty(hot_[g].bott, cur_);
    s = share(l);
  }
  if (unfrozen_[l] == 0) return;
  if (s > key * (1 + kTol)) {  // stale key: the share rose since
    queue_link(l);
    return;
  }
  const double level = std::max(s, 0.0);
  ++stats_.rounds;
  const auto& v = link_flows_[l];
  for (size_t i = 0; i < v.size(); ++i) {
    const LinkRef lr = v[i];
    if (!touched(lr.flow) || (state_[lr.flow] & 1)) continue;
    const double cap = rec_[lr.flow].cap;
    if (cap < level)
      refreeze(lr.flow, first_elem(lr.eidx), cap, kBottCap);
    else
      refreeze(lr.flow, first_elem(lr.eidx), level, l);
  }
  level_[l] = level;
}

void MaxMinSolver::refill() {
  ++stamp_;
  touched_.clear();
  events_.clear();
  group_cap_.clear();
  cur_ = 0;
  for (int f : added_ids_)
    if (rec_[f].alive && rec_[f].ecount > 0 && !touched(f)) touch(f), add_capped(f);
  added_ids_.clear();
  // Re-capped flows join the filling unfrozen, like adds; their links are seeded where the
  // filling starts to differ (set_rate_cap).
  for (int f : recapped_ids_)
    if (rec_[f].alive && rec_[f].ecount > 0 && !touched(f)) touch(f), add_capped(f);
  recapped_ids_.clear();
  // Seeds, known up front, in a sorted list merged with the event heap (hundreds per solve: sorting
  // them once costs less than pushing and popping each).
  // A link that lost flows but bounds none of the others (no flow froze at it: all are held below
  // its share elsewhere) keeps bounding none, so nothing changes through it: no seed. (Most of a
  // big iteration's: an all-to-all's flows leave two NIC links, one of which limits them.)
  seeds_.clear();
  for (int l : dirty_links_) {
    link_dirty_[l] = 0;
    if (seed_added_[l] || own_[l] > 0)
      seeds_.push_back({seed_[l], (static_cast<uint64_t>(kSeed) << 32) | static_cast<uint32_t>(l)});
    seed_[l] = kUnlimited;
    seed_added_[l] = 0;
  }
  std::sort(seeds_.begin(), seeds_.end(), [](const Event& a, const Event& b) { return b > a; });
  size_t next_seed = 0;
  dirty_links_.clear();
  added_ = false;
  min_removed_rate_ = kUnlimited;
  while (next_seed < seeds_.size() || !events_.empty()) {
    Event ev;
    if (next_seed < seeds_.size() && (events_.empty() || !(seeds_[next_seed] > events_.front()))) {
      ev = seeds_[next_seed++];
    } else {
      std::pop_heap(events_.begin(), events_.end(), std::greater<>());
      ev = events_.back();
      events_.pop_back();
    }
    cur_ = std::max(cur_, ev.level);
    const auto id = static_cast<uint32_t>(ev.key & 0xffffffffu);
    switch (static_cast<EventKind>(ev.key >> 32)) {
      case kSeed:
        if (!in_refill(static_cast<int>(id))) make_dirty(static_cast<int>(id), ev.level);
        break;
      case kLink:
        link_event(static_cast<int>(id), ev.level);
        break;
      case kCapGroup: {
        group_queued_[id] = 0;
        cap_scratch_.clear();
        cap_scratch_.swap(group_flows_[id]);
        for (int f : cap_scratch_)
          if (touched(f) && !(state_[f] & 1)) refreeze(f, rec_[f].ebegin, rec_[f].cap, kBottCap);
        break;
      }
      case kCapFlow: {
        const int f = static_cast<int>(id);
        if (touched(f) && !(state_[f] & 1)) refreeze(f, rec_[f].ebegin, rec_[f].cap, kBottCap);
        break;
      }
      case kDeadline: {
        // l's own flows still unfrozen at its old level get more: their links join the filling.
        const int l = static_cast<int>(id);
        if (unfrozen_[l] == 0) break;
        for (const LinkRef& lr : link_flows_[l]) {
          const int g = lr.flow;
          if (!touched(g) || (state_[g] & 1) || hot_[g].bott != l) continue;
          const Rec& r = rec_[g];
          for (uint32_t i = r.ebegin; i < r.ebegin + r.ecount; ++i) {
            const int m = link_of(elems_[i]);
            if (!in_refill(m)) make_dirty(m, cur_);
          }
        }
        break;
      }
    }
  }
  ++stats_.solves;
  ++stats_.refills;
  stats_.flows_recomputed += touched_.size();
  for (int f : touched_) {
    if (!(state_[f] & 1)) hot_[f].rate = 0, set_bott(f, kBottNone);  // no link froze it (none binds)
    if (hot_[f].rate != old_rate_[f]) changed_.push_back(f);
  }
  stats_.rates_changed += changed_.size();
}

}  // namespace hs::solver
