#include "collective/nccl_op.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "collective/all_reduce.hpp"
#include "collective/all_to_all.hpp"
#include "collective/p2p_channels.hpp"

namespace hs::collective {

namespace {
// nccl-tests' alltoall of `size` bytes per rank: every rank sends size / n to each other rank of the
// group (N x N byte matrix over the topology's GPUs, row = source).
std::vector<double> uniform_all_to_all(int N, std::span<const int> group, double size) {
  const double n = static_cast<double>(group.size());
  std::vector<double> m(static_cast<size_t>(N) * N, 0.0);
  for (int a : group)
    for (int b : group)
      if (a != b) m[static_cast<size_t>(a) * N + b] = size / n;
  return m;
}
}  // namespace

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

namespace {

std::optional<NcclColl> nccl_coll(NcclOp op) {
  switch (op) {
    case NcclOp::kAllReduce: return NcclColl::kAllReduce;
    case NcclOp::kAllGather: return NcclColl::kAllGather;
    case NcclOp::kReduceScatter: return NcclColl::kReduceScatter;
    case NcclOp::kBroadcast: return NcclColl::kBroadcast;
    case NcclOp::kReduce: return NcclColl::kReduce;
    default: return std::nullopt;
  }
}

}  // namespace

NcclOpTime nccl_op_time(AnalyticNetwork& net, NcclOp op, std::span<const int> group, double size) {
  NcclOpTime r;
  const int n = static_cast<int>(group.size());
  if (n < 2 || size <= 0) return r;
  const auto& topo = net.topology();
  if (const auto coll = nccl_coll(op)) {
    // As NCCL's tuner picks (collective/all_reduce.hpp); the bottleneck is the chosen transfers'.
    const NcclPlan p = plan_nccl(net, *coll, group, size);
    if (p.flows.empty()) return r;
    r.seconds = p.time;
    net.coflow_time(p.flows);
    r.bottleneck = net.last_bottleneck();
    return r;
  }
  if (op == NcclOp::kAllToAll) {
    r.seconds = net.alltoallv_time(uniform_all_to_all(topo.num_gpus(), group, size));
    r.bottleneck = net.last_bottleneck();
    return r;
  }
  const Coflow c = send_recv_flows(topo, group, size);
  r.seconds = net.coflow_time(c);
  r.bottleneck = net.last_bottleneck();
  return r;
}

NcclOpPlan nccl_op_plan(AnalyticNetwork& net, NcclOp op, std::span<const int> group, double size, const std::string& algo,
                        const std::string& proto) {
  NcclOpPlan p;
  const int n = static_cast<int>(group.size());
  if (n < 2 || size <= 0) return p;
  const auto& topo = net.topology();
  if (const auto coll = nccl_coll(op)) {
    std::optional<NcclAlgo> a;
    std::optional<NcclProto> pr;
    if (!algo.empty()) {
      a = parse_nccl_algo(algo);
      if (!a) return p;
    }
    if (!proto.empty()) {
      pr = parse_nccl_proto(proto);
      if (!pr) return p;
    }
    NcclPlan c = plan_nccl(net, *coll, group, size, a, pr);
    if (c.flows.empty()) return p;
    p.flows = std::move(c.flows), p.extra_latency = c.extra_latency, p.analytic_s = c.time;
    p.algo = to_string(c.algo), p.proto = to_string(c.proto);
    return p;
  }
  if (op == NcclOp::kAllToAll) {
    p.flows = alltoallv_flows(topo, uniform_all_to_all(topo.num_gpus(), group, size), false, p.extra_latency);
  } else {
    p.flows = send_recv_flows(topo, group, size);
  }
  p.algo = "p2p";
  p.proto = "Simple";
  if (!p.flows.empty()) p.analytic_s = net.coflow_time(p.flows) + p.extra_latency;
  return p;
}

}  // namespace hs::collective
