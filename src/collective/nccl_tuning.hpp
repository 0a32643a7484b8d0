// NCCL's algorithm and protocol model (NCCL 2.30.7, src/graph/tuning.cc ncclTopoTuneModel and
// ncclTopoGetAlgoTime; src/enqueue.cc topoGetAlgoInfo picks the (algorithm, protocol) of least
// predicted time). NCCL predicts time = latency + size / bandwidth per (algorithm, protocol), with
// latency = base + per-step hardware latencies (NVLink, PCI or network per step) and bandwidth the
// Simple protocol's scaled and capped per protocol. Here the bandwidth part stays the topology's: an
// algorithm's transfers (collective/ring.hpp, tree.hpp, nvls.hpp, chain.hpp) drain over the links as
// the network tiers time them; a protocol scales the bytes on the wire by 1 / its bandwidth fraction
// (LL sends a 4-byte flag with every 4 bytes of data, LL128 8 bytes of flags per 128) and caps the
// collective's algorithm bandwidth at NCCL's per-channel maxima; its latency is NCCL's formula, paid
// by both tiers as extra latency beyond the one route latency they add themselves.
//
// Constants (tuning.cc ncclTunerConstantsDefaults, us and GB/s), protocols LL / LL128 / Simple:
//   baseLat   tree 6.8 / 14 / 8.4, ring 6.6 / 14 / 8.4, nvls and nvls_tree 0, pat 8 / 8 / 8
//   hwLat NVLINK  tree 0.6 / 1.25 / 4, ring 0.6 / 1.9 / 3.4, nvls - / - / 25, nvls_tree - / - / 25, pat - / - / 4
//   hwLat PCI     tree 1 / 1.9 / 4,    ring 1 / 2.5 / 5.7
//   hwLat NET     tree 5 / 8.5 / 14,   ring 2.7 / 4 / 14, nvls - / - / 18, nvls_tree - / - / 20.9, pat - / - / 14
// Per-step latencies (hwLat) are scaled by the topology's route latencies (NcclTuning::intra_scale,
// net_scale: 1 where a route inside a node takes 3.4 us and one across nodes 14 us, as NCCL's
// Simple ring steps); base latencies and the net overhead are not.
// Latency of one operation (ranks R on N nodes, ppn = R / N, nsteps = 2(R-1) all-reduce, R-1
// all-gather / reduce-scatter, R broadcast / reduce):
//   ring   base + (nsteps - nInter) x max(intraLat, netOverhead) + nInter x interLat, nInter = 2(N-1)
//          all-reduce, N-1 all-gather / reduce-scatter; netOverhead 1 us (x3 Simple) across nodes
//          (Intel x86 CPUs, getNetOverhead); interLat = hwLat NET + latencyInter (the net plugin's
//          latency: 0 for IB, as here uncalibrated; a calibration's net_step_latency; twice for
//          Simple); multi-node Simple all-reduce x1.4 (x1.9 before sm80) once a
//          channel's share per rank reaches 64 B (the ring's plateau, ncclTopoGetAlgoTime)
//   tree   base + 2 ((ppn - 1) intraLat + log2i(N) interLat)            (all-reduce)
//   nvls   intraLat (+ interLat across nodes)
//   nvls_tree  intraLat + 2 log2i(N) interLat
//   pat    base + log2i(N) interLat / 3.5 + 2.8 R                       (all-gather / reduce-scatter)
//   broadcast / reduce (ring): base + nsteps x hwLat (the tree's for Simple: channels not all alike)
// Bandwidth (busBw per channel x channels, NCCL's "busBw", converted to algorithm bandwidth by
// R / nsteps for ring / nvls / nvls_tree and 1/2 for tree):
//   ring LL: busBw / 2, at most llMaxBw; ring LL128: busBw x 0.92, at most channels x perChMaxRingLL128Bw
//   tree (all-reduce): x 0.92, at most channels x perChMaxTreeBw; LL: / 3.8 more, at most llMaxBw;
//        LL128: x 120/128 more across nodes (7/9 inside one), at most channels x perChMaxTreeLL128Bw;
//        x treeCorrectionFactor[proto][log2(size / 64)] (sizes 64 B - 256 MiB)
//   nvls: x nvlsEfficiency (0.85 Hopper, 0.74 Blackwell, 0 before) x (nvlsChannels - 1) / nvlsChannels
//   nvls_tree: at most channels x perChMaxNVLSTreeBw;  pat: x 0.75
// LL128 is on by default from sm90 for network paths up to PXN, before sm90 up to PXB (a GPU reaching
// its NIC through the CPU turns it off), and only over NVLink inside a node (typeIntra <= NVB).
// PAT runs all-gather / reduce-scatter with one GPU per node (ncclPatEnable). NVLS needs NVLink SHARP
// (sm90+; here a topology's `nvls: true`) and, across nodes, runs as nvlstree (plain NVLS across
// nodes needs CollNet).
//
// Channels: NCCL's graph search gives the inter-node graphs one channel per NIC at about the NIC's
// speed, and the intra-node ones as many channels of the architecture's top search speed as the
// GPU's NVLink bandwidth holds (src/graph/search.cc); the communicator then doubles them
// (src/graph/connect.cc ncclTopoPostset) within [NCCL_MIN_CTAS, NCCL_MAX_CTAS].
//
// What is left out: CollNet, the CPU vendor (an AMD host's LL ceiling and 2 us net overhead), the
// net plugin's own latency in the choice (0, as IB reports it; aws-ofi-nccl reports 75 us on p4d,
// p4de and p5, OFI_NCCL_NET_LATENCY, which NCCL's choice there adds: only a calibration's
// net_step_latency enters here, and times the choice), NVLS for all-gather / reduce-scatter, the tree's
// 0.85 on non-balanced tree patterns, and tree inside one node (NCCL runs it as a chain).
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "collective/transfer.hpp"
#include "topology/topology.hpp"

namespace hs::collective {

enum class NcclProto { kLL, kLL128, kSimple };
enum class NcclAlgo { kRing, kTree, kNvls, kNvlsTree, kPat };
enum class NcclColl { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce };
inline constexpr NcclProto kNcclProtos[] = {NcclProto::kLL, NcclProto::kLL128, NcclProto::kSimple};

const char* to_string(NcclProto p);  // LL, LL128, Simple
const char* to_string(NcclAlgo a);   // ring, tree, nvls, nvlstree, pat
std::optional<NcclProto> parse_nccl_proto(std::string_view s);  // ll | ll128 | simple (any case)
std::optional<NcclAlgo> parse_nccl_algo(std::string_view s);    // ring | tree | nvls | nvlstree (nvls_tree) | pat

// What NCCL's tuner knows of a communicator over `group`.
struct NcclTuning {
  int ranks = 0, nodes = 0;
  int arch = 0;               // compCapIndex: 0 Volta (and older), 1 Ampere, 2 Hopper, 3 Blackwell
  int sm = 70;                // compute capability x 10
  bool intra_nvlink = true;   // GPUs of a node talk over NVLink (else PCI latencies)
  bool net_via_host = false;  // GPU-NIC path through the CPU (PATH_PHB or worse)
  int graph_channels = 1;     // the ring / tree graphs' channels (what the tuner multiplies)
  int comm_channels = 2;      // the communicator's channels (doubled, within MIN/MAX_CTAS)
  int nvls_channels = 16;     // NVLS_NCHANNELS_SM90 16, SM100 32 (src/transport/nvls.cc)
  // The topology's latencies relative to NCCL's Simple ring figures: a GPU-GPU route inside a node
  // over hwLat NVLINK (3.4 us) or PCI (5.7 us), one across nodes over hwLat NET (14 us). NCCL's
  // per-step latencies of every algorithm and protocol are multiplied by them, so a topology (or a
  // calibration) with NCCL's figures gets NCCL's latencies and one with slower links slower ones.
  double intra_scale = 1, net_scale = 1;
  // A calibration's per-protocol factors (topology::NcclConfig::proto_scale, [0 intra, 1 net][LL,
  // LL128, Simple]): NCCL's per-step latencies of a tier times `latency`; a protocol's bandwidth
  // fraction and caps times `bandwidth` (the net tier's for multi-node communicators). They change
  // what an operation takes, not what NCCL picks: plan_nccl chooses with NCCL's own figures
  // (uncalibrated()), as NCCL's tuner does, then times the choice with these.
  topology::NcclProtoScales proto_scale{};
  // A calibration's latency per network step, us (topology::NcclConfig::net_step_latency): NCCL's
  // latencyInter, added to every network step's hwLat NET (twice for Simple, NCCL's flush); like the
  // factors above it times NCCL's choice and does not change it.
  double net_step_us = 0;
  bool calibrated() const { return proto_scale != topology::NcclProtoScales{} || net_step_us != 0; }
  NcclTuning uncalibrated() const {
    NcclTuning u = *this;
    u.proto_scale = {};
    u.net_step_us = 0;
    return u;
  }
};
NcclTuning nccl_tuning(const topology::Topology& topo, std::span<const int> group);

// Whether NCCL considers (algo, proto) for `coll` on this communicator (tuning.cc's loops and enable
// rules, and the topology's NCCL_ALGO / NCCL_PROTO), and the topology can run it (NVLS needs
// switches that reduce).
bool nccl_enabled(const topology::Topology& topo, const NcclTuning& t, NcclColl coll, NcclAlgo a, NcclProto p);
// NCCL's predicted latency of one operation, seconds (above), including the ring's plateau factor
// at `bytes`.
double nccl_latency(const NcclTuning& t, NcclColl coll, NcclAlgo a, NcclProto p, double bytes);
// The protocol's share of the Simple protocol's link bandwidth (bytes on the wire = bytes / fraction)
// and the cap on the operation's algorithm bandwidth (bytes/s; 0 = none).
struct NcclBandwidth {
  double fraction = 1;
  double cap = 0;
};
NcclBandwidth nccl_bandwidth(const NcclTuning& t, NcclColl coll, NcclAlgo a, NcclProto p, double bytes);

// Turns an algorithm's Simple-protocol transfers of a `bytes` operation into protocol p's: wire bytes
// scaled, rate caps for the bandwidth cap (each transfer's share of it), and extra_latency = NCCL's
// latency less the largest route latency of the transfers (which the tiers add), at least 0.
void apply_nccl_protocol(const topology::Topology& topo, const NcclTuning& t, NcclColl coll, NcclAlgo a, NcclProto p,
                         double bytes, Coflow& flows, double& extra_latency);
// The extra latency alone (Simple flows keep their bytes): NCCL's latency less the route latency.
double nccl_extra_latency(const topology::Topology& topo, const NcclTuning& t, NcclColl coll, NcclAlgo a, NcclProto p,
                          double bytes, const Coflow& flows);

}  // namespace hs::collective
