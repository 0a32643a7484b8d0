// One rank's GPU context: the device chosen from the rank's local rank (one rank per GPU, as
// nccl-tests), a stream, a cuBLAS handle, the NCCL communicator over every rank (rank 0 creates the
// unique id, the bootstrap broadcasts it; created only when a suite needs it) and the provenance of
// the run, gathered from every rank.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "bootstrap.hpp"
#include "comm.hpp"
#include "measure/provenance.hpp"

namespace hs::validate {

class Context {
 public:
  // The GPU: the only one the rank sees, else the one of its local rank; throws Fatal when the local
  // rank has none (local rank >= visible GPUs).
  Context(Bootstrap& boot, bool need_nccl, const std::vector<std::string>& argv);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Bootstrap& boot;
  int device = 0;
  cudaDeviceProp prop{};
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  Comm comm = nullptr;  // null when no suite needs NCCL (always, in a build without NCCL)
  measure::Provenance provenance;

  int rank() const { return boot.rank(); }
  int ranks() const { return boot.size(); }
};

}  // namespace hs::validate
