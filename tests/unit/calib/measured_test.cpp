#include <doctest/doctest.h>

#include <cstdio>
#include <fmt/format.h>
#include <string>

#include "calib/link_fit.hpp"
#include "calib/measured.hpp"
#include "measure/measured_json.hpp"
#include "collective/nccl_op.hpp"
#include "topology/topology_loader.hpp"
#include "util/atomic_file.hpp"
#include "util/diagnostics.hpp"
#include "util/rng.hpp"
#include "support/approx.hpp"
#include "synthetic_log.hpp"

using namespace hs;
using hs::test::approx;

namespace {

// Writes `text` to a file of the test's own and returns its path.
std::string temp_json(const std::string& name, const std::string& text) {
  const std::string path = fmt::format("measured_test_{}.json", name);
  write_file_atomically(path, text);
  return path;
}

std::string error_of(const std::string& path) {
  try {
    calib::read_measured(path);
  } catch (const InputError& e) {
    std::string all;
    for (const auto& d : e.diagnostics()) all += to_string(d) + "\n";
    return all;
  }
  return "";
}

const char* const kTopo = kTwoNodeTopo;

}  // namespace

TEST_CASE("a multi-rank measured.json: collectives per op, the device from the provenance") {
  const std::string path = temp_json("multi", R"({
  "schema": "hecate-sim/measured@1",
  "provenance": {"ranks": 8, "nodes": 2, "gpus": [{"rank": 0, "name": "NVIDIA H100 80GB HBM3"}]},
  "collectives": {"dtype": "float", "ranks": 8, "nodes": 2, "rows": [
    {"op": "all_reduce", "bytes": 1024, "median_s": 2e-5, "algbw_Bps": 5.12e7, "busbw_Bps": 8.96e7},
    {"op": "alltoall", "bytes": 4096, "median_s": 3e-5, "algbw_Bps": 1.365e8, "busbw_Bps": 1.19e8},
    {"op": "all_reduce", "bytes": 2048, "median_s": 2.5e-5, "algbw_Bps": 8.192e7, "busbw_Bps": 1.43e8}
  ]}
})");
  const calib::Measured m = calib::read_measured(path);
  CHECK(m.device == "NVIDIA H100 80GB HBM3");
  CHECK_FALSE(m.has_gemm());
  CHECK(m.ranks == 8);
  CHECK(m.nodes == 2);
  REQUIRE(m.collectives.size() == 3);
  CHECK(m.collectives[1].op == collective::NcclOp::kAllToAll);
  CHECK(m.collectives[2].seconds == approx(2.5e-5));
  CHECK_FALSE(m.sparse.has_value());
  CHECK(m.overlap.empty());
  // One log per operation, rows in file order, times in microseconds, bandwidths in GB/s.
  const auto logs = calib::nccl_measurements(m);
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].op == collective::NcclOp::kAllReduce);
  CHECK(logs[0].log.file == path + " (all_reduce)");
  CHECK(logs[0].log.ranks == 8);
  CHECK(logs[0].log.nodes == 2);
  REQUIRE(logs[0].log.rows.size() == 2);
  CHECK(logs[0].log.rows[0].bytes == approx(1024));
  CHECK(logs[0].log.rows[0].time_us == approx(20));
  CHECK(logs[0].log.rows[1].busbw == approx(0.143));
  CHECK(logs[1].log.rows.size() == 1);
  CHECK_FALSE(calib::fit_gemm(m, 989e12).has_value());
  std::remove(path.c_str());
}

TEST_CASE("bad measured.json sections name the field") {
  const std::string bad_op = temp_json("bad_op", R"({"schema": "hecate-sim/measured@1", "collectives": {"ranks": 2, "nodes": 1, "rows": [
    {"op": "all_reduce", "bytes": 8, "median_s": 1e-5, "algbw_Bps": 1, "busbw_Bps": 1},
    {"op": "allreduce2", "bytes": 8, "median_s": 1e-5, "algbw_Bps": 1, "busbw_Bps": 1}]}})");
  CHECK(error_of(bad_op).find("collectives.rows[1].op") != std::string::npos);
  const std::string zero = temp_json("zero", R"({"schema": "hecate-sim/measured@1", "collectives": {"ranks": 2, "nodes": 1, "rows": [
    {"op": "all_reduce", "bytes": 8, "median_s": 0, "algbw_Bps": 1, "busbw_Bps": 1}]}})");
  CHECK(error_of(zero).find("collectives.rows[0].median_s") != std::string::npos);
  const std::string nodes = temp_json("nodes", R"({"schema": "hecate-sim/measured@1", "collectives": {"ranks": 2, "nodes": 3, "rows": []}})");
  CHECK(error_of(nodes).find("collectives.nodes") != std::string::npos);
  const std::string empty = temp_json("empty", R"({"schema": "hecate-sim/measured@1", "provenance": {}})");
  CHECK(error_of(empty).find("no measurements") != std::string::npos);
  const std::string rows = temp_json("rows", R"({"schema": "hecate-sim/measured@1", "materialize": {"kernels": []}})");
  CHECK(error_of(rows).find("materialize.rows") != std::string::npos);
  // The other suites' rows: a missing timing summary, an empty row list, a negative token count.
  const std::string sparse = temp_json("sparse", R"({"schema": "hecate-sim/measured@1", "sparse": {"plan": "p.json",
    "strategy": "fssdp", "scale": 1, "ranks": 8, "rows": [{"layer": 0, "chunk_bytes": 4096, "spag": {"median_s": 1e-4}}]}})");
  CHECK(error_of(sparse).find("sparse.rows[0].sprs") != std::string::npos);
  const std::string overlap = temp_json("overlap", R"({"schema": "hecate-sim/measured@1", "overlap": {"ranks": 1, "rows": []}})");
  CHECK(error_of(overlap).find("overlap.rows") != std::string::npos);
  const std::string gemm = temp_json("gemm", R"({"schema": "hecate-sim/measured@1", "materialize": {"rows": [
    {"kernel": "grouped_gemm", "d_model": 8, "d_ffn": 8, "tokens_per_expert": [3, -1], "median_s": 1e-5, "flops": 1}]}})");
  CHECK(error_of(gemm).find(":2:83: error: materialize.rows[0].tokens_per_expert") != std::string::npos);
  for (const auto& p : {bad_op, zero, nodes, empty, rows, sparse, overlap, gemm}) std::remove(p.c_str());
}

TEST_CASE("calibrate fits link classes from a collectives section as from nccl-tests logs") {
  // The simulator's own all-reduce times over 8 ranks on 2 nodes (NIC-bound) with the NIC at 0.7x
  // its bandwidth and 6 us per link, +-2% noise, written as hecate-validate writes its rows: the
  // NIC's scale comes back within 3% (the tolerance of the nccl-tests test above).
  topology::TopologyAdjust truth;
  truth.links.push_back({"nic", 0.7, Seconds(6e-6)});
  auto t = topology::load_topology(kTopo, "topology", &truth);
  collective::AnalyticNetwork net(t);
  const auto group = calib::nccl_group(t, 8, 2, "x");
  Rng rng(5);
  std::string rows;
  for (double b = 8; b <= 1073741824.0; b *= 4) {
    const double sec = collective::nccl_op_time(net, collective::NcclOp::kAllReduce, group, b).seconds * (1 + 0.02 * (2 * rng.uniform() - 1));
    rows += fmt::format("{}{{\"op\": \"all_reduce\", \"bytes\": {:.0f}, \"median_s\": {:.9g}, \"algbw_Bps\": {:.6g}, \"busbw_Bps\": {:.6g}}}",
                        rows.empty() ? "" : ",\n", b, sec, b / sec, b / sec * 1.75);
  }
  const std::string path = temp_json("fit", fmt::format(R"({{"schema": "hecate-sim/measured@1",
    "collectives": {{"ranks": 8, "nodes": 2, "rows": [{}]}}}})", rows));
  const auto fit = calib::fit_links(kTopo, "t.yaml", calib::nccl_measurements(calib::read_measured(path)));
  REQUIRE(fit.classes.size() == 1);
  CHECK(fit.classes[0].link_class == "nic");
  CHECK(fit.classes[0].bandwidth_scale == doctest::Approx(0.7).epsilon(0.03));
  CHECK(fit.checks[0].held_median_after < fit.checks[0].held_median_before);
  std::remove(path.c_str());
}

TEST_CASE("what hecate-validate writes for the collectives suite reads back as written") {
  // The writer's own functions (measure/measured_json.hpp), the reader's view of them: ranks, nodes,
  // device from the provenance, each row's op, size and median, and the bandwidths nccl-tests' way.
  measure::Provenance p;
  p.tool = "hecate-validate 0.1.0";
  p.ranks = 4;
  for (int r = 0; r < 4; ++r) p.gpus.push_back({r, measure::hash_host_name(r < 2 ? "a" : "b"), "NVIDIA H100 80GB HBM3", "0000:18:00.0", 132, 1, 1, 9, 0});
  measure::Summary s;
  s.n = 20;
  s.median = s.min = s.p25 = s.p75 = s.max = 2e-4;
  const std::vector<measure::CollectiveResult> rows{{collective::NcclOp::kAllReduce, measure::op_buffers(collective::NcclOp::kAllReduce, 1 << 24, 4), s},
                                                    {collective::NcclOp::kReduceScatter, measure::op_buffers(collective::NcclOp::kReduceScatter, 1 << 24, 4), s}};
  const std::string path = temp_json("roundtrip", measure::measured_document(p, {{"collectives", measure::collectives_section(4, p.nodes(), rows)}}));
  const calib::Measured m = calib::read_measured(path);
  CHECK(m.device == "NVIDIA H100 80GB HBM3");
  CHECK(m.ranks == 4);
  CHECK(m.nodes == 2);
  REQUIRE(m.collectives.size() == 2);
  CHECK(m.collectives[1].op == collective::NcclOp::kReduceScatter);
  CHECK(m.collectives[1].bytes == approx(16777216));
  CHECK(m.collectives[1].seconds == approx(2e-4));
  // 2^24 B / 2e-4 s = 8.388608e10 B/s; reduce-scatter busbw x 3/4 (written to 6 digits).
  CHECK(m.collectives[1].algbw == approx(8.388608e10, 1e-5));
  CHECK(m.collectives[1].busbw == approx(8.388608e10 * 0.75, 1e-5));
  std::remove(path.c_str());
}

TEST_CASE("every section hecate-validate writes parses, and the reader keeps what validate and calibrate use") {
  measure::Summary t;
  t.n = 20;
  t.median = t.min = t.p25 = t.p75 = t.max = 1e-3;
  measure::Provenance p;
  p.tool = "hecate-validate 0.1.0";
  p.command = "hecate-validate --suite gemm,alltoallv --matrix \"m x.txt\"";
  p.nccl_env = {{"NCCL_ALGO", "Ring"}};
  p.gpus.push_back({0, measure::hash_host_name("a"), "NVIDIA H100 80GB HBM3", "0000:18:00.0", 132, 1, 1, 9, 0});
  const std::vector<measure::ExpertFfnRow> ffn{{256, {{256, 8192, 2048, t}, {256, 2048, 8192, t}}}, {512, {{512, 8192, 2048, t}, {512, 2048, 8192, t}}}};
  std::vector<measure::MaterializeRow> mat{{.kernel = "pack_shards", .time = t, .bytes = 1 << 20, .experts = 8},
                                           {.kernel = "grouped_gemm", .time = t, .d_model = 2048, .d_ffn = 8192, .tokens_per_expert = {1, 2}, .flops = 1e9}};
  const std::string doc = measure::measured_document(
      p, {{"expert_ffn", measure::expert_ffn_section(2048, 8192, 2, ffn)},
          {"expert_ffn_batched", measure::expert_ffn_batched_section(8, {{256, 4e-3}, {512, 6e-3}})},
          {"device", measure::device_section(p.gpus[0])},
          {"hbm_copy", measure::hbm_copy_section(1 << 30, t)},
          {"alltoallv", measure::alltoallv_section("m x.txt", 1, {{"dispatch", 10, 10, t}, {"combine", 10, 10, t}})},
          {"sparse", measure::sparse_section("plan.json", "fssdp", 0.5, 1, {{0, 4096, 3, 1, 3, 2, t, t}})},
          {"materialize", measure::materialize_section(mat)},
          {"overlap", measure::overlap_section(8192, 8192, 2048, 1, {{"copy_engine", 1 << 28, 20, 7, t, t, t, t}})}});
  const std::string path = temp_json("all", doc);
  const calib::Measured m = calib::read_measured(path);
  CHECK(m.device == "NVIDIA H100 80GB HBM3");
  CHECK(m.d_model == 2048);
  CHECK(m.mats == 2);
  REQUIRE(m.rows.size() == 2);
  CHECK(m.rows[1].tokens == approx(512));
  CHECK(m.rows[1].seconds == approx(2e-3));  // two GEMMs of 1 ms
  CHECK(m.batched_experts == 8);
  CHECK(m.batched[0].seconds == approx(4e-3));
  CHECK(m.hbm_Bps == approx(2.0 * (1 << 30) / 1e-3, 1e-5));
  REQUIRE(m.alltoallv.has_value());
  CHECK(m.alltoallv->matrix == "m x.txt");
  REQUIRE(m.alltoallv->rows.size() == 2);
  CHECK(m.alltoallv->rows[1].direction == "combine");
  CHECK(m.alltoallv->rows[1].seconds == approx(1e-3));
  REQUIRE(m.sparse.has_value());
  CHECK(m.sparse->plan == "plan.json");
  CHECK(m.sparse->strategy == "fssdp");
  CHECK(m.sparse->scale == approx(0.5));
  REQUIRE(m.sparse->rows.size() == 1);
  CHECK(m.sparse->rows[0].chunk_bytes == approx(4096));
  CHECK(m.sparse->rows[0].sprs_s == approx(1e-3));
  REQUIRE(m.memory_kernels.size() == 1);
  CHECK(m.memory_kernels[0].kernel == "pack_shards");
  CHECK(m.memory_kernels[0].bytes == approx(1 << 20));
  REQUIRE(m.grouped_gemms.size() == 1);
  CHECK(m.grouped_gemms[0].tokens_per_expert == std::vector<double>{1, 2});
  CHECK(m.grouped_gemms[0].d_ffn == 8192);
  CHECK(m.overlap_ranks == 1);
  REQUIRE(m.overlap.size() == 1);
  CHECK(m.overlap[0].comm == "copy_engine");
  CHECK(m.overlap[0].comm_bytes == approx(1 << 28));
  CHECK(m.overlap[0].gemm_slowdown() == approx(1.0));
  std::remove(path.c_str());
}
