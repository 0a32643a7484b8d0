// Row-major bf16 GEMMs with fp32 accumulation through cuBLAS (column-major underneath: C^T = B^T
// A^T), shared by the GEMM, materialize and overlap suites.
#pragma once

#include <cublas_v2.h>

namespace hs::validate {

// C[m x n] = A[m x k] * B[k x n], bf16 in and out.
void gemm_bf16(cublasHandle_t h, long m, long n, long k, const void* a, const void* b, void* c);
// `batch` of them, operands at fixed strides (elements).
void gemm_bf16_strided(cublasHandle_t h, long m, long n, long k, const void* a, long long stride_a, const void* b,
                       long long stride_b, void* c, long long stride_c, int batch);

}  // namespace hs::validate
