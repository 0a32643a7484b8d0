#include "nccl_transport.hpp"

#include <stdexcept>

#include "check.hpp"

namespace hs::validate {

void NcclTransport::group_start() {
  if (in_group_) throw std::logic_error("group_start inside a group");
  in_group_ = true;
  pending_.clear();
}

void NcclTransport::send(int dst, std::span<const float> data) {
  const bool own_group = !in_group_;
  if (own_group) group_start();
  Pending p{true, dst, DeviceBuffer(data.size_bytes()), {}};
  check(cudaMemcpyAsync(p.buf.get(), data.data(), data.size_bytes(), cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync H2D");
  pending_.push_back(std::move(p));
  if (own_group) group_end();
}

void NcclTransport::recv(int src, std::span<float> data) {
  const bool own_group = !in_group_;
  if (own_group) group_start();
  pending_.push_back(Pending{false, src, DeviceBuffer(data.size_bytes()), data});
  if (own_group) group_end();
}

void NcclTransport::group_end() {
  if (!in_group_) throw std::logic_error("group_end without group_start");
  in_group_ = false;
  // The staging copies precede the NCCL calls on the same stream.
  check(ncclGroupStart(), "ncclGroupStart");
  for (const Pending& p : pending_) {
    const std::size_t n = p.buf.bytes() / sizeof(float);
    if (p.is_send) check(ncclSend(p.buf.get(), n, ncclFloat, p.peer, comm_, stream_), "ncclSend");
    else check(ncclRecv(p.buf.get(), n, ncclFloat, p.peer, comm_, stream_), "ncclRecv");
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
  for (const Pending& p : pending_)
    if (!p.is_send)
      check(cudaMemcpyAsync(p.host.data(), p.buf.get(), p.buf.bytes(), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync D2H");
  wait_stream(stream_, comm_, "transport group");
  pending_.clear();
}

}  // namespace hs::validate
