// Dense matrix multiply over OpenBLAS, the CPU fallback for dot_general.
#pragma once
#include <cstdint>

namespace pxl {

// C = A(m×k) · B(k×n), row-major, leading dims lda/ldb/ldc; trans flags transpose A/B in place.
void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
              int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);
void gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a,
              int64_t lda, const double* b, int64_t ldb, double* c, int64_t ldc);

} // namespace pxl
