// The flow-level network tier: every transfer of a running communication task is a flow over its
// route (ECMP branches as consumption coefficients), and rates are max-min fair over all link
// capacities, shared by every task in flight on every stream (solver/max_min_solver.hpp). Rates are
// re-solved only when a flow starts or ends (or a task's speed changes: see Speed below), on the
// component it touches. This is what sees NIC
// sharing, incast onto a hot GPU, and an all-to-all slowed by a concurrent sparse all-gather or
// data-parallel all-reduce; the analytic tier cannot.
//
// A task's duration = time until its last flow drains + its latency (the largest route latency of
// its transfers, plus any extra the collective layer adds, e.g. the per-step latencies of a ring).
// With a single coflow and no contention between its flows this equals the analytic tier's
// alpha + max over links (bytes / bandwidth).
//
// Classes. Flows of one task that cross the same links that may bind, with the same fractions, get
// the same max-min rate: the solver sees one flow per class, weighted by its members left, and the
// members finish in order of size (each finish lowers the class's weight by one in place,
// MaxMinSolver::set_weight: a removal at its rate for the solve, so the slower flows keep theirs). On
// fabrics where GPUs share a NIC (8 GPUs behind one NIC: 64 flows between two nodes form one
// class) this divides the solver's work; with a NIC per GPU every class has one member. Then the
// grouping (a hash of every transfer's elements, a table twice the task's size) is skipped: when no
// two of a task's transfers can share their binding elements (the topology identifies a GPU pair
// by them, see pair_identified_, and the task lists each pair once, in ascending order, as the
// collectives do) the classes are its transfers in order, as grouping would number them. Such a
// task's pairs, their binding elements and their largest route latency are recorded; the next
// such task with the same pairs in the same order (every layer's EP all-to-all) reads them from
// that record, in order, instead of from the topology's N x N tables (network/pair_plan.hpp).
// Likewise a grouped task's classes are recorded (a few recent ones) and reused by a task listing
// the same endpoints and rate caps in the same order, whatever its sizes (network/group_plan.hpp):
// the ring all-reduces of every layer's gradients repeat their groups.
//
// Cost. Flows carry only the links of their route that can ever be a bottleneck (Topology::may_bind:
// e.g. a PCIe hop in front of a slower NIC, or the leaf-spine links of a non-blocking fabric, never
// are; leaving them out changes no rate and splits collectives on disjoint nodes into separate
// components). A flow's progress is integrated lazily: it keeps
// (bytes left at time `since`, rate) and its projected finish sits in a heap with one entry per
// class, moved when its rate changes (network/due_heap.hpp); after a re-solve only the flows whose
// rate changed (MaxMinSolver::changed) are touched. So an event costs one component re-solve plus
// O(changed x log F), or O(F) when most entries move (the heap is then rebuilt). A mass completion (everything due at once, each class draining
// all its members) leaves the solver in one MaxMinSolver::remove_flows; a large task's solver
// records, element pool and heap entries are reserved once, not doubled to size (a uniform
// all-to-all among 1,024 GPUs: a million flows, set up, solved and torn down in about 0.25 s CPU).
//
// Precision. Exact event-by-event max-min needs one re-solve per distinct completion time: up to
// one per flow, and a skewed all-to-all-v among N GPUs has N(N-1) flows finishing at distinct
// times. `precision` = e > 0 merges completions: when the earliest projected finish is t_min (of a
// flow that started at s, in a task whose most loaded link needs D = bytes / capacity), every flow
// projected to finish by t_min + e x max(t_min - s, D) finishes in the same event, at the latest of
// those projected times. A collective is thus cut into about 1/e merge windows of its own duration,
// however skewed its flow sizes. Flows never finish early and every byte is delivered: the
// bandwidth a merged flow frees is handed out at the event, at most e x max(t_min - s, D) late, so
// the tier errs on the slow side, by about 2e of a collective's time (measured: network_bench).
// e = 0 is exact (tests compare it with the analytic tier to 1e-9).
//
// Speed (engine interference, engine/interference.hpp): a communication task slowed to speed s < 1
// by compute beside it (set_speed) gives each of its transfers i a rate cap of s x bytes_i / D, D
// its solo drain (its most loaded link's bytes / capacity, or, if longer, its slowest transfer's
// bytes / own rate cap: the analytic tier's D), combined by min with the transfer's own cap. Why:
// the kernel that moves a collective's bytes, slowed by the SMs and HBM it shares with compute,
// drains all its transfers evenly at s times its solo pace (the analytic tier's rigid coflow,
// network/coflow_network.hpp); where the network is slower already (sharing) the cap does not
// bind. Uncontended, every transfer then finishes at D / s and the task takes D / s + latency, the
// analytic tier's slowed time. A class gets s x (its largest member's bytes) / D, so that its last
// member finishes by D / s uncontended (exactly when its members are the same size, as an
// all-to-all's behind a shared NIC; a class whose link is its limit while its small members are
// left may end a little later). Progress made stays: only the rates change, from `now`
// (MaxMinSolver::set_rate_cap, then one re-solve with whatever else happened at that instant); at
// speed 1 the caps are the transfers' own again. Nothing of this runs, nor is kept, before a task
// is first slowed in a run: from then on each running task's classes are listed (task_classes_).
//
// One coflow alone (the `collective` command) has a faster way to the same answer where every
// transfer crosses at most four links that may bind: network/coflow_drain.hpp.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "network/transfer.hpp"
#include "engine/activity_model.hpp"
#include "network/due_heap.hpp"
#include "network/group_plan.hpp"
#include "network/pair_plan.hpp"
#include "solver/max_min_solver.hpp"
#include "topology/topology.hpp"

namespace hs::network {

struct FlowStats {
  uint64_t flows = 0;           // flows (transfers) started
  uint64_t classes = 0;         // solver flows made for them: a class joins a task's flows that cross the
                                // same bottleneck-capable links (one per flow on per-GPU-NIC fabrics)
  uint64_t solver_updates = 0;  // re-solves (one per event that started or finished flows)
  uint64_t events = 0;          // flow completions
  uint64_t completion_events = 0;  // distinct times at which flows completed
  uint64_t elements = 0;        // (flow, link) elements given to the solver, after pruning
  uint64_t groupings_reused = 0;  // tasks whose classes came from a recent task with the same transfers
  double bytes_offered = 0;     // bytes of the flows started
  double bytes_delivered = 0;   // rate x time integrated up to each completed flow's finish
};

// Default relative precision of merged completions (see the header comment); the network_bench
// target measures its error against exact (0) solves.
inline constexpr double kDefaultFlowPrecision = 1e-3;

class FlowNetwork final : public engine::ActivityModel {
 public:
  // `aggregate` = false gives every flow its own solver flow (tests compare the two).
  explicit FlowNetwork(const topology::Topology& topo, double precision = kDefaultFlowPrecision,
                       bool aggregate = true);
  // The transfers task `t` carries when it starts (replaces any previous assignment) and latency
  // added on top of its route latencies.
  void assign(engine::TaskId t, Coflow transfers, double extra_latency = 0);
  // The same, without a copy: the caller keeps `transfers` alive and unchanged until the run ends
  // or t is assigned again (an iteration's bytes, held by its plans: a DeepSeek-V3 step's
  // all-to-alls are 50M transfers, 1.2 GB a copy).
  void assign_view(engine::TaskId t, std::span<const Transfer> transfers, double extra_latency = 0);

  void reset(const engine::TaskGraph& g) override;
  void start(engine::TaskId t, double now) override;
  double next_completion() override;
  void advance_to(double now, std::vector<engine::TaskId>& finished) override;
  bool set_speed(engine::TaskId t, double speed, double now) override;
  const FlowStats& stats() const { return stats_; }
  const solver::SolverStats& solver_stats() const { return solver_.stats(); }
  double precision() const { return precision_; }

 private:
  // A class of flows of one task that cross the same links that may bind, with the same fractions:
  // max-min gives every member the same rate, so the solver sees one flow of weight = members left.
  // Members started together, so all have carried `progress` bytes by `since`; they finish in order
  // of size. Indexed by solver flow id (ids are reused); live while tag_[id] != 0. The next
  // member's size is in the record, the others' in members_: a class of one member (every class,
  // with a NIC per GPU) needs nothing else, and projecting or draining it reads only its record
  // (one cache miss where there were two).
  // 56 bytes: a million of them per all-to-all among 1,024 GPUs (the projected finish lives in the
  // due heap, the start time per task).
  struct Flow {
    double progress = 0;              // bytes each member has carried by `since`
    double since = 0, rate = 0;
    double size = 0;                  // the next member's size: the smallest not done
    engine::TaskId task = 0;
    int src = 0, dst = 0;             // one member's endpoints (all share the links that may bind)
    uint32_t mnext = 0, mend = 0;     // members_[mnext, mend): sizes of the members after it, ascending
  };
  struct Timer {
    double time;
    engine::TaskId task;
    bool operator>(const Timer& o) const { return time != o.time ? time > o.time : task > o.task; }
  };
  void settle();          // re-solve if flows started or ended, re-project the changed flows
  // A class is live while tag_ != 0: its version, which a re-made class (a solver id reused) bumps.
  void bump(int id) {
    if (++version_[id] == 0) version_[id] = 1;
    tag_[id] = version_[id];
  }
  // start() when every class has one member (`classes` transfers to start, `elements` binding
  // elements in all): no grouping. `planned`: the transfers' pairs are plan_'s, whose elements and
  // latency it takes; otherwise they come from the topology, recorded as plan_ if at most
  // kPlanMaxPairs (a larger task, e.g. one all-to-all among 1,024 GPUs, is unlikely to repeat).
  void start_direct(engine::TaskId t, double now, size_t classes, size_t elements, bool planned);
  // start() when transfers may share a class, and no recent task had the same transfers: groups
  // them into `p` (classes, latency, count; not its key) and adds their bytes.
  void group(std::span<const Transfer> co, GroupPlan& p);
  static constexpr size_t kPlanMaxPairs = size_t{1} << 19;  // ~23 MB at two elements a pair
  // The record of solver flow `id`: a live class of task t, members of sizes `size` then
  // members_[mnext, mend), each having carried `progress` bytes by `now`, rate to be solved.
  void make_class(int id, engine::TaskId t, int src, int dst, double size, uint32_t mnext, uint32_t mend,
                  double progress, double now);
  // start()'s end: the task's counts, start time, duration scale and latency.
  void finish_start(engine::TaskId t, double now, int count, size_t classes, double alpha);
  // Finishes the members of class `id` done by `now` (stats, the task's count, its timer) and
  // marks the class dead; returns the first member left (members_ index, = mend if none: the record's
  // size is always done). The
  // caller takes it out of the solver, or lowers its weight when members are left.
  uint32_t drain(int id, double now);
  void finish_class(int id, double now);
  double project(const Flow& f) const;  // finish of the next member at the current rate
  // set_speed()'s: the running tasks' classes listed from the live records, and task t's solo drain
  // (the analytic tier's D: scale_, or its slowest transfer's bytes / own cap if longer).
  void track_classes();
  double solo_drain(engine::TaskId t) const;
  void binding_elements(int src, int dst);  // scratch_ = the route's links that may bind

  const topology::Topology& topo_;
  double precision_;
  bool aggregate_;
  // Transfers between different GPU pairs never share a class: the topology is endpoint-separable
  // and every GPU's egress (ingress) hops of each locality its routes use hold a link no other
  // GPU's egress (ingress) hops hold (one NIC per GPU), so equal binding elements mean equal pairs.
  bool pair_identified_ = false;
  solver::MaxMinSolver solver_;
  std::vector<std::span<const Transfer>> coflow_;  // per task: its transfers (owned_'s, or the caller's)
  std::vector<Coflow> owned_;                       // per task: the transfers assign() was given
  std::vector<double> extra_;
  std::vector<double> alpha_;       // per task, at start
  std::vector<double> scale_;       // per task: max over links of its bytes / capacity
  std::vector<double> task_start_;  // per task: when its flows started
  std::vector<double> link_bytes_;  // scratch for scale_
  std::vector<int> bytes_links_;
  std::vector<int> pending_;        // per task: flows not yet drained
  std::vector<Flow> flow_;
  std::vector<double> members_;     // sizes of grouped classes' later members, ascending per class
  uint64_t live_classes_ = 0;
  // Grouping scratch for start(): per class the previous class with the same hash.
  std::vector<int> gnext_same_hash_;
  struct Pending {  // a transfer of start()'s current block: its hash, cap and elements in blk_elems_
    uint64_t hash;
    double cap;
    uint32_t index, ebegin, eend;
  };
  std::vector<Pending> blk_;
  std::vector<solver::Element> blk_elems_;
  std::vector<uint32_t> gfill_;       // per class: where its next member size goes
  std::vector<uint64_t> hash_keys_;   // open-addressing table of start(): hash per slot
  std::vector<int> hash_class_;       // and the last class made with it (-1: empty)
  std::vector<uint32_t> tag_;
  // Per solver id: its class's version, bumped when a class is made and kept when the id is freed (a
  // dense array apart from Flow, so making a class writes its record without reading it).
  std::vector<uint32_t> version_;
  DueHeap due_heap_;  // projected finishes of live classes that will finish (rate > 0), one each
  std::vector<std::pair<int, uint32_t>> due_;  // scratch: advance_to()'s (id, version) due at once
  std::vector<char> due_at_;     // scratch: advance_to()'s ids due at once
  std::vector<int> gone_;        // scratch: classes advance_to() removes at once
  std::vector<Timer> timers_;       // min-heap: tasks whose flows drained, waiting out latency
  double now_ = 0;
  bool dirty_ = false;              // flows started or ended since the last solve
  bool cached_ = false;             // next_flow_ is current
  double next_flow_ = 0;
  std::vector<solver::Element> scratch_;
  // Slowed tasks (set_speed), empty until a task is first slowed in a run: per task its speed, and
  // while tracking_ its classes (solver id, the class's own rate cap), listed when made; an id that
  // finished (or went to another task) is skipped, a task's list freed when its flows drain.
  std::vector<double> speed_;
  bool tracking_ = false;
  std::vector<std::vector<std::pair<int, double>>> task_classes_;
  PairPlan plan_;  // the last direct task's pairs, elements and latency (network/pair_plan.hpp)
  GroupPlans group_plans_;  // recent grouped tasks' classes (network/group_plan.hpp)
  GroupPlan large_group_;   // the classes of a task too large to record, freed after its start
  FlowStats stats_;
};

}  // namespace hs::network
