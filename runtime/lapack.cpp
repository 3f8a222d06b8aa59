#include "runtime/lapack.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <vector>

// The Fortran LAPACK routines OpenBLAS exports. Character arguments carry
// gfortran's hidden length arguments at the end (omitting them is undefined
// behaviour for routines built by gfortran).
extern "C" {
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work,
             const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau,
             float* work, const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
void sormqr_(const char* side, const char* trans, const int* m, const int* n, const int* k,
             const float* a, const int* lda, const float* tau, float* c, const int* ldc,
             float* work, const int* lwork, int* info, size_t, size_t);
void dormqr_(const char* side, const char* trans, const int* m, const int* n, const int* k,
             const double* a, const int* lda, const double* tau, double* c, const int* ldc,
             double* work, const int* lwork, int* info, size_t, size_t);
void sgehrd_(const int* n, const int* ilo, const int* ihi, float* a, const int* lda, float* tau,
             float* work, const int* lwork, int* info);
void dgehrd_(const int* n, const int* ilo, const int* ihi, double* a, const int* lda, double* tau,
             double* work, const int* lwork, int* info);
void ssytrd_(const char* uplo, const int* n, float* a, const int* lda, float* d, float* e,
             float* tau, float* work, const int* lwork, int* info, size_t);
void dsytrd_(const char* uplo, const int* n, double* a, const int* lda, double* d, double* e,
             double* tau, double* work, const int* lwork, int* info, size_t);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
             float* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t,
             size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t,
             size_t);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s,
             float* u, const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork,
             int* iwork, int* info, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s,
             double* u, const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork,
             int* iwork, int* info, size_t);
}

namespace pxl::lapack {

namespace {

// A workspace size LAPACK reported (as a float) for a query with lwork = -1.
template <class T> int work_size(T w) { return std::max(1, static_cast<int>(w)); }

} // namespace

template <> int potrf<float>(bool lower, int n, float* a, int lda) {
  int info = 0;
  spotrf_(lower ? "L" : "U", &n, a, &lda, &info, 1);
  return info;
}
template <> int potrf<double>(bool lower, int n, double* a, int lda) {
  int info = 0;
  dpotrf_(lower ? "L" : "U", &n, a, &lda, &info, 1);
  return info;
}

template <> int getrf<float>(int m, int n, float* a, int lda, int* ipiv) {
  int info = 0;
  sgetrf_(&m, &n, a, &lda, ipiv, &info);
  return info;
}
template <> int getrf<double>(int m, int n, double* a, int lda, int* ipiv) {
  int info = 0;
  dgetrf_(&m, &n, a, &lda, ipiv, &info);
  return info;
}

#define PXL_GEQRF(T, F)                                                                            \
  template <> int geqrf<T>(int m, int n, T* a, int lda, T* tau) {                                  \
    int info = 0, lwork = -1;                                                                      \
    T q = 0;                                                                                       \
    F(&m, &n, a, &lda, tau, &q, &lwork, &info);                                                    \
    lwork = work_size(q);                                                                          \
    std::vector<T> work(static_cast<size_t>(lwork));                                               \
    F(&m, &n, a, &lda, tau, work.data(), &lwork, &info);                                           \
    return info;                                                                                   \
  }
PXL_GEQRF(float, sgeqrf_)
PXL_GEQRF(double, dgeqrf_)
#undef PXL_GEQRF

#define PXL_ORGQR(T, F)                                                                            \
  template <> int orgqr<T>(int m, int n, int k, T* a, int lda, const T* tau) {                     \
    int info = 0, lwork = -1;                                                                      \
    T q = 0;                                                                                       \
    F(&m, &n, &k, a, &lda, tau, &q, &lwork, &info);                                                \
    lwork = work_size(q);                                                                          \
    std::vector<T> work(static_cast<size_t>(lwork));                                               \
    F(&m, &n, &k, a, &lda, tau, work.data(), &lwork, &info);                                       \
    return info;                                                                                   \
  }
PXL_ORGQR(float, sorgqr_)
PXL_ORGQR(double, dorgqr_)
#undef PXL_ORGQR

#define PXL_ORMQR(T, F)                                                                            \
  template <>                                                                                      \
  int ormqr<T>(bool left, bool transpose, int m, int n, int k, const T* a, int lda, const T* tau,  \
               T* c, int ldc) {                                                                    \
    int info = 0, lwork = -1;                                                                      \
    T q = 0;                                                                                       \
    const char* side = left ? "L" : "R";                                                           \
    const char* trans = transpose ? "T" : "N";                                                     \
    F(side, trans, &m, &n, &k, a, &lda, tau, c, &ldc, &q, &lwork, &info, 1, 1);                    \
    lwork = work_size(q);                                                                          \
    std::vector<T> work(static_cast<size_t>(lwork));                                               \
    F(side, trans, &m, &n, &k, a, &lda, tau, c, &ldc, work.data(), &lwork, &info, 1, 1);           \
    return info;                                                                                   \
  }
PXL_ORMQR(float, sormqr_)
PXL_ORMQR(double, dormqr_)
#undef PXL_ORMQR

#define PXL_GEHRD(T, F)                                                                            \
  template <> int gehrd<T>(int n, T* a, int lda, T* tau) {                                         \
    int info = 0, lwork = -1, ilo = 1;                                                             \
    T q = 0;                                                                                       \
    F(&n, &ilo, &n, a, &lda, tau, &q, &lwork, &info);                                              \
    lwork = work_size(q);                                                                          \
    std::vector<T> work(static_cast<size_t>(lwork));                                               \
    F(&n, &ilo, &n, a, &lda, tau, work.data(), &lwork, &info);                                     \
    return info;                                                                                   \
  }
PXL_GEHRD(float, sgehrd_)
PXL_GEHRD(double, dgehrd_)
#undef PXL_GEHRD

#define PXL_SYTRD(T, F)                                                                            \
  template <> int sytrd<T>(bool lower, int n, T* a, int lda, T* d, T* e, T* tau) {                 \
    int info = 0, lwork = -1;                                                                      \
    T q = 0;                                                                                       \
    const char* uplo = lower ? "L" : "U";                                                          \
    F(uplo, &n, a, &lda, d, e, tau, &q, &lwork, &info, 1);                                         \
    lwork = work_size(q);                                                                          \
    std::vector<T> work(static_cast<size_t>(lwork));                                               \
    F(uplo, &n, a, &lda, d, e, tau, work.data(), &lwork, &info, 1);                                \
    return info;                                                                                   \
  }
PXL_SYTRD(float, ssytrd_)
PXL_SYTRD(double, dsytrd_)
#undef PXL_SYTRD

#define PXL_SYEVD(T, F)                                                                            \
  template <> int syevd<T>(bool lower, int n, T* a, int lda, T* w) {                               \
    int info = 0, lwork = -1, liwork = -1, iq = 0;                                                 \
    T q = 0;                                                                                       \
    const char* uplo = lower ? "L" : "U";                                                          \
    F("V", uplo, &n, a, &lda, w, &q, &lwork, &iq, &liwork, &info, 1, 1);                           \
    lwork = work_size(q);                                                                          \
    liwork = std::max(1, iq);                                                                      \
    std::vector<T> work(static_cast<size_t>(lwork));                                               \
    std::vector<int> iwork(static_cast<size_t>(liwork));                                           \
    F("V", uplo, &n, a, &lda, w, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);         \
    return info;                                                                                   \
  }
PXL_SYEVD(float, ssyevd_)
PXL_SYEVD(double, dsyevd_)
#undef PXL_SYEVD

#define PXL_GESDD(T, F)                                                                            \
  template <>                                                                                      \
  int gesdd<T>(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt) {     \
    int info = 0, lwork = -1;                                                                      \
    T q = 0;                                                                                       \
    std::vector<int> iwork(static_cast<size_t>(8 * std::max(1, std::min(m, n))));                  \
    F(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, &q, &lwork, iwork.data(), &info, 1);          \
    lwork = work_size(q);                                                                          \
    std::vector<T> work(static_cast<size_t>(lwork));                                               \
    F(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork, iwork.data(), &info, 1); \
    return info;                                                                                   \
  }
PXL_GESDD(float, sgesdd_)
PXL_GESDD(double, dgesdd_)
#undef PXL_GESDD

namespace {

struct TrsmFlags {
  CBLAS_SIDE side;
  CBLAS_UPLO uplo;
  CBLAS_TRANSPOSE trans;
  CBLAS_DIAG diag;
};
TrsmFlags trsm_flags(bool left_side, bool lower, bool transpose_a, bool unit_diagonal) {
  return {left_side ? CblasLeft : CblasRight, lower ? CblasLower : CblasUpper,
          transpose_a ? CblasTrans : CblasNoTrans, unit_diagonal ? CblasUnit : CblasNonUnit};
}

} // namespace

template <>
void trsm<float>(bool left_side, bool lower, bool transpose_a, bool unit_diagonal, int m, int n,
                 const float* a, int lda, float* b, int ldb) {
  TrsmFlags f = trsm_flags(left_side, lower, transpose_a, unit_diagonal);
  cblas_strsm(CblasColMajor, f.side, f.uplo, f.trans, f.diag, m, n, 1.0f, a, lda, b, ldb);
}
template <>
void trsm<double>(bool left_side, bool lower, bool transpose_a, bool unit_diagonal, int m, int n,
                  const double* a, int lda, double* b, int ldb) {
  TrsmFlags f = trsm_flags(left_side, lower, transpose_a, unit_diagonal);
  cblas_dtrsm(CblasColMajor, f.side, f.uplo, f.trans, f.diag, m, n, 1.0, a, lda, b, ldb);
}

} // namespace pxl::lapack
