// The operations nccl-tests measures, timed by the analytic tier with the same decompositions the
// simulator uses inside iterations (all-reduce, all-gather, reduce-scatter, broadcast and reduce in
// the algorithm and protocol NCCL's tuner would pick, collective/all_reduce.hpp; all-to-all as one
// coflow, send/receive to the next rank), in nccl-tests' conventions (NCCL 2.x nccl-tests, README
// "Performance"): `size` is the per-rank buffer of all-reduce, broadcast and reduce, the total
// (gathered / scattered) buffer of all-gather and reduce-scatter, and the total each rank sends in
// all-to-all; algbw = size / time; busbw = algbw x bus_factor (2(n-1)/n all-reduce; (n-1)/n
// all-gather, reduce-scatter, all-to-all; 1 broadcast, reduce, send/receive).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "collective/analytic_network.hpp"
#include "topology/topology.hpp"

namespace hs::collective {

enum class NcclOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kReduce, kSendRecv };

const char* to_string(NcclOp op);  // all_reduce, all_gather, ...
// all_reduce | all_gather | reduce_scatter | all_to_all (or alltoall) | broadcast | reduce | send_recv (or sendrecv)
std::optional<NcclOp> parse_nccl_op(std::string_view name);
// The op a file name names as nccl-tests' binaries do (all_reduce_perf.log, alltoall-2node.txt).
std::optional<NcclOp> nccl_op_in_name(std::string_view file_name);
double bus_factor(NcclOp op, int ranks);

struct NcclOpTime {
  double seconds = 0;
  topology::LinkId bottleneck = -1;  // most loaded link (its class is what a fit of this op calibrates)
};

// One operation of `size` bytes among `group` (global GPU ranks; root = group[0]).
NcclOpTime nccl_op_time(AnalyticNetwork& net, NcclOp op, std::span<const int> group, double size);

// The same operation as transfers for either tier: `flows` (the fluid form, as the flow tier runs it),
// `extra_latency` beyond one route latency, and the analytic time. `algo` (ring | tree | nvls |
// nvls_tree | pat) and `proto` (LL | LL128 | Simple) restrict NCCL's choice, empty = the tuner's
// pick among what the topology's `nccl:` enables; `algo` and `proto` report what ran. A pair the group
// or operation cannot use (tree inside one node, NVLS across nodes, LL on NVLS) gives empty flows.
struct NcclOpPlan {
  Coflow flows;
  double extra_latency = 0;
  double analytic_s = 0;
  std::string algo;
  std::string proto;
};
NcclOpPlan nccl_op_plan(AnalyticNetwork& net, NcclOp op, std::span<const int> group, double size,
                        const std::string& algo = "", const std::string& proto = "");

}  // namespace hs::collective
