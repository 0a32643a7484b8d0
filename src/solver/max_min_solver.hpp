// Max-min fair sharing of link capacities among flows, by progressive filling (water-filling).
//
// A flow f crosses links with consumption coefficients c_{f,l} (1 for a whole flow; an ECMP split
// sends a fraction of the bytes over each branch, so the flow consumes c_{f,l} x rate there) and
// stands for `weight` identical flows (a class with multiplicity: each member gets the same rate and
// the class consumes weight x c x rate on each link). Max-min fairness: no flow's rate can grow
// without lowering the rate of a flow whose rate is no larger. Progressive filling computes it:
//   repeat: for every link with unfrozen flows, its fair share = remaining capacity /
//           sum over its unfrozen flows of weight x coefficient; take the link with the smallest
//           share (a per-flow rate cap acts as a private link); freeze its unfrozen flows at that
//           share; subtract their consumption from every link they cross.
// One solve costs O(E + P log L) for E (flow, link) elements, L links of the component and P heap
// pops (one per bottleneck link plus one per stale key).
//
// Incremental: adding or removing a flow marks its links dirty; solve() re-solves only the
// connected component (links and flows reachable through shared links) of the dirty links. That is
// exact: rates in other components depend on nothing that changed. When only removals happened
// since the last solve, flows whose rate was below the smallest removed flow's rate keep it (their
// bottleneck links cannot contain a faster flow, and progressive filling reaches those levels before
// any link holding a removed flow), so filling restarts from that level. solve() lists the flows
// whose rate it changed (changed()), so a caller that integrates progress need only revisit those.
//
// Storage: one 32-byte record per flow (rate, cap, element range, flags) and its elements in one
// pool (ranges of a freed flow are reused by the next flow with as many elements), each element
// knowing its position in its link's flow list, so adding and removing a flow cost O(elements),
// never a search of a link's list, and filling touches about one cache line per flow. When the last
// solve's component held 90% of 1,024+ live flows, the next one sweeps every live flow in id order
// instead of searching for the component (a union of components solves exactly as each alone).
//
// This is the "pure component" of the flow-level network tier: capacities and incidence in, rates
// out; no engine or topology types.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace hs::solver {

struct Element {
  int32_t link;
  double coef;  // consumption per unit of rate (> 0)
};

struct SolverStats {
  uint64_t solves = 0;             // component re-solves
  uint64_t flows_recomputed = 0;   // flows in re-solved components, summed over solves
  uint64_t elements_visited = 0;   // elements frozen by progressive filling, summed over solves
  uint64_t rounds = 0;             // bottleneck links frozen, summed over solves
  uint64_t flows_kept = 0;         // flows whose rate a removal-only solve kept without recomputing
  uint64_t rates_changed = 0;      // flows listed in changed(), summed over solves
};

class MaxMinSolver {
 public:
  static constexpr double kUnlimited = std::numeric_limits<double>::infinity();

  int add_link(double capacity);
  double capacity(int link) const { return cap_[link]; }
  int add_flow(std::span<const Element> elements, double weight = 1.0, double rate_cap = kUnlimited);
  void remove_flow(int flow);
  // Re-solves the components touched since the last call.
  void solve();
  // Flows (alive) whose rate the last solve() set to a new value, new flows included.
  std::span<const int> changed() const { return changed_; }
  // Rate of one member of the flow class (valid after solve()).
  double rate(int flow) const { return rec_[flow].rate; }
  bool alive(int flow) const { return rec_[flow].alive != 0; }
  // Sum over flows crossing the link of weight x coef x rate.
  double link_load(int link) const;
  int num_links() const { return static_cast<int>(cap_.size()); }
  int num_flows() const { return static_cast<int>(rec_.size()); }
  const SolverStats& stats() const { return stats_; }

 private:
  void mark(int flow);
  void freeze(int flow, double rate);
  uint32_t alloc_elements(uint32_t count);
  // Links: capacity and the flows crossing them.
  std::vector<double> cap_;
  std::vector<std::vector<int32_t>> link_flows_;
  std::vector<char> link_dirty_;
  std::vector<int> dirty_links_;
  // Element pool: flow f owns elems_[rec_[f].ebegin .. + rec_[f].ecount).
  struct Elem {
    int32_t link;
    uint32_t pos;  // index of the flow in link_flows_[link]
    double wc;     // weight x coef
  };
  std::vector<Elem> elems_;
  std::vector<std::vector<uint32_t>> free_ranges_;  // by element count
  // Flows: one 32-byte record each, so a solve touches one cache line per flow plus its elements.
  struct Rec {
    double rate = 0, cap = 0;
    uint32_t ebegin = 0, ecount = 0;
    uint32_t stamp = 0;   // component search
    uint8_t frozen = 0;   // 0 unfrozen, 1 frozen, 2 frozen at a new rate
    uint8_t alive = 0;
  };
  std::vector<Rec> rec_;
  std::vector<int> free_ids_;
  // Scratch reused across solves.
  std::vector<uint32_t> link_stamp_;
  uint32_t stamp_ = 0;
  std::vector<double> rem_, sumw_;
  std::vector<int> capped_, changed_, added_free_;
  std::vector<std::pair<double, int>> heap_;
  std::vector<int> comp_links_, comp_flows_;
  double min_removed_rate_ = kUnlimited;  // since the last solve
  size_t last_component_ = 0;             // flows the last solve re-solved
  bool added_ = false;                    // a flow was added since the last solve
  SolverStats stats_;
};

}  // namespace hs::solver
