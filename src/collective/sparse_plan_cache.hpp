// A memo of sparse collectives' plans (collective/sparse_plan.hpp) for one topology, broadcast and
// channel count: the transfers of spAG(P0, P1) or spRS(P1, P0) with sparse_finish's rate caps, the
// latency it adds, and their time alone on the analytic tier, keyed by the placement itself (every
// chunk's owner and holders), the chunk's bytes and the direction.
//
// FSSDP asks for the same placements again and again: the overlap-degree search times a layer's
// spAG at several t every iteration, the iteration binds the chosen plan's spAG and spRS, and FSDP's
// placement (every expert everywhere) never changes. A plan is a pure function of its key on a
// fixed topology, so a hit returns exactly what a fresh build would (tests/unit/collective checks it
// on random placements); the memo only saves the work. It forgets everything when it holds more
// than `capacity` transfers (so memory stays bounded; results do not depend on it).
#pragma once

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <vector>

#include "collective/analytic_network.hpp"
#include "collective/sparse_plan.hpp"
#include "topology/topology.hpp"

namespace hs::collective {

class SparsePlanCache {
 public:
  struct Plan {
    Coflow flows;         // sparse_allgather / sparse_reduce_scatter, caps set by sparse_finish
    double latency = 0;   // what sparse_finish returned
    double time = -1;     // flows' coflow_time + latency (0 without flows); -1 until asked
  };

  // node_of: GPU -> node for every GPU of `topo` (the placements use topology GPU ids).
  SparsePlanCache(const topology::Topology& topo, std::vector<int> node_of, BroadcastAlgo algo, int channels,
                  std::size_t capacity = std::size_t{1} << 20);

  // The plan of placement `p` (spRS when `reduce`). Shared: it stays valid after later calls.
  std::shared_ptr<const Plan> plan(const SparsePlacement& p, double chunk_bytes, bool reduce);
  // Its time alone on `net` (which must time this cache's topology): coflow_time + latency, 0
  // without copies.
  double time(const SparsePlacement& p, double chunk_bytes, bool reduce, AnalyticNetwork& net);

  std::size_t hits() const { return hits_; }
  std::size_t misses() const { return misses_; }

 private:
  struct Key {
    SparsePlacement p;
    double bytes = 0;
    bool reduce = false;
  };
  // A key to look up without copying its placement (heterogeneous lookup: a hit copies nothing).
  struct KeyView {
    const SparsePlacement& p;
    double bytes;
    bool reduce;
  };
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(const Key& k) const { return (*this)(KeyView{k.p, k.bytes, k.reduce}); }
    std::size_t operator()(const KeyView& k) const;
  };
  struct KeyEq {
    using is_transparent = void;
    static bool same(const KeyView& a, const KeyView& b) {
      return a.bytes == b.bytes && a.reduce == b.reduce && a.p.owner == b.p.owner && a.p.replicas == b.p.replicas;
    }
    static KeyView view(const Key& k) { return {k.p, k.bytes, k.reduce}; }
    bool operator()(const Key& a, const Key& b) const { return same(view(a), view(b)); }
    bool operator()(const KeyView& a, const Key& b) const { return same(a, view(b)); }
    bool operator()(const Key& a, const KeyView& b) const { return same(view(a), b); }
  };
  std::shared_ptr<Plan> entry(const SparsePlacement& p, double chunk_bytes, bool reduce);

  const topology::Topology& topo_;
  std::vector<int> node_of_;
  BroadcastAlgo algo_;
  int channels_;
  std::size_t capacity_, held_ = 0, hits_ = 0, misses_ = 0;
  std::unordered_map<Key, std::shared_ptr<Plan>, KeyHash, KeyEq> map_;
};

}  // namespace hs::collective
