// LAPACK factorizations and BLAS trsm over OpenBLAS, the kernels of the linalg
// ops (ir/ref_linalg.cpp). Matrices are column-major, as LAPACK (and XLA's CPU
// calls into it) use them; T is float or double. Each returns LAPACK's info
// (0: success; > 0: the factorization failed, e.g. not positive definite).
// The factorizations also take std::complex<float> (c64): LAPACK's c*
// routines (heevd and ungqr standing for syevd and orgqr), whose eigenvalues
// and singular values are real (Real<T>).
#pragma once
#include <complex>
#include <cstdint>

namespace pxl::lapack {

using c64 = std::complex<float>;
template <class T> struct RealOf { using type = T; };
template <> struct RealOf<c64> { using type = float; };
template <class T> using Real = typename RealOf<T>::type;

template <class T> int potrf(bool lower, int n, T* a, int lda);
template <class T> int getrf(int m, int n, T* a, int lda, int* ipiv); // 1-based pivots
template <class T> int geqrf(int m, int n, T* a, int lda, T* tau);
template <class T> int orgqr(int m, int n, int k, T* a, int lda, const T* tau);
// c (m x n) <- op(Q) c (left) or c op(Q), Q the product of the k reflectors in
// a's columns (lda rows) and tau; op is the (conjugate) transpose when asked.
template <class T>
int ormqr(bool left, bool transpose, int m, int n, int k, const T* a, int lda, const T* tau, T* c,
          int ldc);
// Reduction to upper Hessenberg form (gehrd, ilo = 1, ihi = n): the reflectors
// below the first subdiagonal of a, their scalars in tau (n - 1).
template <class T> int gehrd(int n, T* a, int lda, T* tau);
// Reduction of a symmetric (Hermitian) matrix to tridiagonal form (sytrd, or
// hetrd for c64): diagonal d (n), off-diagonal e (n - 1), scalars tau (n - 1).
template <class T> int sytrd(bool lower, int n, T* a, int lda, Real<T>* d, Real<T>* e, T* tau);
// Eigenvectors into a (syevd, or heevd for c64).
template <class T> int syevd(bool lower, int n, T* a, int lda, Real<T>* w);
// jobz: 'A' (all of u, vt), 'S' (the first min(m, n)) or 'N' (none).
template <class T>
int gesdd(char jobz, int m, int n, T* a, int lda, Real<T>* s, T* u, int ldu, T* vt, int ldvt);
// op(A) X = B (left_side) or X op(A) = B, B (m x n) overwritten with X; op is
// the plain transpose (a conjugated transpose is the transpose of conj(A)).
template <class T>
void trsm(bool left_side, bool lower, bool transpose_a, bool unit_diagonal, int m, int n,
          const T* a, int lda, T* b, int ldb);

// The general eigendecomposition and Schur form (runtime/lapack_eig.cpp); T is
// float or std::complex<float> (geev), also double (gees). a (n x n, lda = n)
// is overwritten. geev: the eigenvalues into w, the left / right eigenvectors
// (when asked for) into vl / vr (n x n), a real matrix's conjugate pairs
// unpacked into complex columns as jaxlib's kernel does. gees: the Schur form
// into a, the Schur vectors into vs (n x n).
template <class T> int geev(bool left, bool right, int n, T* a, c64* w, c64* vl, c64* vr);
template <class T> int gees(int n, T* a, T* vs);

} // namespace pxl::lapack
