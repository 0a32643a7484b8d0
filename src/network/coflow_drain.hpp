// One coflow alone on the flow tier, solved link by link: what `hecate-sim collective --network flow`
// times, and the same answer FlowNetwork gives for a task that runs one coflow by itself, found
// with far less work when the coflow is large and every transfer crosses at most four links that may
// bind: two with one NIC per GPU behind a non-blocking or rail-optimized core (a GPU's egress and
// the peer's ingress, or two NVLink ports inside a node), four behind an oversubscribed core (its
// NICs, one uplink and one downlink: the spines' other links are their twins, Topology::may_bind)
// or over a cube-mesh relay.
//
// Why it is faster. In progressive filling a flow's rate is the lowest fill level among the links
// it crosses (or its rate cap), so a solve only has to find each link's level. With two links per
// flow, a flow is still unfrozen when one of its links saturates exactly when its other link has
// not saturated yet: freezing a link walks its list of (other link, flow) entries, sequentially,
// and touches only the other link's remaining capacity and weight (a few thousand links: cached).
// No per-flow filling state, no per-flow rate writes, no list of changed rates. (Where some flow
// crosses three or four links, a freeze walk reads each entry's flow's links instead: the flow is
// unfrozen when none of its other links is frozen, and gives back to each of them; the passes read
// two link slots more per flow, `none` for a flow over two.) After a solve one
// streaming pass over the flows (in arrays, finished ones compacted away in batches) takes from each
// flow's bytes left its rate since the last event times the time since (its rate then: the lower of
// its links' previous levels, or its cap), projects its finish at its new rate, finds the earliest
// and notes the flows that may fall in its merge window; those due finish and leave their links'
// lists at once (the list's last entry fills the hole). No rate or time is stored per flow: the
// pass reads its two links and bytes left (16 bytes) and writes the bytes left. (Eight flows at a time with
// AVX-512 where the processor has it, network/drain_scan.hpp: the same operations, the same bytes.) Every event thus
// costs one linear pass over the flows and one over the live entries, with no heap of per-flow
// finishes: in a skewed all-to-all-v every live rate changes at every event (measured: 1,024 GPUs
// at 1e-3, 420M rate changes over 957 events, 420M live flow-events), and FlowNetwork's per-flow
// bookkeeping (changed lists, heap rebuilds) is what dominates there. (Keeping progress per link
// instead, a virtual clock per link and a key per flow where it is bound, touches only the flows
// whose bottleneck moved: measured faster at 1e-3 on 1,024 GPUs than the pass it replaced, slower
// where many flows move per event, 4,096 GPUs at 1e-2 most of all: random misses per moved flow
// against a streaming pass.)
//
// Same semantics as FlowNetwork with one task (network/flow_network.hpp): max-min rates under the
// links that may bind, re-solved at every completion event; completions merged within
// precision x max(elapsed, D) of the earliest (D = the coflow's most loaded link's bytes / capacity);
// duration = drain + the largest route latency of its transfers + extra latency. Rates agree with
// the general solver's to rounding (a flow takes the smaller of its links' levels, the solver the
// level of the link that froze it first: the same number, but for the solver's 1e-12 tolerance on
// stale heap keys), and progress is integrated at every event where FlowNetwork integrates it when
// a rate changes (a rounding per event more; a flow is due when its bytes left reach 0, where
// FlowNetwork allows 1e-12 of its size), so times agree to ~1e-12 relative at precision 0 (tests: equality with
// FlowNetwork to 1e-9 on several fabrics, with and without rate caps); with merging, a last-bit
// difference can move a completion across a merge window's edge, which changes the result by less
// than the merge error itself (about 2 x precision of the coflow's time).
//
// Cost per event: O(L log L + F + E) for L links, F flows in the arrays and E live (flow, link)
// entries, streaming; memory about 74 bytes per flow (54 in arrays, two entries of 4 + 4 bytes and
// a 2-byte copy of each entry's other link): ~74 MB for a million flows.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "network/transfer.hpp"
#include "network/flow_network.hpp"
#include "topology/topology.hpp"

namespace hs::network {

struct DrainStats {
  uint64_t flows = 0;   // transfers timed (self and empty transfers are skipped)
  uint64_t events = 0;  // completion events (= solves)
};

struct DrainResult {
  double seconds = 0;  // drain + latency + extra latency: the task's duration on FlowNetwork
  DrainStats stats;
};

// Times coflows one after another on one topology, keeping its buffers from one to the next (a
// sweep over message sizes allocates and faults its pages in once, not at every size).
class CoflowDrain {
 public:
  explicit CoflowDrain(const topology::Topology& topo, double precision = kDefaultFlowPrecision);
  ~CoflowDrain();
  CoflowDrain(const CoflowDrain&) = delete;
  CoflowDrain& operator=(const CoflowDrain&) = delete;
  // The coflow's time alone on the flow tier; nullopt when some transfer crosses more than four
  // links that may bind (host-staged routes between cube-mesh nodes): FlowNetwork times those.
  std::optional<DrainResult> time(const Coflow& coflow, double extra_latency = 0);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// One coflow's time alone (a CoflowDrain used once).
std::optional<DrainResult> drain_coflow(const topology::Topology& topo, const Coflow& coflow,
                                        double extra_latency = 0, double precision = kDefaultFlowPrecision);

}  // namespace hs::network
