#include "context.hpp"

#include <unistd.h>

#include <ctime>
#include <fmt/format.h>

#include "check.hpp"
#include "util/hecate_version.hpp"

extern char** environ;

namespace hs::validate {

Context::Context(Bootstrap& b, bool need_nccl, const std::vector<std::string>& argv) : boot(b) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  // A rank that sees one GPU (Slurm's --gpus-per-task=1, CUDA_VISIBLE_DEVICES per rank) uses it;
  // otherwise local rank i takes GPU i.
  if (count > 1 && b.local_rank() >= count)
    throw Fatal(fmt::format("rank {} is local rank {} on a node with {} visible GPU(s): launch one rank per GPU", b.rank(),
                            b.local_rank(), count));
  device = count == 1 ? 0 : b.local_rank();
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cublasCreate(&cublas), "cublasCreate");
  check(cublasSetStream(cublas, stream), "cublasSetStream");
#if HS_VALIDATE_NCCL
  if (need_nccl) {
    ncclUniqueId id{};
    if (b.rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    b.broadcast(&id, sizeof id, 0);
    check(ncclCommInitRank(&comm, b.size(), id, b.rank()), "ncclCommInitRank");
  }
#else
  if (need_nccl) throw Fatal("this hecate-validate was built without NCCL");
#endif

  // Provenance: versions from the libraries, one GPU record per rank (gathered as text).
  measure::Provenance& p = provenance;
  p.tool = std::string("hecate-validate ") + HECATE_VERSION;
  p.ranks = b.size();
  check(cudaRuntimeGetVersion(&p.cuda_runtime), "cudaRuntimeGetVersion");
  check(cudaDriverGetVersion(&p.cuda_driver), "cudaDriverGetVersion");
  check(cublasGetVersion(cublas, &p.cublas), "cublasGetVersion");
#if HS_VALIDATE_NCCL
  check(ncclGetVersion(&p.nccl), "ncclGetVersion");
#endif
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  p.nccl_env = measure::nccl_environment(env);
  p.command = measure::join_command_line(argv);
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  p.when = stamp;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  char bus[32] = {};
  check(cudaDeviceGetPCIBusId(bus, sizeof bus, device), "cudaDeviceGetPCIBusId");
  // One line per rank: fields separated by tabs (no tab in any of them).
  const std::string mine = fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}", measure::hash_host_name(host), prop.name, bus,
                                       prop.multiProcessorCount, prop.totalGlobalMem, prop.l2CacheSize, prop.major, prop.minor);
  const auto all = b.all_gather(mine);
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::vector<std::string> f;
    std::size_t s = 0;
    for (std::size_t t; (t = all[r].find('\t', s)) != std::string::npos; s = t + 1) f.push_back(all[r].substr(s, t - s));
    f.push_back(all[r].substr(s));
    if (f.size() != 8) throw Fatal(fmt::format("rank {} sent a malformed GPU record", r));
    measure::GpuInfo g;
    g.rank = static_cast<int>(r);
    g.host_hash = f[0], g.name = f[1], g.pci_bus_id = f[2];
    g.sms = std::stoi(f[3]);
    g.memory_bytes = std::stoull(f[4]);
    g.l2_bytes = std::stoull(f[5]);
    g.cc_major = std::stoi(f[6]), g.cc_minor = std::stoi(f[7]);
    p.gpus.push_back(g);
  }
}

Context::~Context() {
  // Teardown errors are not reported: the measurements are written (or the error is) already.
#if HS_VALIDATE_NCCL
  if (comm) ncclCommDestroy(comm);
#endif
  if (cublas) cublasDestroy(cublas);
  if (stream) cudaStreamDestroy(stream);
}

}  // namespace hs::validate
