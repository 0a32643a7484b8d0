#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "util/exact_memo.hpp"

namespace {
hs::MemoKey key_of(const std::vector<double>& v, const std::vector<char>& tag = {}) {
  hs::MemoKey k;
  k.add_bytes(tag.data(), tag.size());
  k.add(std::span<const double>(v));
  return k;
}
}  // namespace

TEST_CASE("ExactMemo: a hit only for a key equal in every bit") {
  hs::ExactMemo<int> memo(1 << 20);
  memo.insert(key_of({1.0, 0.0, 3.0}), 7);
  REQUIRE(memo.find(key_of({1.0, 0.0, 3.0})) != nullptr);
  CHECK(*memo.find(key_of({1.0, 0.0, 3.0})) == 7);
  CHECK(memo.find(key_of({1.0, -0.0, 3.0})) == nullptr);  // bit patterns, not ==
  CHECK(memo.find(key_of({1.0, 0.0, std::nextafter(3.0, 4.0)})) == nullptr);
  CHECK(memo.find(key_of({1.0, 0.0})) == nullptr);
  CHECK(memo.find(key_of({1.0, 0.0, 3.0}, {'a'})) == nullptr);
  // Bytes are length-prefixed: {} then a word of zeros differs from a byte 0 in the tag.
  CHECK(memo.find(key_of({0.0}, {})) == nullptr);
  memo.insert(key_of({0.0}, {0}), 1);
  CHECK(memo.find(key_of({0.0}, {})) == nullptr);
  CHECK(memo.hits() == 2);
}

TEST_CASE("ExactMemo: random keys against a map of every key stored; the budget drops the least recently used") {
  // Keys of 1 .. 4 small doubles (many collide in value but never in bits unless equal), values their
  // insertion number. With a budget for about 16 entries, every find either misses or returns the
  // value stored under exactly that key; entries used recently survive, so a key found in the last
  // few lookups is still there.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> len(1, 4), digit(0, 3);
  // An entry: its key (the tag's length, the vector's length, 1 .. 4 values) and the value.
  const size_t largest = 6 * sizeof(uint64_t) + sizeof(int), smallest = 3 * sizeof(uint64_t) + sizeof(int);
  hs::ExactMemo<int> memo(16 * largest);
  std::map<std::vector<double>, int> truth;
  int hits = 0;
  for (int i = 0; i < 4000; ++i) {
    std::vector<double> v(len(rng));
    for (double& x : v) x = digit(rng) * 0.5;
    const auto k = key_of(v);
    if (const int* got = memo.find(k)) {
      REQUIRE(truth.count(v) == 1);
      CHECK(*got == truth[v]);
      ++hits;
      CHECK(*memo.find(k) == truth[v]);  // just used: still there
      continue;
    }
    truth[v] = i;
    memo.insert(k, i);
    CHECK(memo.find(k) != nullptr);
    CHECK(memo.size() <= 16 * largest / smallest);  // within the budget
    CHECK(memo.size() >= std::min<size_t>(truth.size(), 16));  // and nothing dropped below it
  }
  CHECK(hits > 0);
  hs::ExactMemo<int> tiny(8);  // smaller than any entry: nothing kept
  tiny.insert(key_of({1.0}), 1);
  CHECK(tiny.size() == 0);
  CHECK(tiny.find(key_of({1.0})) == nullptr);
}

TEST_CASE("MemoKey: the hash is kept between calls and follows every change to the words") {
  // hash() is computed once per key and reused; any add() or clear() must drop it: a key hashed,
  // then extended, hashes as a fresh key with the same words, and a cleared key as an empty one.
  hs::MemoKey a = key_of({1.0, 2.0});
  const uint64_t h12 = a.hash();
  CHECK(a.hash() == h12);
  a.add(3.0);
  CHECK(a.hash() != h12);
  hs::MemoKey b = key_of({1.0, 2.0});
  b.add(3.0);
  CHECK(a.hash() == b.hash());
  const std::vector<double> more{4.0, 5.0};
  a.add(std::span<const double>(more));
  b.add(std::span<const double>(more));
  CHECK(a.hash() == b.hash());
  const char tag[] = {'x'};
  const uint64_t before = a.hash();
  a.add_bytes(tag, 1);
  CHECK(a.hash() != before);
  a.clear();
  CHECK(a.hash() == hs::MemoKey().hash());
}
