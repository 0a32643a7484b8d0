// The pairs of a coflow that FlowNetwork starts directly (every transfer its own class), with what
// the topology says about them: each pair's binding elements, packed in transfer order, and the
// largest route latency among them. Recorded from one task and reused by the next task whose
// transfers (those that make flows: src != dst, bytes > 0) list the same (src, dst) pairs in the
// same order: an EP all-to-all repeats its groups' pairs in every layer, so its flows' elements
// are then read in order from one packed array instead of from the topology's per-pair tables
// (scattered over the N x N pair index: a cache miss or two per transfer), and the latency
// maximum, a function of the pair list alone, is not recomputed.
//
// Invariant: elements(k) = the binding hops of pairs[k] as (link, fraction) elements, in route
// order, exactly as Topology::binding_hops lists them; alpha = max over the pairs of
// route_latency (0 if none). Empty (matches nothing) until a recording is complete.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "network/transfer.hpp"
#include "solver/max_min_solver.hpp"
#include "topology/topology.hpp"

namespace hs::network {

struct PairPlan {
  std::vector<uint64_t> pairs;    // (src << 32) | dst per flow-making transfer, in order
  std::vector<uint32_t> ebegin;   // pair k's elements: elems[ebegin[k], ebegin[k + 1])
  std::vector<solver::Element> elems;
  double alpha = 0;               // largest route latency of the pairs
  bool ready = false;             // a complete recording

  static uint64_t key(int src, int dst) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
  }
  // Whether `co`'s flow-making transfers list exactly `pairs`, in order.
  bool matches(std::span<const Transfer> co) const {
    if (!ready) return false;
    size_t k = 0;
    for (const auto& tr : co) {
      if (tr.src == tr.dst || tr.bytes <= 0) continue;
      if (k == pairs.size() || pairs[k] != key(tr.src, tr.dst)) return false;
      ++k;
    }
    return k == pairs.size();
  }
  std::span<const solver::Element> elements(size_t k) const {
    return {elems.data() + ebegin[k], ebegin[k + 1] - ebegin[k]};
  }
  void clear() {
    ready = false;
    pairs.clear();
    ebegin.clear();
    elems.clear();
  }
  // A new recording of `count` pairs with `elements` elements in all (capacity only); complete
  // once the caller has added every pair and set alpha (finish()).
  void begin(size_t count, size_t elements) {
    clear();
    pairs.reserve(count);
    ebegin.reserve(count + 1);
    elems.reserve(elements);
    ebegin.push_back(0);
  }
  // Appends a pair and its binding hops; returns its elements (valid until the next add()).
  std::span<const solver::Element> add(int src, int dst, const topology::HopSeq& hops) {
    pairs.push_back(key(src, dst));
    for (const auto& h : hops) elems.push_back({h.link, h.fraction});
    ebegin.push_back(static_cast<uint32_t>(elems.size()));
    return elements(pairs.size() - 1);
  }
  void finish(double latency) {
    alpha = latency;
    ready = true;
  }
};

}  // namespace hs::network
