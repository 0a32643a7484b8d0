// A 4-ary min-heap kept in a std::vector, ordered by `before(a, b)` (a strict weak order: a comes
// out first). Against std's binary heap: half the depth, and a node's four children are adjacent
// (64 bytes for 16-byte entries), so a pop from a heap far larger than the caches misses about half
// as often. Node i's children are 4i + 1 .. 4i + 4.
//
// Which of two equal entries comes out first depends on the layout; callers whose results must not
// depend on it keep their order total on the entries that matter (FlowNetwork: (time, id), one live
// entry per id).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace hs {

template <class T, class Before>
class QuadHeap {
 public:
  explicit QuadHeap(Before before = {}) : before_(before) {}

  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const T& top() const { return v_.front(); }
  const T& operator[](size_t i) const { return v_[i]; }
  static size_t first_child(size_t i) { return 4 * i + 1; }
  void clear() { v_.clear(); }
  void reserve(size_t n) { v_.reserve(n); }
  size_t capacity() const { return v_.capacity(); }

  void push(const T& x) {
    v_.push_back(x);
    sift_up(v_.size() - 1);
  }
  // Appends without ordering; fix() or heapify() must follow before the next top()/pop().
  void append(const T& x) { v_.push_back(x); }
  // Orders entries [from, size()) appended since the heap was last ordered, one by one.
  void fix(size_t from) {
    for (size_t i = from; i < v_.size(); ++i) sift_up(i);
  }
  void pop() {
    const T last = v_.back();
    v_.pop_back();
    if (!v_.empty()) sift_down(0, last);
  }
  // Keeps the entries `keep` accepts and orders them again: O(n).
  template <class Keep>
  void filter(Keep keep) {
    size_t w = 0;
    for (size_t i = 0; i < v_.size(); ++i)
      if (keep(v_[i])) v_[w++] = v_[i];
    v_.resize(w);
    heapify();
  }
  void heapify() {
    if (v_.size() < 2) return;
    for (size_t i = (v_.size() - 2) / 4 + 1; i-- > 0;) sift_down(i, v_[i]);
  }
  // The entries, unordered (for reserve_geometric and linear passes).
  std::vector<T>& raw() { return v_; }

 private:
  void sift_up(size_t i) {
    const T x = v_[i];
    while (i > 0) {
      const size_t p = (i - 1) / 4;
      if (!before_(x, v_[p])) break;
      v_[i] = v_[p];
      i = p;
    }
    v_[i] = x;
  }
  // Places x at hole i or below it.
  void sift_down(size_t i, const T x) {  // x by value: it may be v_[i]
    const size_t n = v_.size();
    while (true) {
      const size_t c = 4 * i + 1;
      if (c >= n) break;
      size_t m = c;
      const size_t e = c + 4 < n ? c + 4 : n;
      for (size_t k = c + 1; k < e; ++k)
        if (before_(v_[k], v_[m])) m = k;
      if (!before_(v_[m], x)) break;
      v_[i] = v_[m];
      i = m;
    }
    v_[i] = x;
  }

  Before before_;
  std::vector<T> v_;
};

}  // namespace hs
