#include "measure/provenance.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <fmt/format.h>

#include "util/text_escape.hpp"

namespace hs::measure {

int Provenance::nodes() const {
  std::set<std::string> hosts;
  for (const auto& g : gpus) hosts.insert(g.host_hash);
  return static_cast<int>(hosts.size());
}

std::string hash_host_name(const std::string& host) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (unsigned char c : host) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

std::vector<std::pair<std::string, std::string>> nccl_environment(const std::vector<std::string>& env) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : env) {
    const auto eq = e.find('=');
    if (eq == std::string::npos || e.compare(0, 5, "NCCL_") != 0) continue;
    out.emplace_back(e.substr(0, eq), e.substr(eq + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<int> local_rank_from_env(const GetEnv& getenv) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                           "PMI_LOCAL_RANK"}) {
    const char* v = getenv(name);
    if (!v) continue;
    const std::string s = v;
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument(fmt::format("{}='{}' is not a local rank (a non-negative integer)", name, s));
    return std::stoi(s);
  }
  return std::nullopt;
}

bool launched_by_mpi(const GetEnv& getenv) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"})
    if (getenv(name)) return true;
  // srun without an MPI plugin still sets SLURM_PROCID; with one task there is nothing to bootstrap.
  const char* ntasks = getenv("SLURM_NTASKS");
  return getenv("SLURM_PROCID") && ntasks && std::string(ntasks) != "1";
}

std::string join_command_line(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) {
    if (!out.empty()) out += ' ';
    out += a.find_first_of(" \t") == std::string::npos && !a.empty() ? a : "'" + a + "'";
  }
  return out;
}

std::string provenance_line(const Provenance& p) {
  std::string gpu = p.gpus.empty() ? std::string("no GPU")
                                   : fmt::format("GPU 0 {} (cc {}.{})", p.gpus[0].name, p.gpus[0].cc_major, p.gpus[0].cc_minor);
  std::string line = fmt::format("{}, {}: {} rank(s) on {} node(s), {}; CUDA runtime {}, driver {}, cuBLAS {}, NCCL {}", p.tool, p.when,
                                 p.ranks, p.nodes(), gpu, p.cuda_runtime, p.cuda_driver, p.cublas, p.nccl);
  for (std::size_t i = 0; i < p.nccl_env.size(); ++i)
    line += fmt::format("{}{}={}", i ? " " : "; ", p.nccl_env[i].first, p.nccl_env[i].second);
  return line;
}

std::string provenance_json(const Provenance& p, int indent) {
  const std::string in(static_cast<std::size_t>(indent), ' ');
  auto str = [](const std::string& s) { return "\"" + json_escape(s) + "\""; };
  std::string o = "{\n";
  o += fmt::format("{}\"tool\": {},\n", in, str(p.tool));
  o += fmt::format("{}\"when\": {},\n", in, str(p.when));
  o += fmt::format("{}\"command\": {},\n", in, str(p.command));
  o += fmt::format("{}\"ranks\": {},\n{}\"nodes\": {},\n", in, p.ranks, in, p.nodes());
  o += fmt::format("{}\"cuda_runtime\": {}, \"cuda_driver\": {}, \"cublas\": {}, \"nccl\": {},\n", in, p.cuda_runtime,
                   p.cuda_driver, p.cublas, p.nccl);
  o += fmt::format("{}\"nccl_env\": {{", in);
  for (std::size_t i = 0; i < p.nccl_env.size(); ++i)
    o += fmt::format("{}{}: {}", i ? ", " : "", str(p.nccl_env[i].first), str(p.nccl_env[i].second));
  o += "},\n";
  o += fmt::format("{}\"method\": {},\n", in, str(p.method));
  o += fmt::format("{}\"gpus\": [", in);
  for (std::size_t i = 0; i < p.gpus.size(); ++i) {
    const GpuInfo& g = p.gpus[i];
    o += fmt::format(
        "{}\n{}  {{\"rank\": {}, \"host\": {}, \"name\": {}, \"pci_bus_id\": {}, \"sms\": {}, \"memory_bytes\": {}, "
        "\"l2_bytes\": {}, \"cc\": \"{}.{}\"}}",
        i ? "," : "", in, g.rank, str(g.host_hash), str(g.name), str(g.pci_bus_id), g.sms, g.memory_bytes, g.l2_bytes,
        g.cc_major, g.cc_minor);
  }
  o += fmt::format("\n{}]\n{}}}", in, std::string(static_cast<std::size_t>(std::max(0, indent - 2)), ' '));
  return o;
}

}  // namespace hs::measure
