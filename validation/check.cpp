#include "check.hpp"

#include <fmt/format.h>

namespace hs::validate {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Fatal(fmt::format("{} failed: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Fatal(fmt::format("{} failed: {}", what, cublasGetStatusString(s)));
}

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw Fatal(fmt::format("{} failed: {} ({})", what, ncclGetErrorString(r), ncclGetLastError(nullptr)));
}

}  // namespace hs::validate
