#include <doctest/doctest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "util/quad_heap.hpp"
#include "util/rng.hpp"

namespace {
// Entries (key, tag): ordered by key then tag, so every entry has one place in the order.
using E = std::pair<int, int>;
struct First {
  bool operator()(const E& a, const E& b) const { return a < b; }
};

// Pops everything: must come out as the sorted multiset.
std::vector<E> drain(hs::QuadHeap<E, First>& h) {
  std::vector<E> out;
  while (!h.empty()) {
    out.push_back(h.top());
    h.pop();
  }
  return out;
}
}  // namespace

TEST_CASE("quad heap: random pushes and pops come out in order, as a sorted reference") {
  // A reference multiset kept sorted; every pop must return its smallest element.
  hs::Rng rng(11);
  hs::QuadHeap<E, First> h;
  std::vector<E> ref;
  for (int it = 0; it < 20000; ++it) {
    if (rng.next_u64() % 3 != 0 || ref.empty()) {
      const E x{static_cast<int>(rng.next_u64() % 500), it};
      h.push(x);
      ref.insert(std::upper_bound(ref.begin(), ref.end(), x), x);
    } else {
      REQUIRE(h.top() == ref.front());
      h.pop();
      ref.erase(ref.begin());
    }
    REQUIRE(h.size() == ref.size());
  }
  CHECK(drain(h) == ref);
}

TEST_CASE("quad heap: appended entries ordered by fix(), filter() keeps what it accepts, in order") {
  hs::Rng rng(5);
  hs::QuadHeap<E, First> h;
  std::vector<E> all;
  for (int i = 0; i < 1000; ++i) {
    const E x{static_cast<int>(rng.next_u64() % 100), i};
    all.push_back(x);
    h.push(x);
  }
  // 300 more appended unordered, then fixed from where they start.
  const size_t from = h.size();
  for (int i = 1000; i < 1300; ++i) {
    const E x{static_cast<int>(rng.next_u64() % 100), i};
    all.push_back(x);
    h.append(x);
  }
  h.fix(from);
  // filter() re-heapifies in place (the element being sifted may be the hole itself): keep odd tags.
  h.filter([](const E& e) { return e.second % 2 == 1; });
  std::vector<E> kept;
  for (const E& e : all)
    if (e.second % 2 == 1) kept.push_back(e);
  std::sort(kept.begin(), kept.end());
  CHECK(drain(h) == kept);
}

TEST_CASE("quad heap: a parent never comes after its children (the walk FlowNetwork::for_due relies on)") {
  hs::Rng rng(3);
  hs::QuadHeap<E, First> h;
  for (int i = 0; i < 777; ++i) h.push({static_cast<int>(rng.next_u64() % 50), i});
  for (int i = 0; i < 100; ++i) h.pop();
  for (size_t i = 0; i < h.size(); ++i)
    for (size_t c = hs::QuadHeap<E, First>::first_child(i); c < std::min(h.size(), hs::QuadHeap<E, First>::first_child(i) + 4); ++c)
      CHECK_FALSE(First{}(h[c], h[i]));
}
