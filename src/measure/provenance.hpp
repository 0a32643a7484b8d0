// Where a measurement came from, written into every measured.json hecate-validate produces: the
// GPUs, driver, CUDA runtime, cuBLAS and NCCL versions, every NCCL_* environment variable, ranks and
// nodes, host names (hashed: a file may be shared without naming a cluster's machines), the date and
// the command line. Gathering it needs CUDA and MPI; formatting and the environment rules are plain
// logic, tested on the CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hs::measure {

struct GpuInfo {
  int rank = 0;
  std::string host_hash;  // hash_host_name of the rank's host
  std::string name, pci_bus_id;
  int sms = 0;
  std::uint64_t memory_bytes = 0, l2_bytes = 0;
  int cc_major = 0, cc_minor = 0;
};

struct Provenance {
  std::string tool;     // "hecate-validate 0.1.0"
  std::string when;     // UTC, ISO 8601
  std::string command;  // the command line, arguments joined by spaces
  int ranks = 1;
  std::vector<GpuInfo> gpus;  // one per rank, in rank order
  int cuda_runtime = 0, cuda_driver = 0, cublas = 0, nccl = 0;  // as the libraries report them (0: not used)
  std::vector<std::pair<std::string, std::string>> nccl_env;  // sorted by name
  std::string method;   // how the numbers were taken
  int nodes() const;    // distinct host hashes
};

// 16 hex digits of FNV-1a 64 of the host name: the same host gives the same hash in every rank.
std::string hash_host_name(const std::string& host);

// NCCL_* variables of an environment (`environ`-style "NAME=VALUE" strings), sorted by name.
std::vector<std::pair<std::string, std::string>> nccl_environment(const std::vector<std::string>& env);

// The process's rank on its node, from the launcher's environment, or nullopt when none says:
// OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), MV2_COMM_WORLD_LOCAL_RANK (MVAPICH2), MPI_LOCALRANKID
// (MPICH / Intel MPI), SLURM_LOCALID (srun), PMI_LOCAL_RANK, in that order. A value that is not a
// non-negative integer is an error (std::invalid_argument), not a silent device 0.
using GetEnv = std::function<const char*(const char*)>;
std::optional<int> local_rank_from_env(const GetEnv& getenv);

// Whether an MPI launcher started the process (mpirun / mpiexec / srun set one of these), so MPI must
// be initialised; a bare `hecate-validate` runs as one rank without touching MPI.
bool launched_by_mpi(const GetEnv& getenv);

// The provenance as a JSON object (deterministic key order; `indent` spaces before each key).
std::string provenance_json(const Provenance& p, int indent);

// One line for the console: "TOOL, WHEN: R rank(s) on N node(s), GPU 0 NAME (cc X.Y); CUDA runtime
// A, driver D, cuBLAS B, NCCL C; NCCL_X=V ..." (the variables only when set).
std::string provenance_line(const Provenance& p);

// "a b c", each argument JSON-escaped later; arguments with spaces are single-quoted.
std::string join_command_line(const std::vector<std::string>& args);

}  // namespace hs::measure
