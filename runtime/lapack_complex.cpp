// The complex64 forms of the factorizations (runtime/lapack.hpp) over
// OpenBLAS's LAPACK c* routines, called as jaxlib's CPU kernels call them:
// a workspace query first, then the call. heevd and ungqr are the Hermitian
// and unitary counterparts of syevd and orgqr.
#include <algorithm>
#include <cstddef>
#include <vector>

#include <cblas.h>

#include "runtime/lapack.hpp"

using pxl::lapack::c64;

extern "C" {
void cpotrf_(const char* uplo, const int* n, c64* a, const int* lda, int* info, size_t);
void cgetrf_(const int* m, const int* n, c64* a, const int* lda, int* ipiv, int* info);
void cgeqrf_(const int* m, const int* n, c64* a, const int* lda, c64* tau, c64* work,
             const int* lwork, int* info);
void cungqr_(const int* m, const int* n, const int* k, c64* a, const int* lda, const c64* tau,
             c64* work, const int* lwork, int* info);
void cunmqr_(const char* side, const char* trans, const int* m, const int* n, const int* k,
             const c64* a, const int* lda, const c64* tau, c64* c, const int* ldc, c64* work,
             const int* lwork, int* info, size_t, size_t);
void cgehrd_(const int* n, const int* ilo, const int* ihi, c64* a, const int* lda, c64* tau,
             c64* work, const int* lwork, int* info);
void chetrd_(const char* uplo, const int* n, c64* a, const int* lda, float* d, float* e, c64* tau,
             c64* work, const int* lwork, int* info, size_t);
void cheevd_(const char* jobz, const char* uplo, const int* n, c64* a, const int* lda, float* w,
             c64* work, const int* lwork, float* rwork, const int* lrwork, int* iwork,
             const int* liwork, int* info, size_t, size_t);
void cgesdd_(const char* jobz, const int* m, const int* n, c64* a, const int* lda, float* s, c64* u,
             const int* ldu, c64* vt, const int* ldvt, c64* work, const int* lwork, float* rwork,
             int* iwork, int* info, size_t);
}

namespace pxl::lapack {

namespace {

int work_size(c64 w) { return std::max(1, static_cast<int>(w.real())); }

} // namespace

template <> int potrf<c64>(bool lower, int n, c64* a, int lda) {
  int info = 0;
  cpotrf_(lower ? "L" : "U", &n, a, &lda, &info, 1);
  return info;
}

template <> int getrf<c64>(int m, int n, c64* a, int lda, int* ipiv) {
  int info = 0;
  cgetrf_(&m, &n, a, &lda, ipiv, &info);
  return info;
}

template <> int geqrf<c64>(int m, int n, c64* a, int lda, c64* tau) {
  int info = 0, lwork = -1;
  c64 q = 0;
  cgeqrf_(&m, &n, a, &lda, tau, &q, &lwork, &info);
  lwork = work_size(q);
  std::vector<c64> work(static_cast<size_t>(lwork));
  cgeqrf_(&m, &n, a, &lda, tau, work.data(), &lwork, &info);
  return info;
}

template <> int orgqr<c64>(int m, int n, int k, c64* a, int lda, const c64* tau) {
  int info = 0, lwork = -1;
  c64 q = 0;
  cungqr_(&m, &n, &k, a, &lda, tau, &q, &lwork, &info);
  lwork = work_size(q);
  std::vector<c64> work(static_cast<size_t>(lwork));
  cungqr_(&m, &n, &k, a, &lda, tau, work.data(), &lwork, &info);
  return info;
}

template <>
int ormqr<c64>(bool left, bool transpose, int m, int n, int k, const c64* a, int lda,
               const c64* tau, c64* c, int ldc) {
  int info = 0, lwork = -1;
  c64 q = 0;
  const char* side = left ? "L" : "R";
  const char* trans = transpose ? "C" : "N"; // unmqr's transpose is the conjugate one
  cunmqr_(side, trans, &m, &n, &k, a, &lda, tau, c, &ldc, &q, &lwork, &info, 1, 1);
  lwork = work_size(q);
  std::vector<c64> work(static_cast<size_t>(lwork));
  cunmqr_(side, trans, &m, &n, &k, a, &lda, tau, c, &ldc, work.data(), &lwork, &info, 1, 1);
  return info;
}

template <> int gehrd<c64>(int n, c64* a, int lda, c64* tau) {
  int info = 0, lwork = -1, ilo = 1;
  c64 q = 0;
  cgehrd_(&n, &ilo, &n, a, &lda, tau, &q, &lwork, &info);
  lwork = work_size(q);
  std::vector<c64> work(static_cast<size_t>(lwork));
  cgehrd_(&n, &ilo, &n, a, &lda, tau, work.data(), &lwork, &info);
  return info;
}

template <> int sytrd<c64>(bool lower, int n, c64* a, int lda, float* d, float* e, c64* tau) {
  int info = 0, lwork = -1;
  c64 q = 0;
  const char* uplo = lower ? "L" : "U";
  chetrd_(uplo, &n, a, &lda, d, e, tau, &q, &lwork, &info, 1);
  lwork = work_size(q);
  std::vector<c64> work(static_cast<size_t>(lwork));
  chetrd_(uplo, &n, a, &lda, d, e, tau, work.data(), &lwork, &info, 1);
  return info;
}

template <> int syevd<c64>(bool lower, int n, c64* a, int lda, float* w) {
  int info = 0, lwork = -1, lrwork = -1, liwork = -1, iq = 0;
  c64 q = 0;
  float rq = 0;
  const char* uplo = lower ? "L" : "U";
  cheevd_("V", uplo, &n, a, &lda, w, &q, &lwork, &rq, &lrwork, &iq, &liwork, &info, 1, 1);
  lwork = work_size(q);
  lrwork = std::max(1, static_cast<int>(rq));
  liwork = std::max(1, iq);
  std::vector<c64> work(static_cast<size_t>(lwork));
  std::vector<float> rwork(static_cast<size_t>(lrwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  cheevd_("V", uplo, &n, a, &lda, w, work.data(), &lwork, rwork.data(), &lrwork, iwork.data(),
          &liwork, &info, 1, 1);
  return info;
}

template <>
int gesdd<c64>(char jobz, int m, int n, c64* a, int lda, float* s, c64* u, int ldu, c64* vt,
               int ldvt) {
  int info = 0, lwork = -1;
  c64 q = 0;
  size_t mn = static_cast<size_t>(std::max(1, std::min(m, n)));
  size_t mx = static_cast<size_t>(std::max(1, std::max(m, n)));
  // OpenBLAS 0.3.21's cgemv 'N' reads x[n * incx], one stride past a strided
  // vector's last element, when m % 4 == 2. cgesdd's bidiagonalization applies
  // reflectors stored in rows of A (and of blocks in WORK) that way (clarf
  // 'Right', incv = lda), reading up to one column past the matrix: a SEGV under
  // ASan (cla_solve, lng_svd_edge) and past an mmap'd buffer's end. So A is
  // factored in a copy with a column of slack and WORK gets mx spare elements.
  size_t asize = static_cast<size_t>(lda) * static_cast<size_t>(std::max(n, 0));
  std::vector<c64> ap(asize + static_cast<size_t>(lda));
  std::copy(a, a + asize, ap.data());
  // LAPACK's documented rwork size (the larger of its two bounds for jobz != 'N').
  size_t lrwork =
      jobz == 'N' ? 7 * mn : std::max(5 * mn * mn + 5 * mn, 2 * mx * mn + 2 * mn * mn + mn);
  std::vector<float> rwork(lrwork);
  std::vector<int> iwork(8 * mn);
  cgesdd_(&jobz, &m, &n, ap.data(), &lda, s, u, &ldu, vt, &ldvt, &q, &lwork, rwork.data(),
          iwork.data(), &info, 1);
  lwork = work_size(q);
  std::vector<c64> work(static_cast<size_t>(lwork) + mx);
  cgesdd_(&jobz, &m, &n, ap.data(), &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork, rwork.data(),
          iwork.data(), &info, 1);
  std::copy(ap.begin(), ap.begin() + static_cast<std::ptrdiff_t>(asize), a);
  return info;
}

template <>
void trsm<c64>(bool left_side, bool lower, bool transpose_a, bool unit_diagonal, int m, int n,
               const c64* a, int lda, c64* b, int ldb) {
  const c64 one(1.0f, 0.0f);
  cblas_ctrsm(CblasColMajor, left_side ? CblasLeft : CblasRight, lower ? CblasLower : CblasUpper,
              transpose_a ? CblasTrans : CblasNoTrans, unit_diagonal ? CblasUnit : CblasNonUnit, m,
              n, &one, a, lda, b, ldb);
}

} // namespace pxl::lapack
