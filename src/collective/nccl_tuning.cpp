#include "collective/nccl_tuning.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string>

#include "collective/ring.hpp"

namespace hs::collective {

namespace {

// NCCL 2.30.7 src/graph/tuning.cc, ncclTunerConstantsDefaults. Index [algo][proto] with algo
// 0 tree, 1 ring, 2 nvls, 3 nvls_tree, 4 pat (NCCL's CollNet rows left out) and proto LL, LL128, Simple.
constexpr double kBaseLat[5][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};
// hwLatencies [NVLINK, PCI, NET][algo][proto], us.
constexpr double kHwLat[3][5][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
// [compCapIndex or CPU row][nodes 1, 2, more], GB/s.
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr double kPerChMaxRingLL128Bw[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}};
constexpr double kPerChMaxTreeLL128Bw[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChMaxTreeBw[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChMaxNVLSTreeBw[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// treeCorrectionFactor[proto][log2(bytes / 64)], 64 B to 256 MiB (ncclTopoGetAlgoTime).
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;
// getNetOverhead: 1 us on Intel x86 (and the default), 2 on AMD; the CPU is not modelled.
constexpr double kNetOverheadUs = 1.0;
// MAXCHANNELS (src/include/device.h).
constexpr int kMaxChannels = 64;

int algo_index(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::kTree: return 0;
    case NcclAlgo::kRing: return 1;
    case NcclAlgo::kNvls: return 2;
    case NcclAlgo::kNvlsTree: return 3;
    case NcclAlgo::kPat: return 4;
  }
  return 1;
}
int proto_index(NcclProto p) { return static_cast<int>(p); }

int log2i(long long v) {
  int l = -1;
  while (v > 0) v >>= 1, ++l;
  return l;
}

int nsteps(NcclColl c, int ranks) {
  switch (c) {
    case NcclColl::kAllReduce: return 2 * (ranks - 1);
    case NcclColl::kAllGather:
    case NcclColl::kReduceScatter: return ranks - 1;
    default: return ranks;
  }
}

// NCCL's bandwidth refinements compose as busBw = min(busBw x f, cap); kept as that pair over the
// Simple protocol's bandwidth.
struct Scaled {
  double f = 1, cap = 0;  // cap in GB/s of NCCL's busBw, 0 = none
  void times(double k) { f *= k, cap *= k; }
  void at_most(double c) { cap = cap > 0 ? std::min(cap, c) : c; }
};

}  // namespace

const char* to_string(NcclProto p) {
  switch (p) {
    case NcclProto::kLL: return "LL";
    case NcclProto::kLL128: return "LL128";
    case NcclProto::kSimple: return "Simple";
  }
  return "?";
}

const char* to_string(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::kRing: return "ring";
    case NcclAlgo::kTree: return "tree";
    case NcclAlgo::kNvls: return "nvls";
    case NcclAlgo::kNvlsTree: return "nvlstree";  // NCCL's NVLSTree (one word: table columns)
    case NcclAlgo::kPat: return "pat";
  }
  return "?";
}

std::optional<NcclProto> parse_nccl_proto(std::string_view s) {
  std::string l(s);
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "ll") return NcclProto::kLL;
  if (l == "ll128") return NcclProto::kLL128;
  if (l == "simple") return NcclProto::kSimple;
  return std::nullopt;
}

std::optional<NcclAlgo> parse_nccl_algo(std::string_view s) {
  std::string l(s);
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "ring") return NcclAlgo::kRing;
  if (l == "tree") return NcclAlgo::kTree;
  if (l == "nvls") return NcclAlgo::kNvls;
  if (l == "nvls_tree" || l == "nvlstree") return NcclAlgo::kNvlsTree;
  if (l == "pat") return NcclAlgo::kPat;
  return std::nullopt;
}

NcclTuning nccl_tuning(const topology::Topology& topo, std::span<const int> group) {
  NcclTuning t;
  t.ranks = static_cast<int>(group.size());
  std::set<int> nodes;
  for (int g : group) nodes.insert(topo.node_of(g));
  t.nodes = std::max<int>(1, static_cast<int>(nodes.size()));
  const double cc = topo.gpu_model().compute_capability;
  t.sm = static_cast<int>(std::lround(cc * 10));
  t.arch = t.sm >= 100 ? 3 : t.sm >= 90 ? 2 : t.sm >= 80 ? 1 : 0;
  t.nvls_channels = t.sm >= 100 ? 32 : 16;
  const auto& nc = topo.nccl();
  t.net_via_host = nc.net_via_host;
  t.proto_scale = nc.proto_scale;
  t.net_step_us = nc.net_step_latency.value() * 1e6;
  if (group.empty()) return t;
  // The GPUs of group[0]'s node, and one GPU elsewhere.
  const int node0 = topo.node_of(group[0]);
  std::vector<int> local;
  int remote = -1;
  for (int g : group) {
    if (topo.node_of(g) == node0) local.push_back(g);
    else if (remote < 0) remote = g;
  }
  // Intra-node links: NVLink if a route between two GPUs of the node is all NVLink.
  if (local.size() >= 2) {
    const auto r = topo.route(local[0], local[1]);
    for (const auto& h : r.hops) t.intra_nvlink = t.intra_nvlink && topo.link(h.link).link_class == "nvlink";
    t.intra_scale = r.latency.value() * 1e6 / kHwLat[t.intra_nvlink ? kHwNvlink : kHwPci][1][2];
  }
  if (remote >= 0) t.net_scale = topo.route_latency(local[0], remote).value() * 1e6 / kHwLat[kHwNet][1][2];
  if (remote >= 0) {
    // One channel per NIC the node's GPUs use (src/graph/search.cc: inter-node channels run at about
    // a NIC's speed, one NIC each), at most one per GPU.
    std::set<topology::VertexId> nics;
    for (int g : local) {
      for (const auto& h : topo.route(g, remote).hops) {
        const auto& l = topo.link(h.link);
        if (topo.vertices()[l.to].kind == topology::VertexKind::kNic) {
          nics.insert(l.to);
          break;
        }
      }
    }
    t.graph_channels = std::max<int>(1, std::min<int>(static_cast<int>(nics.size()), static_cast<int>(local.size())));
  } else if (local.size() >= 2) {
    // Inside one node: the GPU's NVLink bandwidth (its distinct first hops to its peers) over the
    // architecture's top per-channel search speed (topology/nccl_config.hpp), or the searched rings
    // over direct links, whichever is more.
    std::set<topology::LinkId> first;
    double bw = 0;
    for (size_t i = 1; i < local.size(); ++i) {
      const auto r = topo.route(local[0], local[i]);
      if (r.hops.empty()) continue;
      const auto l = r.hops[0].link;
      if (first.insert(l).second) bw += topo.link(l).line_rate.value();
    }
    double speed = nc.nvlink_channel_bandwidth.value();
    if (speed <= 0) speed = t.sm >= 100 ? 90e9 : t.sm >= 90 ? 60e9 : 40e9;
    const int by_bw = t.intra_nvlink ? static_cast<int>(bw / speed) : 1;
    t.graph_channels = std::max({1, by_bw, default_ring_channels(topo, local)});
  }
  t.comm_channels = std::min(kMaxChannels, 2 * t.graph_channels);
  if (nc.min_ctas > 0) t.comm_channels = std::max(t.comm_channels, nc.min_ctas);
  if (nc.max_ctas > 0) t.comm_channels = std::min(t.comm_channels, nc.max_ctas);
  t.graph_channels = std::max(1, std::min(t.graph_channels, t.comm_channels));
  return t;
}

bool nccl_enabled(const topology::Topology& topo, const NcclTuning& t, NcclColl coll, NcclAlgo a, NcclProto p) {
  if (t.ranks < 2) return false;
  const auto& nc = topo.nccl();
  if (!nc.algos.empty() && std::find(nc.algos.begin(), nc.algos.end(), to_string(a)) == nc.algos.end()) return false;
  if (!nc.protos.empty()) {
    std::string name = to_string(p);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (std::find(nc.protos.begin(), nc.protos.end(), name) == nc.protos.end()) return false;
  }
  const bool ag_rs = coll == NcclColl::kAllGather || coll == NcclColl::kReduceScatter;
  switch (a) {
    case NcclAlgo::kRing: break;
    case NcclAlgo::kTree:
      if (coll != NcclColl::kAllReduce || t.nodes < 2) return false;  // tree inside one node: not modelled
      break;
    case NcclAlgo::kNvls:
      if (coll != NcclColl::kAllReduce || t.nodes != 1 || !topo.nvls() || p != NcclProto::kSimple) return false;
      break;
    case NcclAlgo::kNvlsTree:
      if (coll != NcclColl::kAllReduce || t.nodes < 2 || !topo.nvls() || p != NcclProto::kSimple) return false;
      break;
    case NcclAlgo::kPat:
      // ncclPatEnable: sm60+, one GPU per node; Simple only.
      if (!ag_rs || t.ranks != t.nodes || t.sm < 60 || p != NcclProto::kSimple) return false;
      break;
  }
  if (p == NcclProto::kLL128 && nc.protos.empty()) {
    // On by default (NCCL_PROTO unset; naming it turns it on regardless): sm90+ up to PXN, before up
    // to PXB (a path through the CPU is beyond both); NVLink inside the node; sm70+.
    if (t.nodes > 1 && t.net_via_host) return false;
    if (!t.intra_nvlink || t.sm < 70) return false;
  }
  return true;
}

double nccl_latency(const NcclTuning& t, NcclColl coll, NcclAlgo a, NcclProto p, double bytes) {
  const int ai = algo_index(a), pi = proto_index(p);
  const int R = t.ranks, N = t.nodes;
  const int steps = nsteps(coll, R);
  const int intra_hw = t.intra_nvlink ? kHwNvlink : kHwPci;
  const int hw = N == 1 ? intra_hw : kHwNet;
  const double ppn = static_cast<double>(R) / N;
  double lat = kBaseLat[ai][pi];
  // Per-step hardware latencies scaled by the topology's route latencies (NcclTuning).
  double intra = kHwLat[intra_hw][ai][pi] * t.intra_scale * t.proto_scale[0][pi].latency;
  // With one GPU per node the latencies are fully exposed: the tree's network latency.
  double inter = (ppn == 1 ? kHwLat[kHwNet][0][pi] : kHwLat[kHwNet][ai][pi]) * t.net_scale *
                 t.proto_scale[1][pi].latency;
  // + latencyInter, and once more for Simple ("the flush extra latency", tuning.cc).
  inter += t.net_step_us * (p == NcclProto::kSimple ? 2 : 1);
  switch (a) {
    case NcclAlgo::kRing:
      if (coll == NcclColl::kBroadcast || coll == NcclColl::kReduce) {
        // Channels not all alike (sameChannels 0): a chunk latency per step, the tree's for Simple.
        const double step = (p == NcclProto::kSimple ? kHwLat[hw][0][pi] : kHwLat[hw][ai][pi]) *
                            (N == 1 ? t.intra_scale : t.net_scale) * t.proto_scale[N == 1 ? 0 : 1][pi].latency;
        lat += steps * step;
      } else {
        double overhead = 0;
        if (N > 1) overhead = kNetOverheadUs * (p == NcclProto::kSimple ? 3 : 1);
        intra = std::max(intra, overhead);
        const int n_inter = N == 1 ? 0 : coll == NcclColl::kAllReduce ? 2 * (N - 1) : N - 1;
        lat += (steps - n_inter) * intra + n_inter * inter;
      }
      break;
    case NcclAlgo::kTree: lat += 2 * ((R / N - 1) * intra + log2i(N) * inter); break;
    case NcclAlgo::kNvls: lat = intra + (N > 1 ? inter : 0); break;
    case NcclAlgo::kNvlsTree: lat += intra + 2 * log2i(N) * inter; break;
    case NcclAlgo::kPat: lat += log2i(N) * (inter / 3.5) + R * 2.8; break;
  }
  // The ring's plateau (ncclTopoGetAlgoTime): comm->nChannels, the communicator's channels.
  if (a == NcclAlgo::kRing && p == NcclProto::kSimple && N > 1 && coll == NcclColl::kAllReduce &&
      bytes / (static_cast<double>(t.comm_channels) * R) >= 64)
    lat *= t.sm < 80 ? 1.9 : 1.4;
  return lat * 1e-6;
}

NcclBandwidth nccl_bandwidth(const NcclTuning& t, NcclColl coll, NcclAlgo a, NcclProto p, double bytes) {
  const int N = t.nodes, R = t.ranks;
  const int i2 = N <= 2 ? N - 1 : 2;
  const int i1 = N == 1 ? t.arch : 0;  // multi-node: the CPU's row (Intel)
  const double ll_max = kLlMaxBw[i1][i2];
  const double ch = t.graph_channels;
  Scaled s;
  switch (a) {
    case NcclAlgo::kRing:
      if (p == NcclProto::kLL) s.times(0.5), s.at_most(ll_max);
      if (p == NcclProto::kLL128) s.times(0.92), s.at_most(ch * kPerChMaxRingLL128Bw[t.arch][i2]);
      break;
    case NcclAlgo::kTree:
      if (coll == NcclColl::kAllReduce) s.times(0.92), s.at_most(ch * kPerChMaxTreeBw[t.arch][i2]);
      if (p == NcclProto::kLL) s.times(1.0 / 3.8), s.at_most(ll_max);
      if (p == NcclProto::kLL128)
        s.times(N == 1 ? 7.0 / 9.0 : 120.0 / 128.0), s.at_most(ch * kPerChMaxTreeLL128Bw[t.arch][i2]);
      break;
    case NcclAlgo::kNvls:
      // A topology with nvls: true has NVLink SHARP switches: Hopper's figure for older GPU models.
      s.times(kNvlsEfficiency[std::max(t.arch, 2)] * (t.nvls_channels - 1) / t.nvls_channels);
      break;
    case NcclAlgo::kNvlsTree: s.at_most(ch * kPerChMaxNVLSTreeBw[std::max(t.arch, 2)][i2]); break;
    case NcclAlgo::kPat: s.times(0.75); break;
  }
  const int logsize = log2i(static_cast<long long>(bytes) >> 6);
  if (a == NcclAlgo::kTree && coll == NcclColl::kAllReduce && logsize >= 0 && logsize < 23)
    s.times(kTreeCorrection[proto_index(p)][logsize]);
  s.times(t.proto_scale[N == 1 ? 0 : 1][proto_index(p)].bandwidth);  // a calibration's (1 = none)
  // NCCL's busBw to algorithm bandwidth (all-gather / reduce-scatter other than ring keep busBw).
  double ratio = 1;
  const bool ag_rs = coll == NcclColl::kAllGather || coll == NcclColl::kReduceScatter;
  if (!(a != NcclAlgo::kRing && ag_rs))
    ratio = (a == NcclAlgo::kTree) ? 0.5 : static_cast<double>(R) / nsteps(coll, R);
  NcclBandwidth b;
  b.fraction = s.f;
  b.cap = s.cap > 0 ? s.cap * ratio * 1e9 : 0;
  return b;
}

double nccl_extra_latency(const topology::Topology& topo, const NcclTuning& t, NcclColl coll, NcclAlgo a, NcclProto p,
                          double bytes, const Coflow& flows) {
  double alpha = 0;
  for (const auto& tr : flows)
    if (tr.src != tr.dst && tr.bytes > 0) alpha = std::max(alpha, topo.route_latency(tr.src, tr.dst).value());
  return std::max(0.0, nccl_latency(t, coll, a, p, bytes) - alpha);
}

void apply_nccl_protocol(const topology::Topology& topo, const NcclTuning& t, NcclColl coll, NcclAlgo a, NcclProto p,
                         double bytes, Coflow& flows, double& extra_latency) {
  const NcclBandwidth b = nccl_bandwidth(t, coll, a, p, bytes);
  for (auto& tr : flows) {
    if (b.fraction > 0) tr.bytes /= b.fraction;
    if (b.cap > 0 && bytes > 0) {
      const double cap = tr.bytes * b.cap / bytes;  // this transfer's share of the operation's cap
      tr.rate_cap = tr.rate_cap > 0 ? std::min(tr.rate_cap, cap) : cap;
    }
  }
  extra_latency = nccl_extra_latency(topo, t, coll, a, p, bytes, flows);
}

}  // namespace hs::collective
