#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "support/test_platforms.hpp"
#include "topology/pair_routes.hpp"
#include "topology/topology_builder.hpp"
#include "topology/topology_loader.hpp"
#include "util/diagnostics.hpp"
#include "support/approx.hpp"

using namespace hs;
using namespace hs::topology;

namespace {
const char* kCompact = R"(schema: hecate-sim/topology@1
name: two nodes
gpu: {model: H100, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, memory: 80GiB}
nodes: 2
gpus_per_node: 4
intra_node: {kind: nvswitch, bandwidth: 400GB/s, efficiency: 0.9, latency: 3us}
nics_per_node: 4
nic: {bandwidth: 400Gbps, efficiency: 0.95, latency: 2us}
fabric: {kind: rail-optimized, switch_latency: 1us}
)";

std::string errors_of(const std::string& text) {
  try {
    load_topology(text, "t.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("compact form compiles to the expected graph and routes") {
  Topology t = load_topology(kCompact, "t.yaml");
  CHECK(t.num_gpus() == 8);
  CHECK(t.num_nodes() == 2);
  // Intra-node: GPU -> NVSwitch -> GPU, bottleneck 400 GB/s x 0.9 = 360 GB/s, latency 3 us GPU to GPU
  // (intra_node.latency; 1.5 us on each of the two links). Route latencies are stored as float:
  // compared to 1e-6.
  auto r = t.route(0, 1);
  CHECK(r.hop_count == 2);
  CHECK(t.route_bandwidth(0, 1).value() == hs::test::approx(360e9));
  CHECK(r.latency.value() == hs::test::approx(3e-6, 1e-6));
  // Inter-node, same rail: GPU -> PCIe -> NIC -> leaf -> NIC -> PCIe -> GPU; NIC 50 GB/s x 0.95.
  CHECK(t.route_bandwidth(0, 4).value() == hs::test::approx(47.5e9));
  CHECK(t.route(0, 4).hop_count == 4);
  // Different rail: through a spine, split evenly over the spines (ECMP): fractions sum to 1 per stage.
  auto r2 = t.route(0, 5);
  CHECK(r2.hop_count == 6);
  double up_to_spines = 0;
  for (const auto& h : r2.hops)
    if (t.vertices()[t.link(h.link).to].name.find("spine") != std::string::npos) up_to_spines += h.fraction;
  CHECK(up_to_spines == hs::test::approx(1.0));
}

TEST_CASE("on NVSwitch nodes GPUs never forward traffic and intra-node traffic stays on NVLink") {
  Topology t = load_topology(kCompact, "t.yaml");
  for (int a = 0; a < t.num_gpus(); ++a)
    for (int b = 0; b < t.num_gpus(); ++b) {
      if (a == b) continue;
      for (const auto& h : t.route(a, b).hops) {
        const auto& l = t.link(h.link);
        if (l.to != t.gpu_vertex(b)) CHECK(t.vertices()[l.to].kind != VertexKind::kGpu);
        if (t.node_of(a) == t.node_of(b)) CHECK(l.link_class == "nvlink");
      }
    }
}

TEST_CASE("explicit nodes/links form") {
  const char* text = R"(schema: hecate-sim/topology@1
name: ring of 3
gpu: {model: X, peak_bf16: 100TFLOPS, hbm_bandwidth: 1TB/s, memory: 16GiB}
gpus: [{name: a, node: 0}, {name: b, node: 0}, {name: c, node: 1}]
switches: [{name: s}]
links:
  - {from: a, to: s, bandwidth: 10GB/s, latency: 1us, class: nvlink}
  - {from: b, to: s, bandwidth: 20GB/s, latency: 1us, class: nvlink}
  - {from: c, to: s, bandwidth: 5GB/s, latency: 1us, class: nic}
)";
  Topology t = load_topology(text, "x.yaml");
  CHECK(t.num_gpus() == 3);
  CHECK(t.num_nodes() == 2);
  // a -> b: min(10, 20) GB/s; a -> c: min(10, 5) GB/s.
  CHECK(t.route_bandwidth(0, 1).value() == hs::test::approx(10e9));
  CHECK(t.route_bandwidth(0, 2).value() == hs::test::approx(5e9));
}

TEST_CASE("bad topologies name file, line, field and what was expected") {
  std::string bad_unit = kCompact;
  bad_unit.replace(bad_unit.find("400Gbps"), 7, "400 furlongs");
  auto e = errors_of(bad_unit);
  CHECK(e.find("t.yaml:8:") != std::string::npos);
  CHECK(e.find("nic.bandwidth") != std::string::npos);
  CHECK(e.find("400Gbps") != std::string::npos);  // the example of what is expected

  std::string typo = std::string(kCompact) + "gpus_per_nod: 8\n";
  e = errors_of(typo);
  CHECK(e.find("t.yaml:10:1") != std::string::npos);
  CHECK(e.find("gpus_per_nod") != std::string::npos);
  CHECK(e.find("unknown key") != std::string::npos);

  // Several problems reported together.
  std::string two = kCompact;
  two.replace(two.find("nodes: 2"), 8, "nodes: -1");
  two += "colour: blue\n";
  e = errors_of(two);
  CHECK(e.find("nodes") != std::string::npos);
  CHECK(e.find("colour") != std::string::npos);

  CHECK(errors_of("{unclosed: [").find("malformed YAML") != std::string::npos);
  CHECK(errors_of("- just\n- a list\n").find("expected a map") != std::string::npos);
  std::string disconnected = R"(schema: hecate-sim/topology@1
name: broken
gpu: {model: X, peak_bf16: 100TFLOPS, hbm_bandwidth: 1TB/s, memory: 16GiB}
gpus: [{name: a, node: 0}, {name: b, node: 0}]
links:
  - {from: a, to: nowhere, bandwidth: 10GB/s}
)";
  e = errors_of(disconnected);
  CHECK(e.find("links[0].to") != std::string::npos);
  CHECK(e.find("nowhere") != std::string::npos);
}

TEST_CASE("GPU compute capability: given, inferred from the model name, else 8.0") {
  // kCompact names an H100 and gives no capability: inferred 9.0.
  CHECK(load_topology(kCompact, "t.yaml").gpu_model().compute_capability == 9.0);
  auto with_gpu = [](const std::string& gpu) {
    std::string t = kCompact;
    const size_t at = t.find("gpu: {");
    t.replace(at, t.find('\n', at) - at, gpu);
    return t;
  };
  CHECK(load_topology(with_gpu("gpu: {model: V100-SXM2-32GB, peak_bf16: 125TFLOPS, hbm_bandwidth: 0.9TB/s, "
                               "memory: 32GiB}"), "t.yaml")
            .gpu_model()
            .compute_capability == 7.0);
  // Given explicitly: wins over the name.
  CHECK(load_topology(with_gpu("gpu: {model: V100, peak_bf16: 125TFLOPS, hbm_bandwidth: 0.9TB/s, memory: 32GiB, "
                               "compute_capability: 7.5}"), "t.yaml")
            .gpu_model()
            .compute_capability == 7.5);
  // Unknown name, nothing given: 8.0 assumed.
  CHECK(load_topology(with_gpu("gpu: {model: X, peak_bf16: 100TFLOPS, hbm_bandwidth: 1TB/s, memory: 16GiB}"), "t.yaml")
            .gpu_model()
            .compute_capability == 8.0);

  CHECK(infer_compute_capability("V100-SXM2-32GB") == 7.0);
  CHECK(infer_compute_capability("Tesla V100") == 7.0);
  CHECK(infer_compute_capability("A100-SXM4-40GB") == 8.0);
  CHECK(infer_compute_capability("a100") == 8.0);
  CHECK(infer_compute_capability("A10") == 8.6);
  CHECK(infer_compute_capability("NVIDIA H100 80GB HBM3") == 9.0);
  CHECK(infer_compute_capability("H200-SXM-141GB") == 9.0);
  CHECK(infer_compute_capability("GH200") == 9.0);
  CHECK(infer_compute_capability("L40S") == 8.9);
  CHECK(infer_compute_capability("T4") == 7.5);
  CHECK_FALSE(infer_compute_capability("RTX A4000"));  // A40 followed by a digit is another GPU
  CHECK_FALSE(infer_compute_capability("X"));
  CHECK_FALSE(infer_compute_capability(""));

  // Bad values: located (line 3 holds the gpu map), named, explained.
  for (const char* bad : {"sm80", "8.65", "0.5", "[8, 0]", "-7.0"}) {
    CAPTURE(bad);
    const auto e = errors_of(with_gpu(std::string("gpu: {model: H100, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, "
                                                  "memory: 80GiB, compute_capability: ") + bad + "}"));
    CHECK(e.find("t.yaml:3:") != std::string::npos);
    CHECK(e.find("gpu.compute_capability") != std::string::npos);
    CHECK(e.find("expected a CUDA compute capability") != std::string::npos);
  }
}

TEST_CASE("GPU SM count: given, inferred from the model name (whitepapers), else 0") {
  auto sms_of = [](const std::string& gpu) {
    std::string t = kCompact;
    t.replace(t.find("gpu: {"), t.find('\n', t.find("gpu: {")) - t.find("gpu: {"), gpu);
    return load_topology(t, "t.yaml").gpu_model().sms;
  };
  CHECK(sms_of("gpu: {model: H100-SXM5-80GB, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, memory: 80GiB}") == 132);
  CHECK(sms_of("gpu: {model: X, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, memory: 80GiB, sms: 100}") == 100);
  CHECK(sms_of("gpu: {model: X, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, memory: 80GiB}") == 0);
  CHECK(infer_sm_count("V100-SXM2-32GB") == 80);
  CHECK(infer_sm_count("A100-SXM4-40GB") == 108);
  CHECK(infer_sm_count("NVIDIA H100 80GB HBM3") == 132);
  CHECK(infer_sm_count("H100 PCIe") == 114);
  CHECK(infer_sm_count("H800") == 132);
  CHECK(infer_sm_count("H200-SXM-141GB") == 132);
  CHECK_FALSE(infer_sm_count("GH200"));  // not matched as H200, and no figure given for it
  CHECK_FALSE(infer_sm_count("A10"));
  // Bad values: located (line 3 holds the gpu map), named, explained.
  for (const char* bad : {"0", "-4", "1.5", "many", "[132]"}) {
    CAPTURE(bad);
    std::string t = kCompact;
    const std::string gpu = std::string("gpu: {model: H100, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, memory: 80GiB, sms: ") + bad + "}";
    t.replace(t.find("gpu: {"), t.find('\n', t.find("gpu: {")) - t.find("gpu: {"), gpu);
    const auto e = errors_of(t);
    CHECK(e.find("t.yaml:3:") != std::string::npos);
    CHECK(e.find("gpu.sms") != std::string::npos);
    CHECK(e.find("expected an integer") != std::string::npos);
  }
}

TEST_CASE("GPU overlap slowdowns: defaults from the published measurement, overridable, validated") {
  using hs::engine::Interference;
  // Absent: every compute cell 0.189 (arXiv 2507.03114's mean, measured inside one node; no source
  // splits it by kernel class or measures it across nodes), communication 0.
  const auto g = load_topology(kCompact, "t.yaml").gpu_model();
  CHECK(g.interference == Interference(0.189, 0.0));
  auto with_overlap = [](const std::string& overlap) {
    std::string t = kCompact;
    const size_t at = t.find("gpu: {");
    t.replace(at, t.find('\n', at) - at,
              "gpu: {model: H100, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, memory: 80GiB, overlap_slowdown: " +
                  overlap + "}");
    return t;
  };
  // The flat form keeps its meaning: every kernel class beside every traffic kind.
  const auto o = load_topology(with_overlap("{compute: 0.3, communication: 0.1}"), "t.yaml").gpu_model();
  CHECK(o.interference == Interference(0.3, 0.1));
  // By kind: a class as a number (both traffic kinds) or a map; cells not named keep the default.
  const auto k = load_topology(with_overlap("{compute: {gemm: {network: 0.05}, memory_bound: 0.4}, "
                                            "communication: {network: 0.2}}"),
                               "t.yaml")
                     .gpu_model()
                     .interference;
  using hs::engine::KernelClass;
  using hs::engine::Traffic;
  CHECK(k.compute_slowdown(KernelClass::kGemm, Traffic::kIntraNode) == 0.189);
  CHECK(k.compute_slowdown(KernelClass::kGemm, Traffic::kNetwork) == 0.05);
  CHECK(k.compute_slowdown(KernelClass::kAttention, Traffic::kIntraNode) == 0.189);
  CHECK(k.compute_slowdown(KernelClass::kAttention, Traffic::kNetwork) == 0.189);
  CHECK(k.compute_slowdown(KernelClass::kMemoryBound, Traffic::kIntraNode) == 0.4);
  CHECK(k.compute_slowdown(KernelClass::kMemoryBound, Traffic::kNetwork) == 0.4);
  CHECK(k.communication_slowdown(Traffic::kIntraNode) == 0.0);
  CHECK(k.communication_slowdown(Traffic::kNetwork) == 0.2);
  // Bad values: located (line 3), named down to the cell, explained.
  const std::pair<const char*, const char*> bad[] = {
      {"{compute: -0.1}", "gpu.overlap_slowdown.compute"},
      {"{compute: fast}", "gpu.overlap_slowdown.compute"},
      {"{compute: 0.2, network: 0.1}", "gpu.overlap_slowdown.network"},
      {"{compute: [0.1]}", "gpu.overlap_slowdown.compute"},
      {"{compute: {gemm: 11}}", "gpu.overlap_slowdown.compute.gemm"},
      {"{compute: {tensor: 0.1}}", "gpu.overlap_slowdown.compute.tensor"},
      {"{compute: {attention: {nvlink: -1}}}", "gpu.overlap_slowdown.compute.attention.nvlink"},
      {"{compute: {gemm: {infiniband: 0.1}}}", "gpu.overlap_slowdown.compute.gemm.infiniband"},
      {"{communication: {network: x}}", "gpu.overlap_slowdown.communication.network"},
      {"{communication: {pcie: 0.1}}", "gpu.overlap_slowdown.communication.pcie"},
  };
  for (const auto& [text, field] : bad) {
    CAPTURE(text);
    const auto e = errors_of(with_overlap(text));
    CHECK(e.find("t.yaml:3:") != std::string::npos);
    CHECK(e.find(field) != std::string::npos);
  }
}

TEST_CASE("links that can never bind are recognized (PCIe hop in front of a slower NIC)") {
  // 2 nodes x 4 GPUs, one 25 GB/s NIC per GPU behind a 64 GB/s PCIe link: every route over a
  // GPU's PCIe uplink also crosses its NIC uplink (25 < 64), so the PCIe link never limits a flow;
  // the NIC links and the NVSwitch ports may. With a PCIe link slower than the NIC, the NIC link is
  // the one dominated instead.
  for (double pcie : {64e9, 20e9}) {
    CAPTURE(pcie);
    test::ClusterShape c;
    c.nodes = 2, c.gpus_per_node = 4, c.nics = 4, c.nic_bw = 25e9, c.pcie_bw = pcie;
    auto t = test::make_cluster(c);
    int pcie_kept = 0, nic_kept = 0, nvlink_kept = 0, pcie_links = 0, nic_links = 0;
    for (int l = 0; l < t.num_links(); ++l) {
      const auto& k = t.link(l).link_class;
      if (k == "pcie") ++pcie_links, pcie_kept += t.may_bind(l);
      if (k == "nic") ++nic_links, nic_kept += t.may_bind(l);
      if (k == "nvlink") nvlink_kept += t.may_bind(l);
    }
    CHECK(pcie_links > 0);
    CHECK(nvlink_kept > 0);
    if (pcie > 25e9) {
      CHECK(pcie_kept == 0);
      CHECK(nic_kept > 0);
    } else {
      CHECK(pcie_kept == pcie_links);
    }
  }
}

namespace {
// Two p3dn.24xlarge-like nodes: the DGX-1V NVLink hybrid cube-mesh (25 GB/s per NVLink x 0.8 = 20
// GB/s effective; NV2 pairs 40), four PCIe switches of two GPUs per node, one NIC without GPUDirect
// RDMA (so on the host), PCIe 16 GB/s x 0.75 = 12 GB/s per link.
const char* kCubeMesh = R"(schema: hecate-sim/topology@1
name: two cube-mesh nodes
gpu: {model: V100, peak_bf16: 125TFLOPS, hbm_bandwidth: 0.9TB/s, memory: 32GiB}
nodes: 2
gpus_per_node: 8
intra_node: {kind: hybrid-cube-mesh, bandwidth: 25GB/s, efficiency: 0.8, latency: 3us}
nics_per_node: 1
nic: {bandwidth: 100Gbps, efficiency: 1.0, latency: 10us, gpudirect_rdma: false}
pcie: {bandwidth: 16GB/s, efficiency: 0.75, latency: 0.5us, gpus_per_switch: 2}
fabric: {kind: single-switch, switch_latency: 5us}
)";

std::string name_of(const Topology& t, VertexId v) { return t.vertices()[v].name; }

// `text` with its first `from` replaced by `to`.
std::string with(std::string text, const std::string& from, const std::string& to) {
  return text.replace(text.find(from), from.size(), to);
}

// Whether some hop of route(s, d) goes from vertex `from` to vertex `to` (by name).
bool crosses(const Topology& t, int s, int d, const std::string& from, const std::string& to) {
  for (const auto& h : t.route(s, d).hops)
    if (name_of(t, t.link(h.link).from) == from && name_of(t, t.link(h.link).to) == to) return true;
  return false;
}
}  // namespace

TEST_CASE("hybrid cube-mesh: the DGX-1V NVLink matrix, NV2 twice NV1, one relay GPU for pairs without an NVLink") {
  Topology t = load_topology(kCubeMesh, "t.yaml");
  // Every GPU uses its six NVLinks: 6 x 25 GB/s of line rate out of it.
  for (int g = 0; g < t.num_gpus(); ++g) {
    double out = 0;
    for (const auto& l : t.links())
      if (l.from == t.gpu_vertex(g) && l.link_class == "nvlink") out += l.line_rate.value();
    CHECK(out == hs::test::approx(150e9));
  }
  // Adjacent pairs go direct: GPU0-GPU1 is NV1 (one link, 25 x 0.8 = 20 GB/s), GPU0-GPU3 NV2 (two
  // bonded links, 40 GB/s, twice as much); one hop of 3 us.
  CHECK(t.route(0, 1).hop_count == 1);
  CHECK(t.route_bandwidth(0, 1).value() == hs::test::approx(20e9));
  CHECK(t.route_bandwidth(0, 3).value() == hs::test::approx(2 * t.route_bandwidth(0, 1).value()));
  CHECK(t.route(0, 3).latency.value() == hs::test::approx(3e-6, 1e-6));  // float storage
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b && kHybridCubeMesh[a][b] > 0) CHECK(t.route(a, b).hop_count == 1);
  // GPU0 -> GPU5 (no NVLink): through GPU1 (NV1 then NV2) or GPU4 (NV2 then NV1), equal cost, half
  // the bytes each: four NVLink hops of fraction 1/2, two hops long (6 us). The route's bottleneck
  // is an NV1 link carrying half: 20 / 0.5 = 40 GB/s (the fluid limit of the two paths; NCCL itself
  // sends one pair through one GPU).
  auto r = t.route(0, 5);
  CHECK(r.hop_count == 2);
  CHECK(r.latency.value() == hs::test::approx(6e-6, 1e-6));
  REQUIRE(r.hops.size() == 4);
  for (const auto& h : r.hops) {
    CHECK(t.link(h.link).link_class == "nvlink");
    CHECK(h.fraction == hs::test::approx(0.5));
  }
  CHECK(crosses(t, 0, 5, "node0.gpu0", "node0.gpu1"));
  CHECK(crosses(t, 0, 5, "node0.gpu1", "node0.gpu5"));
  CHECK(crosses(t, 0, 5, "node0.gpu0", "node0.gpu4"));
  CHECK(crosses(t, 0, 5, "node0.gpu4", "node0.gpu5"));
  CHECK(t.route_bandwidth(0, 5).value() == hs::test::approx(40e9));
  // GPU0 -> GPU6: via GPU4 (NV2 + NV1, cost ~ 1/40 + 1/20) beats via GPU2 (NV1 + NV1, 1/20 + 1/20):
  // all the bytes over 0 -> 4 -> 6, bottleneck the NV1 link 4 -> 6 at 20 GB/s.
  REQUIRE(t.route(0, 6).hops.size() == 2);
  CHECK(crosses(t, 0, 6, "node0.gpu0", "node0.gpu4"));
  CHECK(crosses(t, 0, 6, "node0.gpu4", "node0.gpu6"));
  CHECK(t.route_bandwidth(0, 6).value() == hs::test::approx(20e9));
  // Inside a node every route is NVLink only, and a GPU forwards only between two NVLinks of its
  // node, at most once per path (two hops).
  for (int a = 0; a < t.num_gpus(); ++a)
    for (int b = 0; b < t.num_gpus(); ++b) {
      if (a == b || t.node_of(a) != t.node_of(b)) continue;
      CHECK(t.route(a, b).hop_count <= 2);
      for (const auto& h : t.route(a, b).hops) CHECK(t.link(h.link).link_class == "nvlink");
    }
}

TEST_CASE("hybrid cube-mesh and PCIe switches: bad values are located errors") {
  struct Bad {
    const char *from, *to, *where, *field, *expected;
  };
  for (const Bad& b : {Bad{"gpus_per_node: 8", "gpus_per_node: 4", "t.yaml:6:", "intra_node.kind", "gpus_per_node: 8"},
                       Bad{"gpus_per_switch: 2", "gpus_per_switch: 3", "t.yaml:9:", "pcie.gpus_per_switch",
                           "multiple of gpus_per_switch 3"},
                       Bad{"gpudirect_rdma: false", "gpudirect_rdma: maybe", "t.yaml:8:", "nic.gpudirect_rdma", ""}}) {
    CAPTURE(b.to);
    const auto e = errors_of(with(kCubeMesh, b.from, b.to));
    CHECK(e.find(b.where) != std::string::npos);
    CHECK(e.find(b.field) != std::string::npos);
    CHECK(e.find(b.expected) != std::string::npos);
  }
  // Built in code with another GPU count: the same error.
  CompactSpec s;
  s.intra_kind = "hybrid-cube-mesh";
  s.gpus_per_node = 4;
  s.intra = {Bandwidth(25e9), 1.0, Seconds(0), ""};
  CHECK_THROWS_AS(build_compact(s, {"code", 0, 0}), InputError);
}

TEST_CASE("without GPUDirect RDMA every inter-node route is staged through the host over PCIe") {
  Topology t = load_topology(kCubeMesh, "t.yaml");
  // GPU g of node n: node<n>.gpu<g> -> node<n>.pcie<g/2> -> node<n>.host -> node<n>.nic0 -> core ->
  // node<m>.nic0 -> node<m>.host -> node<m>.pcie<h/2> -> node<m>.gpu<h>: 8 hops, every PCIe link at
  // 16 x 0.75 = 12 GB/s (below the NIC's 12.5): latency 3 x 0.5 us + 2 x (10 + 5) us + 3 x 0.5 us.
  for (int s = 0; s < 16; ++s)
    for (int d = 0; d < 16; ++d) {
      if (t.node_of(s) == t.node_of(d)) continue;
      CAPTURE(s);
      CAPTURE(d);
      const int ns = t.node_of(s), nd = t.node_of(d), gs = s % 8, gd = d % 8;
      const auto in = [](int n, const std::string& v) { return fmt::format("node{}.{}", n, v); };
      CHECK(crosses(t, s, d, in(ns, fmt::format("gpu{}", gs)), in(ns, fmt::format("pcie{}", gs / 2))));
      CHECK(crosses(t, s, d, in(ns, fmt::format("pcie{}", gs / 2)), in(ns, "host")));
      CHECK(crosses(t, s, d, in(ns, "host"), in(ns, "nic0")));
      CHECK(crosses(t, s, d, in(nd, "nic0"), in(nd, "host")));
      CHECK(crosses(t, s, d, in(nd, "host"), in(nd, fmt::format("pcie{}", gd / 2))));
      CHECK(t.route(s, d).hop_count == 8);
      CHECK(t.route(s, d).latency.value() == hs::test::approx(33e-6, 1e-6));  // float storage
      CHECK(t.route_bandwidth(s, d).value() == hs::test::approx(12e9));
      for (const auto& h : t.route(s, d).hops) CHECK(t.link(h.link).link_class != "nvlink");
    }
  // GPUs 0 and 1 share PCIe switch 0's uplink to the host, as on the machine.
  CHECK(crosses(t, 0, 8, "node0.pcie0", "node0.host"));
  CHECK(crosses(t, 1, 9, "node0.pcie0", "node0.host"));
  CHECK_FALSE(crosses(t, 2, 10, "node0.pcie0", "node0.host"));

  // With GPUDirect RDMA and one NIC per switch (p4d: 2 GPUs and 1 NIC per PCIe switch) the NIC sits
  // on its GPUs' switch: GPU -> switch -> NIC, never the host; both GPUs share the switch-NIC link.
  Topology p4d = load_topology(with(with(kCubeMesh, "nics_per_node: 1", "nics_per_node: 4"), "gpudirect_rdma: false",
                                     "gpudirect_rdma: true"), "t.yaml");
  CHECK(p4d.route(0, 8).hop_count == 6);
  CHECK(crosses(p4d, 0, 8, "node0.pcie0", "node0.nic0"));
  CHECK(crosses(p4d, 1, 9, "node0.pcie0", "node0.nic0"));
  CHECK(crosses(p4d, 2, 10, "node0.pcie1", "node0.nic1"));
  for (int s = 0; s < 8; ++s)
    for (const auto& h : p4d.route(s, 8 + s).hops) CHECK(name_of(p4d, p4d.link(h.link).to).find("host") == std::string::npos);
  // With GPUDirect RDMA but one NIC for all four switches, the NIC hangs off the host (the path
  // from a GPU crosses the CPU, as NCCL's PHB distance).
  CHECK(crosses(load_topology(with(kCubeMesh, "gpudirect_rdma: false", "gpudirect_rdma: true"), "t.yaml"), 0, 8,
                "node0.host", "node0.nic0"));
}

namespace {
// Two nodes of 8 GPUs with 32 NICs each (4 per GPU, as AWS p5.48xlarge: 32 x 100 Gb/s EFA for 8
// H100, one PCIe switch per GPU with its four NICs).
const char* kManyNics = R"(schema: hecate-sim/topology@1
name: two p5-like nodes
gpu: {model: H100, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, memory: 80GiB}
nodes: 2
gpus_per_node: 8
intra_node: {kind: nvswitch, bandwidth: 450GB/s, efficiency: 1.0, latency: 3us}
nics_per_node: 32
nic: {bandwidth: 100Gbps, efficiency: 1.0, latency: 10us}
pcie: {bandwidth: 64GB/s, efficiency: 1.0, latency: 0.5us}
fabric: {kind: single-switch, switch_latency: 5us}
)";
}  // namespace

TEST_CASE("more NICs than GPUs: GPU i's traffic splits evenly over its own NICs") {
  Topology t = load_topology(kManyNics, "t.yaml");
  REQUIRE(t.num_gpus() == 16);
  // topo show says so (the description's line).
  CHECK(t.description.find("4 NICs per GPU (GPU i has NICs [4i, 4i + 4)), its network traffic split evenly over them") !=
        std::string::npos);
  int nics = 0;
  for (const auto& v : t.vertices()) nics += v.kind == VertexKind::kNic;
  CHECK(nics == 64);
  // GPU g of node n: node<n>.gpu<g> -> node<n>.gpu<g>.pcie (1.0) -> node<n>.nic<4g+j> (1/4 each,
  // j = 0..3) -> core (1/4 each) -> the destination's four NICs (1/4 each) -> its PCIe switch -> it.
  // Bandwidth: min(PCIe 64 GB/s, 4 NICs x 12.5 GB/s = 50 GB/s) = 50 GB/s. Hops: 6 (one branch).
  // Latency: 0.5 + 0.5 + (10 + 5) + (10 + 5) + 0.5 + 0.5 us = 32 us (the NIC-core links carry
  // the switch latency).
  for (int s = 0; s < 8; ++s) {
    const int d = 8 + (s + 3) % 8;
    CAPTURE(s);
    const auto r = t.route(s, d);
    CHECK(r.hop_count == 6);
    CHECK(t.route_bandwidth(s, d).value() == hs::test::approx(50e9));
    CHECK(r.latency.value() == hs::test::approx(32e-6, 1e-6));  // float storage
    std::vector<double> out(32, 0.0), in(32, 0.0);
    for (const auto& h : r.hops) {
      const auto& from = name_of(t, t.link(h.link).from);
      const auto& to = name_of(t, t.link(h.link).to);
      for (int j = 0; j < 32; ++j) {
        if (from == fmt::format("node0.gpu{}.pcie", s) && to == fmt::format("node0.nic{}", j)) out[j] += h.fraction;
        if (from == fmt::format("node1.nic{}", j) && to == fmt::format("node1.gpu{}.pcie", d - 8)) in[j] += h.fraction;
      }
    }
    for (int j = 0; j < 32; ++j) {
      CAPTURE(j);
      CHECK(out[j] == (j / 4 == s ? 0.25 : 0.0));
      CHECK(in[j] == (j / 4 == d - 8 ? 0.25 : 0.0));
    }
    CHECK(crosses(t, s, d, fmt::format("node0.gpu{}", s), fmt::format("node0.gpu{}.pcie", s)));
  }
  // Inside a node the NVSwitch stays cheaper than the PCIe detour.
  CHECK(t.route(0, 1).hop_count == 2);
  CHECK(t.route_bandwidth(0, 1).value() == hs::test::approx(450e9));

  // Rail-optimized: GPU i's four NICs on rail (leaf) i: same-index GPUs meet at their leaf (6 hops),
  // other pairs cross a spine (8 hops); GPU 0's NICs reach leaf 0 only.
  Topology rail = load_topology(with(kManyNics, "kind: single-switch", "kind: rail-optimized"), "t.yaml");
  CHECK(rail.route(3, 11).hop_count == 6);
  CHECK(crosses(rail, 3, 11, "node0.nic13", "fabric.leaf3"));
  CHECK(rail.route(3, 12).hop_count == 8);
  CHECK(rail.route_bandwidth(3, 12).value() == hs::test::approx(50e9));
  for (int j = 0; j < 4; ++j) CHECK(crosses(rail, 0, 9, fmt::format("node0.nic{}", j), "fabric.leaf0"));

  // PCIe switches shared by two GPUs (gpus_per_switch: 2) with 16 NICs: each switch holds its two
  // GPUs' four NICs, and a GPU's traffic spreads over the switch's NICs (equal PCIe distance).
  Topology shared = load_topology(with(with(kManyNics, "nics_per_node: 32", "nics_per_node: 16"),
                                       "latency: 0.5us}", "latency: 0.5us, gpus_per_switch: 2}"), "t.yaml");
  for (int j = 0; j < 4; ++j) CHECK(crosses(shared, 0, 8, "node0.pcie0", fmt::format("node0.nic{}", j)));
  CHECK_FALSE(crosses(shared, 0, 8, "node0.pcie0", "node0.nic4"));
  CHECK(shared.description.find("split evenly over the NICs of its PCIe switch") != std::string::npos);

  // Counts that do not divide: the field is named.
  auto e = errors_of(with(kManyNics, "nics_per_node: 32", "nics_per_node: 12"));
  CHECK(e.find("nics_per_node") != std::string::npos);
  CHECK(e.find("one must be a multiple of the other") != std::string::npos);
}

namespace {
// Compact spec of `nodes` 8-GPU nodes for the factored-routes comparison.
CompactSpec factoring_spec(int nodes, const std::string& fabric, int nics, double oversub, int per_leaf, int spines) {
  CompactSpec s;
  s.name = "f";
  s.gpu = {"X", FlopRate(1e15), Bandwidth(3e12), Bytes(80e9)};
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.intra = {Bandwidth(450e9), 0.82, Seconds(3.4e-6), ""};
  s.nics_per_node = nics;
  s.nic = {Bandwidth(50e9), 0.95, Seconds(2e-6), ""};
  s.pcie = {Bandwidth(64e9), 0.85, Seconds(1e-6), ""};
  s.fabric_kind = fabric;
  s.oversubscription = oversub;
  s.nodes_per_leaf = per_leaf;
  s.spines = spines;
  s.switch_latency = Seconds(0.6e-6);
  return s;
}
}  // namespace

TEST_CASE("factored routes equal the all-pairs routes: same hops, fractions, latencies, hop counts") {
  // Large compact topologies store a route as (the source's way out of its node) + (gateway to
  // gateway over the spines) + (the way into the destination), or its node's route; forced here
  // on small ones, every pair must match the all-pairs shortest-path routing exactly (hops as sets:
  // the factored ones come segment by segment), latencies to float storage.
  struct Case {
    int nodes;
    const char* fabric;
    int nics;
    double oversub;
    int per_leaf, spines;
  };
  for (const Case& c : {Case{3, "single-switch", 8, 1.0, 4, 0}, Case{5, "fat-tree", 8, 2.0, 2, 0},
                        Case{6, "fat-tree", 8, 1.0, 4, 3}, Case{4, "rail-optimized", 8, 1.0, 4, 0},
                        Case{4, "rail-optimized", 2, 1.0, 4, 0}, Case{3, "single-switch", 4, 1.0, 4, 0},
                        // More NICs than GPUs (2, 3 and 4 per GPU): a GPU's way out splits over its NICs.
                        Case{3, "single-switch", 32, 1.0, 4, 0}, Case{4, "rail-optimized", 16, 1.0, 4, 0},
                        Case{5, "fat-tree", 32, 2.0, 2, 0}, Case{3, "single-switch", 24, 1.0, 4, 0},
                        Case{6, "fat-tree", 16, 1.0, 4, 3}}) {
    CAPTURE(c.fabric);
    CAPTURE(c.nodes);
    CAPTURE(c.nics);
    auto spec = factoring_spec(c.nodes, c.fabric, c.nics, c.oversub, c.per_leaf, c.spines);
    const Topology all = build_compact(spec, {"f", 0, 0});
    spec.force_factored_routes = true;
    const Topology fac = build_compact(spec, {"f", 0, 0});
    REQUIRE_FALSE(all.factored_routes());
    REQUIRE(fac.factored_routes());
    REQUIRE(all.num_links() == fac.num_links());
    auto sorted = [](const HopSeq& h) {
      std::vector<std::pair<LinkId, double>> v;
      for (const auto& x : h) v.emplace_back(x.link, x.fraction);
      std::sort(v.begin(), v.end());
      return v;
    };
    for (int a = 0; a < all.num_gpus(); ++a)
      for (int b = 0; b < all.num_gpus(); ++b) {
        if (a == b) continue;
        const auto ra = all.route(a, b), rf = fac.route(a, b);
        CHECK(sorted(ra.hops) == sorted(rf.hops));
        CHECK(ra.hop_count == rf.hop_count);
        CHECK(rf.latency.value() == hs::test::approx(ra.latency.value(), 1e-6));
        CHECK(rf.latency.value() == fac.route_latency(a, b).value());
      }
    // Loads: a uniform all-to-all of one byte per ordered pair puts on link l the sum of its
    // fractions over all routes; the same in both forms. With m = nics / 8 > 1 NICs per GPU, each
    // NIC's link to the fabric carries 1/m of its GPU's (n - 8) inter-node routes: (n - 8) / m
    // bytes (3 nodes, 32 NICs: 16 / 4 = 4).
    std::vector<double> load_all(static_cast<size_t>(all.num_links()), 0.0), load_fac(load_all);
    for (int a = 0; a < all.num_gpus(); ++a)
      for (int b = 0; b < all.num_gpus(); ++b) {
        if (a == b) continue;
        for (const auto& h : all.route(a, b).hops) load_all[h.link] += h.fraction;
        for (const auto& h : fac.route(a, b).hops) load_fac[h.link] += h.fraction;
      }
    for (LinkId l = 0; l < all.num_links(); ++l) {
      CAPTURE(l);
      CHECK(load_fac[l] == hs::test::approx(load_all[l], 1e-12));
      const auto& from = all.vertices()[all.link(l).from];
      if (c.nics > 8 && from.kind == VertexKind::kNic && all.vertices()[all.link(l).to].node < 0)
        CHECK(load_all[l] == hs::test::approx((all.num_gpus() - 8) / (c.nics / 8.0), 1e-12));
    }
    // Pruning. The all-pairs form has a second pass the factored one skips (it may prune more); the
    // factored one's first pass sees the spines' links in every route through any of them (a route
    // splits over all of them), at the same load and capacity, and may keep one where the all-pairs
    // form's candidate lists (4 per link) miss that (both then keep one per set of twins). Pruning
    // either way changes no rate: a link only the factored form prunes is crossed by no route that
    // does not cross a kept link with the same fraction and no more capacity.
    for (LinkId l = 0; l < all.num_links(); ++l) {
      if (fac.may_bind(l) || !all.may_bind(l)) continue;
      CAPTURE(l);
      std::vector<char> on_all(static_cast<size_t>(fac.num_links()), 1);
      for (int a = 0; a < fac.num_gpus(); ++a)
        for (int b = 0; b < fac.num_gpus(); ++b) {
          if (a == b) continue;
          const auto hops = sorted(fac.route(a, b).hops);
          double here = 0;
          for (const auto& [m, f] : hops)
            if (m == l) here = f;
          if (here == 0) continue;
          std::vector<char> ok(on_all.size(), 0);
          for (const auto& [m, f] : hops) ok[m] = f == here;
          for (size_t m = 0; m < ok.size(); ++m) on_all[m] = on_all[m] && ok[m];
        }
      bool dominated = false;
      for (LinkId m = 0; m < fac.num_links(); ++m)
        dominated = dominated || (m != l && on_all[m] && fac.may_bind(m) && fac.link(m).bandwidth.value() <= fac.link(l).bandwidth.value());
      CHECK(dominated);
    }
    for (int a = 0; a < all.num_gpus(); ++a)
      for (int b = 0; b < all.num_gpus(); ++b)
        if (a != b)
          for (const auto& h : fac.binding_hops(a, b)) CHECK(fac.may_bind(h.link));
  }
}

TEST_CASE("twin links: of the ECMP links that carry the same share of the same routes, one stays in the max-min problem") {
  // Over an oversubscribed core every spine's link up from a leaf carries 1/S of each cross-leaf
  // route of that leaf, at the same capacity: S identical constraints, so one stays (the lowest
  // id) and a cross-leaf route keeps 4 binding hops (its NIC out, one uplink, one downlink, its NIC
  // in) instead of 2 + 2S. Checked by brute force over every route, all-pairs and factored: every
  // fabric link left out has a kept twin (same capacity, the same fraction of every route), no two
  // kept fabric links are twins, and a leaf's uplinks and downlinks (which bind at 2:1) are
  // represented by one kept link each. (That leaving them out changes no rate: flow_network_test.)
  struct Case {
    int nodes, per_leaf, spines;
    double oversub;
  };
  for (const Case& c : {Case{6, 2, 0, 2.0}, Case{8, 2, 3, 2.0}, Case{9, 3, 4, 1.5}, Case{4, 2, 2, 2.0}})
    for (bool factored : {false, true}) {
      CAPTURE(c.nodes);
      CAPTURE(c.spines);
      CAPTURE(factored);
      auto spec = factoring_spec(c.nodes, "fat-tree", 8, c.oversub, c.per_leaf, c.spines);
      spec.force_factored_routes = factored;
      const Topology t = build_compact(spec, {"f", 0, 0});
      REQUIRE(t.factored_routes() == factored);
      const int n = t.num_gpus(), nl = t.num_links();
      // fraction[l][pair]: the share of route (s, d)'s bytes crossing link l.
      std::vector<std::vector<double>> fraction(static_cast<size_t>(nl), std::vector<double>(static_cast<size_t>(n) * n, 0.0));
      for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b)
          if (a != b)
            for (const auto& h : t.route(a, b).hops) fraction[static_cast<size_t>(h.link)][static_cast<size_t>(a) * n + b] = h.fraction;
      const auto twins = [&](LinkId l, LinkId m) {
        return t.link(l).bandwidth.value() == t.link(m).bandwidth.value() && fraction[static_cast<size_t>(l)] == fraction[static_cast<size_t>(m)];
      };
      int spine_links = 0, kept = 0;
      for (LinkId l = 0; l < nl; ++l) {
        if (t.link(l).link_class != "fabric") continue;
        ++spine_links;
        if (t.may_bind(l)) {
          ++kept;
          for (LinkId m = 0; m < l; ++m)
            if (t.link(m).link_class == "fabric" && t.may_bind(m)) CHECK_FALSE(twins(l, m));
        } else {
          bool has_twin = false;
          for (LinkId m = 0; m < nl && !has_twin; ++m) has_twin = m != l && t.may_bind(m) && twins(l, m);
          CHECK(has_twin);
        }
      }
      const int leaves = (c.nodes + c.per_leaf - 1) / c.per_leaf;
      CHECK(spine_links > 2 * leaves);  // several spines
      // One up and one down per leaf; with two leaves a leaf's uplinks carry exactly what the other
      // leaf's downlinks carry: one set of twins per direction.
      CHECK(kept == (leaves > 2 ? 2 * leaves : 2));
      // GPU 0 (leaf 0) to the last GPU (the last leaf): NIC out, uplink, downlink, NIC in.
      int hops = 0, fabric = 0;
      for (const auto& h : t.binding_hops(0, n - 1)) ++hops, fabric += t.link(h.link).link_class == "fabric";
      CHECK(hops == (leaves > 2 ? 4 : 3));
      CHECK(fabric == (leaves > 2 ? 2 : 1));
    }
}

namespace {
// One pair's route from scratch, the plain way (what the builder did before routes were shared
// between pairs): Dijkstra toward d over every link (GPUs other than d not expanded), the next hops
// toward d, the ECMP walk from s in decreasing distance (ties by vertex id), the longest
// equal-cost path's latency and hop count; or, cheaper, the NVLink relay through a GPU.
struct RefRoute {
  std::vector<std::pair<LinkId, double>> hops;  // sorted by link
  float latency = 0;
  int hop_count = 0;
};
RefRoute reference_route(const Topology& t, int s, int d) {
  const auto links = t.links();
  const auto verts = t.vertices();
  const size_t nv = verts.size();
  const LinkId nl = t.num_links();
  const int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
  const auto is_gpu = [&](VertexId v) { return verts[v].kind == VertexKind::kGpu; };
  const VertexId sv = t.gpu_vertex(s), dv = t.gpu_vertex(d);
  RefRoute out;
  std::vector<double> link_frac(static_cast<size_t>(nl), 0.0);
  const auto collect = [&] {
    for (LinkId l = 0; l < nl; ++l)
      if (link_frac[l] != 0.0) out.hops.emplace_back(l, link_frac[l]);
  };
  // Relay candidates: sv -> w -> dv over NVLinks inside the node, none if sv has its own NVLink to dv.
  const auto nvl = [&](LinkId l) {
    const Link& k = links[l];
    return is_gpu(k.from) && is_gpu(k.to) && k.link_class == "nvlink" && verts[k.from].node == verts[k.to].node;
  };
  std::vector<std::pair<LinkId, LinkId>> relays;
  int64_t relay_cost = kInf;
  bool direct = false;
  for (LinkId l1 = 0; l1 < nl; ++l1)
    if (links[l1].from == sv && nvl(l1) && links[l1].to == dv) direct = true;
  for (LinkId l1 = 0; l1 < nl && !direct; ++l1) {
    if (links[l1].from != sv || !nvl(l1)) continue;
    for (LinkId l2 = 0; l2 < nl; ++l2) {
      if (links[l2].from != links[l1].to || links[l2].to != dv || !nvl(l2)) continue;
      const int64_t c = link_cost(links[l1]) + link_cost(links[l2]);
      if (c < relay_cost) relay_cost = c, relays.clear();
      if (c == relay_cost) relays.emplace_back(l1, l2);
    }
  }
  std::vector<int64_t> dist(nv, kInf);
  std::vector<char> done(nv, 0);
  dist[dv] = 0;
  for (;;) {  // O(V^2) Dijkstra: small topologies
    VertexId u = -1;
    for (size_t v = 0; v < nv; ++v)
      if (!done[v] && dist[v] < kInf && (u < 0 || dist[v] < dist[u])) u = static_cast<VertexId>(v);
    if (u < 0) break;
    done[u] = 1;
    if (is_gpu(u) && u != dv) continue;
    for (LinkId l = 0; l < nl; ++l)
      if (links[l].to == u) dist[links[l].from] = std::min(dist[links[l].from], dist[u] + link_cost(links[l]));
  }
  if (!relays.empty() && relay_cost < dist[sv]) {
    double latency = 0;
    for (const auto& [l1, l2] : relays) {
      for (LinkId l : {l1, l2}) link_frac[l] += 1.0 / static_cast<double>(relays.size());
      latency = std::max(latency, links[l1].latency.value() + links[l2].latency.value());
    }
    collect();
    out.latency = static_cast<float>(latency);
    out.hop_count = 2;
    return out;
  }
  const auto next = [&](VertexId u) {
    std::vector<LinkId> nh;
    if (u == dv) return nh;
    for (LinkId l = 0; l < nl; ++l)
      if (links[l].from == u && dist[links[l].to] < kInf && dist[links[l].to] + link_cost(links[l]) == dist[u] &&
          (!is_gpu(links[l].to) || links[l].to == dv))
        nh.push_back(l);
    return nh;
  };
  std::vector<VertexId> order{sv};
  for (size_t i = 0; i < order.size(); ++i)
    for (LinkId l : next(order[i]))
      if (std::find(order.begin(), order.end(), links[l].to) == order.end()) order.push_back(links[l].to);
  std::sort(order.begin(), order.end(), [&](VertexId a, VertexId b) { return dist[a] != dist[b] ? dist[a] > dist[b] : a < b; });
  std::vector<double> frac(nv, 0.0), lat(nv, 0.0);
  std::vector<int> hop(nv, 0);
  frac[sv] = 1.0;
  for (VertexId u : order) {
    const auto nh = next(u);
    if (nh.empty() || frac[u] == 0.0) continue;
    const double f = frac[u] / static_cast<double>(nh.size());
    for (LinkId l : nh) link_frac[l] += f, frac[links[l].to] += f;
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (LinkId l : next(*it)) {
      lat[*it] = std::max(lat[*it], links[l].latency.value() + lat[links[l].to]);
      hop[*it] = std::max(hop[*it], 1 + hop[links[l].to]);
    }
  collect();
  out.latency = static_cast<float>(lat[sv]);
  out.hop_count = std::min(hop[sv], 255);
  return out;
}
}  // namespace

TEST_CASE("all-pairs routes equal a from-scratch route per pair: same hops in order, same bits") {
  // The builder shares work between pairs (PairRoutes: whole-byte chains, tails per vertex and
  // destination, rests by content); each pair must still get exactly the plain computation's route:
  // ECMP over 3 and 5 spines (fractions 1/3, 2/3, 1/5 that do not add up exactly), PCIe switches,
  // staging through the host, NVLink relays, an explicit graph with uneven splits and merges.
  const std::string gpu = "gpu: {model: H100, peak_bf16: 989TFLOPS, hbm_bandwidth: 3.35TB/s, memory: 80GiB}\n";
  const std::string cases[] = {
      "schema: hecate-sim/topology@1\nname: rail\n" + gpu +
          "nodes: 3\ngpus_per_node: 8\nintra_node: {kind: nvswitch, bandwidth: 450GB/s, efficiency: 0.82, latency: 3.4us}\n"
          "nics_per_node: 4\nnic: {bandwidth: 400Gbps, efficiency: 0.95, latency: 2us}\n"
          "pcie: {bandwidth: 64GB/s, efficiency: 0.85, latency: 1us, gpus_per_switch: 2}\n"
          "fabric: {kind: rail-optimized, oversubscription: 1.5, spines: 3, switch_latency: 0.6us}\n",
      "schema: hecate-sim/topology@1\nname: cube\n" + gpu +
          "nodes: 2\ngpus_per_node: 8\nintra_node: {kind: hybrid-cube-mesh, bandwidth: 25GB/s, efficiency: 0.8, latency: 3us}\n"
          "nics_per_node: 2\nnic: {bandwidth: 100Gbps, efficiency: 0.9, latency: 5us, gpudirect_rdma: false}\n"
          "pcie: {bandwidth: 16GB/s, efficiency: 0.85, latency: 1us, gpus_per_switch: 4}\n"
          "fabric: {kind: fat-tree, oversubscription: 3.0, nodes_per_leaf: 1, spines: 5, switch_latency: 0.6us}\n",
      "schema: hecate-sim/topology@1\nname: explicit\n" + gpu +
          "gpus: [{name: a, node: 0}, {name: b, node: 0}, {name: c, node: 1}, {name: d, node: 1}, {name: e, node: 2}]\n"
          "switches: [{name: s0}, {name: s1}, {name: s2}, {name: s3}, {name: s4}, {name: s5}, {name: s6}, {name: t0}]\n"
          "links:\n"
          "  - {from: a, to: s0, bandwidth: 10GB/s, latency: 1us, class: nic}\n"
          "  - {from: b, to: s0, bandwidth: 10GB/s, latency: 1us, class: nic}\n"
          "  - {from: a, to: b, bandwidth: 100GB/s, latency: 1us, class: nvlink}\n"
          "  - {from: s0, to: s1, bandwidth: 20GB/s, latency: 1us, class: fabric}\n"
          "  - {from: s0, to: s2, bandwidth: 20GB/s, latency: 2us, class: fabric}\n"
          "  - {from: s0, to: s3, bandwidth: 20GB/s, latency: 3us, class: fabric}\n"
          "  - {from: s1, to: s4, bandwidth: 20GB/s, latency: 1us, class: fabric}\n"
          "  - {from: s2, to: s4, bandwidth: 20GB/s, latency: 1us, class: fabric}\n"
          "  - {from: s3, to: s5, bandwidth: 20GB/s, latency: 1us, class: fabric}\n"
          "  - {from: s4, to: s6, bandwidth: 20GB/s, latency: 1us, class: fabric}\n"
          "  - {from: s5, to: s6, bandwidth: 20GB/s, latency: 1us, class: fabric}\n"
          "  - {from: s6, to: t0, bandwidth: 30GB/s, latency: 1us, class: fabric}\n"
          "  - {from: t0, to: c, bandwidth: 10GB/s, latency: 1us, class: nic}\n"
          "  - {from: t0, to: d, bandwidth: 10GB/s, latency: 1us, class: nic}\n"
          "  - {from: s6, to: e, bandwidth: 5GB/s, latency: 1us, class: nic}\n"
          "  - {from: c, to: d, bandwidth: 50GB/s, latency: 1us, class: nvlink}\n"};
  for (const std::string& text : cases) {
    const Topology t = load_topology(text, "t.yaml");
    CAPTURE(t.name());
    REQUIRE_FALSE(t.factored_routes());
    for (int s = 0; s < t.num_gpus(); ++s)
      for (int d = 0; d < t.num_gpus(); ++d) {
        if (s == d) continue;
        CAPTURE(s);
        CAPTURE(d);
        const RefRoute ref = reference_route(t, s, d);
        const Route r = t.route(s, d);
        std::vector<std::pair<LinkId, double>> got, bind, want_bind;
        for (const auto& h : r.hops) got.emplace_back(h.link, h.fraction);
        CHECK(got == ref.hops);  // exact doubles, in link order
        CHECK(r.latency.value() == static_cast<double>(ref.latency));
        CHECK(r.hop_count == ref.hop_count);
        // Binding hops: the route's hops whose links may bind, in route order.
        for (const auto& h : t.binding_hops(s, d)) bind.emplace_back(h.link, h.fraction);
        for (const auto& h : got)
          if (t.may_bind(h.first)) want_bind.push_back(h);
        CHECK(bind == want_bind);
      }
  }
}

TEST_CASE("4,096 GPUs: the largest compact topology builds with factored routes; one more GPU is refused") {
  auto spec = factoring_spec(512, "fat-tree", 8, 2.0, 8, 0);
  const Topology t = build_compact(spec, {"f", 0, 0});
  CHECK(t.num_gpus() == 4096);
  CHECK(t.factored_routes());
  // Same node: through the NVSwitch, 2 hops; same leaf (8 nodes per leaf): 4 hops; across leaves
  // through a spine: 6 hops, split over the 8 spines.
  CHECK(t.route(0, 1).hop_count == 2);
  CHECK(t.route(0, 8).hop_count == 4);
  CHECK(t.route(0, 4095).hop_count == 6);
  CHECK(t.route(0, 4095).hops.size() == 2 + 2 * 8 + 2);
  auto big = factoring_spec(513, "fat-tree", 8, 2.0, 8, 0);
  CHECK_THROWS_AS(build_compact(big, {"f", 0, 0}), InputError);
}
