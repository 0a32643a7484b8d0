#include "network/coflow_drain.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace hs::network {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A list entry's other link, with its top bit set when the flow is bound at this entry's link and
// the next when this is the flow's second link.
constexpr uint32_t kBound = 1u << 31;
constexpr uint32_t kSideB = 1u << 30;
constexpr uint32_t kLinkMask = kSideB - 1;
constexpr double kSkip[2] = {0, kInf};  // added to a key: kept, or left out of a minimum

// Where a flow's rate comes from: nowhere yet, its first or second link, its cap; or finished.
enum : uint8_t { kUnbound, kAtA, kAtB, kAtCap, kDead };

// Each link's list of its live flows (their other link, and the flow's key where it is bound) and
// the flows' fixed figures; the flows' progress is kept implicitly (see the header).
class Drain {
 public:
  Drain(const topology::Topology& topo, double precision) : topo_(topo), precision_(precision) {
    const auto nl = static_cast<size_t>(topo.num_links());
    link_bytes_.assign(nl, 0.0);
  }

  // False when the transfer crosses more than two links that may bind.
  bool add(const collective::Transfer& tr) {
    if (tr.src == tr.dst || tr.bytes <= 0) return true;
    int32_t l[2] = {-1, -1};
    double c[2] = {0, 0};
    int k = 0;
    for (const auto& h : topo_.binding_hops(tr.src, tr.dst)) {
      if (k == 2) return false;
      l[k] = h.link, c[k] = h.fraction, ++k;
    }
    for (int i = 0; i < k; ++i) {
      link_bytes_[static_cast<size_t>(l[i])] += tr.bytes * c[i];
      unit_ = unit_ && c[i] == 1;
    }
    alpha_ = std::max(alpha_, topo_.route_latency(tr.src, tr.dst).value());
    la_.push_back(l[0]), lb_.push_back(l[1]);
    ca_.push_back(c[0]), cb_.push_back(c[1]);
    cap_.push_back(tr.rate_cap > 0 ? tr.rate_cap : kInf);
    size_.push_back(tr.bytes);
    return true;
  }

  // The end of the merge window of an event whose earliest completion is at t.
  double window_end(double t) const { return precision_ > 0 ? t + precision_ * std::max(t, scale_) : t; }

  DrainResult run(double extra) {
    DrainResult res;
    res.stats.flows = size_.size();
    if (size_.empty()) {  // FlowNetwork: a task without flows takes its extra latency
      res.seconds = extra;
      return res;
    }
    build();
    size_t live = size_.size() - done_at_start_;
    double now = 0, then = 0;
    while (live > 0) {
      // Virtual clocks to now, at the levels of the last solve (a link that did not saturate binds
      // no flow: its clock stands).
      for (int32_t l : used_) {
        const auto i = static_cast<size_t>(l);
        if (level_[i] < kInf) clock_[i] += level_[i] * (now - then);
      }
      then = now;
      solve(now);
      // The earliest completion: each link's lowest key, and the flows at their caps.
      double tmin = kInf;
      for (int32_t l : used_)
        if (minkey_[static_cast<size_t>(l)] < kInf) tmin = std::min(tmin, finish_time(l, minkey_[static_cast<size_t>(l)], now));
      for (int32_t f : at_cap_) tmin = std::min(tmin, capfin_[static_cast<size_t>(f)]);
      if (!(tmin < kInf)) throw std::logic_error("flow tier: live flows with no rate (a link without capacity?)");
      // Merged completions, as FlowNetwork merges them (the coflow started at 0): the flows due by
      // the window's end, found on the links whose lowest key is due.
      const double bound = window_end(tmin);
      due_.clear();
      for (int32_t l : used_) {
        const auto li = static_cast<size_t>(l);
        if (!(minkey_[li] < kInf) || finish_time(l, minkey_[li], now) > bound) continue;
        // Keys up to the link's clock at the window's end (a margin over its rounding) are looked at.
        const double reach = clock_[li] + (bound - now) * level_[li];
        const double sieve = reach + 1e-9 * std::abs(reach);
        // The lowest key of the flows that stay is found on the way.
        double rest = kInf;
        for (uint32_t i = begin_[li], e = end_[li]; i < e; ++i) {
          const double k = key_[i] + kSkip[(other_[i] >> 31) ^ 1];
          if (k > sieve) {
            rest = std::min(rest, k);
            continue;
          }
          const double t = finish_time(l, k, now);
          if (t <= bound) due_.push_back({t, eflow_[i]});
          else rest = std::min(rest, k);
        }
        minkey_[li] = rest;
      }
      for (int32_t f : at_cap_)
        if (capfin_[static_cast<size_t>(f)] <= bound) due_.push_back({capfin_[static_cast<size_t>(f)], f});
      double next = tmin;
      for (const auto& d : due_) next = std::max(next, d.first);
      if (due_.size() == live) {  // the last event: nothing to take out of the lists
        now = next;
        ++res.stats.events;
        break;
      }
      finish_due();
      live -= due_.size();
      now = next;
      ++res.stats.events;
      used_.erase(std::remove_if(used_.begin(), used_.end(), [&](int32_t l) { return end_[static_cast<size_t>(l)] == begin_[static_cast<size_t>(l)]; }),
                  used_.end());
    }
    res.seconds = now + (alpha_ + extra);  // as FlowNetwork's timer: drain + (latency + extra)
    return res;
  }

 private:
  void build() {
    const size_t nl = link_bytes_.size();
    for (size_t l = 0; l < nl; ++l)
      if (link_bytes_[l] > 0) scale_ = std::max(scale_, link_bytes_[l] / topo_.link(static_cast<int>(l)).bandwidth.value());
    const auto none = static_cast<uint32_t>(nl);
    begin_.assign(nl + 1, 0);
    for (size_t f = 0; f < size_.size(); ++f) {
      if (la_[f] >= 0) ++begin_[static_cast<size_t>(la_[f]) + 1];
      if (lb_[f] >= 0) ++begin_[static_cast<size_t>(lb_[f]) + 1];
    }
    for (size_t l = 0; l < nl; ++l) {
      if (begin_[l + 1] > 0) used_.push_back(static_cast<int32_t>(l));
      begin_[l + 1] += begin_[l];
    }
    end_.assign(begin_.begin(), begin_.end() - 1);
    other_.resize(begin_[nl]), eflow_.resize(begin_[nl]), key_.resize(begin_[nl]);
    pos_a_.assign(size_.size(), 0), pos_b_.assign(size_.size(), 0);
    for (size_t f = 0; f < size_.size(); ++f) {
      const auto id = static_cast<int32_t>(f);
      if (la_[f] >= 0) {
        const uint32_t i = end_[static_cast<size_t>(la_[f])]++;
        other_[i] = lb_[f] >= 0 ? static_cast<uint32_t>(lb_[f]) : none, eflow_[i] = id, pos_a_[f] = i;
        key_[i] = size_[f];
      }
      if (lb_[f] >= 0) {
        const uint32_t i = end_[static_cast<size_t>(lb_[f])]++;
        other_[i] = (la_[f] >= 0 ? static_cast<uint32_t>(la_[f]) : none) | kSideB, eflow_[i] = id, pos_b_[f] = i;
        // A key is the clock reading at which the flow is done: at the start, its size.
        key_[i] = size_[f];
      }
    }
    // Link-indexed arrays have one slot more, `none`: a flow's missing second link (never saturates).
    capl_.assign(nl + 1, 0.0);
    for (int32_t l : used_) capl_[static_cast<size_t>(l)] = topo_.link(l).bandwidth.value();
    fill_.assign(nl + 1, {}), level_.assign(nl + 1, kInf), minkey_.assign(nl + 1, kInf), clock_.assign(nl + 1, 0.0);
    stale_.assign(nl + 1, 0);
    cnt0_.assign(nl + 1, 0), sumw0_.assign(nl + 1, 0.0);
    for (size_t f = 0; f < size_.size(); ++f) {
      if (la_[f] >= 0) sumw0_[static_cast<size_t>(la_[f])] += ca_[f], ++cnt0_[static_cast<size_t>(la_[f])];
      if (lb_[f] >= 0) sumw0_[static_cast<size_t>(lb_[f])] += cb_[f], ++cnt0_[static_cast<size_t>(lb_[f])];
    }
    frozen_.assign(nl + 1, 0);
    // From here on a flow's missing link is `none`: the passes read and write its slot instead of
    // testing (its level stays infinite, it is never frozen, never queued).
    for (size_t f = 0; f < size_.size(); ++f) {
      if (la_[f] < 0) la_[f] = static_cast<int32_t>(none);
      if (lb_[f] < 0) lb_[f] = static_cast<int32_t>(none);
    }
    for (size_t f = 0; f < size_.size(); ++f)
      if (cap_[f] < kInf) capped_.push_back({cap_[f], static_cast<int32_t>(f)});
    std::sort(capped_.begin(), capped_.end());
    where_.assign(size_.size(), kUnbound);
    capfin_.assign(size_.size(), kInf), capidx_.assign(size_.size(), 0);
    // A transfer none of whose links may bind runs at its cap from the start, or is done at once
    // (FlowNetwork: no solve involves it, its rate is its cap).
    for (size_t f = 0; f < size_.size(); ++f) {
      if (la_[f] != static_cast<int32_t>(none) || lb_[f] != static_cast<int32_t>(none)) continue;
      if (cap_[f] < kInf) {
        capfin_[f] = size_[f] / cap_[f], capidx_[f] = static_cast<uint32_t>(at_cap_.size());
        at_cap_.push_back(static_cast<int32_t>(f));
        where_[f] = kAtCap;
      } else {
        where_[f] = kDead, ++done_at_start_;
      }
    }
    moves_.resize(size_.size());
    capfrozen_.assign(size_.size(), 0);
  }

  // When a flow bound at link l with key k finishes, the link's level holding (k - clock: its bytes left).
  double finish_time(int32_t l, double k, double now) const {
    const auto i = static_cast<size_t>(l);
    return now + std::max(0.0, k - clock_[i]) / level_[i];
  }

  // Flow f's bytes left at `now`, from where it is bound; it leaves that place (its entry's mark
  // cleared, or the list of flows at their caps).
  double unbind(size_t f, double now) {
    switch (where_[f]) {
      case kUnbound:
        return size_[f];
      case kAtCap: {
        const uint32_t at = capidx_[f];
        const int32_t last = at_cap_.back();
        at_cap_[at] = last, capidx_[static_cast<size_t>(last)] = at;
        at_cap_.pop_back();
        return std::max(0.0, (capfin_[f] - now) * cap_[f]);
      }
      default: {
        const bool a = where_[f] == kAtA;
        const uint32_t j = a ? pos_a_[f] : pos_b_[f];
        const auto l = static_cast<size_t>(a ? la_[f] : lb_[f]);
        other_[j] &= ~kBound;
        if (key_[j] <= minkey_[l] && !stale_[l]) stale_[l] = 1, restale_.push_back(static_cast<int32_t>(l));
        return std::max(0.0, key_[j] - clock_[l]);
      }
    }
  }

  // The flows the solve found bound at another place than before move there: (entry, link) pairs,
  // a few percent of the flows an event, in random places: taken in a pipeline that fetches each
  // one's figures ahead (flow, then its old entry), so that the cache misses overlap.
  void move_bound(double now) {
    const size_t n = nmoves_;
    nmoves_ = 0;
    if (first_) {
      // Every flow is bound for the first time, its key its size already (clocks at 0): only marked.
      first_ = false;
      for (size_t k = 0; k < n; ++k) {
        const auto [i, l] = moves_[k];
        other_[i] |= kBound;
        where_[static_cast<size_t>(eflow_[i])] = (other_[i] & kSideB) ? kAtB : kAtA;
        minkey_[static_cast<size_t>(l)] = std::min(minkey_[static_cast<size_t>(l)], key_[i]);
      }
      return;
    }
    constexpr size_t kAhead = 8;
    const auto old_entry = [&](size_t f) { return where_[f] == kAtA ? pos_a_[f] : pos_b_[f]; };
    for (size_t k = 0; k < n; ++k) {
      if (k + 3 * kAhead < n) __builtin_prefetch(&eflow_[moves_[k + 3 * kAhead].first]);
      if (k + 2 * kAhead < n) {
        const auto f = static_cast<size_t>(eflow_[moves_[k + 2 * kAhead].first]);
        __builtin_prefetch(&where_[f]), __builtin_prefetch(&pos_a_[f]), __builtin_prefetch(&pos_b_[f]);
        __builtin_prefetch(&la_[f]), __builtin_prefetch(&lb_[f]);
      }
      if (k + kAhead < n) {
        const auto f = static_cast<size_t>(eflow_[moves_[k + kAhead].first]);
        if (where_[f] == kAtA || where_[f] == kAtB) {
          const uint32_t j = old_entry(f);
          __builtin_prefetch(&other_[j], 1), __builtin_prefetch(&key_[j]);
        }
      }
      const auto [i, l] = moves_[k];
      const auto f = static_cast<size_t>(eflow_[i]);
      const double left = unbind(f, now);
      key_[i] = clock_[static_cast<size_t>(l)] + left;
      other_[i] |= kBound;
      where_[f] = (other_[i] & kSideB) ? kAtB : kAtA;
      minkey_[static_cast<size_t>(l)] = std::min(minkey_[static_cast<size_t>(l)], key_[i]);
    }
  }

  // Flow f runs at its cap from now on.
  void bind_cap(size_t f, double now) {
    if (where_[f] == kAtCap) return;
    const double left = unbind(f, now);
    capfin_[f] = now + left / cap_[f];
    capidx_[f] = static_cast<uint32_t>(at_cap_.size());
    at_cap_.push_back(static_cast<int32_t>(f));
    where_[f] = kAtCap;
  }

  bool flow_frozen(int32_t f) const {  // (a finished flow counts as frozen)
    const auto i = static_cast<size_t>(f);
    return capfrozen_[i] || where_[i] == kDead || frozen_[static_cast<size_t>(la_[i])] || frozen_[static_cast<size_t>(lb_[i])];
  }

  // Unfrozen weight on link l summed again from its entries (after cancellation left sumw <= 0).
  double unfrozen_weight(int32_t l) const {
    double s = 0;
    for (uint32_t i = begin_[static_cast<size_t>(l)]; i < end_[static_cast<size_t>(l)]; ++i) {
      const int32_t f = eflow_[i];
      if (flow_frozen(f)) continue;
      s += la_[static_cast<size_t>(f)] == l ? ca_[static_cast<size_t>(f)] : cb_[static_cast<size_t>(f)];
    }
    return s;
  }

  // Progressive filling over links: each link's level (kInf if it never saturates). A flow is bound
  // where it froze: the link that saturated first among its two, or its cap; a flow bound elsewhere
  // than in the last solve moves there (its bytes left carried over), and each link's lowest key is
  // noted on the way.
  void solve(double now) {
    for (int32_t l : used_) {
      const auto i = static_cast<size_t>(l);
      fill_[i] = {capl_[i], 0, 0}, frozen_[i] = 0, level_[i] = kInf;
    }
    // A link's unfrozen weight and count start as its live flows', kept as flows finish (with unit
    // coefficients the weight is the count: exact; else a weight cancelled to nothing is summed again).
    for (int32_t l : used_) fill_[static_cast<size_t>(l)].sumw = sumw0_[static_cast<size_t>(l)], fill_[static_cast<size_t>(l)].cnt = cnt0_[static_cast<size_t>(l)];
    heap_.clear();
    for (int32_t l : used_)
      if (fill_[static_cast<size_t>(l)].cnt > 0) heap_.push_back({fill_[static_cast<size_t>(l)].rem / fill_[static_cast<size_t>(l)].sumw, l});
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
    size_t next_cap = 0;
    const auto take = [&](int32_t l, double coef, double rate) {
      const auto i = static_cast<size_t>(l);
      fill_[i].rem = std::max(0.0, fill_[i].rem - coef * rate);
      fill_[i].sumw -= coef;
      --fill_[i].cnt;
    };
    // The top is looked at in place: a stale key is replaced there (one sift down, not a pop and a
    // push), a cap taken first leaves it there.
    while (!heap_.empty()) {
      const auto top = heap_.front();
      const int32_t l = top.second;
      const auto li = static_cast<size_t>(l);
      if (frozen_[li] || fill_[li].cnt == 0) {
        pop_top();
        continue;
      }
      if (unit_) fill_[li].sumw = fill_[li].cnt;  // the walk below keeps the count alone (exact)
      else if (!(fill_[li].sumw > 0)) fill_[li].sumw = unfrozen_weight(l);
      const double current = std::max(0.0, fill_[li].rem) / fill_[li].sumw;  // (rem may fall below 0: rounding)
      if (current > top.first * (1 + 1e-12)) {  // a stale key: re-queued at its current share
        heap_.front().first = current;
        sift_down();
        continue;
      }
      // A cap below this level comes first: the lowest-capped unfrozen flow runs at its cap. Only the
      // caps below the level are looked at (in a collective every flow has one, mostly far above the
      // links' levels: they are not visited at all then).
      while (next_cap < capped_.size() && capped_[next_cap].first < current && flow_frozen(capped_[next_cap].second)) ++next_cap;
      if (next_cap < capped_.size() && capped_[next_cap].first < current) {
        const double cap_level = capped_[next_cap].first;
        const auto f = static_cast<size_t>(capped_[next_cap].second);
        capfrozen_[f] = 1;
        cap_marked_.push_back(static_cast<int32_t>(f));
        take(la_[f], ca_[f], cap_level);
        take(lb_[f], cb_[f], cap_level);
        bind_cap(f, now);
        continue;
      }
      pop_top();
      // The link saturates at `current`: its unfrozen flows (other link not saturated yet) freeze
      // there, bound at it, and give their consumption back to their other link.
      frozen_[li] = 1;
      level_[li] = current;
      if (unit_ && cap_marked_.empty()) {
        // Without a branch on the other link's state (about half are frozen already, at random): a
        // flow whose other link is frozen gives back to that link, whose figures are not read again
        // in this solve, and its key (not its flow's: it is bound there) is left out of the minimum.
        // Every subtraction here is of the same `current`, so the lists' order (changed by removals)
        // does not change a result. No flow runs at its cap yet in this solve, and every unfrozen
        // flow's cap is at least `current` (lower caps were taken first). A flow bound here that was
        // not (a few percent an event) moves here.
        const uint32_t* const other = other_.data();
        const char* const frozen = frozen_.data();
        Fill* const fill = fill_.data();
        auto* const moves = moves_.data();
        size_t nmoves = nmoves_;
        for (uint32_t i = begin_[li], e = end_[li]; i < e; ++i) {
          const uint32_t raw = other[i];
          const auto o = static_cast<size_t>(raw & kLinkMask);
          // (Not clamped at 0 here but where read: every subtraction is >= 0, so once below 0 it stays
          // there, and clamping each time or at the end gives the same.)
          fill[o].rem -= current;
          --fill[o].cnt;
          if ((frozen[o] | (raw >> 31)) == 0) moves[nmoves++] = {i, l};
        }
        nmoves_ = nmoves;
        continue;
      }
      for (uint32_t i = begin_[li], e = end_[li]; i < e; ++i) {
        const uint32_t raw = other_[i];
        const auto o = static_cast<int32_t>(raw & kLinkMask);
        if (frozen_[static_cast<size_t>(o)]) continue;
        const auto f = static_cast<size_t>(eflow_[i]);
        if (capfrozen_[f]) continue;
        // The flow's coefficient on its other link: 1 unless a route splits (ECMP fractions).
        const double coef = unit_ ? 1.0 : (la_[f] == o ? ca_[f] : cb_[f]);
        take(o, coef, current);
        if (!(raw & kBound)) moves_[nmoves_++] = {i, l};
      }
    }
    move_bound(now);
    // Links whose lowest key left (moved away): their lowest key found again.
    for (int32_t l : restale_) {
      const auto li = static_cast<size_t>(l);
      double m = kInf;
      for (uint32_t i = begin_[li], e = end_[li]; i < e; ++i) m = std::min(m, key_[i] + kSkip[(other_[i] >> 31) ^ 1]);
      minkey_[li] = m, stale_[li] = 0;
    }
    restale_.clear();
    // Cap marks cleared for the next solve.
    for (int32_t f : cap_marked_) capfrozen_[static_cast<size_t>(f)] = 0;
    cap_marked_.clear();
  }

  // The links' min-heap on (share, link) (as std::make_heap with std::greater builds it): the top
  // moved down to its place, or removed.
  void sift_down() {
    const size_t n = heap_.size();
    const auto x = heap_.front();
    size_t i = 0;
    for (size_t c = 1; c < n; c = 2 * i + 1) {
      if (c + 1 < n && heap_[c + 1] < heap_[c]) ++c;
      if (!(heap_[c] < x)) break;
      heap_[i] = heap_[c], i = c;
    }
    heap_[i] = x;
  }
  void pop_top() {
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down();
  }

  // The flows of due_ finished, in a pipeline that fetches each one's figures ahead (its links and
  // entries, then the entries that will fill the holes): finishing flows sit in random places.
  void finish_due() {
    const size_t n = due_.size();
    constexpr size_t kAhead = 8;
    for (size_t k = 0; k < n; ++k) {
      if (k + 2 * kAhead < n) {
        const auto f = static_cast<size_t>(due_[k + 2 * kAhead].second);
        __builtin_prefetch(&la_[f]), __builtin_prefetch(&lb_[f]), __builtin_prefetch(&pos_a_[f]), __builtin_prefetch(&pos_b_[f]);
        __builtin_prefetch(&where_[f], 1);
      }
      if (k + kAhead < n) {
        const auto f = static_cast<size_t>(due_[k + kAhead].second);
        for (const auto& [l, at] : {std::pair{la_[f], pos_a_[f]}, std::pair{lb_[f], pos_b_[f]}}) {
          if (l == static_cast<int32_t>(link_bytes_.size())) continue;
          const uint32_t last = end_[static_cast<size_t>(l)] - 1;
          __builtin_prefetch(&other_[at], 1), __builtin_prefetch(&eflow_[at], 1), __builtin_prefetch(&key_[at], 1);
          __builtin_prefetch(&other_[last]), __builtin_prefetch(&eflow_[last]), __builtin_prefetch(&key_[last]);
        }
      }
      finish(due_[k].second);
    }
  }

  // Flow f finished: its weight off its links' live sums, its entries out of their lists (the last
  // entry of a list moves into the hole), out of the flows at their caps.
  void finish(int32_t f) {
    const auto fi = static_cast<size_t>(f);
    const auto nl = static_cast<int32_t>(link_bytes_.size());
    if (where_[fi] == kAtCap) unbind(fi, 0);
    where_[fi] = kDead;
    for (int side = 0; side < 2; ++side) {
      const int32_t l = side == 0 ? la_[fi] : lb_[fi];
      const auto li = static_cast<size_t>(l);
      --cnt0_[li], sumw0_[li] -= side == 0 ? ca_[fi] : cb_[fi];
      if (l == nl) continue;
      const uint32_t at = side == 0 ? pos_a_[fi] : pos_b_[fi], last = --end_[li];
      if (at == last) continue;
      other_[at] = other_[last], eflow_[at] = eflow_[last], key_[at] = key_[last];
      const auto g = static_cast<size_t>(eflow_[at]);
      (la_[g] == l ? pos_a_[g] : pos_b_[g]) = at;
    }
  }

  const topology::Topology& topo_;
  double precision_;
  double alpha_ = 0, scale_ = 0;
  bool unit_ = true;   // every route fraction is 1
  bool first_ = true;
  size_t done_at_start_ = 0;  // transfers with no link that may bind and no cap  // before the first solve's moves: every flow unbound
  std::vector<double> link_bytes_;
  // Flows: links (`none` for a missing second one), route fractions, caps, sizes; where each is
  // bound, its finish while at its cap, its place in at_cap_; where its entries are in the lists.
  std::vector<int32_t> la_, lb_;
  std::vector<double> ca_, cb_, cap_, size_;
  std::vector<uint8_t> where_;
  std::vector<double> capfin_;
  std::vector<uint32_t> capidx_;
  std::vector<int32_t> at_cap_;
  std::vector<uint32_t> pos_a_, pos_b_;
  std::vector<char> capfrozen_;
  std::vector<int32_t> cap_marked_;  // the flows running at their cap in this solve
  std::vector<std::pair<uint32_t, int32_t>> moves_;  // (entry, link): flows bound at a new place
  size_t nmoves_ = 0;                                // (moves_ has room for every flow)
  std::vector<std::pair<double, int32_t>> capped_;  // (cap, flow), ascending
  std::vector<std::pair<double, int32_t>> due_;     // (finish, flow) of this event's completions
  // Links: [begin_[l], end_[l]) are link l's live flows: other_ their other link that may bind
  // (`none`: none; top bit: the flow is bound at l), eflow_ the flow, key_ its key where bound
  // (apart: the solve streams other_ and key_); used_ the links with any.
  std::vector<uint32_t> begin_, end_;
  std::vector<uint32_t> other_;
  std::vector<int32_t> eflow_;
  std::vector<double> key_;
  std::vector<int32_t> used_;
  // A link's state in a solve: capacity left, unfrozen weight and count (one record: the freeze
  // walk updates them together for each entry; with unit coefficients the weight is the count).
  struct Fill {
    double rem = 0, sumw = 0;
    int32_t cnt = 0;
  };
  std::vector<Fill> fill_;
  // minkey_: the lowest key of the flows bound at a link (kept as they come, found again when the
  // lowest leaves: stale_, restale_).
  std::vector<double> capl_, level_, minkey_;
  std::vector<char> stale_;
  std::vector<int32_t> restale_;
  std::vector<double> clock_;  // a link's virtual clock: bytes a flow bound at it has received since 0
  std::vector<int32_t> cnt0_;  // cnt0_, sumw0_: per link, its live flows and their weight
  std::vector<double> sumw0_;
  std::vector<char> frozen_;
  std::vector<std::pair<double, int32_t>> heap_;
};

}  // namespace

std::optional<DrainResult> drain_coflow(const topology::Topology& topo, const collective::Coflow& coflow, double extra_latency,
                                        double precision) {
  Drain d(topo, precision);
  for (const auto& tr : coflow)
    if (!d.add(tr)) return std::nullopt;
  return d.run(extra_latency);
}

}  // namespace hs::network
