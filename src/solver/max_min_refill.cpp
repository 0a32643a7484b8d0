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
  if (ln_[l].unfrozen > 0) return ln_[l].rem / ln_[l].sumw;
  // No unfrozen flow: nothing to freeze, unless pending flows overload the link.
  return ln_[l].rem < -kTol * ln_[l].cap && !pend_[l].empty() ? -kUnlimited : kUnlimited;
}

void MaxMinSolver::queue_link(int l) {
  if (ln_[l].unfrozen == 0 && !(ln_[l].rem < -kTol * ln_[l].cap && !pend_[l].empty())) return;
  if (ln_[l].unfrozen > 0 && !(ln_[l].sumw > 0)) {  // cancellation left nothing: sum it again
    double s = 0;
    for (const LinkRef& lr : link_flows_[l])
      if (touched(lr.flow) && !(state_[lr.flow] & 1)) s += lr.wc;
    ln_[l].sumw = s;
  }
  const double key = std::max(share(l), cur_);
  if (key < ln_[l].key) {
    ln_[l].key = key;
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

void MaxMinSolver::unfreeze(int f, int skip, uint32_t ebegin) {
  // f leaves its old rate r: on the dirty links (other than `skip`) it was pending, counted as r.
  touch(f);
  const double r = hot_[f].rate;
  for (uint32_t i = ebegin;; ++i) {
    const Elem& e = elems_[i];
    const int m = link_of(e);
    if (m != skip && in_refill(m)) {
      ln_[m].rem += e.wc * r;
      ln_[m].sumw += e.wc;
      ++ln_[m].unfrozen;
      queue_link(m);
    }
    if (e.link & kLast) break;
  }
  add_capped(f);
}

void MaxMinSolver::make_dirty(int l, double x) {
  ln_[l].stamp = stamp_;
  ln_[l].rem = ln_[l].cap;
  ln_[l].sumw = 0;
  ln_[l].unfrozen = 0;
  ln_[l].key = kUnlimited;
  if (ln_[l].pend_used) pend_[l].clear(), ln_[l].pend_used = 0;  // (its header is a cache line)
  ln_[l].pend_max = -kUnlimited;
  ln_[l].pend_heap = 0;
  // The level stays until the link freezes again: flows frozen at it below x keep that rate.
  const double old_level = ln_[l].level;
  bool own = false;
  const auto& v = link_flows_[l];
  // The flows' states first, all at once (a few per link, anywhere in hot_): their misses overlap
  // instead of waiting one by one behind the branches below (no effect on results).
  for (const LinkRef& lr : v) __builtin_prefetch(&hot_[lr.flow]), __builtin_prefetch(&elems_[lr.eidx]);
  for (size_t i = 0; i < v.size(); ++i) {
    const LinkRef lr = v[i];
    const int g = lr.flow;
    const double wc = lr.wc;
    if (touched(g)) {
      if (state_[g] & 1) {
        ln_[l].rem -= wc * hot_[g].rate;  // its new rate
      } else {
        ln_[l].sumw += wc;
        ++ln_[l].unfrozen;
        own |= hot_[g].bott == l;
      }
      continue;
    }
    const double r = hot_[g].rate;
    if (hot_[g].bott == l) {
      // Its rate is this link's level, and x never exceeds that level (flows crossing a link
      // run at most at its level, and every cause of joining is a rate of one of them).
      unfreeze(g, l, first_elem(lr.eidx));  // (its elements reached from this one: no record read)
      ln_[l].sumw += wc;
      ++ln_[l].unfrozen;
      own = true;
    } else if (r < x * (1 - kFinal)) {
      ln_[l].rem -= wc * r;  // final: frozen below x at its old rate
    } else {
      ln_[l].rem -= wc * r;
      pend_[l].push_back({r, g});
      ln_[l].pend_used = 1;
      ln_[l].pend_max = std::max(ln_[l].pend_max, r);
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
      ln_[m].rem -= e.wc * rate;
      ln_[m].sumw -= e.wc;
      --ln_[m].unfrozen;
      if (ln_[m].unfrozen == 0 && ln_[m].rem < -kTol * ln_[m].cap) queue_link(m);
    } else if (rate != old) {
      make_dirty(m, rate);
    }
    if (e.link & kLast) break;
  }
}

void MaxMinSolver::link_event(int l, double key) {
  if (key <= ln_[l].key) ln_[l].key = kUnlimited;  // the link's smallest queued key is gone
  double s = share(l);
  // Pending flows above the share are released, highest first (each raises the share).
  auto& p = pend_[l];
  while (ln_[l].pend_max > s * (1 + kSame) || (s == -kUnlimited && !p.empty())) {
    if (!ln_[l].pend_heap) std::make_heap(p.begin(), p.end()), ln_[l].pend_heap = 1;
    while (!p.empty() && touched(p.front().second)) std::pop_heap(p.begin(), p.end()), p.pop_back();
    if (p.empty()) {
      ln_[l].pend_max = -kUnlimited;
      break;
    }
    const auto [r, g] = p.front();
    if (!(r > s * (1 + kSame)) && s != -kUnlimited) {
      ln_[l].pend_max = r;
      break;
    }
    std::pop_heap(p.begin(), p.end());
    p.pop_back();
    unfreeze(g, -1, rec_[g].ebegin);  // converted on every dirty link, this one included
    if (hot_[g].bott >= 0 && !in_refill(hot_[g].bott)) make_dirty(hot_[g].bott, cur_);
    s = share(l);
  }
  if (ln_[l].unfrozen == 0) return;
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
  ln_[l].level = level;
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
    if (seed_added_[l] || ln_[l].own > 0)
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
        if (ln_[l].unfrozen == 0) break;
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
