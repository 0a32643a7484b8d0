#include "timing.hpp"

#include "check.hpp"
#include "measure/stats.hpp"

namespace hs::validate {

std::vector<double> time_iterations(Bootstrap& boot, Comm comm, cudaStream_t stream, int warmup, int iters,
                                    const std::function<void(int)>& op) {
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  for (int i = 0; i < warmup; ++i) op(i);
  wait_stream(stream, comm, "warm-up iterations");
  std::vector<double> mine;
  for (int i = 0; i < iters; ++i) {
    boot.barrier();
    check(cudaEventRecord(e0, stream), "cudaEventRecord");
    op(warmup + i);
    check(cudaEventRecord(e1, stream), "cudaEventRecord");
    wait_event(e1, comm, "timed iteration");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    mine.push_back(ms * 1e-3);
  }
  check(cudaEventDestroy(e0), "cudaEventDestroy");
  check(cudaEventDestroy(e1), "cudaEventDestroy");
  return slowest_over_ranks(boot, mine);
}

std::vector<double> slowest_over_ranks(Bootstrap& boot, const std::vector<double>& mine) {
  const auto all = boot.all_gather(mine);
  std::vector<std::vector<double>> per_rank(static_cast<std::size_t>(boot.size()));
  for (std::size_t r = 0; r < per_rank.size(); ++r)
    per_rank[r].assign(all.begin() + static_cast<long>(r * mine.size()), all.begin() + static_cast<long>((r + 1) * mine.size()));
  return measure::slowest_rank(per_rank);
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  check(cudaMalloc(&p_, bytes ? bytes : 1), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_, bytes_ = o.bytes_;
    o.p_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}

}  // namespace hs::validate
