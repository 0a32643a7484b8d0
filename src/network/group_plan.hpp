// How FlowNetwork grouped a task's transfers into classes (flows of one task that cross the same
// links that may bind, with the same fractions and rate cap: network/flow_network.hpp), kept for
// the next tasks with the same transfers. The grouping depends only on each transfer's (src, dst,
// rate cap) and on which transfers make flows (src != dst, bytes > 0), not on the sizes, so a task
// listing the same endpoints and caps in the same order gets the same classes: the ring
// all-reduces of a data-parallel or replica group repeat them every layer. Reusing the record
// skips the hashing and the topology's per-pair tables (a cache miss or two per transfer).
//
// Invariant: for the transfers `key` describes, gid[i] is transfer i's class (-1: makes no flow),
// and class g has count[g] members, elements elems[ebegin[g], ebegin[g + 1]) (exactly its members'
// binding hops), cap[g], first member first[g]; alpha = the largest route latency of the transfers
// that make flows; flows = their number.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "network/transfer.hpp"
#include "solver/max_min_solver.hpp"

namespace hs::network {

struct GroupPlan {
  struct Key {
    int src, dst;
    uint64_t cap_bits;  // the rate cap's bits (0 = none), or all ones for a transfer making no flow
    bool operator==(const Key&) const = default;
  };
  std::vector<Key> key;
  std::vector<int> gid;
  std::vector<uint32_t> count, ebegin;
  std::vector<int> first;
  std::vector<double> cap;
  std::vector<solver::Element> elems;
  double alpha = 0;
  int flows = 0;
  uint64_t used = 0;  // when last matched or recorded (least recently used goes first)

  static Key key_of(const Transfer& tr) {
    if (tr.src == tr.dst || tr.bytes <= 0) return {tr.src, tr.dst, ~uint64_t{0}};
    return {tr.src, tr.dst, tr.rate_cap > 0 ? std::bit_cast<uint64_t>(tr.rate_cap) : 0};
  }
  bool matches(std::span<const Transfer> co) const {
    if (co.size() != key.size()) return false;
    for (size_t i = 0; i < co.size(); ++i)
      if (!(key_of(co[i]) == key[i])) return false;
    return true;
  }
};

// A few recent plans. Tasks of at most kMaxTransfers transfers are recorded (the larger ones,
// e.g. an all-reduce ring over 4,096 GPUs, do not repeat often enough to pay for the memory).
class GroupPlans {
 public:
  static constexpr size_t kMaxTransfers = size_t{1} << 16;
  static constexpr size_t kPlans = 4;

  const GroupPlan* find(std::span<const Transfer> co) {
    for (auto& p : plans_)
      if (p.matches(co)) {
        p.used = ++clock_;
        return &p;
      }
    return nullptr;
  }
  // A slot for a new plan (an empty one, or the least recently used): the caller fills it.
  GroupPlan& slot() {
    if (plans_.size() < kPlans) {
      plans_.emplace_back();
    } else {
      size_t lru = 0;
      for (size_t i = 1; i < plans_.size(); ++i)
        if (plans_[i].used < plans_[lru].used) lru = i;
      std::swap(plans_[lru], plans_.back());
    }
    GroupPlan& p = plans_.back();
    p.used = ++clock_;
    return p;
  }

 private:
  std::vector<GroupPlan> plans_;
  uint64_t clock_ = 0;
};

}  // namespace hs::network
