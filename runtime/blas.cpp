#include "runtime/blas.hpp"

#include <cblas.h>

#include <limits>

#include "lang/diag.hpp"

namespace pxl {

namespace {

// cblas takes 32-bit ints (blasint); dimensions past that would silently wrap.
bool fits(int64_t v) { return v >= 0 && v <= std::numeric_limits<int>::max(); }

template <class T> void zero_c(int64_t m, int64_t n, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = T(0);
}

// With k == 0 the product is all zeros; BLAS would skip it but may reject the
// leading dimensions of empty operands, so it is never called for empty shapes.
template <class T> bool trivial(int64_t m, int64_t n, int64_t k, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return true;
  if (k == 0) {
    zero_c(m, n, c, ldc);
    return true;
  }
  PXL_ASSERT(fits(m) && fits(n) && fits(k) && fits(ldc), "gemm: dimension exceeds BLAS int range");
  return false;
}

} // namespace

void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
              int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (trivial(m, n, k, c, ldc)) return;
  PXL_ASSERT(fits(lda) && fits(ldb), "gemm: leading dimension exceeds BLAS int range");
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0f, a, int(lda), b,
              int(ldb), 0.0f, c, int(ldc));
}

void gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a,
              int64_t lda, const double* b, int64_t ldb, double* c, int64_t ldc) {
  if (trivial(m, n, k, c, ldc)) return;
  PXL_ASSERT(fits(lda) && fits(ldb), "gemm: leading dimension exceeds BLAS int range");
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0, a, int(lda), b,
              int(ldb), 0.0, c, int(ldc));
}

} // namespace pxl
