#include <doctest/doctest.h>

#include <cmath>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "calib/calibration.hpp"
#include "calib/link_fit.hpp"
#include "collective/nccl_op.hpp"
#include "topology/topology_loader.hpp"
#include "util/diagnostics.hpp"
#include "util/rng.hpp"
#include "synthetic_log.hpp"
#include "support/approx.hpp"

using namespace hs;

namespace {
const char* const kTopo = kTwoNodeTopo;
}  // namespace

TEST_CASE("calibrate recovers known link parameters from the simulator's own timings with noise") {
  // Truth: the NIC at 0.7x its preset bandwidth with 6 us per link, NVLink at 0.8x with 3 us per link
  // (the preset's 3 us GPU to GPU puts 1.5 us on each link).
  // An all-reduce over 8 ranks on 2 nodes is NIC-bound; one over 4 ranks in a node NVLink-bound.
  // Noise +-2%: the bandwidth scales come back within 3%, the latencies within 25%, and the
  // held-out error after calibration is below 3% median where it was far larger before.
  topology::TopologyAdjust truth;
  truth.links.push_back({"nic", 0.7, Seconds(6e-6)});
  truth.links.push_back({"nvlink", 0.8, Seconds(3e-6)});
  std::vector<calib::NcclMeasurement> logs;
  logs.push_back({collective::NcclOp::kAllReduce,
                  calib::parse_nccl_tests_log(synthetic_log(kTopo, collective::NcclOp::kAllReduce, 8, 2, truth, 0.02, 1), "ar8.log")});
  logs.push_back({collective::NcclOp::kAllGather,
                  calib::parse_nccl_tests_log(synthetic_log(kTopo, collective::NcclOp::kAllGather, 4, 1, truth, 0.02, 2), "ag4.log")});
  auto fit = calib::fit_links(kTopo, "t.yaml", logs);
  REQUIRE(fit.classes.size() == 2);
  for (const auto& c : fit.classes) {
    INFO(c.link_class);
    const double scale = c.link_class == "nic" ? 0.7 : 0.8, lat = c.link_class == "nic" ? 6e-6 : 3e-6;
    MESSAGE(fmt::format("{}: bandwidth x {:.4f} (truth {}), latency {:.3f} us (truth {} us), held-out median error {:.2f}%",
                        c.link_class, c.bandwidth_scale, scale, c.latency_s.value_or(0) * 1e6, lat * 1e6,
                        c.heldout_median_error.value_or(0) * 100));
    CHECK(c.bandwidth_scale == doctest::Approx(scale).epsilon(0.03));
    REQUIRE(c.latency_s);
    CHECK(*c.latency_s == doctest::Approx(lat).epsilon(0.25));
    REQUIRE(c.heldout_median_error);
    CHECK(*c.heldout_median_error < 0.03);
  }
  for (const auto& ch : fit.checks) {
    INFO(ch.file);
    MESSAGE(fmt::format("{}: held-out median error {:.1f}% before, {:.2f}% after", ch.file, ch.held_median_before * 100,
                        ch.held_median_after * 100));
    CHECK(ch.held_median_after < ch.held_median_before);
    CHECK(ch.held_median_after < 0.03);
  }
  CHECK(fit.checks[0].link_class == "nic");
  CHECK(fit.checks[1].link_class == "nvlink");
}

TEST_CASE("too little data is an error, not a bad fit") {
  topology::TopologyAdjust truth;
  std::string log = synthetic_log(kTopo, collective::NcclOp::kAllReduce, 8, 2, truth, 0, 1);
  // Keep the header and the first four sizes only (8 B .. 512 B: latency-bound, too few to fit).
  size_t pos = log.find("#       size");
  pos = log.find('\n', pos) + 1;
  for (int i = 0; i < 4; ++i) pos = log.find('\n', pos) + 1;
  std::vector<calib::NcclMeasurement> logs{{collective::NcclOp::kAllReduce, calib::parse_nccl_tests_log(log.substr(0, pos), "short.log")}};
  CHECK_THROWS_AS(calib::fit_links(kTopo, "t.yaml", logs), InputError);
  // More ranks per node than the topology's nodes have.
  std::string one_host = synthetic_log(kTopo, collective::NcclOp::kAllReduce, 8, 2, truth, 0, 1);
  for (size_t p = one_host.find("node01"); p != std::string::npos; p = one_host.find("node01")) one_host.replace(p, 6, "node00");
  std::vector<calib::NcclMeasurement> wide{{collective::NcclOp::kAllReduce, calib::parse_nccl_tests_log(one_host, "wide.log")}};
  CHECK_THROWS_AS(calib::fit_links(kTopo, "t.yaml", wide), InputError);
}

TEST_CASE("calibration files round-trip and are applied to the topology") {
  calib::Calibration c;
  c.topology = "t.yaml";
  c.sources.push_back({"ar8.log", "0123456789abcdef", "nccl-tests all_reduce"});
  c.links.push_back({"nic", 0.7, 6e-6, 12, 0.01, 0.02});
  c.eta_max = 0.71;
  c.t_half = 60;
  c.hbm_efficiency = 0.9;
  c.compute_slowdown = 0.2;
  const std::string y = calib::to_yaml(c);
  auto back = calib::parse_calibration(y, "cal.yaml");
  CHECK(calib::to_yaml(back) == y);
  auto adj = calib::topology_adjust(back);
  auto t = topology::load_topology(kTopo, "t.yaml", &adj);
  for (const auto& l : t.links())
    if (l.link_class == "nic") {
      // 400 Gb/s x 0.95 x 0.7 = 33.25 GB/s; latency 6 us.
      CHECK(l.bandwidth.value() == hs::test::approx(50e9 * 0.95 * 0.7));
      CHECK(l.latency.value() == hs::test::approx(6e-6));
    }
  CHECK(t.gpu_model().compute_slowdown == hs::test::approx(0.2));
  cost::ComputeParams p;
  calib::apply_compute(back, p);
  CHECK(p.eta_max == hs::test::approx(0.71));
  CHECK(p.eta_mem == hs::test::approx(0.9));
  // Bad files: located errors.
  CHECK_THROWS_AS(calib::parse_calibration("schema: hecate-sim/calibration@1\nlinks: {nic: {bandwidth_scale: -1}}\n", "b.yaml"),
                  InputError);
  CHECK_THROWS_AS(calib::parse_calibration("schema: hecate-sim/calibration@1\ngpu: {gemm: {eta_max: 0.7}}\n", "b.yaml"), InputError);
  CHECK_THROWS_AS(calib::parse_calibration("schema: hecate-sim/calibration@1\ncolour: red\n", "b.yaml"), InputError);
}
