// Device time of an operation on the context's stream: `warmup` untimed iterations, then CUDA events
// around each of `iters` (ranks wait at a barrier before each, so every iteration starts together);
// the time of an iteration is the slowest rank's (measure::slowest_rank), identical on every rank.
#pragma once

#include <functional>
#include <vector>

#include <cuda_runtime.h>
#include "bootstrap.hpp"
#include "comm.hpp"

namespace hs::validate {

// Per iteration, the maximum over ranks of `mine` (every rank passes the same count).
std::vector<double> slowest_over_ranks(Bootstrap& boot, const std::vector<double>& mine);

// `comm` (may be null): polled for asynchronous NCCL errors while waiting.
std::vector<double> time_iterations(Bootstrap& boot, Comm comm, cudaStream_t stream, int warmup, int iters,
                                    const std::function<void(int)>& op);

// Host pointer to device memory freed on destruction (cudaFree errors ignored there).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T = void>
  T* get() const { return static_cast<T*>(p_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace hs::validate
