// DueHeap, the flow tier's projected finishes with one entry per id, against a std::set of
// (time, id): the same front, the same pop order, the same entries due by a time, after random
// sets (moves up and down), erasures, bulk updates and take_due. Times are drawn from a few values
// so that ties, broken by id, are common.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "network/due_heap.hpp"
#include "util/rng.hpp"

using hs::network::DueHeap;

namespace {
struct Reference {
  std::set<std::pair<double, int>> set;
  std::map<int, double> time;
  void put(int id, double t) {
    erase(id);
    set.insert({t, id});
    time[id] = t;
  }
  void erase(int id) {
    const auto it = time.find(id);
    if (it == time.end()) return;
    set.erase({it->second, id});
    time.erase(it);
  }
};
std::vector<std::pair<double, int>> due_by(DueHeap& h, double t) {
  std::vector<std::pair<double, int>> v;
  h.for_due(t, [&](const DueHeap::Due& d) { v.push_back({d.time, d.id}); });
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

TEST_CASE("property: DueHeap keeps the (time, id) order of a std::set under random moves, erasures and bulk updates") {
  hs::Rng rng(33);
  for (int inst = 0; inst < 50; ++inst) {
    DueHeap h;
    Reference ref;
    const int ids = 1 + static_cast<int>(rng.below(200));
    for (int step = 0; step < 400; ++step) {
      const auto time = [&] { return static_cast<double>(rng.below(20)); };
      const uint64_t op = rng.below(10);
      if (op < 5) {
        const int id = static_cast<int>(rng.below(static_cast<uint64_t>(ids)));
        const double t = time();
        h.set(id, t);
        ref.put(id, t);
      } else if (op < 6) {
        const int id = static_cast<int>(rng.below(static_cast<uint64_t>(ids)));
        h.erase(id);
        ref.erase(id);
      } else if (op < 7) {  // bulk: set or erase many, then one rebuild
        for (int k = 0; k < 20; ++k) {
          const int id = static_cast<int>(rng.below(static_cast<uint64_t>(ids)));
          if (rng.uniform() < 0.8) {
            const double t = time();
            h.set_unordered(id, t);
            ref.put(id, t);
          } else {
            h.erase_unordered(id);
            ref.erase(id);
          }
        }
        h.order();
      } else if (op < 8 && !ref.set.empty()) {
        const auto d = h.pop();
        CHECK(std::make_pair(d.time, d.id) == *ref.set.begin());
        ref.erase(d.id);
      } else if (op < 9) {  // take every entry due by t
        const double t = time();
        std::vector<int> got;
        h.take_due(t, [&](int id) { got.push_back(id); });
        std::vector<int> want;
        for (const auto& [tt, id] : ref.set)
          if (tt <= t) want.push_back(id);
        for (int id : want) ref.erase(id);
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        CHECK(got == want);
      } else {
        const double t = time();
        std::vector<std::pair<double, int>> want;
        for (const auto& e : ref.set)
          if (e.first <= t) want.push_back(e);
        CHECK(due_by(h, t) == want);
      }
      REQUIRE(h.size() == ref.set.size());
      if (!ref.set.empty()) CHECK(std::make_pair(h.front().time, h.front().id) == *ref.set.begin());
      for (int id = 0; id < ids; ++id) CHECK(h.contains(id) == (ref.time.count(id) == 1));
    }
  }
}
