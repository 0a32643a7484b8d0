// hecate-plan-check PLAN.json [--scale S]: executes a plan written by `hecate-sim plan` on MPI ranks
// (one per GPU of the plan: `mpirun -np N --oversubscribe hecate-plan-check plan.json`) and checks
// what every rank ends with against the CPU reference (transport/plan_check.hpp). Rank 0 prints one
// line per rank, in rank order. Exit 0 when every rank is right, 1 when one is not (or a transport
// failed), 2 on bad input: an unreadable or invalid plan, a bad option, a rank count other than the
// plan's GPUs.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fmt/format.h>
#include <mpi.h>
#include <string>
#include <vector>

#include "transport/mpi_transport.hpp"
#include "transport/plan_check.hpp"
#include "transport/plan_file.hpp"
#include "util/diagnostics.hpp"

namespace {

constexpr int kLine = 512;  // bytes of one rank's report line gathered to rank 0

int run(int rank, int size, int argc, char** argv) {
  CLI::App app{"hecate-plan-check: execute a hecate-sim plan (spAG + spRS) on MPI ranks and check every rank's buffers"};
  std::string path;
  double scale = 1.0;
  app.add_option("PLAN", path, "plan file from `hecate-sim plan`")->required();
  app.add_option("--scale", scale, "chunk buffers hold chunk_bytes / 4 x SCALE floats (default 1: real size)")
      ->check(CLI::Range(1e-12, 1.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (rank == 0) return app.exit(e) == 0 ? 0 : hs::kExitBadInput;
    return e.get_exit_code() == 0 ? 0 : hs::kExitBadInput;
  }
  hs::transport::Plan plan;
  try {
    plan = hs::transport::read_plan(path);
  } catch (const hs::InputError& e) {
    if (rank == 0)
      for (const auto& d : e.diagnostics()) fmt::print(stderr, "{}\n", hs::to_string(d));
    return hs::kExitBadInput;
  }
  if (size != plan.gpus) {
    if (rank == 0)
      fmt::print(stderr, "hecate-plan-check: {} plans {} GPUs but {} MPI ranks are running: use mpirun -np {}\n", path,
                 plan.gpus, size, plan.gpus);
    return hs::kExitBadInput;
  }
  if (rank == 0) {
    fmt::print("plan {}: {} GPUs, {} layers, strategy {}, iteration {}, scale {:g}\n", path, plan.gpus, plan.layers.size(),
               plan.provenance.strategy.empty() ? "?" : plan.provenance.strategy, plan.provenance.iteration, scale);
    std::fflush(stdout);
  }
  std::string line;
  int failed = 0;
  try {
    hs::transport::MpiTransport transport;
    const auto c = hs::transport::check_plan_on_rank(plan, transport, scale);
    line = hs::transport::format_check(c);
    failed = c.ok() ? 0 : 1;
  } catch (const std::exception& e) {
    // The other ranks may be waiting on this one: nothing can complete, stop the job.
    fmt::print(stderr, "hecate-plan-check: rank {}: {}\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::vector<char> mine(kLine, '\0'), all(rank == 0 ? static_cast<size_t>(kLine) * size : 0);
  std::memcpy(mine.data(), line.data(), std::min<size_t>(line.size(), kLine - 1));
  MPI_Gather(mine.data(), kLine, MPI_CHAR, all.data(), kLine, MPI_CHAR, 0, MPI_COMM_WORLD);
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) fmt::print("{}\n", std::string(all.data() + static_cast<size_t>(r) * kLine));
    fmt::print("{}\n", any_failed ? "FAILED" : fmt::format("all {} ranks ok", size));
  }
  return any_failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rc = run(rank, size, argc, argv);
  MPI_Finalize();
  return rc;
}
