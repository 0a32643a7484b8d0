#include "bootstrap.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fmt/format.h>

#include "check.hpp"
#include "measure/provenance.hpp"

#ifdef HS_VALIDATE_MPI
#include <mpi.h>
#endif

namespace hs::validate {

namespace {

int env_local_rank(int fallback) {
  const auto r = measure::local_rank_from_env([](const char* n) { return std::getenv(n); });
  return r ? *r : fallback;
}

class SingleRank final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  void broadcast(void*, std::size_t, int) override {}
  std::vector<double> all_gather(const std::vector<double>& mine) override { return mine; }
  std::vector<std::string> all_gather(const std::string& mine) override { return {mine}; }
  void barrier() override {}
  bool all_true(bool mine) override { return mine; }
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

#ifdef HS_VALIDATE_MPI
void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Fatal(fmt::format("{} failed: {}", what, std::string(text, static_cast<std::size_t>(len))));
}

class MpiRanks final : public Bootstrap {
 public:
  MpiRanks(int* argc, char*** argv) {
    check_mpi(MPI_Init(argc, argv), "MPI_Init");
    check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    // The launcher's local rank, else the rank among the ranks sharing this node's memory.
    MPI_Comm node;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int node_rank = 0;
    check_mpi(MPI_Comm_rank(node, &node_rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_free(&node), "MPI_Comm_free");
    local_ = env_local_rank(node_rank);
  }
  ~MpiRanks() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_; }
  void broadcast(void* data, std::size_t bytes, int root) override {
    check_mpi(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  std::vector<double> all_gather(const std::vector<double>& mine) override {
    std::vector<double> all(mine.size() * static_cast<std::size_t>(size_));
    check_mpi(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), static_cast<int>(mine.size()),
                            MPI_DOUBLE, MPI_COMM_WORLD),
              "MPI_Allgather");
    return all;
  }
  std::vector<std::string> all_gather(const std::string& mine) override {
    const int n = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<std::size_t>(size_)), offs(static_cast<std::size_t>(size_));
    check_mpi(MPI_Allgather(&n, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
    int total = 0;
    for (int r = 0; r < size_; ++r) offs[r] = total, total += lens[r];
    std::string all(static_cast<std::size_t>(total), '\0');
    check_mpi(MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, MPI_COMM_WORLD),
              "MPI_Allgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(offs[r], lens[r]));
    return out;
  }
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  bool all_true(bool mine) override {
    int v = mine ? 1 : 0, all = 0;
    check_mpi(MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    return all == 1;
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }

 private:
  int rank_ = 0, size_ = 1, local_ = 0;
};
#endif

}  // namespace

bool built_with_mpi() {
#ifdef HS_VALIDATE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Bootstrap> make_bootstrap([[maybe_unused]] int* argc, [[maybe_unused]] char*** argv) {
  const bool launched = measure::launched_by_mpi([](const char* n) { return std::getenv(n); });
#ifdef HS_VALIDATE_MPI
  if (launched) return std::make_unique<MpiRanks>(argc, argv);
#else
  if (launched && std::getenv("OMPI_COMM_WORLD_SIZE") && std::string(std::getenv("OMPI_COMM_WORLD_SIZE")) != "1")
    throw Fatal("started by an MPI launcher with several ranks, but this hecate-validate was built without MPI "
                "(reconfigure with MPI found: -Dmpi=enabled)");
#endif
  return std::make_unique<SingleRank>();
}

}  // namespace hs::validate
