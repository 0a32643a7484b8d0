// A memo of computed values keyed by their exact inputs, for work that the same inputs repeat (a
// stateful strategy on a trace that cycles meets the same iteration again every num_records
// iterations: the same expert durations, the same coflows, the same simulation).
//
// The key is a sequence of 64-bit words that the caller writes from everything the value depends
// on (MemoKey: doubles by their bit patterns, so -0.0 and 0.0 differ and a NaN equals only itself
// bit for bit). A lookup hashes the key to find candidates and then compares the stored key word
// for word: a hit is a key equal in every bit, never a hash trusted alone, so the value returned is
// the one a fresh computation gives. Deterministic: no addresses, no std::hash, no clock.
//
// Cost: O(key words) to hash and compare per lookup; memory: the keys and values kept, bounded by a
// byte budget (the least recently used entry dropped first; an entry larger than the budget is not
// kept). Values count sizeof(Value) plus what the caller says they hold.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace hs {

// The words of a key, written in a fixed order by the caller. The buffer is kept between keys
// (clear() keeps its capacity): writing a key costs a store per word, no allocation once warm.
class MemoKey {
 public:
  void clear() { size_ = 0, hashed_ = false; }
  void add(uint64_t w) {
    hashed_ = false;
    if (size_ == words_.size()) grow(1);
    words_[size_++] = w;
  }
  void add(double d) {
    uint64_t w;
    std::memcpy(&w, &d, sizeof w);
    add(w);
  }
  void add(std::span<const double> v) {
    add(static_cast<uint64_t>(v.size()));
    if (v.empty()) return;
    if (size_ + v.size() > words_.size()) grow(v.size());
    std::memcpy(words_.data() + size_, v.data(), v.size() * sizeof(double));
    size_ += v.size();
  }
  // Bytes (chars, small enums), eight to a word, the length first.
  void add_bytes(const void* data, size_t n) {
    add(static_cast<uint64_t>(n));
    const size_t k = (n + 7) / 8;
    if (k == 0) return;
    if (size_ + k > words_.size()) grow(k);
    words_[size_ + k - 1] = 0;
    std::memcpy(words_.data() + size_, data, n);
    size_ += k;
  }
  std::span<const uint64_t> words() const { return {words_.data(), size_}; }
  // Four independent multiply-xor lanes (so the word chain does not serialize on one multiply), then
  // a final avalanche: it only picks candidates, find() compares the words. Computed once per key
  // (a miss's find() and insert() ask for it both).
  uint64_t hash() const {
    if (!hashed_) hash_ = compute_hash(), hashed_ = true;
    return hash_;
  }

 private:
  uint64_t compute_hash() const {
    constexpr uint64_t kM = 0x9e3779b97f4a7c15ull;
    const uint64_t* w = words_.data();
    uint64_t h0 = 0x243f6a8885a308d3ull ^ size_, h1 = 0x13198a2e03707344ull, h2 = 0xa4093822299f31d0ull,
             h3 = 0x082efa98ec4e6c89ull;
    size_t i = 0;
    for (; i + 4 <= size_; i += 4) {
      h0 = (h0 ^ w[i]) * kM;
      h1 = (h1 ^ w[i + 1]) * kM;
      h2 = (h2 ^ w[i + 2]) * kM;
      h3 = (h3 ^ w[i + 3]) * kM;
    }
    for (; i < size_; ++i) h0 = (h0 ^ w[i]) * kM;
    auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
    uint64_t h = h0 ^ rotl(h1, 17) ^ rotl(h2, 31) ^ rotl(h3, 47);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
  }
  void grow(size_t k) { words_.resize(std::max(words_.size() * 2, size_ + k)); }
  std::vector<uint64_t> words_;  // [0, size_) the key; the rest spare capacity
  size_t size_ = 0;
  mutable uint64_t hash_ = 0;
  mutable bool hashed_ = false;
};

template <class Value>
class ExactMemo {
 public:
  explicit ExactMemo(size_t budget_bytes) : budget_(budget_bytes) {}
  // The value stored under a key equal to `key` in every word (marked most recently used), or null.
  const Value* find(const MemoKey& key) {
    const uint64_t h = key.hash();
    auto [lo, hi] = index_.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      Entry& e = *it->second;
      const auto w = key.words();
      if (e.key.size() == w.size() && std::equal(w.begin(), w.end(), e.key.begin())) {
        lru_.splice(lru_.begin(), lru_, it->second);
        ++hits_;
        return &e.value;
      }
    }
    ++misses_;
    return nullptr;
  }
  // Stores `value` under `key` (not already stored: find() missed it); `value_bytes` is what the
  // value holds beyond sizeof(Value). Drops least recently used entries to stay within the budget.
  void insert(const MemoKey& key, Value value, size_t value_bytes = 0) {
    const auto w = key.words();
    const size_t bytes = w.size() * sizeof(uint64_t) + sizeof(Value) + value_bytes;
    if (bytes > budget_) return;
    while (!lru_.empty() && used_ + bytes > budget_) drop_last();
    lru_.push_front(Entry{key.hash(), std::vector<uint64_t>(w.begin(), w.end()), std::move(value), bytes});
    index_.emplace(lru_.front().hash, lru_.begin());
    used_ += bytes;
  }
  long hits() const { return hits_; }
  long misses() const { return misses_; }
  size_t size() const { return lru_.size(); }

 private:
  struct Entry {
    uint64_t hash;
    std::vector<uint64_t> key;
    Value value;
    size_t bytes;
  };
  void drop_last() {
    auto last = std::prev(lru_.end());
    auto [lo, hi] = index_.equal_range(last->hash);
    for (auto it = lo; it != hi; ++it)
      if (it->second == last) {
        index_.erase(it);
        break;
      }
    used_ -= last->bytes;
    lru_.pop_back();
  }
  size_t budget_;
  size_t used_ = 0;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_multimap<uint64_t, typename std::list<Entry>::iterator> index_;
  long hits_ = 0, misses_ = 0;
};

}  // namespace hs
