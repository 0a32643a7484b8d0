// The flow tier's projected finishes: a binary min-heap of (time, id) with one entry per id and
// each id's position, so a class whose rate changed moves its entry (sift up or down) where the
// lazy heap it replaced pushed a second one and filtered the stale ones out (a pass over the whole
// heap after every re-solve that moved many rates: 14% of a 32-GPU FSSDP iteration on the flow
// tier). The entries are the same set as the lazy heap's valid ones, and every use reads them in
// (time, id) order or as a set, so results do not depend on the layout.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace hs::network {

class DueHeap {
 public:
  struct Due {
    double time;
    int id;
    // (time, id) order without a branch (sifts compare unpredictably); the same order as
    // `time != o.time ? time < o.time : id < o.id`, NaN and signed zeros included.
    bool operator<(const Due& o) const { return (time < o.time) | ((time == o.time) & (id < o.id)); }
    bool operator>(const Due& o) const { return o < *this; }
  };
  static constexpr uint32_t kNone = 0xffffffffu;

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Due& front() const { return heap_.front(); }
  const std::vector<Due>& entries() const { return heap_; }  // heap order
  bool contains(int id) const { return static_cast<size_t>(id) < pos_.size() && pos_[id] != kNone; }
  void clear() {
    for (const Due& d : heap_) pos_[d.id] = kNone;
    heap_.clear();
  }
  // Sets id's entry to `time` (inserted if absent).
  void set(int id, double time) {
    if (static_cast<size_t>(id) >= pos_.size()) pos_.resize(static_cast<size_t>(id) + 1, kNone);
    if (pos_[id] == kNone) {
      heap_.push_back({time, id});
      up(heap_.size() - 1);
      return;
    }
    const size_t i = pos_[id];
    const Due old = heap_[i];
    heap_[i].time = time;
    if (heap_[i] < old) up(i);
    else down(i);
  }
  void reserve(size_t n) {
    if (n > heap_.capacity()) heap_.reserve(std::max(n, 2 * heap_.capacity()));
  }
  // In bulk (many ids at once: one O(n) rebuild instead of a sift each): set_unordered() then order().
  void set_unordered(int id, double time) {
    if (static_cast<size_t>(id) >= pos_.size()) pos_.resize(static_cast<size_t>(id) + 1, kNone);
    if (pos_[id] == kNone) {
      pos_[id] = static_cast<uint32_t>(heap_.size());
      heap_.push_back({time, id});
    } else {
      heap_[pos_[id]].time = time;
    }
  }
  void erase_unordered(int id) { unlink(id); }
  void order() {
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
    for (size_t i = 0; i < heap_.size(); ++i) pos_[heap_[i].id] = static_cast<uint32_t>(i);
  }
  void erase(int id) {
    const size_t i = unlink(id);
    if (i >= heap_.size()) return;
    if (i > 0 && heap_[i] < heap_[(i - 1) / 2]) up(i);
    else down(i);
  }
  Due pop() {
    const Due d = heap_.front();
    erase(d.id);
    return d;
  }
  // Removes every entry due by `time`, calling fn(id) on each (in heap order), and rebuilds the rest.
  template <class Fn>
  void take_due(double time, Fn fn) {
    size_t w = 0;
    for (size_t i = 0; i < heap_.size(); ++i) {
      const Due d = heap_[i];
      if (d.time > time) {
        heap_[w++] = d;
      } else {
        pos_[d.id] = kNone;
        fn(d.id);
      }
    }
    heap_.resize(w);
    order();
  }
  // Calls fn on every entry due by `time`: the top of the heap (a parent is never later than its
  // children), walked down from the root without reordering it.
  template <class Fn>
  void for_due(double time, Fn fn) {
    walk_.clear();
    walk_.push_back(0);
    while (!walk_.empty()) {
      const size_t i = walk_.back();
      walk_.pop_back();
      if (i >= heap_.size() || heap_[i].time > time) continue;
      fn(heap_[i]);
      walk_.push_back(2 * i + 1);
      walk_.push_back(2 * i + 2);
    }
  }

 private:
  // Takes id's entry out, the last entry moving into its place unsifted: returns that place, or
  // size() when nothing moved.
  size_t unlink(int id) {
    if (!contains(id)) return heap_.size();
    const size_t i = pos_[id];
    pos_[id] = kNone;
    const Due last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return i;
    heap_[i] = last;
    pos_[last.id] = static_cast<uint32_t>(i);
    return i;
  }
  void up(size_t i) {
    const Due d = heap_[i];
    while (i > 0) {
      const size_t p = (i - 1) / 2;
      if (!(d < heap_[p])) break;
      heap_[i] = heap_[p];
      pos_[heap_[i].id] = static_cast<uint32_t>(i);
      i = p;
    }
    heap_[i] = d;
    pos_[d.id] = static_cast<uint32_t>(i);
  }
  void down(size_t i) {
    const Due d = heap_[i];
    const size_t n = heap_.size();
    while (true) {
      size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && heap_[c + 1] < heap_[c]) ++c;
      if (!(heap_[c] < d)) break;
      heap_[i] = heap_[c];
      pos_[heap_[i].id] = static_cast<uint32_t>(i);
      i = c;
    }
    heap_[i] = d;
    pos_[d.id] = static_cast<uint32_t>(i);
  }
  std::vector<Due> heap_;
  std::vector<uint32_t> pos_;  // per id: its entry's index, kNone if none
  std::vector<size_t> walk_;
};

}  // namespace hs::network
