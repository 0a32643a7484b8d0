// The communicator the suites pass around: NCCL's where hecate-validate is built with NCCL
// (HS_VALIDATE_NCCL=1: every suite), otherwise a pointer type that is always null (a build for the
// single-GPU suites gemm, materialize and overlap, on a machine with the CUDA toolkit but no NCCL).
#pragma once

#if HS_VALIDATE_NCCL
#include <nccl.h>
namespace hs::validate {
using Comm = ncclComm_t;
inline constexpr bool kHaveNccl = true;
}  // namespace hs::validate
#else
namespace hs::validate {
struct NoNccl;
using Comm = NoNccl*;
inline constexpr bool kHaveNccl = false;
}  // namespace hs::validate
#endif
