#include "collective/ring_search.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

namespace hs::collective {

namespace {

// Search steps (DFS vertex visits) one search may take before it keeps the best found so far.
constexpr long kRingSteps = 1L << 16;
constexpr long kPathSteps = 1L << 12;
// Memo entries kept before the memo starts over (a guard for long sweeps over many shapes).
constexpr size_t kMemoEntries = 4096;

// `compute(key)` once per distinct key, shared by every thread (sweeps run simulations in parallel).
template <class Key, class Value, class F>
Value memoized(const Key& key, F compute) {
  static std::mutex mu;
  static std::map<Key, Value> memo;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  Value v = compute();
  std::lock_guard<std::mutex> lock(mu);
  if (memo.size() >= kMemoEntries) memo.clear();
  memo.emplace(key, v);
  return v;
}

// Positions b reachable from a over a link with capacity left (> 0), most left first, then by
// position. `left` is k x k, row = from.
std::vector<int> candidates(int k, const std::vector<int>& left, const std::vector<char>& seen, int a) {
  std::vector<int> out;
  for (int b = 0; b < k; ++b)
    if (!seen[b] && left[static_cast<size_t>(a) * k + b] > 0) out.push_back(b);
  std::stable_sort(out.begin(), out.end(), [&](int x, int y) {
    return left[static_cast<size_t>(a) * k + x] > left[static_cast<size_t>(a) * k + y];
  });
  return out;
}

// Backtracking over rings (a ring per level) and, inside each, over the cycle's vertices; keeps the
// largest set of rings found, stopping at `bound` rings (no GPU has links for more) or when the
// step budget runs out.
class RingSearch {
 public:
  explicit RingSearch(const DirectLinks& l) : k_(l.k), left_(l.mult) {
    bound_ = kMaxRings;
    for (int i = 0; i < k_; ++i) {
      int out = 0, in = 0;
      for (int j = 0; j < k_; ++j) out += l.at(i, j), in += l.at(j, i);
      bound_ = std::min({bound_, out, in});
    }
  }
  std::vector<std::vector<int>> run() {
    if (k_ >= 2 && bound_ > 0) next_ring();
    return best_;
  }

 private:
  int& left(int a, int b) { return left_[static_cast<size_t>(a) * k_ + b]; }
  bool done() const { return static_cast<int>(best_.size()) == bound_ || steps_ <= 0; }

  void next_ring() {
    if (rings_.size() > best_.size()) best_ = rings_;
    if (done()) return;
    std::vector<int> path{0};
    std::vector<char> seen(k_, 0);
    seen[0] = 1;
    extend(path, seen);
  }

  void extend(std::vector<int>& path, std::vector<char>& seen) {
    if (--steps_ < 0) return;
    const int a = path.back();
    if (static_cast<int>(path.size()) == k_) {
      if (left(a, 0) == 0) return;
      --left(a, 0);
      rings_.push_back(path);
      next_ring();
      rings_.pop_back();
      ++left(a, 0);
      return;
    }
    for (int b : candidates(k_, left_, seen, a)) {
      --left(a, b), seen[b] = 1, path.push_back(b);
      extend(path, seen);
      path.pop_back(), seen[b] = 0, ++left(a, b);
      if (done()) return;
    }
  }

  int k_;
  std::vector<int> left_;
  int bound_ = 0;
  long steps_ = kRingSteps;
  std::vector<std::vector<int>> rings_, best_;
};

// A Hamiltonian path from `first` (to `last`, or anywhere when last < 0) over direct links, trying
// the links with the fewest earlier channels per unit of capacity first; empty if none is found.
std::vector<int> search_path(const DirectLinks& l, const std::vector<int>& used, int first, int last) {
  const int k = l.k;
  std::vector<int> path{first};
  std::vector<char> seen(k, 0);
  seen[first] = 1;
  long steps = kPathSteps;
  auto load_less = [&](int a, int x, int y) {  // used/mult of a->x below a->y's, exactly
    return static_cast<long>(used[static_cast<size_t>(a) * k + x]) * l.at(a, y) <
           static_cast<long>(used[static_cast<size_t>(a) * k + y]) * l.at(a, x);
  };
  auto rec = [&](auto& self) -> bool {
    if (--steps < 0) return false;
    const int a = path.back();
    if (static_cast<int>(path.size()) == k) return last < 0 || a == last;
    std::vector<int> next = candidates(k, l.mult, seen, a);
    std::stable_sort(next.begin(), next.end(), [&](int x, int y) { return load_less(a, x, y); });
    for (int b : next) {
      if (b == last && static_cast<int>(path.size()) + 1 < k) continue;  // `last` closes the path
      seen[b] = 1, path.push_back(b);
      if (self(self)) return true;
      path.pop_back(), seen[b] = 0;
    }
    return false;
  };
  return rec(rec) ? path : std::vector<int>{};
}

}  // namespace

bool DirectLinks::any() const {
  return std::any_of(mult.begin(), mult.end(), [](int m) { return m > 0; });
}

DirectLinks direct_links(const topology::Topology& topo, std::span<const int> gpus) {
  DirectLinks l;
  l.k = static_cast<int>(gpus.size());
  l.mult.assign(static_cast<size_t>(l.k) * l.k, 0);
  std::vector<double> bw(l.mult.size(), 0.0);
  double slowest = 0;
  for (int i = 0; i < l.k; ++i)
    for (int j = 0; j < l.k; ++j) {
      if (i == j) continue;
      const auto r = topo.route(gpus[i], gpus[j]);
      if (r.hops.size() != 1) continue;  // through a switch, a relaying GPU or the network
      const double b = topo.link(r.hops[0].link).bandwidth.value();
      bw[static_cast<size_t>(i) * l.k + j] = b;
      slowest = slowest > 0 ? std::min(slowest, b) : b;
    }
  for (size_t p = 0; p < bw.size(); ++p)
    if (bw[p] > 0) l.mult[p] = static_cast<int>(bw[p] / slowest + 1e-9);
  return l;
}

std::vector<std::vector<int>> search_rings(const DirectLinks& links) {
  if (!links.any()) return {};
  using Key = std::pair<int, std::vector<int>>;
  return memoized<Key, std::vector<std::vector<int>>>(Key{links.k, links.mult},
                                                      [&] { return RingSearch(links).run(); });
}

std::vector<std::vector<int>> search_paths(const DirectLinks& links, std::span<const std::pair<int, int>> ends) {
  if (!links.any()) return std::vector<std::vector<int>>(ends.size());
  using Key = std::tuple<int, std::vector<int>, std::vector<std::pair<int, int>>>;
  const Key key{links.k, links.mult, std::vector<std::pair<int, int>>(ends.begin(), ends.end())};
  return memoized<Key, std::vector<std::vector<int>>>(key, [&] {
    std::vector<int> used(links.mult.size(), 0);
    std::vector<std::vector<int>> paths;
    for (const auto& [first, last] : ends) {
      std::vector<int> p = search_path(links, used, first, last);
      if (p.empty()) p = search_path(links, used, first, -1);
      for (size_t i = 0; i + 1 < p.size(); ++i) ++used[static_cast<size_t>(p[i]) * links.k + p[i + 1]];
      paths.push_back(std::move(p));
    }
    return paths;
  });
}

}  // namespace hs::collective
