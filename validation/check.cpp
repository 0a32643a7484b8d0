#include "check.hpp"

#include <thread>
#include <fmt/format.h>

namespace hs::validate {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Fatal(fmt::format("{} failed: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Fatal(fmt::format("{} failed: {}", what, cublasGetStatusString(s)));
}

#if HS_VALIDATE_NCCL
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw Fatal(fmt::format("{} failed: {} ({})", what, ncclGetErrorString(r), ncclGetLastError(nullptr)));
}
#endif

namespace {
// Polls `query` (cudaStreamQuery / cudaEventQuery) until the work is done, checking the
// communicator's asynchronous error between polls.
template <class Q>
void poll(Q query, [[maybe_unused]] Comm comm, const char* what) {
  while (true) {
    const cudaError_t q = query();
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) check(q, what);
#if HS_VALIDATE_NCCL
    if (comm) {
      ncclResult_t async = ncclSuccess;
      check(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
      if (async != ncclSuccess)
        throw Fatal(fmt::format("{}: NCCL reported an asynchronous error: {} ({})", what, ncclGetErrorString(async),
                                ncclGetLastError(comm)));
    }
#endif
    std::this_thread::yield();
  }
}
}  // namespace

void wait_stream(cudaStream_t s, Comm comm, const char* what) {
  poll([&] { return cudaStreamQuery(s); }, comm, what);
}

void wait_event(cudaEvent_t e, Comm comm, const char* what) {
  poll([&] { return cudaEventQuery(e); }, comm, what);
}

}  // namespace hs::validate
