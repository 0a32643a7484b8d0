#include "strategy/policy/flexmoe/flexmoe_planner.hpp"

#include <algorithm>
#include <map>

namespace hs::strategy {

std::vector<double> gpu_loads(const std::vector<double>& load, const Holders& holders, int gpus) {
  std::vector<double> g(gpus, 0.0);
  for (size_t e = 0; e < holders.size(); ++e)
    for (int h : holders[e]) g[h] += load[e] / static_cast<double>(holders[e].size());
  return g;
}

double balance_ratio(const std::vector<double>& load, const Holders& holders, int gpus) {
  const auto g = gpu_loads(load, holders, gpus);
  double sum = 0, mx = 0;
  for (double x : g) sum += x, mx = std::max(mx, x);
  return sum > 0 ? mx / (sum / gpus) : 1.0;
}

Holders ep_holders(int experts, int gpus) {
  Holders h(experts);
  const int per = experts / gpus;
  for (int e = 0; e < experts; ++e) h[e] = {e / per};
  return h;
}

std::vector<std::vector<int>> replica_groups(const Holders& holders) {
  std::vector<std::vector<int>> groups;
  for (const auto& h : holders)
    if (h.size() > 1) groups.push_back(h);
  return groups;
}

namespace {

bool holds(const std::vector<int>& h, int g) { return std::binary_search(h.begin(), h.end(), g); }

std::vector<int> with(std::vector<int> h, int g) {
  h.insert(std::lower_bound(h.begin(), h.end(), g), g);
  return h;
}

std::vector<int> without(std::vector<int> h, int g) {
  h.erase(std::lower_bound(h.begin(), h.end(), g));
  return h;
}

// A candidate action: expert e's holders become `e_after`; optionally expert f's become `f_after`
// (a shrink that frees the slot e takes).
struct Candidate {
  enum Type { kMigrate, kExpand, kShrinkExpand } type = kExpand;
  int e = -1, f = -1, src = -1, dst = -1;
  std::vector<int> e_after, f_after;
  double slowest = 0, net = 0;
  bool same_node = false;
};

class Planner {
 public:
  Planner(const std::vector<double>& load, const Holders& current, const std::vector<int>& node_of, int slots,
          const ReplicaCosts& costs)
      : load_(load), original_(current), node_of_(node_of), n_(static_cast<int>(node_of.size())), slots_(slots),
        costs_(costs), h_(current) {
    held_.assign(n_, {});
    for (int x = 0; x < static_cast<int>(h_.size()); ++x)
      for (int g : h_[x]) held_[g].push_back(x);
    time_.assign(n_, 0.0);
    for (int g = 0; g < n_; ++g) time_[g] = gpu_time(g, -1, nullptr, -1, nullptr);
  }

  const Holders& holders() const { return h_; }

  double slowest() const { return *std::max_element(time_.begin(), time_.end()); }

  // Drops replicas that do not make the slowest GPU slower; returns how many.
  int shrink_pass() {
    std::vector<int> order;
    for (size_t e = 0; e < h_.size(); ++e)
      if (h_[e].size() > 1) order.push_back(static_cast<int>(e));
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return share(a) < share(b); });
    int dropped = 0;
    for (int e : order) {
      while (h_[e].size() > 1) {
        int from = h_[e][0];
        for (int g : h_[e])
          if (time_[g] > time_[from]) from = g;
        auto after = without(h_[e], from);
        if (evaluate(e, &after, -1, nullptr) > slowest()) break;
        apply(e, std::move(after), -1, {});
        ++dropped;
      }
    }
    return dropped;
  }

  // One greedy step: the candidate with the largest net saving over `period` iterations, if any
  // saves more than it costs. Returns false when none does.
  bool step(int period, ReplicaPlan& plan) {
    int busiest = 0;
    for (int g = 1; g < n_; ++g)
      if (time_[g] > time_[busiest]) busiest = g;
    const double now = time_[busiest];
    std::vector<int> count(n_, 0);
    for (const auto& h : h_)
      for (int g : h) ++count[g];
    Candidate best;
    bool found = false;
    auto consider = [&](Candidate c) {
      c.slowest = evaluate(c.e, &c.e_after, c.f, c.f < 0 ? nullptr : &c.f_after);
      const double gain = now - c.slowest;
      if (!(gain > 1e-12 * now)) return;
      double cost = costs_.move_time(c.src, c.dst) +
                    period * (ar(c.e_after) - ar(h_[c.e]) + (c.f < 0 ? 0.0 : ar(c.f_after) - ar(h_[c.f])));
      c.net = gain * period - cost;
      if (!(c.net > 0)) return;
      c.same_node = node_of_[c.src] == node_of_[c.dst];
      if (!found || better(c, best)) best = std::move(c), found = true;
    };
    for (int e = 0; e < static_cast<int>(h_.size()); ++e) {
      if (!holds(h_[e], busiest) || load_[e] <= 0) continue;
      for (int g = 0; g < n_; ++g) {
        if (holds(h_[e], g)) continue;
        const int src = source(e, g);
        if (count[g] < slots_) {
          consider({Candidate::kMigrate, e, -1, busiest, g, with(without(h_[e], busiest), g), {}});
          consider({Candidate::kExpand, e, -1, src, g, with(h_[e], g), {}});
          continue;
        }
        for (int f = 0; f < static_cast<int>(h_.size()); ++f)
          if (f != e && h_[f].size() > 1 && holds(h_[f], g))
            consider({Candidate::kShrinkExpand, e, f, src, g, with(h_[e], g), without(h_[f], g)});
      }
    }
    if (!found) return false;
    switch (best.type) {
      case Candidate::kMigrate: ++plan.migrations; break;
      case Candidate::kExpand: ++plan.expands; break;
      case Candidate::kShrinkExpand: ++plan.expands, ++plan.shrinks; break;
    }
    apply(best.e, std::move(best.e_after), best.f, std::move(best.f_after));
    return true;
  }

  // Where an instance of e on dst gets its state from: a GPU that held e before this plan (the
  // state is there when the moves run), in dst's node if any, else the lowest id.
  int source(int e, int dst) const {
    for (int g : original_[e])
      if (node_of_[g] == node_of_[dst]) return g;
    return original_[e].front();
  }

 private:
  static bool better(const Candidate& a, const Candidate& b) {
    if (a.net != b.net) return a.net > b.net;
    if (a.type != b.type) return a.type < b.type;
    if (a.same_node != b.same_node) return a.same_node;
    if (a.e != b.e) return a.e < b.e;
    if (a.dst != b.dst) return a.dst < b.dst;
    return a.f < b.f;
  }

  double share(int e) const { return load_[e] / static_cast<double>(h_[e].size()); }

  double ar(const std::vector<int>& group) {
    if (group.size() < 2) return 0.0;
    auto it = ar_cache_.find(group);
    if (it != ar_cache_.end()) return it->second;
    return ar_cache_[group] = costs_.allreduce_time(group);
  }

  // Expert time of GPU g with e's holders replaced by *e_after and f's by *f_after (when given).
  // Its instances in expert order: of the experts other than e and f, those g holds now (held_[g]),
  // and e and f where their new holders include g; the same list as a scan of every expert.
  double gpu_time(int g, int e, const std::vector<int>* e_after, int f, const std::vector<int>* f_after) const {
    std::vector<double> tokens;
    auto take = [&](int x) {
      const std::vector<int>& hx = x == e ? *e_after : x == f ? *f_after : h_[x];
      if (holds(hx, g)) tokens.push_back(load_[x] / static_cast<double>(hx.size()));
    };
    int extra[2] = {e, f};  // the changed experts, in increasing order (absent: -1, skipped)
    if (extra[0] > extra[1]) std::swap(extra[0], extra[1]);
    int k = 0;
    for (int x : held_[g]) {
      for (; k < 2 && extra[k] <= x; ++k)
        if (extra[k] >= 0 && extra[k] != x) take(extra[k]);
      take(x);
    }
    for (; k < 2; ++k)
      if (extra[k] >= 0) take(extra[k]);
    return timed(tokens);
  }

  // costs_.gpu_time, remembered per token list: the greedy re-evaluates the same GPUs' lists over
  // and over (the busiest GPU without e for every destination g, every unchanged GPU with e added
  // again at each step). The cost is a function of the list alone, so a remembered time is the
  // time a fresh call returns, bit for bit.
  double timed(const std::vector<double>& tokens) const {
    auto it = time_cache_.find(tokens);
    if (it != time_cache_.end()) return it->second;
    return time_cache_.emplace(tokens, costs_.gpu_time(tokens)).first->second;
  }

  // Slowest GPU's time after the change (only holders of e and f change).
  double evaluate(int e, const std::vector<int>* e_after, int f, const std::vector<int>* f_after) const {
    std::vector<char> touched(n_, 0);
    for (int g : h_[e]) touched[g] = 1;
    for (int g : *e_after) touched[g] = 1;
    if (f >= 0) {
      for (int g : h_[f]) touched[g] = 1;
      for (int g : *f_after) touched[g] = 1;
    }
    double worst = 0;
    for (int g = 0; g < n_; ++g)
      worst = std::max(worst, touched[g] ? gpu_time(g, e, e_after, f, f_after) : time_[g]);
    return worst;
  }

  void apply(int e, std::vector<int> e_after, int f, std::vector<int> f_after) {
    std::vector<int> touched = h_[e];
    touched.insert(touched.end(), e_after.begin(), e_after.end());
    h_[e] = std::move(e_after);
    if (f >= 0) {
      touched.insert(touched.end(), h_[f].begin(), h_[f].end());
      h_[f] = std::move(f_after);
    }
    for (int g : touched) {
      held_[g].clear();
      for (int x = 0; x < static_cast<int>(h_.size()); ++x)
        if (holds(h_[x], g)) held_[g].push_back(x);
    }
    for (int g : touched) time_[g] = gpu_time(g, -1, nullptr, -1, nullptr);
  }

  const std::vector<double>& load_;
  const Holders& original_;
  const std::vector<int>& node_of_;
  int n_, slots_;
  const ReplicaCosts& costs_;
  Holders h_;
  std::vector<std::vector<int>> held_;  // [gpu] the experts h_ has on it, increasing
  std::vector<double> time_;
  std::map<std::vector<int>, double> ar_cache_;
  mutable std::map<std::vector<double>, double> time_cache_;  // timed()'s
};

}  // namespace

ReplicaPlan plan_replicas(const std::vector<double>& load, const Holders& current, const std::vector<int>& node_of,
                          int slots, double trigger_ratio, int period, const ReplicaCosts& costs) {
  const int n = static_cast<int>(node_of.size());
  ReplicaPlan plan;
  plan.ratio_before = plan.ratio_after = balance_ratio(load, current, n);
  plan.holders = current;
  if (!(plan.ratio_before > trigger_ratio)) return plan;
  plan.triggered = true;
  Planner p(load, current, node_of, slots, costs);
  // Every accepted step makes the slowest GPU strictly faster, so this ends; the bound is a guard.
  for (int guard = 0; guard < n * slots && p.step(period, plan); ++guard) {
  }
  plan.shrinks += p.shrink_pass();
  plan.holders = p.holders();
  // What moves is the difference between the placements: every new instance copies its state from
  // a GPU that held the expert before (an instance expanded and then migrated within the plan
  // moves once).
  for (size_t e = 0; e < current.size(); ++e)
    for (int g : plan.holders[e])
      if (!holds(current[e], g)) plan.moves.push_back({static_cast<int>(e), p.source(static_cast<int>(e), g), g});
  plan.ratio_after = balance_ratio(load, plan.holders, n);
  return plan;
}

}  // namespace hs::strategy
