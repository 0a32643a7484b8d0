// How the ranks of hecate-validate find each other: MPI (mpirun / srun launch one rank per GPU,
// exactly as nccl-tests) when an MPI launcher started the process and the program was built with MPI,
// otherwise one rank on its own. Rank 0 creates the NCCL unique id and broadcasts it here; timings
// and provenance are gathered here. Every MPI return code is checked (Fatal).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace hs::validate {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // rank on this node: selects the GPU
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual std::vector<double> all_gather(const std::vector<double>& mine) = 0;  // every rank the same length
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
  virtual void barrier() = 0;
  virtual bool all_true(bool mine) = 0;  // logical and over ranks
  [[noreturn]] virtual void abort(int code) = 0;  // every rank exits with `code`
};

// Initialises MPI when an MPI launcher started the process (measure::launched_by_mpi); `argc`/`argv`
// as main's. The MPI bootstrap finalises MPI when destroyed.
std::unique_ptr<Bootstrap> make_bootstrap(int* argc, char*** argv);

// Whether this build has MPI (false: every run is one rank).
bool built_with_mpi();

}  // namespace hs::validate
