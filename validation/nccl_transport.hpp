// The plan executor's transport over NCCL (transport/transport.hpp): a group is ncclGroupStart,
// ncclSend / ncclRecv, ncclGroupEnd, then the stream is synchronised. The executor hands host
// buffers, so each send is staged to the GPU before the group and each receive copied back after
// it: this transport runs plan_check's correctness check (every copy its owner's bytes, every owner
// the sum of its copies' gradients) through NCCL with the executor's own logic; the sparse suite
// times the same rounds on device-resident buffers (suite_sparse.cpp).
//
// NCCL cannot see a size mismatch between a send and its receive (it would hang or fail), so unlike
// the MPI transport this one relies on the plan's guarantee that every holder of a chunk uses the
// same size. Outside a group, send and recv each run as a group of one.
#pragma once

#include <nccl.h>

#include <vector>

#include "timing.hpp"
#include "transport/transport.hpp"

namespace hs::validate {

class NcclTransport final : public transport::Transport {
 public:
  NcclTransport(ncclComm_t comm, int rank, int size, cudaStream_t stream) : comm_(comm), rank_(rank), size_(size), stream_(stream) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void group_start() override;
  void send(int dst, std::span<const float> data) override;
  void recv(int src, std::span<float> data) override;
  void group_end() override;

 private:
  struct Pending {
    bool is_send = false;
    int peer = 0;
    DeviceBuffer buf;
    std::span<float> host;  // receives: where the data goes after the group
  };
  ncclComm_t comm_;
  int rank_, size_;
  cudaStream_t stream_;
  bool in_group_ = false;
  std::vector<Pending> pending_;
};

}  // namespace hs::validate
