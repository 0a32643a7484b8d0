#include "network/coflow_drain.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "network/drain_scan.hpp"
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include "util/sort_by_cap.hpp"

namespace hs::network {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

// The live flows as arrays (finished ones compacted away in batches, order kept) and each link's
// list of its live flows' other links (a finished flow's entries leave at once).
class CoflowDrain::Impl {
 public:
  Impl(const topology::Topology& topo, double precision) : topo_(topo), precision_(precision) {}

  // Forgets the last coflow's transfers (its buffers stay allocated for the next one).
  void reset() {
    alpha_ = 0, scale_ = 0, unit_ = true, wide_ = false;
    link_bytes_.assign(static_cast<size_t>(topo_.num_links()), 0.0);
    for (auto* v : {&ca_, &cb_, &cc_, &cd_, &cap_, &left_}) v->clear();
    la_.clear(), lb_.clear(), lc_.clear(), ld_.clear(), capped_.clear(), used_.clear();
  }

  // False when the transfer crosses more than four links that may bind.
  bool add(const Transfer& tr) {
    if (tr.src == tr.dst || tr.bytes <= 0) return true;
    int32_t l[4] = {-1, -1, -1, -1};
    double c[4] = {0, 0, 0, 0};
    int k = 0;
    for (const auto& h : topo_.binding_hops(tr.src, tr.dst)) {
      if (k == 4) return false;
      l[k] = h.link, c[k] = h.fraction, ++k;
    }
    for (int i = 0; i < k; ++i) {
      link_bytes_[static_cast<size_t>(l[i])] += tr.bytes * c[i];
      unit_ = unit_ && c[i] == 1;
    }
    alpha_ = std::max(alpha_, topo_.route_latency(tr.src, tr.dst).value());
    if (k > 2 && !wide_) {  // the first flow over more than two links: the others get none there
      wide_ = true;
      lc_.assign(la_.size(), -1), ld_.assign(la_.size(), -1);
      cc_.assign(la_.size(), 0.0), cd_.assign(la_.size(), 0.0);
    }
    // Over two links they are the first and the last (a route's own way out and in, as a rule).
    const int b = k > 2 ? k - 1 : 1;
    la_.push_back(l[0]), lb_.push_back(l[b]);
    ca_.push_back(c[0]), cb_.push_back(c[b]);
    if (wide_) {
      lc_.push_back(k > 2 ? l[1] : -1), ld_.push_back(k > 3 ? l[2] : -1);
      cc_.push_back(k > 2 ? c[1] : 0.0), cd_.push_back(k > 3 ? c[2] : 0.0);
    }
    cap_.push_back(tr.rate_cap > 0 ? tr.rate_cap : kInf);
    left_.push_back(tr.bytes);
    return true;
  }

  // The end of the merge window of an event whose earliest completion is at t.
  double window_end(double t) const { return precision_ > 0 ? t + precision_ * std::max(t, scale_) : t; }

  DrainResult run(double extra) {
    DrainResult res;
    res.stats.flows = left_.size();
    if (left_.empty()) {  // FlowNetwork: a task without flows takes its extra latency
      res.seconds = extra;
      return res;
    }
    build();
    const size_t n0 = left_.size();
    newid_.resize(n0);
    capfrozen_.assign(n0, 0);
    dead_.assign(n0, 0);
    size_t live = n0;
    double now = 0, then = 0;
    while (live > 0) {
      solve();
      // Progress to now at the rates since the last event (the last solve's levels, prev_), and the
      // earliest projected finish at the new rates, in one pass (in an all-to-all-v every live rate
      // changes at every event: integrating all is no more work than finding the changed ones). A
      // finished flow stays in the arrays until compacted, its projection never (finish()). The
      // flows that may finish in this event's merge window are noted on the way (a projection within
      // the window of the minimum so far: a superset, as the minimum only falls).
      const size_t n = left_.size();
      double tmin = kInf, reach = std::numeric_limits<double>::max();  // (never an infinite projection)
      due_.clear();
      const double dt = now - then;
      then = now;
      // A projection is computed (a division) only for a flow that may fall within reach: bytes left
      // at most rate x (reach - now), with margins over the roundings of both sides; the others
      // (nearly all, once the minimum is low) cost a multiplication.
      double horizon = std::numeric_limits<double>::max();  // (x 0 = 0: a flow at rate 0 with nothing left is still looked at)
      const auto consider = [&](size_t f, double r) {  // (flow f integrated, r its rate now)
        if (!(left_[f] <= horizon * r)) return;
        const double p = proj(f, r, now);
        if (p <= reach) {
          if (p < tmin) {
            tmin = p, reach = window_end(tmin);
            horizon = (reach - now) * (1 + 1e-9) + 1e-15 * std::abs(reach);
          }
          if (p <= reach) due_.push_back(static_cast<uint32_t>(f));
        }
      };
      const auto scan = [&](auto with_caps, auto integrate, auto wide) {
        size_t f = 0;
        if constexpr (!decltype(wide)::value) {
          // Eight flows at a time where the processor can (network/drain_scan.hpp: the same
          // operations, so the same bytes); the candidates it stops at are considered here in order.
          if (simd_) {
            const DrainScanArgs args{la_.data(), lb_.data(), with_caps ? cap_.data() : nullptr, left_.data(),
                                     prev_.data(), level_.data(), dt, integrate};
            for (;;) {
              unsigned m = 0;
              const size_t b = drain_scan_avx512(args, f, n, horizon, &m);
              if (m == 0) {
                f = b;
                break;
              }
              for (; m != 0; m &= m - 1) {
                const size_t g = b + static_cast<size_t>(__builtin_ctz(m));
                consider(g, rate(g, level_, with_caps, wide));
              }
              f = b + 8;
            }
          }
        }
        for (; f < n; ++f) {
          if (integrate) left_[f] -= rate(f, prev_, with_caps, wide) * dt;
          consider(f, rate(f, level_, with_caps, wide));
        }
      };
      const auto scan_wide = [&](auto with_caps, auto integrate) {
        if (wide_) scan(with_caps, integrate, std::true_type{});
        else scan(with_caps, integrate, std::false_type{});
      };
      if (!caps_bind()) {
        if (dt > 0) scan_wide(std::false_type{}, std::true_type{});
        else scan_wide(std::false_type{}, std::false_type{});
      } else {
        if (dt > 0) scan_wide(std::true_type{}, std::true_type{});
        else scan_wide(std::true_type{}, std::false_type{});
      }
      if (!(tmin < kInf)) throw std::logic_error("flow tier: live flows with no rate (a link without capacity?)");
      // Merged completions, as FlowNetwork merges them (the coflow started at 0).
      const double bound = window_end(tmin);
      double next = tmin;
      size_t ndue = 0;
      for (uint32_t f : due_) {
        const double p = proj(f, rate(f, level_, !capped_.empty(), wide_), now);
        if (p > bound) continue;
        next = std::max(next, p);
        due_[ndue++] = f;
      }
      now = next;
      ++res.stats.events;
      if (ndue == live) break;  // the last event: nothing to take out of the lists
      for (size_t k = 0; k < ndue; ++k) finish(due_[k]);
      live -= ndue;
      // Finished flows leave the arrays once they are a quarter of them: the pass above reads them
      // as unchanged until then, instead of moving every array every event.
      if (4 * (n - live) >= n) compact();
    }
    res.seconds = now + (alpha_ + extra);  // as FlowNetwork's timer: drain + (latency + extra)
    return res;
  }

 private:
  void build() {
    for (size_t l = 0; l < link_bytes_.size(); ++l)
      if (link_bytes_[l] > 0) scale_ = std::max(scale_, link_bytes_[l] / topo_.link(static_cast<int>(l)).bandwidth.value());
    // The links some flow crosses, numbered densely (link_id_: the topology's number of each): the
    // link-indexed arrays the passes read at random shrink to them (a 1,024-GPU node fabric: 4,096
    // of 6,272 links). First links (a route's way out, as a rule) come first, then the others, each
    // in the topology's order: a freeze walk's other links (the peers' ways in) then lie together,
    // met in ascending order. The heap orders links by their topology number, as before.
    dense_.assign(link_bytes_.size(), 0);
    for (const int32_t l : la_)
      if (l >= 0) dense_[static_cast<size_t>(l)] = 1;
    for (const auto* v : {&lb_, &lc_, &ld_})
      for (const int32_t l : *v)
        if (l >= 0 && dense_[static_cast<size_t>(l)] == 0) dense_[static_cast<size_t>(l)] = 2;
    link_id_.clear();
    for (const int32_t group : {1, 2})
      for (size_t l = 0; l < dense_.size(); ++l)
        if (dense_[l] == group) dense_[l] = -1 - static_cast<int32_t>(link_id_.size()), link_id_.push_back(static_cast<int32_t>(l));
    for (int32_t& d : dense_) d = -1 - d;  // (numbered as -1 - id above, apart from the groups' marks)
    for (auto* v : {&la_, &lb_, &lc_, &ld_})
      for (int32_t& l : *v)
        if (l >= 0) l = dense_[static_cast<size_t>(l)];
    nl_ = static_cast<int32_t>(link_id_.size());
    const auto nl = static_cast<size_t>(nl_);
    const auto none = nl_;
    begin_.assign(nl + 1, 0);
    for (size_t f = 0; f < left_.size(); ++f) {
      if (la_[f] >= 0) ++begin_[static_cast<size_t>(la_[f]) + 1];
      if (lb_[f] >= 0) ++begin_[static_cast<size_t>(lb_[f]) + 1];
      if (wide_ && lc_[f] >= 0) ++begin_[static_cast<size_t>(lc_[f]) + 1];
      if (wide_ && ld_[f] >= 0) ++begin_[static_cast<size_t>(ld_[f]) + 1];
    }
    for (size_t l = 0; l < nl; ++l) {
      if (begin_[l + 1] > 0) used_.push_back(static_cast<int32_t>(l));
      begin_[l + 1] += begin_[l];
    }
    end_.assign(begin_.begin(), begin_.end() - 1);
    other_.resize(begin_[nl]), eflow_.resize(begin_[nl]);
    pos_a_.assign(left_.size(), 0), pos_b_.assign(left_.size(), 0);
    if (wide_) pos_c_.assign(left_.size(), 0), pos_d_.assign(left_.size(), 0);
    for (size_t f = 0; f < left_.size(); ++f) {
      const auto id = static_cast<int32_t>(f);
      // (A flow over more than two links: its entries' other link is not read, the walk reads its
      // links; `none` there.)
      const bool many = wide_ && lc_[f] >= 0;
      if (many) {
        const uint32_t i = end_[static_cast<size_t>(lc_[f])]++;
        other_[i] = none, eflow_[i] = id, pos_c_[f] = i;
        if (ld_[f] >= 0) {
          const uint32_t j = end_[static_cast<size_t>(ld_[f])]++;
          other_[j] = none, eflow_[j] = id, pos_d_[f] = j;
        }
      }
      if (la_[f] >= 0) {
        const uint32_t i = end_[static_cast<size_t>(la_[f])]++;
        other_[i] = lb_[f] >= 0 && !many ? lb_[f] : none, eflow_[i] = id, pos_a_[f] = i;
      }
      if (lb_[f] >= 0) {
        const uint32_t i = end_[static_cast<size_t>(lb_[f])]++;
        other_[i] = la_[f] >= 0 && !many ? la_[f] : none, eflow_[i] = id, pos_b_[f] = i;
      }
    }
    narrow_ = !wide_ && nl_ < 0xffff;
    if (narrow_) other16_.assign(other_.begin(), other_.end());
    // Link-indexed arrays have one slot more, `none`: a flow's missing second link (never saturates).
    capl_.assign(nl + 1, 0.0);
    for (int32_t l : used_) capl_[static_cast<size_t>(l)] = topo_.link(link_id_[static_cast<size_t>(l)]).bandwidth.value();
    fill_.assign(nl + 1, {}), sumw_.assign(nl + 1, 0.0), level_.assign(nl + 1, kInf), prev_.assign(nl + 1, kInf);
    cnt0_.assign(nl + 1, 0), sumw0_.assign(nl + 1, 0.0);
    for (size_t f = 0; f < left_.size(); ++f) {
      if (la_[f] >= 0) sumw0_[static_cast<size_t>(la_[f])] += ca_[f], ++cnt0_[static_cast<size_t>(la_[f])];
      if (lb_[f] >= 0) sumw0_[static_cast<size_t>(lb_[f])] += cb_[f], ++cnt0_[static_cast<size_t>(lb_[f])];
      if (wide_ && lc_[f] >= 0) sumw0_[static_cast<size_t>(lc_[f])] += cc_[f], ++cnt0_[static_cast<size_t>(lc_[f])];
      if (wide_ && ld_[f] >= 0) sumw0_[static_cast<size_t>(ld_[f])] += cd_[f], ++cnt0_[static_cast<size_t>(ld_[f])];
    }
    frozen_.assign(nl + 1, 0);
    // From here on a flow's missing link is `none`: the passes read and write its slot instead of
    // testing (its level stays infinite, it is never frozen, never queued).
    for (size_t f = 0; f < left_.size(); ++f) {
      if (la_[f] < 0) la_[f] = none;
      if (lb_[f] < 0) lb_[f] = none;
      if (wide_ && lc_[f] < 0) lc_[f] = none;
      if (wide_ && ld_[f] < 0) ld_[f] = none;
    }
    for (size_t f = 0; f < left_.size(); ++f)
      if (cap_[f] < kInf) capped_.push_back({cap_[f], static_cast<int32_t>(f)});
    sort_by_cap(capped_, sort_scratch_);
  }

  // A flow's projected finish from `now` at rate r (its bytes left are brought to now at every
  // event, at the rate it had since the last one: no per-flow rate or time is stored). A finished
  // flow's is never (its bytes left NaN: no comparison holds).
  double proj(size_t f, double r, double now) const {
    const double left = left_[f];
    return left <= 0 ? now : (r > 0 ? now + left / r : kInf);
  }
  // Whether some cap may be below a flow's rate under this solve's or the last one's levels: false
  // when the lowest cap (capped_'s first: of a live flow, or of a finished one not compacted away,
  // which only lowers it) is at least every level of a link that a live flow crosses (used_), so
  // that min(cap, r) = r for every flow's r at either (a finished flow's rate reads as infinite
  // either way, its cap being infinite). In a collective every flow has a cap, mostly far above the
  // links' levels: the rate pass then reads no caps.
  bool caps_bind() const {
    if (capped_.empty()) return false;
    double most = 0;
    for (const int32_t l : used_) most = std::max(most, std::max(level_[static_cast<size_t>(l)], prev_[static_cast<size_t>(l)]));
    return !(capped_.front().first >= most);
  }

  // A flow's rate under a solve's link levels: the lowest level of its links, or its cap.
  template <class Caps, class Wide>
  double rate(size_t f, const std::vector<double>& level, Caps with_caps, Wide wide) const {
    double r = std::min(level[static_cast<size_t>(la_[f])], level[static_cast<size_t>(lb_[f])]);
    if (wide) r = std::min(r, std::min(level[static_cast<size_t>(lc_[f])], level[static_cast<size_t>(ld_[f])]));
    return with_caps ? std::min(cap_[f], r) : r;
  }
  // The flow's links (2, or 4 when some flow crosses more; `none` where it has none) and coefficients.
  int links_of(size_t f, int32_t* l, double* c) const {
    l[0] = la_[f], l[1] = lb_[f], c[0] = ca_[f], c[1] = cb_[f];
    if (!wide_) return 2;
    l[2] = lc_[f], l[3] = ld_[f], c[2] = cc_[f], c[3] = cd_[f];
    return 4;
  }

  bool flow_frozen(int32_t f) const {  // (a finished flow counts as frozen)
    const auto i = static_cast<size_t>(f);
    return capfrozen_[i] || dead_[i] || frozen_[static_cast<size_t>(la_[i])] || frozen_[static_cast<size_t>(lb_[i])] ||
           (wide_ && (frozen_[static_cast<size_t>(lc_[i])] || frozen_[static_cast<size_t>(ld_[i])]));
  }

  // Unfrozen weight on link l summed again from its entries (after cancellation left sumw <= 0).
  double unfrozen_weight(int32_t l) const {
    double s = 0;
    for (uint32_t i = begin_[static_cast<size_t>(l)]; i < end_[static_cast<size_t>(l)]; ++i) {
      const int32_t f = eflow_[i];
      if (flow_frozen(f)) continue;
      int32_t ls[4];
      double cs[4];
      const int k = links_of(static_cast<size_t>(f), ls, cs);
      for (int j = 0; j < k; ++j)
        if (ls[j] == l) {
          s += cs[j];
          break;
        }
    }
    return s;
  }

  // Progressive filling over links: each link's level (kInf if it never saturates).
  void solve() {
    for (int32_t l : used_) {
      const auto i = static_cast<size_t>(l);
      fill_[i] = {capl_[i], 0}, sumw_[i] = 0, frozen_[i] = 0, prev_[i] = level_[i], level_[i] = kInf;
    }
    const size_t n = left_.size();
    if (unit_) {
      // Every coefficient is 1: a link's unfrozen weight starts as its count of live flows, kept
      // as flows finish (exact: integers).
      for (int32_t l : used_) sumw_[static_cast<size_t>(l)] = sumw0_[static_cast<size_t>(l)], fill_[static_cast<size_t>(l)].cnt = cnt0_[static_cast<size_t>(l)];
    } else {
      for (size_t f = 0; f < n; ++f) {
        if (dead_[f]) continue;
        sumw_[static_cast<size_t>(la_[f])] += ca_[f], ++fill_[static_cast<size_t>(la_[f])].cnt;
        sumw_[static_cast<size_t>(lb_[f])] += cb_[f], ++fill_[static_cast<size_t>(lb_[f])].cnt;
        if (wide_) {
          sumw_[static_cast<size_t>(lc_[f])] += cc_[f], ++fill_[static_cast<size_t>(lc_[f])].cnt;
          sumw_[static_cast<size_t>(ld_[f])] += cd_[f], ++fill_[static_cast<size_t>(ld_[f])].cnt;
        }
      }
    }
    heap_.clear();
    for (int32_t l : used_)
      if (fill_[static_cast<size_t>(l)].cnt > 0) heap_.push_back({fill_[static_cast<size_t>(l)].rem / sumw_[static_cast<size_t>(l)], link_id_[static_cast<size_t>(l)]});
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
    size_t next_cap = 0;
    const auto take = [&](int32_t l, double coef, double rate) {
      const auto i = static_cast<size_t>(l);
      fill_[i].rem = std::max(0.0, fill_[i].rem - coef * rate);
      sumw_[i] -= coef;
      --fill_[i].cnt;
    };
    // The top is looked at in place: a stale key is replaced there (one sift down, not a pop and a
    // push), a cap taken first leaves it there.
    while (!heap_.empty()) {
      const auto top = heap_.front();
      const int32_t l = dense_[static_cast<size_t>(top.second)];  // (keyed by the topology's number)
      const auto li = static_cast<size_t>(l);
      if (frozen_[li] || fill_[li].cnt == 0) {
        pop_top();
        continue;
      }
      if (unit_) sumw_[li] = fill_[li].cnt;  // the walk below keeps the count alone (exact)
      else if (!(sumw_[li] > 0)) sumw_[li] = unfrozen_weight(l);
      const double current = std::max(0.0, fill_[li].rem) / sumw_[li];  // (rem may fall below 0: rounding)
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
        if (wide_) take(lc_[f], cc_[f], cap_level), take(ld_[f], cd_[f], cap_level);
        continue;
      }
      pop_top();
      // The link saturates at `current`: its unfrozen flows (other link not saturated yet) freeze
      // there and give their consumption back to their other link.
      frozen_[li] = 1;
      level_[li] = current;
      if (wide_) {
        // Flows over up to four links: an entry's flow is still unfrozen when none of its other
        // links is frozen (nor its cap); it freezes here and gives back to each of them.
        for (uint32_t i = begin_[li], e = end_[li]; i < e; ++i) {
          const auto f = static_cast<size_t>(eflow_[i]);
          if (capfrozen_[f]) continue;
          int32_t ls[4];
          double cs[4];
          const int k = links_of(f, ls, cs);
          bool free = true;
          for (int j = 0; j < k; ++j) free = free && (ls[j] == l || !frozen_[static_cast<size_t>(ls[j])]);
          if (!free) continue;
          for (int j = 0; j < k; ++j)
            if (ls[j] != l) take(ls[j], cs[j], current);
        }
        continue;
      }
      if (unit_ && cap_marked_.empty()) {
        // Without branches (about half the other links are frozen already, at random): a flow whose
        // other link is frozen gives back to that link, whose figures are not read again in this
        // solve. Every subtraction here is of the same `current`, so the lists' order (changed by
        // removals) does not change a result. No flow runs at its cap yet in this solve, and every
        // unfrozen flow's cap is at least `current` (lower caps were taken first).
        // (Not clamped at 0 here but where read: every subtraction is >= 0, so once below 0 it stays
        // there, and clamping each time or at the end gives the same.)
        const auto walk = [&](const auto* other) {
#ifdef __SSE2__
          // {rem, cnt} - {current, 1}: the same two subtractions in one operation.
          const __m128d d = _mm_set_pd(1.0, current);
          for (uint32_t i = begin_[li], e = end_[li]; i < e; ++i) {
            double* at = &fill_[static_cast<size_t>(other[i])].rem;
            _mm_store_pd(at, _mm_sub_pd(_mm_load_pd(at), d));
          }
#else
          for (uint32_t i = begin_[li], e = end_[li]; i < e; ++i) {
            const auto o = static_cast<size_t>(other[i]);
            fill_[o].rem -= current;
            --fill_[o].cnt;
          }
#endif
        };
        if (narrow_) walk(other16_.data());  // (half the bytes streamed: the lists outgrow the caches)
        else walk(other_.data());
        continue;
      }
      for (uint32_t i = begin_[li], e = end_[li]; i < e; ++i) {
        const int32_t o = other_[i];
        if (frozen_[static_cast<size_t>(o)]) continue;
        const auto f = static_cast<size_t>(eflow_[i]);
        if (capfrozen_[f]) continue;
        // The flow's coefficient on its other link: 1 unless a route splits (ECMP fractions).
        const double coef = unit_ ? 1.0 : (la_[f] == o ? ca_[f] : cb_[f]);
        take(o, coef, current);
      }
    }
    // Cap marks cleared for the next solve (flows are renumbered in between).
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

  // Flow f finished: marked, its weight off its links' live sums, its entries out of their lists
  // (the last entry of a list moves into the hole).
  void finish(uint32_t f) {
    dead_[f] = 1;
    const int32_t nl = nl_;
    if (!wide_) {
      for (int side = 0; side < 2; ++side) {
        const int32_t l = side == 0 ? la_[f] : lb_[f];
        const auto li = static_cast<size_t>(l);
        --cnt0_[li], sumw0_[li] -= side == 0 ? ca_[f] : cb_[f];
        if (l == nl) continue;
        const uint32_t at = side == 0 ? pos_a_[f] : pos_b_[f], last = --end_[li];
        if (at == last) continue;
        other_[at] = other_[last], eflow_[at] = eflow_[last];
        if (narrow_) other16_[at] = other16_[last];
        const auto g = static_cast<size_t>(eflow_[at]);
        (la_[g] == l ? pos_a_[g] : pos_b_[g]) = at;
      }
    } else {
      int32_t ls[4];
      double cs[4];
      const int k = links_of(f, ls, cs);
      for (int side = 0; side < k; ++side) {
        const int32_t l = ls[side];
        const auto li = static_cast<size_t>(l);
        --cnt0_[li], sumw0_[li] -= cs[side];
        if (l == nl) continue;
        const uint32_t at = pos(side, f), last = --end_[li];
        if (at == last) continue;
        other_[at] = other_[last], eflow_[at] = eflow_[last];
        const auto g = static_cast<size_t>(eflow_[at]);
        int32_t gl[4];
        double gc[4];
        const int gk = links_of(g, gl, gc);
        for (int j = 0; j < gk; ++j)
          if (gl[j] == l) {
            pos(j, g) = at;
            break;
          }
      }
    }
    // From here on its rate reads as infinite (no links, no cap) and its projection as never (bytes
    // left NaN): the rate pass passes over it without reading dead_.
    la_[f] = lb_[f] = nl;
    if (wide_) lc_[f] = ld_[f] = nl;
    cap_[f] = kInf;
    left_[f] = std::numeric_limits<double>::quiet_NaN();
  }

  // Where flow f's entry for its side-th link is in that link's list (sides as links_of()).
  uint32_t& pos(int side, size_t f) { return (side == 0 ? pos_a_ : side == 1 ? pos_b_ : side == 2 ? pos_c_ : pos_d_)[f]; }

  // Drops finished flows from the arrays, keeping the order of the others.
  void compact() {
    const size_t n = left_.size();
    size_t w = 0;
    for (size_t f = 0; f < n; ++f) {
      if (dead_[f]) {
        newid_[f] = -1;
        continue;
      }
      newid_[f] = static_cast<int32_t>(w);
      if (w != f) {
        la_[w] = la_[f], lb_[w] = lb_[f], ca_[w] = ca_[f], cb_[w] = cb_[f], cap_[w] = cap_[f], left_[w] = left_[f];
        pos_a_[w] = pos_a_[f], pos_b_[w] = pos_b_[f];
        if (wide_) lc_[w] = lc_[f], ld_[w] = ld_[f], cc_[w] = cc_[f], cd_[w] = cd_[f], pos_c_[w] = pos_c_[f], pos_d_[w] = pos_d_[f];
      }
      ++w;
    }
    for (auto* v : {&cap_, &left_, &ca_, &cb_}) v->resize(w);
    la_.resize(w), lb_.resize(w), pos_a_.resize(w), pos_b_.resize(w);
    if (wide_) lc_.resize(w), ld_.resize(w), cc_.resize(w), cd_.resize(w), pos_c_.resize(w), pos_d_.resize(w);
    std::fill(dead_.begin(), dead_.begin() + static_cast<std::ptrdiff_t>(w), 0);
    compact_lists();
  }

  // Renumbers the flows in the links' lists (newid_; the finished ones left them already).
  void compact_lists() {
    for (int32_t l : used_)
      for (uint32_t i = begin_[static_cast<size_t>(l)], e = end_[static_cast<size_t>(l)]; i < e; ++i)
        eflow_[i] = newid_[static_cast<size_t>(eflow_[i])];
    size_t w = 0;
    for (const auto& c : capped_) {
      const int32_t nf = newid_[static_cast<size_t>(c.second)];
      if (nf >= 0) capped_[w++] = {c.first, nf};  // renumbering keeps the order: still (cap, id)
    }
    capped_.resize(w);
    used_.erase(std::remove_if(used_.begin(), used_.end(), [&](int32_t l) { return end_[static_cast<size_t>(l)] == begin_[static_cast<size_t>(l)]; }),
                used_.end());
  }

  const topology::Topology& topo_;
  double precision_;
  bool simd_ = drain_scan_available();
  bool resort_ = true;  // the rate pass eight flows at a time
  double alpha_ = 0, scale_ = 0;
  bool unit_ = true;  // every route fraction is 1
  bool wide_ = false;  // some flow crosses more than two links that may bind (lc_, ld_ ... in use)
  std::vector<double> link_bytes_;
  std::vector<int32_t> dense_, link_id_;  // a topology link's dense number; a dense number's link
  int32_t nl_ = 0;                         // links some flow crosses (dense numbers [0, nl_); nl_: none)
  // Flows.
  // A flow's links that may bind: la_ and lb_ (its first and last), and when wide_, lc_ and ld_ (the
  // ones between, over an oversubscribed core), with their coefficients (route fractions).
  std::vector<int32_t> la_, lb_, lc_, ld_;
  std::vector<double> ca_, cb_, cc_, cd_, cap_, left_;  // left_: bytes still to send (at the last event)
  std::vector<int32_t> newid_;
  std::vector<uint32_t> due_;       // the flows that may finish in this event
  std::vector<uint32_t> pos_a_, pos_b_, pos_c_, pos_d_;  // where a flow's entries are in its links' lists
  std::vector<char> capfrozen_, dead_;
  std::vector<int32_t> cap_marked_;  // the flows running at their cap in this solve
  std::vector<std::pair<double, int32_t>> capped_, sort_scratch_;  // (cap, flow), ascending
  // Links: [begin_[l], end_[l]) are link l's live flows: other_ their other link that may bind
  // (`none`: none), eflow_ the flow (apart: the solve streams other_ alone); used_ the links with any.
  std::vector<uint32_t> begin_, end_;
  std::vector<int32_t> other_, eflow_;
  // other_ in 16 bits, kept beside it when every flow crosses at most two links and the links
  // number under 2^16 - 1 (narrow_): what the branch-free freeze walk streams.
  std::vector<uint16_t> other16_;
  bool narrow_ = false;
  std::vector<int32_t> used_;
  // A link's state in a solve: capacity left and unfrozen count (one 16-byte record, both doubles:
  // the freeze walk subtracts {current, 1} from both for each entry in one SSE2 operation, and
  // 4,000 links' records stay in the first-level cache); its
  // unfrozen weight apart (with unit coefficients the weight is the count, set when it is popped).
  struct alignas(16) Fill {
    double rem = 0;
    double cnt = 0;  // (a whole number: exact in a double, and the walk updates both in one operation)
  };
  std::vector<Fill> fill_;
  std::vector<double> sumw_;  // a link's unfrozen weight in a solve (apart: the walk does not read it)
  std::vector<double> capl_, level_, prev_;  // prev_: the levels of the last solve
  std::vector<int32_t> cnt0_;  // cnt0_, sumw0_: per link, its live flows and their weight
  std::vector<double> sumw0_;
  std::vector<char> frozen_;
  std::vector<std::pair<double, int32_t>> heap_;
};

CoflowDrain::CoflowDrain(const topology::Topology& topo, double precision) : impl_(std::make_unique<Impl>(topo, precision)) {}
CoflowDrain::~CoflowDrain() = default;

std::optional<DrainResult> CoflowDrain::time(const Coflow& coflow, double extra_latency) {
  impl_->reset();
  for (const auto& tr : coflow)
    if (!impl_->add(tr)) return std::nullopt;
  return impl_->run(extra_latency);
}

std::optional<DrainResult> drain_coflow(const topology::Topology& topo, const Coflow& coflow, double extra_latency,
                                        double precision) {
  return CoflowDrain(topo, precision).time(coflow, extra_latency);
}

}  // namespace hs::network
