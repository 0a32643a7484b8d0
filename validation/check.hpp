// Every CUDA, cuBLAS and NCCL return code hecate-validate gets is checked here: a failure throws
// Fatal naming the call and the library's message; main prints it and exits 1 (MPI errors are checked
// in bootstrap.cpp the same way).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "comm.hpp"

namespace hs::validate {

struct Fatal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(cudaError_t e, const char* what);
void check(cublasStatus_t s, const char* what);
#if HS_VALIDATE_NCCL
void check(ncclResult_t r, const char* what);
#endif

// Wait for a stream / an event while polling the communicator's asynchronous error (as nccl-tests
// does): a peer that failed or vanished is reported (Fatal) instead of hanging. `comm` may be null.
void wait_stream(cudaStream_t s, Comm comm, const char* what);
void wait_event(cudaEvent_t e, Comm comm, const char* what);

}  // namespace hs::validate
