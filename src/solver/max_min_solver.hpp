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
// One solve costs O(E + P log L + C log C) for E (flow, link) elements, L links of the component,
// P heap pops (one per bottleneck link plus one per stale key) and C rate-capped flows (in (cap, id)
// order: listed by id, off a bitset when the component was found by search, then in one stable
// bucket pass by cap when they hold at most 16 distinct caps, as an all-to-all's NCCL connections
// do; a sort otherwise). Filling starts while a component of fewer than 1,024 live flows is
// searched (each link's sums in the same order as a pass afterwards), and a link popped that would
// be pushed back and popped again at once (its key stale but still the least, or a capped flow
// freezing first) is kept in hand: the pop order is the (share, link) order whatever the heap's
// layout, so none of this changes a bit (tests/unit/solver/component_solve_reference_test.cpp).
//
// Incremental: adding or removing a flow, or changing its weight (set_weight: a class losing a
// member) or its rate cap (set_rate_cap: a slowed task's flows), marks its links dirty, and solve()
// does one of two things.
// The lazy re-fill (max_min_refill.cpp) replays progressive filling from the changed links only,
// joining a link when a flow crossing it gets a new rate, so its work follows the rates that
// change; the component solve below re-solves the whole connected component (links and flows
// reachable through shared links) of the dirty links, whose work follows the component. solve()
// takes the re-fill unless many flows were added (a collective starting) or the last solve moved a
// large share of what it visited (an all-to-all-v, where every completion moves most rates: there
// the re-fill would visit everything and cost more per flow); then the component solve, until one
// moves under 10% of its flows. (A DeepSeek-V3-like iteration on 1,024 GPUs: component solves
// alone recomputed 1.0e9 flows over its 41,329 solves for 38M rate changes.)
//
// Component solve: rates in other components depend on nothing that changed, and are kept. When
// only removals happened since the last solve, flows whose rate was below the smallest removed
// flow's rate keep it (their bottleneck links cannot contain a faster flow, and progressive filling
// reaches those levels before any link holding a removed flow), so filling restarts from that level.
// Either way solve() lists the flows whose rate it changed (changed()), so a caller that integrates
// progress need only revisit those, and records per flow the link it froze at and per link its level,
// which the re-fill starts from.
//
// Storage: one 24-byte record per flow (cap, element range, flags), its rate and filling state in
// dense arrays, and its elements in one pool (ranges of a freed flow are reused by the next flow
// with as many elements), each element knowing its position in its link's flow list, so adding and
// removing a flow cost O(elements), never a search of a link's list (removal moves the link's last
// flow into the hole, and fixes up that flow's element for the link, which the list entry names).
// remove_flows() removes a batch as one by one, but clears at once the lists of the links that lose
// all their flows (a mass completion: no fix-ups there); reserve() sizes the records and the pool for
// a batch of adds in one step. A link's list holds each flow's id, its element on the link and a
// copy of that element's weight x coef (a link joining the re-fill sums its flows' weights without
// reading their elements): freezing a bottleneck link's flows reads the (cached) state byte, skips
// the flows already frozen, and touches only the elements and rate of the others. Each link's
// filling state (capacity, remaining capacity, unfrozen weight and count, level, ...) is one
// cache-line record.
//
// Components: with 1,024+ live flows a union-find over links (joined by every flow added; rebuilt
// from the live flows when removals may have split it, less often while rebuilds split nothing)
// tells in O(dirty links) whether the dirty links' component(s) hold 90% of the live flows (one
// all-to-all spans everything, or a data-parallel all-reduce joins the EP groups): then every live
// flow is re-solved, in id order, without a search (a union of components solves as each alone);
// otherwise the component is searched and its flows listed in id order too, so a component solves
// bit for bit the same either way, and the others keep their rates untouched. (A sweep recomputes
// the untouched components, which can move a rate in its last bits when earlier removal-only solves
// kept some of their flows' rates.) Below 1,024 live flows components are searched, in search order.
//
// This is the "pure component" of the flow-level network tier: capacities and incidence in, rates
// out; no engine or topology types.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace hs::solver {

struct Element {
  int32_t link;
  double coef;  // consumption per unit of rate (> 0)
};

struct SolverStats {
  uint64_t solves = 0;             // re-solves
  uint64_t refills = 0;            // of which by the lazy re-fill (the others: component solves)
  uint64_t flows_recomputed = 0;   // flows in re-solved components (touched by re-fills), summed over solves
  uint64_t elements_visited = 0;   // elements frozen by progressive filling, summed over solves
  uint64_t rounds = 0;             // bottleneck links frozen, summed over solves
  uint64_t flows_kept = 0;         // flows whose rate a removal-only solve kept without recomputing
  uint64_t rates_changed = 0;      // flows listed in changed(), summed over solves
};

class MaxMinSolver {
 public:
  static constexpr double kUnlimited = std::numeric_limits<double>::infinity();

  int add_link(double capacity);
  double capacity(int link) const { return ln_[link].cap; }
  int add_flow(std::span<const Element> elements, double weight = 1.0, double rate_cap = kUnlimited);
  // Room for `flows` more flows with `elements` elements in all (a batch of add_flow calls).
  void reserve(size_t flows, size_t elements);
  void remove_flow(int flow);
  // A live flow's weight changed (a class losing members), its links and coefficients as at
  // add_flow (the same elements, in order): the next solve treats a lighter flow as a removal at
  // its rate (flows below that rate keep theirs: its links' levels are at least its rate, and less
  // weight only raises a share) and a heavier one as an add, and re-solves it at the new weight.
  // Its rate stays until then, and is listed in changed() only if the solve moves it.
  void set_weight(int flow, std::span<const Element> elements, double weight);
  // A live flow's rate cap changed (kUnlimited: none), in place: the flow tier's slowed tasks
  // (network/flow_network.hpp). Progressive filling is the same as before below the lower of its
  // rate and the new cap (below its rate the flow was unfrozen, below the new cap it still is), so
  // the next solve seeds its links at that level (a removal's seed: slower flows keep their rates)
  // and re-fills the flow from there; nothing is re-solved when the cap cannot move it (a cap at or
  // above its rate that did not freeze it: a link did). Its rate stays until that solve, and is
  // listed in changed() only if the solve moves it.
  void set_rate_cap(int flow, double rate_cap);
  // remove_flow() on each, in order (same result), clearing the lists of links that lose all their
  // flows at once instead of one swap-with-last fix-up per element (a mass completion).
  void remove_flows(std::span<const int> flows);
  // Re-solves what the adds and removals since the last call can change (see refill()).
  void solve();
  // How solve() works (set before the first add): re-fill lazily from the changed links
  // (max_min_refill.cpp), re-solve the whole component(s) of the changed links, or choose per solve
  // (the default; see solve()). Results agree to ~1e-9 (the tests compare them).
  enum class Mode { adaptive, lazy, component };
  void set_mode(Mode m) { mode_ = m; }
  // Flows (alive) whose rate the last solve() set to a new value, new flows included.
  std::span<const int> changed() const { return changed_; }
  // Rate of one member of the flow class (valid after solve()).
  double rate(int flow) const { return hot_[flow].rate; }
  // A member's rate cap (kUnlimited if none), as given to add_flow.
  double rate_cap(int flow) const { return rec_[flow].cap; }
  bool alive(int flow) const { return rec_[flow].alive != 0; }
  // Sum over flows crossing the link of weight x coef x rate.
  double link_load(int link) const;
  int num_links() const { return static_cast<int>(ln_.size()); }
  int num_flows() const { return static_cast<int>(rec_.size()); }
  const SolverStats& stats() const { return stats_; }

 private:
  // The lazy re-fill (max_min_refill.cpp) and its steps.
  void refill();
  struct Event {
    double level;
    uint64_t key;  // kind << 32 | id: equal levels order seeds, links, caps, deadlines
    // (level, key) order without a branch: the heap's sifts compare unpredictably, and a
    // mispredicted branch per comparison was ~6% of a refill-bound run (the same order, NaN and
    // signed zeros included, as `level != o.level ? level > o.level : key > o.key`).
    bool operator>(const Event& o) const { return (level > o.level) | ((level == o.level) & (key > o.key)); }
  };
  enum EventKind : uint64_t { kSeed = 0, kLink = 1, kCapGroup = 2, kCapFlow = 3, kDeadline = 4 };
  void push_event(double level, EventKind kind, uint32_t id);
  bool touched(int f) const { return hot_[f].tstamp == stamp_; }
  void set_bott(int f, int32_t bott) {  // keeps own_ counting
    if (hot_[f].bott >= 0) --ln_[hot_[f].bott].own;
    if (bott >= 0) ++ln_[bott].own;
    hot_[f].bott = bott;
  }
  bool in_refill(int l) const { return ln_[l].stamp == stamp_; }
  void make_dirty(int l, double x);
  void touch(int f);
  // An untouched flow joins the filling (converted on its dirty links but `skip`); its elements
  // start at `ebegin`.
  void unfreeze(int f, int skip, uint32_t ebegin);
  void queue_link(int l);          // a share event for a dirty link whose share may have fallen
  void add_capped(int f);
  void link_event(int l, double key);
  void refreeze(int f, uint32_t ebegin, double rate, int bott);
  double share(int l) const;
  double unfrozen_weight(int link) const;  // sum of wc over the link's unfrozen flows
  // Freezes flow f (elements from `ebegin`) at `rate`, bottlenecked at link `bott` (or kBottCap).
  void freeze(int f, uint32_t ebegin, double rate, int bott);
  uint32_t alloc_elements(uint32_t count);
  // Element pool: flow f owns elems_[rec_[f].ebegin .. + rec_[f].ecount); the two high bits of
  // `link` mark a flow's first and last elements, so a link's flow list can reach all of a flow's
  // elements from its own one without the record (links number under 2^30).
  struct Elem {
    uint32_t link;  // link | kFirst on the flow's first element | kLast on its last
    uint32_t pos;   // index of the flow in link_flows_[link]
    double wc;      // weight x coef
  };
  static constexpr uint32_t kLast = 0x80000000u, kFirst = 0x40000000u;
  static int link_of(const Elem& e) { return static_cast<int>(e.link & ~(kLast | kFirst)); }
  uint32_t first_elem(uint32_t e) const {  // the first element of the flow owning element e
    while (!(elems_[e].link & kFirst)) --e;
    return e;
  }
  // A link's flows: the flow id, its element for this link (a removal moving the list's last entry
  // into the hole updates that entry's element the same way), and a copy of the element's weight x
  // coef (set_weight keeps both): a link joining the re-fill sums its flows' weights off its own
  // list, where reading each flow's element was a cache miss per entry (40% of make_dirty, the
  // re-fill's largest term, on a DeepSeek-V3 step). 16 bytes: two per flow of an all-to-all among
  // 4,096 GPUs is 536 MB.
  struct LinkRef {
    int32_t flow;
    uint32_t eidx;
    double wc;  // = elems_[eidx].wc
  };
  // Per link, in one cache line, what filling and the re-fill read and write for each link they
  // visit (they were ten arrays, a cache line each per visit: a re-fill on a DeepSeek-V3 step makes
  // ~80 links dirty per solve, with ~4 flows each). Capacity; during a solve its stamp, remaining
  // capacity, unfrozen flows and their weight; kept across solves its level (the level it froze at,
  // kUnlimited: it bound no flow) and own (live flows that froze at it); in a re-fill its smallest
  // queued share event (key, kUnlimited: none), its pending flows' highest rate and whether pend_
  // is a heap yet, and whether pend_ holds anything to clear.
  struct alignas(64) LinkState {
    double cap = 0, rem = 0, sumw = 0;
    double level = std::numeric_limits<double>::infinity();
    double key = std::numeric_limits<double>::infinity();
    double pend_max = -std::numeric_limits<double>::infinity();
    uint32_t stamp = 0, unfrozen = 0, own = 0;
    uint8_t pend_heap = 0, pend_used = 0;
  };
  std::vector<LinkState> ln_;
  // The flows crossing each link.
  std::vector<std::vector<LinkRef>> link_flows_;
  std::vector<char> link_dirty_;
  std::vector<int> dirty_links_;
  std::vector<Elem> elems_;
  uint32_t elems_used_ = 0;  // elems_[0, elems_used_) is the pool; the rest is spare capacity
  std::vector<std::vector<uint32_t>> free_ranges_;  // by element count
  // Flows: a 24-byte record, and apart from it the two fields filling touches per visit (dense
  // arrays: a million flows' states fit in cache, so skipping a frozen flow costs no memory access).
  struct Rec {
    double cap = 0;
    uint32_t ebegin = 0, ecount = 0;
    uint32_t stamp = 0;  // component search
    uint8_t alive = 0;
  };
  std::vector<Rec> rec_;
  // Per flow, what a re-fill reads for each flow of a link it walks, in one place: the rate, the
  // link it froze at, the stamp of the last re-fill that touched it.
  struct Hot {
    double rate = 0;
    int32_t bott = -1;
    uint32_t tstamp = 0;
  };
  std::vector<Hot> hot_;
  // Per flow: bits 0-1 the filling state (0 unfrozen, 1 frozen, 2 frozen at a new rate), bit 2 set
  // when the flow has a rate cap.
  std::vector<uint8_t> state_;
  // Bit f set while flow f is alive and crosses a link: the whole-problem sweep reads 64 ids a word.
  std::vector<uint64_t> live_bits_;
  static constexpr uint8_t kCapped = 4;
  std::vector<int> free_ids_;
  // remove_flows(): per link, its elements among the flows removed, or kCleared when that is all.
  static constexpr uint32_t kCleared = 0xffffffffu;
  std::vector<uint32_t> gone_;
  std::vector<int> gone_links_;
  // Scratch reused across solves.
  uint32_t stamp_ = 0;
  std::vector<std::pair<double, int>> capped_, capped_tmp_;  // (cap, flow), ascending
  std::vector<int> changed_, added_free_;
  std::vector<std::pair<double, int>> heap_;
  std::vector<int> comp_links_, comp_flows_;
  std::vector<uint64_t> comp_bits_;  // component flows by id (large problems list them in id order)
  // Union-find over links, joined by every flow added (a removal splits nothing, so a class may
  // hold several components until rebuilt): the live flows per root tell, in O(dirty links), when
  // the dirty links' component(s) hold 90% of the live flows, and the sweep pays.
  int uf_find(int l);
  void uf_join(uint32_t ebegin, uint32_t ecount);  // the links of one flow, counted once at the root
  void uf_rebuild();
  std::vector<int32_t> uf_parent_;
  std::vector<int64_t> uf_flows_;  // per root: live flows with elements
  size_t live_linked_ = 0;         // live flows with elements
  size_t uf_removed_ = 0;          // removals since the last rebuild
  size_t uf_interval_ = 64;        // removals before a rebuild is tried (doubles when it splits nothing)
  double min_removed_rate_ = kUnlimited;  // since the last solve
  // Lazy re-fill state. Kept across solves: per flow the link it froze at (kBottCap: its cap;
  // kBottNone: none), per link the level it froze at (kUnlimited: it bound no flow), per link the
  // lowest level from which its flow set changed since the last solve (0 for an add).
  static constexpr int32_t kBottCap = -2, kBottNone = -1;
  Mode mode_ = Mode::adaptive;
  bool wide_ = false;  // the next solve re-solves the component (see solve())
  std::vector<double> seed_;
  std::vector<char> seed_added_;  // per link: a flow was added to it (or re-capped) since the last solve
  // Per solve: flows touched (Hot::tstamp), their old rate and filling state (state_ bit 0: frozen).
  std::vector<double> old_rate_;  // a touched flow's rate before the re-fill
  std::vector<int> touched_, added_ids_;
  std::vector<int> recapped_ids_;  // set_rate_cap() since the last solve: re-filled from their seed
  std::vector<Event> events_, seeds_;
  double cur_ = 0;  // level of the event being processed
  // Per link in the re-fill: flows still at their old rate counted as fixed consumption, which the
  // link must release when its share falls below theirs: (rate, flow), a max-heap once needed.
  std::vector<std::vector<std::pair<double, int>>> pend_;
  // Unfrozen capped flows by cap value (an NCCL connection's channels: a few values), or one event
  // per flow when there are more than kCapGroups distinct caps.
  static constexpr size_t kCapGroups = 16;
  std::vector<double> group_cap_;
  std::vector<std::vector<int>> group_flows_;
  std::vector<char> group_queued_;
  std::vector<int> cap_scratch_;
  bool added_ = false;                    // a flow was added since the last solve
  SolverStats stats_;
};

}  // namespace hs::solver
