// One coflow alone on the flow tier, solved link by link: what `hecate-sim collective --network flow`
// times, and the same answer FlowNetwork gives for a task that runs one coflow by itself, found
// with far less work when the coflow is large and every transfer crosses at most two links that may
// bind (one NIC per GPU behind a non-blocking or rail-optimized core: a GPU's egress and the peer's
// ingress, or two NVLink ports inside a node).
//
// Why it is faster. In progressive filling a flow's rate is the lowest fill level among the links
// it crosses (or its rate cap), so a solve only has to find each link's level. With two links per
// flow, a flow is still unfrozen when one of its links saturates exactly when its other link has
// not saturated yet: freezing a link walks its list of entries (the flow's other link), in order,
// and touches only the other link's remaining capacity and count (a few thousand links: cached).
// The flow freezes at the first of its links to saturate: it is *bound* there (or at its cap), and
// runs at that link's level until the next event. Progress is kept per link, not per flow: a link's
// virtual clock is the bytes a flow bound at it has received since the start (the integral of its
// level), and a flow bound at a link carries a key, the clock reading at which it is done. A flow's
// key changes only when it moves (bound at another link than in the last solve: a few percent of
// the flows an event, found by the walk from a mark in the entry, moved after the solve in a
// pipeline that fetches their figures ahead); each link keeps its lowest key. So an event costs the
// walk, one pass over the links for the earliest completion (lowest key against clock and level),
// and a pass over the lists of the links with a flow due in the merge window (which also finds their
// new lowest key); nothing reads every flow. Finished flows leave their links' lists at once (the
// list's last entry fills the hole). Measured on 1,024 GPUs at 1e-3 (957 events): the walks visit
// 833M entries, 15M flows move, the due passes read 354M entries.
//
// Same semantics as FlowNetwork with one task (network/flow_network.hpp): max-min rates under the
// links that may bind, re-solved at every completion event; completions merged within
// precision x max(elapsed, D) of the earliest (D = the coflow's most loaded link's bytes / capacity);
// duration = drain + the largest route latency of its transfers + extra latency. A flow's rate is
// the level of the link that froze it, as in the general solver; its bytes left are a difference of
// clock readings, so times agree with FlowNetwork's to ~1e-12 relative at precision 0 (tests:
// equality with FlowNetwork to 1e-9 on several fabrics, with and without rate caps); with merging, a
// last-bit difference can move a completion across a merge window's edge, which changes the result
// by less than the merge error itself (about 2 x precision of the coflow's time).
//
// Cost per event: O(L log L + E + M + D) for L links, E live (flow, link) entries, M moved flows
// and D entries of the links with a flow due; memory about 100 bytes per flow (70 in arrays, two
// entries of 16 bytes): ~100 MB for a million flows.
#pragma once

#include <cstdint>
#include <optional>

#include "collective/transfer.hpp"
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

// The coflow's time alone on the flow tier; nullopt when some transfer crosses more than two links
// that may bind (ECMP over an oversubscribed core): FlowNetwork times those.
std::optional<DrainResult> drain_coflow(const topology::Topology& topo, const collective::Coflow& coflow,
                                        double extra_latency = 0, double precision = kDefaultFlowPrecision);

}  // namespace hs::network
