#include "gemm.hpp"

#include <library_types.h>

#include "check.hpp"

namespace hs::validate {

void gemm_bf16(cublasHandle_t h, long m, long n, long k, const void* a, const void* b, void* c) {
  const float one = 1.0f, zero = 0.0f;
  check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &one, b,
                     CUDA_R_16BF, static_cast<int>(n), a, CUDA_R_16BF, static_cast<int>(k), &zero, c, CUDA_R_16BF,
                     static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

void gemm_bf16_strided(cublasHandle_t h, long m, long n, long k, const void* a, long long stride_a, const void* b,
                       long long stride_b, void* c, long long stride_c, int batch) {
  const float one = 1.0f, zero = 0.0f;
  check(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                                   &one, b, CUDA_R_16BF, static_cast<int>(n), stride_b, a, CUDA_R_16BF, static_cast<int>(k),
                                   stride_a, &zero, c, CUDA_R_16BF, static_cast<int>(n), stride_c, batch, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

}  // namespace hs::validate
