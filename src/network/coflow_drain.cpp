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

// One flow's entry in the list of a link it crosses: its other link that may bind (-1: none).
// 8 bytes: the lists are what a solve streams through.
struct Entry {
  int32_t other;
  int32_t flow;
};

// The live flows as arrays (compacted after every event, order kept) and each link's entries.
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

  DrainResult run(double extra) {
    DrainResult res;
    res.stats.flows = size_.size();
    if (size_.empty()) {  // FlowNetwork: a task without flows takes its extra latency
      res.seconds = extra;
      return res;
    }
    build();
    const size_t n0 = size_.size();
    prog_.assign(n0, 0.0), since_.assign(n0, 0.0), rate_.assign(n0, 0.0), proj_.assign(n0, kInf);
    newid_.resize(n0);
    capfrozen_.assign(n0, 0);
    dead_.assign(n0, 0);
    size_t live = n0;
    double now = 0;
    while (live > 0) {
      solve();
      // Rates (min of the links' levels and the cap), re-integration of the changed ones, and the
      // earliest projected finish (finished flows stay in the arrays, marked dead, until compacted).
      double tmin = kInf;
      const size_t n = size_.size();
      for (size_t f = 0; f < n; ++f) {
        if (dead_[f]) continue;
        double r = cap_[f];
        if (la_[f] >= 0) r = std::min(r, level_[static_cast<size_t>(la_[f])]);
        if (lb_[f] >= 0) r = std::min(r, level_[static_cast<size_t>(lb_[f])]);
        if (r != rate_[f]) {
          prog_[f] += rate_[f] * (now - since_[f]);
          since_[f] = now;
          rate_[f] = r;
          const double left = size_[f] - prog_[f];
          proj_[f] = left <= 1e-12 * size_[f] ? now : (r > 0 ? now + left / r : kInf);
        }
        tmin = std::min(tmin, proj_[f]);
      }
      if (!(tmin < kInf)) throw std::logic_error("flow tier: live flows with no rate (a link without capacity?)");
      // Merged completions, as FlowNetwork merges them (the coflow started at 0).
      const double bound = precision_ > 0 ? tmin + precision_ * std::max(tmin, scale_) : tmin;
      double next = tmin;
      for (size_t f = 0; f < n; ++f) {
        if (dead_[f] || proj_[f] > bound) continue;
        next = std::max(next, proj_[f]);
        dead_[f] = 1;
        --live;
        if (la_[f] >= 0) --cnt0_[static_cast<size_t>(la_[f])], sumw0_[static_cast<size_t>(la_[f])] -= ca_[f];
        if (lb_[f] >= 0) --cnt0_[static_cast<size_t>(lb_[f])], sumw0_[static_cast<size_t>(lb_[f])] -= cb_[f];
      }
      now = next;
      ++res.stats.events;
      // Finished flows leave the arrays and the links' lists once they are a quarter of them: the
      // passes above skip them on one byte until then, instead of moving every array every event.
      if (4 * (n - live) >= n) compact();
    }
    res.seconds = now + (alpha_ + extra);  // as FlowNetwork's timer: drain + (latency + extra)
    return res;
  }

 private:
  void build() {
    const size_t nl = link_bytes_.size();
    for (size_t l = 0; l < nl; ++l)
      if (link_bytes_[l] > 0) scale_ = std::max(scale_, link_bytes_[l] / topo_.link(static_cast<int>(l)).bandwidth.value());
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
    entries_.resize(begin_[nl]);
    for (size_t f = 0; f < size_.size(); ++f) {
      const auto id = static_cast<int32_t>(f);
      if (la_[f] >= 0) entries_[end_[static_cast<size_t>(la_[f])]++] = {lb_[f], id};
      if (lb_[f] >= 0) entries_[end_[static_cast<size_t>(lb_[f])]++] = {la_[f], id};
    }
    capl_.assign(nl, 0.0);
    for (int32_t l : used_) capl_[static_cast<size_t>(l)] = topo_.link(l).bandwidth.value();
    rem_.assign(nl, 0.0), sumw_.assign(nl, 0.0), level_.assign(nl, kInf);
    cnt_.assign(nl, 0);
    cnt0_.assign(nl, 0), sumw0_.assign(nl, 0.0);
    for (size_t f = 0; f < size_.size(); ++f) {
      if (la_[f] >= 0) sumw0_[static_cast<size_t>(la_[f])] += ca_[f], ++cnt0_[static_cast<size_t>(la_[f])];
      if (lb_[f] >= 0) sumw0_[static_cast<size_t>(lb_[f])] += cb_[f], ++cnt0_[static_cast<size_t>(lb_[f])];
    }
    frozen_.assign(nl, 0);
    for (size_t f = 0; f < size_.size(); ++f)
      if (cap_[f] < kInf) capped_.push_back({cap_[f], static_cast<int32_t>(f)});
    std::sort(capped_.begin(), capped_.end());
  }

  bool flow_frozen(int32_t f) const {  // (a finished flow counts as frozen)
    const auto i = static_cast<size_t>(f);
    return capfrozen_[i] || dead_[i] || (la_[i] >= 0 && frozen_[static_cast<size_t>(la_[i])]) ||
           (lb_[i] >= 0 && frozen_[static_cast<size_t>(lb_[i])]);
  }

  // Unfrozen weight on link l summed again from its entries (after cancellation left sumw <= 0).
  double unfrozen_weight(int32_t l) const {
    double s = 0;
    for (uint32_t i = begin_[static_cast<size_t>(l)]; i < end_[static_cast<size_t>(l)]; ++i) {
      const Entry& e = entries_[i];
      if (flow_frozen(e.flow)) continue;
      s += la_[static_cast<size_t>(e.flow)] == l ? ca_[static_cast<size_t>(e.flow)] : cb_[static_cast<size_t>(e.flow)];
    }
    return s;
  }

  // Progressive filling over links: each link's level (kInf if it never saturates).
  void solve() {
    for (int32_t l : used_) {
      const auto i = static_cast<size_t>(l);
      rem_[i] = capl_[i], sumw_[i] = 0, cnt_[i] = 0, frozen_[i] = 0, level_[i] = kInf;
    }
    const size_t n = size_.size();
    if (unit_) {
      // Every coefficient is 1: a link's unfrozen weight starts as its count of live flows, kept
      // as flows finish (exact: integers).
      for (int32_t l : used_) sumw_[static_cast<size_t>(l)] = sumw0_[static_cast<size_t>(l)], cnt_[static_cast<size_t>(l)] = cnt0_[static_cast<size_t>(l)];
    } else {
      for (size_t f = 0; f < n; ++f) {
        if (dead_[f]) continue;
        if (la_[f] >= 0) sumw_[static_cast<size_t>(la_[f])] += ca_[f], ++cnt_[static_cast<size_t>(la_[f])];
        if (lb_[f] >= 0) sumw_[static_cast<size_t>(lb_[f])] += cb_[f], ++cnt_[static_cast<size_t>(lb_[f])];
      }
    }
    // Cap marks of the live flows cleared (ids are renumbered after every event).
    const bool has_caps = !capped_.empty();
    if (has_caps) std::fill(capfrozen_.begin(), capfrozen_.begin() + static_cast<std::ptrdiff_t>(n), 0);
    heap_.clear();
    for (int32_t l : used_)
      if (cnt_[static_cast<size_t>(l)] > 0) heap_.push_back({rem_[static_cast<size_t>(l)] / sumw_[static_cast<size_t>(l)], l});
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
    size_t next_cap = 0;
    const auto take = [&](int32_t l, double coef, double rate) {
      const auto i = static_cast<size_t>(l);
      rem_[i] = std::max(0.0, rem_[i] - coef * rate);
      sumw_[i] -= coef;
      --cnt_[i];
    };
    while (!heap_.empty()) {
      while (next_cap < capped_.size() && flow_frozen(capped_[next_cap].second)) ++next_cap;
      const double cap_level = next_cap < capped_.size() ? capped_[next_cap].first : kInf;
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      const auto top = heap_.back();
      heap_.pop_back();
      const int32_t l = top.second;
      const auto li = static_cast<size_t>(l);
      if (frozen_[li] || cnt_[li] == 0) continue;
      if (!(sumw_[li] > 0)) sumw_[li] = unfrozen_weight(l);
      const double current = rem_[li] / sumw_[li];
      if (current > top.first * (1 + 1e-12)) {  // a stale key: re-queued at its current share
        heap_.push_back({current, l});
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
        continue;
      }
      if (cap_level < current) {  // a flow's cap comes first: it runs at its cap
        const auto f = static_cast<size_t>(capped_[next_cap].second);
        capfrozen_[f] = 1;
        if (la_[f] >= 0) take(la_[f], ca_[f], cap_level);
        if (lb_[f] >= 0) take(lb_[f], cb_[f], cap_level);
        heap_.push_back(top);
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
        continue;
      }
      // The link saturates at `current`: its unfrozen flows (other link not saturated yet) freeze
      // there and give their consumption back to their other link.
      frozen_[li] = 1;
      level_[li] = current;
      for (uint32_t i = begin_[li], e = end_[li]; i < e; ++i) {
        const Entry& en = entries_[i];
        if (en.other < 0 || frozen_[static_cast<size_t>(en.other)]) continue;
        const auto f = static_cast<size_t>(en.flow);
        if (dead_[f]) continue;
        if (has_caps && capfrozen_[f]) continue;
        // The flow's coefficient on its other link: 1 unless a route splits (ECMP fractions).
        const double coef = unit_ ? 1.0 : (la_[f] == en.other ? ca_[f] : cb_[f]);
        take(en.other, coef, has_caps ? std::min(current, cap_[f]) : current);
      }
    }
  }

  // Drops finished flows from the arrays and the links' lists, keeping the order of the others.
  void compact() {
    const size_t n = size_.size();
    size_t w = 0;
    for (size_t f = 0; f < n; ++f) {
      if (dead_[f]) {
        newid_[f] = -1;
        continue;
      }
      newid_[f] = static_cast<int32_t>(w);
      if (w != f) {
        la_[w] = la_[f], lb_[w] = lb_[f], ca_[w] = ca_[f], cb_[w] = cb_[f], cap_[w] = cap_[f], size_[w] = size_[f];
        prog_[w] = prog_[f], since_[w] = since_[f], rate_[w] = rate_[f], proj_[w] = proj_[f];
      }
      ++w;
    }
    for (auto* v : {&cap_, &size_, &ca_, &cb_, &prog_, &since_, &rate_, &proj_}) v->resize(w);
    la_.resize(w), lb_.resize(w);
    std::fill(dead_.begin(), dead_.begin() + static_cast<std::ptrdiff_t>(w), 0);
    compact_lists();
  }

  // Drops finished flows from the links' lists and renumbers the others (newid_).
  void compact_lists() {
    for (int32_t l : used_) {
      const auto li = static_cast<size_t>(l);
      uint32_t w = begin_[li];
      for (uint32_t i = begin_[li], e = end_[li]; i < e; ++i) {
        const Entry en = entries_[i];
        const int32_t nf = newid_[static_cast<size_t>(en.flow)];
        if (nf >= 0) entries_[w++] = {en.other, nf};
      }
      end_[li] = w;
    }
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
  double alpha_ = 0, scale_ = 0;
  bool unit_ = true;  // every route fraction is 1
  std::vector<double> link_bytes_;
  // Flows.
  std::vector<int32_t> la_, lb_;
  std::vector<double> ca_, cb_, cap_, size_, prog_, since_, rate_, proj_;
  std::vector<int32_t> newid_;
  std::vector<char> capfrozen_, dead_;
  std::vector<std::pair<double, int32_t>> capped_;  // (cap, flow), ascending
  // Links: entries_[begin_[l], end_[l]) are link l's flows; used_ the links with any.
  std::vector<uint32_t> begin_, end_;
  std::vector<Entry> entries_;
  std::vector<int32_t> used_;
  std::vector<double> capl_, rem_, sumw_, level_;
  std::vector<int32_t> cnt_, cnt0_;  // cnt0_, sumw0_: per link, its live flows and their weight
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
