// The component solve against a plain copy of it as it stood before the flow tier's speed work
// (issue 33 item 2): the solver now starts filling while it searches the component, lists a
// searched component's capped flows in id order off a bitset instead of sorting (cap, id) pairs, and
// keeps in hand a link it would push back and pop again at once. None of that may change a bit:
// the reference below is the old algorithm written out straightforwardly (a vector per link in the
// solver's list order, std::sort of (cap, id), a std::set of (share, link) for the heap), and the
// rates must be equal with ==, not to a tolerance, over random add / remove / reweight / solve
// sequences (a reweight as the reference does it: coefficients scaled in place, a removal at the
// flow's rate when lighter, an add when heavier).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "solver/max_min_solver.hpp"
#include "util/rng.hpp"
#include "support/random_elements.hpp"

using hs::solver::Element;
using hs::solver::MaxMinSolver;

namespace {

constexpr double kInf = MaxMinSolver::kUnlimited;

// MaxMinSolver in Mode::component below 1,024 live flows, as it was: the same ids (freed ids
// reused last-in first-out), the same per-link lists (a removal moves the last entry into the
// hole), the same dirty-link order, search order and floating-point operations in the same order.
class OldComponentSolver {
 public:
  int add_link(double c) {
    cap_.push_back(c);
    list_.emplace_back();
    dirty_.push_back(0);
    return static_cast<int>(cap_.size()) - 1;
  }
  int add_flow(const std::vector<Element>& el, double w, double cap) {
    int id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<int>(flows_.size());
      flows_.emplace_back();
    }
    Flow& f = flows_[id];
    f.links.clear();
    f.wc.clear();
    for (const auto& e : el) {
      f.links.push_back(e.link);
      f.wc.push_back(w * e.coef);
      list_[e.link].push_back(id);
      mark(e.link);
    }
    f.cap = cap;
    f.rate = el.empty() ? cap : 0;
    f.alive = true;
    added_ = true;
    return id;
  }
  void remove_flow(int id) {
    Flow& f = flows_[id];
    min_removed_ = std::min(min_removed_, f.rate);
    for (int l : f.links) {
      mark(l);
      auto& v = list_[l];
      const auto it = std::find(v.begin(), v.end(), id);
      *it = v.back();
      v.pop_back();
    }
    f.links.clear();
    f.alive = false;
    f.rate = 0;
    free_.push_back(id);
  }
  // A class's new weight (set_weight): its coefficients scaled in place, its links dirty; less
  // weight counts as a removal at its rate, more as an add.
  void set_weight(int id, const std::vector<Element>& el, double w) {
    Flow& f = flows_[id];
    bool more = false;
    for (size_t j = 0; j < el.size(); ++j) more = more || w * el[j].coef > f.wc[j];
    for (size_t j = 0; j < el.size(); ++j) f.wc[j] = w * el[j].coef, mark(f.links[j]);
    if (more) added_ = true;
    else min_removed_ = std::min(min_removed_, f.rate);
  }
  double rate(int id) const { return flows_[id].rate; }
  void solve() {
    if (dirty_list_.empty()) {
      added_ = false;
      return;
    }
    std::vector<char> in_links(cap_.size(), 0), in_flows(flows_.size(), 0);
    std::vector<int> links, comp;
    for (int l : dirty_list_) {
      dirty_[l] = 0;
      if (!in_links[l]) in_links[l] = 1, links.push_back(l);
    }
    dirty_list_.clear();
    for (size_t i = 0; i < links.size(); ++i)
      for (int f : list_[links[i]]) {
        if (in_flows[f]) continue;
        in_flows[f] = 1;
        comp.push_back(f);
        for (int l : flows_[f].links)
          if (!in_links[l]) in_links[l] = 1, links.push_back(l);
      }
    std::vector<double> rem(cap_.size()), sumw(cap_.size());
    std::vector<int> unfrozen(cap_.size());
    for (int l : links) rem[l] = cap_[l], sumw[l] = 0, unfrozen[l] = 0;
    const double keep_below = added_ ? 0.0 : min_removed_ * (1 - 1e-9);
    added_ = false;
    min_removed_ = kInf;
    std::vector<std::pair<double, int>> capped;
    std::vector<char> frozen(flows_.size(), 0);
    for (int f : comp) {
      const Flow& x = flows_[f];
      if (x.rate < keep_below) {
        frozen[f] = 1;
        for (size_t j = 0; j < x.links.size(); ++j) rem[x.links[j]] = std::max(0.0, rem[x.links[j]] - x.wc[j] * x.rate);
        continue;
      }
      for (size_t j = 0; j < x.links.size(); ++j) sumw[x.links[j]] += x.wc[j], ++unfrozen[x.links[j]];
      if (x.cap < kInf) capped.push_back({x.cap, f});
    }
    std::sort(capped.begin(), capped.end());
    const auto freeze = [&](int f, double r) {
      Flow& x = flows_[f];
      frozen[f] = 1;
      x.rate = r;
      for (size_t j = 0; j < x.links.size(); ++j) {
        const int l = x.links[j];
        rem[l] = std::max(0.0, rem[l] - x.wc[j] * r);
        sumw[l] -= x.wc[j];
        --unfrozen[l];
      }
    };
    const auto wc_on = [&](int f, int l) {
      const Flow& x = flows_[f];
      for (size_t j = 0; j < x.links.size(); ++j)
        if (x.links[j] == l) return x.wc[j];
      return 0.0;
    };
    std::set<std::pair<double, int>> heap;
    for (int l : links)
      if (unfrozen[l] > 0) heap.insert({rem[l] / sumw[l], l});
    size_t next_cap = 0;
    while (!heap.empty()) {
      while (next_cap < capped.size() && frozen[capped[next_cap].second]) ++next_cap;
      const double cap_level = next_cap < capped.size() ? capped[next_cap].first : kInf;
      const auto top = *heap.begin();
      heap.erase(heap.begin());
      const int l = top.second;
      if (unfrozen[l] == 0) continue;
      if (!(sumw[l] > 0)) {
        double s = 0;
        for (int f : list_[l])
          if (!frozen[f]) s += wc_on(f, l);
        sumw[l] = s;
      }
      const double current = rem[l] / sumw[l];
      if (current > top.first * (1 + 1e-12)) {
        heap.insert({current, l});
        continue;
      }
      if (cap_level < current) {
        freeze(capped[next_cap].second, cap_level);
        heap.insert(top);
        continue;
      }
      for (int f : list_[l]) {
        if (frozen[f]) continue;
        const bool c = flows_[f].cap < current;
        freeze(f, c ? flows_[f].cap : current);
      }
    }
    for (; next_cap < capped.size(); ++next_cap)
      if (!frozen[capped[next_cap].second]) freeze(capped[next_cap].second, capped[next_cap].first);
    for (int f : comp)
      if (!frozen[f]) flows_[f].rate = flows_[f].links.empty() ? flows_[f].cap : 0.0;
  }

 private:
  struct Flow {
    std::vector<int> links;
    std::vector<double> wc;
    double cap = kInf, rate = 0;
    bool alive = false;
  };
  void mark(int l) {
    if (!dirty_[l]) dirty_[l] = 1, dirty_list_.push_back(l);
  }
  std::vector<double> cap_;
  std::vector<std::vector<int>> list_;
  std::vector<char> dirty_;
  std::vector<int> dirty_list_, free_;
  std::vector<Flow> flows_;
  bool added_ = false;
  double min_removed_ = kInf;
};

}  // namespace

TEST_CASE("property: the component solve equals the old one bit for bit (random adds, removals, reweights, caps, classes)") {
  // Random links (capacity 1-100, some equal: ties), flows over 1-4 of them with coefficient 1 or
  // 0.5, weights 1-4, caps from a few values (an NCCL connection's channels: the bucket order) or
  // all distinct (more than 16: a full sort), added and removed in random batches (removal-only
  // batches too: the kept slower flows), classes reweighted in place (set_weight: a member fewer
  // keeps the slower flows' rates too), solved after each batch. Every live flow's rate == the
  // old solver's, and ids agree.
  hs::Rng rng(2026);
  long compared = 0;
  for (int inst = 0; inst < 200; ++inst) {
    const int nl = 2 + static_cast<int>(rng.below(30));
    const bool many_caps = inst % 3 == 2;
    MaxMinSolver now;
    now.set_mode(MaxMinSolver::Mode::component);
    OldComponentSolver old;
    for (int l = 0; l < nl; ++l) {
      const double c = rng.uniform() < 0.3 ? 50.0 : 1 + 99 * rng.uniform();
      now.add_link(c);
      old.add_link(c);
    }
    std::vector<int> live;
    std::vector<std::vector<Element>> elems;  // by id: a live flow's elements
    std::vector<double> weight;               // by id
    for (int step = 0; step < 40; ++step) {
      const int adds = step % 4 == 3 ? 0 : static_cast<int>(rng.below(12));
      const int removes = static_cast<int>(rng.below(8));
      for (int k = 0; k < adds && live.size() < 900; ++k) {
        std::vector<Element> e = hs::test::random_elements(rng, nl);  // the same draws as written out before
        const double w = 1 + static_cast<double>(rng.below(4));
        const double u = rng.uniform();
        const double cap = u < 0.4 ? kInf : (many_caps ? 0.5 + 20 * rng.uniform() : 2.0 * (1 + static_cast<double>(rng.below(3))));
        const int id = now.add_flow(e, w, cap);
        REQUIRE(old.add_flow(e, w, cap) == id);
        live.push_back(id);
        if (static_cast<size_t>(id) >= elems.size()) elems.resize(static_cast<size_t>(id) + 1), weight.resize(static_cast<size_t>(id) + 1);
        elems[static_cast<size_t>(id)] = e, weight[static_cast<size_t>(id)] = w;
      }
      // Classes losing a member (weight - 1), now and then gaining one, in some batches only: the
      // removal-only solves stay.
      if (step % 5 >= 3)
        for (int id : live) {
          const auto i = static_cast<size_t>(id);
          const double u = rng.uniform();
          if (u < 0.3 && weight[i] > 1) weight[i] -= 1;
          else if (u < 0.35) weight[i] += 1;
          else continue;
          now.set_weight(id, elems[i], weight[i]);
          old.set_weight(id, elems[i], weight[i]);
        }
      for (int k = 0; k < removes && !live.empty(); ++k) {
        const size_t at = rng.below(live.size());
        now.remove_flow(live[at]);
        old.remove_flow(live[at]);
        live[at] = live.back();
        live.pop_back();
      }
      now.solve();
      old.solve();
      int differ = 0;
      for (int id : live) differ += now.rate(id) != old.rate(id) ? 1 : 0;
      CHECK(differ == 0);
      compared += static_cast<long>(live.size());
    }
  }
  CHECK(compared > 50000);
}
