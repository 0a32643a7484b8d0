#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "measure/provenance.hpp"

using namespace hs::measure;

namespace {
GetEnv env_of(const std::map<std::string, std::string>& m) {
  return [m](const char* name) -> const char* {
    auto it = m.find(name);
    return it == m.end() ? nullptr : it->second.c_str();
  };
}
}  // namespace

TEST_CASE("host names hash to 16 hex digits of FNV-1a 64") {
  // FNV-1a 64 of the empty string is the offset basis; of "a" the published test vector.
  CHECK(hash_host_name("") == "cbf29ce484222325");
  CHECK(hash_host_name("a") == "af63dc4c8601ec8c");
  CHECK(hash_host_name("node017") == hash_host_name("node017"));
  CHECK(hash_host_name("node017") != hash_host_name("node018"));
}

TEST_CASE("every NCCL_ variable is kept, sorted, and nothing else") {
  const auto e = nccl_environment({"PATH=/bin", "NCCL_IB_HCA=mlx5_0,mlx5_1", "NCCL_ALGO=Ring", "XNCCL_X=1", "NCCL_DEBUG=", "NCCL_NOEQ"});
  REQUIRE(e.size() == 3);
  CHECK(e[0] == std::pair<std::string, std::string>{"NCCL_ALGO", "Ring"});
  CHECK(e[1] == std::pair<std::string, std::string>{"NCCL_DEBUG", ""});
  CHECK(e[2] == std::pair<std::string, std::string>{"NCCL_IB_HCA", "mlx5_0,mlx5_1"});
}

TEST_CASE("the local rank comes from the launcher, Open MPI first, and a bad value is an error") {
  CHECK(local_rank_from_env(env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"SLURM_LOCALID", "1"}})) == 3);
  CHECK(local_rank_from_env(env_of({{"SLURM_LOCALID", "1"}})) == 1);
  CHECK(local_rank_from_env(env_of({{"MPI_LOCALRANKID", "0"}})) == 0);
  CHECK_FALSE(local_rank_from_env(env_of({})).has_value());
  CHECK_THROWS_AS(local_rank_from_env(env_of({{"SLURM_LOCALID", "x"}})), std::invalid_argument);
  CHECK_THROWS_AS(local_rank_from_env(env_of({{"SLURM_LOCALID", "-1"}})), std::invalid_argument);
}

TEST_CASE("MPI is initialised only under a launcher") {
  CHECK_FALSE(launched_by_mpi(env_of({})));
  CHECK(launched_by_mpi(env_of({{"OMPI_COMM_WORLD_SIZE", "8"}})));
  CHECK(launched_by_mpi(env_of({{"PMIX_RANK", "0"}})));
  CHECK(launched_by_mpi(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}})));
  // One srun task inside an allocation: nothing to bootstrap.
  CHECK_FALSE(launched_by_mpi(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}})));
}

TEST_CASE("provenance JSON: every field, escaped, GPUs in rank order, nodes = distinct hosts") {
  Provenance p;
  p.tool = "hecate-validate 0.1.0";
  p.when = "2026-01-02T03:04:05Z";
  p.command = join_command_line({"hecate-validate", "--suite", "collectives", "--out", "a b.json"});
  CHECK(p.command == "hecate-validate --suite collectives --out 'a b.json'");
  p.ranks = 2;
  p.cuda_runtime = 13000, p.cuda_driver = 13000, p.cublas = 130000, p.nccl = 22809;
  p.nccl_env = {{"NCCL_ALGO", "Ring"}, {"NCCL_X", "a\"b"}};
  p.method = "m";
  p.gpus.push_back({0, hash_host_name("n1"), "NVIDIA H100", "0000:18:00.0", 132, 85ULL << 30, 50 << 20, 9, 0});
  p.gpus.push_back({1, hash_host_name("n2"), "NVIDIA H100", "0000:18:00.0", 132, 85ULL << 30, 50 << 20, 9, 0});
  CHECK(p.nodes() == 2);
  const std::string js = provenance_json(p, 4);
  CHECK(js.find("\"command\": \"hecate-validate --suite collectives --out 'a b.json'\"") != std::string::npos);
  CHECK(js.find("\"ranks\": 2,\n    \"nodes\": 2") != std::string::npos);
  CHECK(js.find("\"nccl\": 22809") != std::string::npos);
  CHECK(js.find("\"NCCL_X\": \"a\\\"b\"") != std::string::npos);
  CHECK(js.find("\"rank\": 1, \"host\": \"" + hash_host_name("n2") + "\"") != std::string::npos);
  CHECK(js.find("\"cc\": \"9.0\"") != std::string::npos);
  CHECK(js.front() == '{');
  CHECK(js.back() == '}');
  CHECK(provenance_json(p, 4) == js);  // deterministic
  CHECK(provenance_line(p) ==
        "hecate-validate 0.1.0, 2026-01-02T03:04:05Z: 2 rank(s) on 2 node(s), GPU 0 NVIDIA H100 (cc 9.0); CUDA runtime 13000, "
        "driver 13000, cuBLAS 130000, NCCL 22809; NCCL_ALGO=Ring NCCL_X=a\"b");
}
