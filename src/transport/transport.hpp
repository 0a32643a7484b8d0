// A transport moves buffers of floats between ranks (one rank per GPU of a plan). The plan executor
// (plan_executor.hpp) decides who sends what to whom and when; a transport only delivers, so the same
// plan logic runs over MPI (mpi_transport.hpp), over threads in one process (thread_transport.hpp,
// for unit tests) and, in the validation backend, over NCCL.
//
// Semantics, as NCCL's grouped point-to-point calls (ncclGroupStart / ncclSend / ncclRecv /
// ncclGroupEnd) and MPI's non-blocking ones:
//   * send() and recv() between group_start() and group_end() are posted without blocking and all
//     complete in group_end(); their buffers must stay alive and untouched until then. Any pattern of
//     sends and receives inside one group completes, whatever the order on each side, as long as
//     every send has its receive posted in the same group on the peer: no deadlock, even for a GPU
//     that both sends to and receives from the same peer.
//   * Messages from one rank to another are matched in the order they were posted (MPI's
//     non-overtaking rule; NCCL's per-peer ordering).
//   * A receive expects exactly its buffer's size; a message of another size is an error
//     (std::runtime_error), as is a transport failure.
//   * Outside a group, send() and recv() complete before returning; a send may wait for its receive
//     (as MPI_Send of a large message), so the caller must order them itself.
#pragma once

#include <span>

namespace hs::transport {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void group_start() = 0;
  virtual void send(int dst, std::span<const float> data) = 0;
  virtual void recv(int src, std::span<float> data) = 0;
  virtual void group_end() = 0;
};

}  // namespace hs::transport
