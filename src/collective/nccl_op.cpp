#include "collective/nccl_op.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "collective/all_reduce.hpp"
#include "collective/all_to_all.hpp"
#include "collective/chain.hpp"
#include "collective/nvls.hpp"
#include "collective/ring.hpp"
#include "collective/tree.hpp"

namespace hs::collective {

const char* to_string(NcclOp op) {
  switch (op) {
    case NcclOp::kAllReduce: return "all_reduce";
    case NcclOp::kAllGather: return "all_gather";
    case NcclOp::kReduceScatter: return "reduce_scatter";
    case NcclOp::kAllToAll: return "all_to_all";
    case NcclOp::kBroadcast: return "broadcast";
    case NcclOp::kReduce: return "reduce";
    case NcclOp::kSendRecv: return "send_recv";
  }
  return "?";
}

std::optional<NcclOp> parse_nccl_op(std::string_view n) {
  if (n == "all_reduce") return NcclOp::kAllReduce;
  if (n == "all_gather") return NcclOp::kAllGather;
  if (n == "reduce_scatter") return NcclOp::kReduceScatter;
  if (n == "all_to_all" || n == "alltoall") return NcclOp::kAllToAll;
  if (n == "broadcast") return NcclOp::kBroadcast;
  if (n == "reduce") return NcclOp::kReduce;
  if (n == "send_recv" || n == "sendrecv") return NcclOp::kSendRecv;
  return std::nullopt;
}

std::optional<NcclOp> nccl_op_in_name(std::string_view file_name) {
  std::string s(file_name);
  const auto slash = s.find_last_of('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Longest names first: "reduce" is inside "all_reduce" and "reduce_scatter".
  const std::pair<const char*, NcclOp> names[] = {
      {"reduce_scatter", NcclOp::kReduceScatter}, {"all_reduce", NcclOp::kAllReduce}, {"all_gather", NcclOp::kAllGather},
      {"alltoall", NcclOp::kAllToAll},           {"all_to_all", NcclOp::kAllToAll},   {"sendrecv", NcclOp::kSendRecv},
      {"send_recv", NcclOp::kSendRecv},          {"broadcast", NcclOp::kBroadcast},   {"reduce", NcclOp::kReduce}};
  for (const auto& [name, op] : names)
    if (s.find(name) != std::string::npos) return op;
  return std::nullopt;
}

double bus_factor(NcclOp op, int n) {
  switch (op) {
    case NcclOp::kAllReduce: return 2.0 * (n - 1) / n;
    case NcclOp::kAllGather:
    case NcclOp::kReduceScatter:
    case NcclOp::kAllToAll: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

namespace {

// nccl-tests' sendrecv: every rank sends `size` bytes to the next one, over a point-to-point
// connection of the group's communicator (capped by its channels).
Coflow send_recv_flows(const topology::Topology& topo, std::span<const int> group, double size) {
  const int n = static_cast<int>(group.size());
  bool multi_node = false;
  for (int g : group) multi_node = multi_node || topo.node_of(g) != topo.node_of(group[0]);
  const P2pChannels p2p(topo, n, multi_node);
  Coflow c;
  for (int i = 0; i < n; ++i) {
    const int a = group[i], b = group[(i + 1) % n];
    c.push_back({a, b, size, p2p.cap(a, b)});
  }
  return c;
}

}  // namespace

NcclOpTime nccl_op_time(AnalyticNetwork& net, NcclOp op, std::span<const int> group, double size) {
  NcclOpTime r;
  const int n = static_cast<int>(group.size());
  if (n < 2 || size <= 0) return r;
  const auto& topo = net.topology();
  switch (op) {
    case NcclOp::kAllReduce: {
      r.seconds = plan_all_reduce(net, group, size).time;
      break;
    }
    case NcclOp::kAllGather:
      r.seconds = ring_time(net, group, size, RingOp::kAllGather);
      break;
    case NcclOp::kReduceScatter:
      r.seconds = ring_time(net, group, size, RingOp::kReduceScatter);
      break;
    case NcclOp::kAllToAll: {
      const int N = topo.num_gpus();
      std::vector<double> m(static_cast<size_t>(N) * N, 0.0);
      for (int a : group)
        for (int b : group)
          if (a != b) m[static_cast<size_t>(a) * N + b] = size / n;
      r.seconds = net.alltoallv_time(m);
      r.bottleneck = net.last_bottleneck();
      return r;
    }
    case NcclOp::kBroadcast:
    case NcclOp::kReduce: {
      double extra = 0;
      Coflow c = op == NcclOp::kBroadcast ? broadcast_flows(topo, group, group[0], size, extra)
                                          : reduce_flows(topo, group, group[0], size, extra);
      r.seconds = net.coflow_time(c) + extra;
      r.bottleneck = net.last_bottleneck();
      return r;
    }
    case NcclOp::kSendRecv: {
      const Coflow c = send_recv_flows(topo, group, size);
      r.seconds = net.coflow_time(c);
      r.bottleneck = net.last_bottleneck();
      return r;
    }
  }
  // Ring-type ops: the bottleneck of one ring step.
  net.coflow_time(ring_step(topo, group, size, default_ring_channels(topo, group)));
  r.bottleneck = net.last_bottleneck();
  return r;
}

NcclOpPlan nccl_op_plan(AnalyticNetwork& net, NcclOp op, std::span<const int> group, double size, const std::string& algo) {
  NcclOpPlan p;
  const int n = static_cast<int>(group.size());
  if (n < 2 || size <= 0) return p;
  const auto& topo = net.topology();
  switch (op) {
    case NcclOp::kAllReduce:
      if (algo.empty()) {
        AllReducePlan a = plan_all_reduce(net, group, size);
        p.flows = std::move(a.flows), p.extra_latency = a.extra_latency, p.algo = to_string(a.algo);
      } else if (algo == "ring") {
        p.flows = ring_flows(topo, group, size, RingOp::kAllReduce, p.extra_latency), p.algo = "ring";
      } else if (algo == "tree") {
        p.flows = tree_all_reduce_flows(topo, group, size, p.extra_latency), p.algo = "tree";
      } else if (algo == "nvls") {
        p.flows = nvls_all_reduce_flows(topo, group, size, p.extra_latency), p.algo = "nvls";
      }
      break;
    case NcclOp::kAllGather:
    case NcclOp::kReduceScatter:
      p.flows = ring_flows(topo, group, size, op == NcclOp::kAllGather ? RingOp::kAllGather : RingOp::kReduceScatter,
                           p.extra_latency);
      p.algo = "ring";
      break;
    case NcclOp::kAllToAll: {
      const int N = topo.num_gpus();
      std::vector<double> m(static_cast<size_t>(N) * N, 0.0);
      for (int a : group)
        for (int b : group)
          if (a != b) m[static_cast<size_t>(a) * N + b] = size / n;
      p.flows = alltoallv_flows(topo, m, false, p.extra_latency);
      p.algo = "p2p";
      break;
    }
    case NcclOp::kBroadcast:
      p.flows = broadcast_flows(topo, group, group[0], size, p.extra_latency), p.algo = "ring";
      break;
    case NcclOp::kReduce:
      p.flows = reduce_flows(topo, group, group[0], size, p.extra_latency), p.algo = "ring";
      break;
    case NcclOp::kSendRecv:
      p.flows = send_recv_flows(topo, group, size);
      p.algo = "p2p";
      break;
  }
  if (!p.flows.empty()) p.analytic_s = net.coflow_time(p.flows) + p.extra_latency;
  return p;
}

}  // namespace hs::collective
