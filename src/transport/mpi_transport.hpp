// The transport over MPI (one rank per GPU of the plan, e.g. `mpirun -np 8 --oversubscribe` on one
// CPU machine: Open MPI's shared-memory transport). Groups post MPI_Isend / MPI_Irecv and complete
// them with one MPI_Waitall, exactly the ncclGroupStart / ncclSend / ncclRecv / ncclGroupEnd shape
// of the GPU backend. The transport works on a duplicate of MPI_COMM_WORLD, so its messages never
// match anyone else's; errors on it are returned, not fatal, and thrown as std::runtime_error.
// MPI must be initialized before construction and finalized after destruction.
#pragma once

#include <memory>

#include "transport/transport.hpp"

namespace hs::transport {

class MpiTransport final : public Transport {
 public:
  MpiTransport();
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void group_start() override;
  void send(int dst, std::span<const float> data) override;
  void recv(int src, std::span<float> data) override;
  void group_end() override;

 private:
  struct Impl;  // keeps mpi.h out of this header
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1;
  bool in_group_ = false;
};

}  // namespace hs::transport
