// Sweeps over MPI ranks (`hecate-sim sweep --mpi`, launched with mpirun or srun): rank 0 reads and
// writes the result files and hands out points one at a time to ranks 1..N-1, which simulate them
// and send each row back; rank 0 commits rows in sweep order exactly as a local run does, so the
// files are the same bytes. With one rank, rank 0 runs the points itself. Built when Meson finds
// MPI (option `mpi`); otherwise --mpi is a clear error.
#pragma once

#include <functional>
#include <vector>

#include "sweep/sweep_results.hpp"

namespace hs::app {

class MpiSession {
 public:
  MpiSession();   // MPI_Init (throws std::runtime_error in a build without MPI)
  ~MpiSession();  // MPI_Finalize
  int rank() const { return rank_; }
  int size() const { return size_; }
  [[noreturn]] void abort(int code);

 private:
  int rank_ = 0, size_ = 1;
};

// Rank 0: sends each of `points` (sweep indices) to a free worker, receives rows and calls commit
// on them in the order of `points`. With no workers (one rank) it evaluates them itself.
void mpi_coordinate(const std::vector<int>& points, const std::function<sweep::Row(int)>& eval,
                    const std::function<void(sweep::Row&&)>& commit);
// Ranks > 0: evaluates the points rank 0 sends until it says stop.
void mpi_work(const std::function<sweep::Row(int)>& eval);

}  // namespace hs::app
