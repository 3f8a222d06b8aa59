// Reference kernels of the linalg ops (cholesky, triangular_solve, lu, qr,
// eigh, svd): each matrix of the batch is copied to column-major order, handed
// to LAPACK the way XLA's CPU backend calls it (JAX's lowerings in
// jax/_src/lax/linalg.py), and copied back. A factorization LAPACK reports as
// failed gives NaNs, as JAX's _replace_not_ok_with_nan does. complex64 goes to
// the c* routines; eigh's eigenvalues and svd's singular values are then real.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ir/ref_util.hpp"
#include "runtime/lapack.hpp"

namespace pxl::ref {

namespace {

// LAPACK takes 32-bit dimensions.
int dim(int64_t v) {
  if (v > std::numeric_limits<int>::max())
    throw Error(ErrCode::Shape, "linalg: dimension " + std::to_string(v) +
                                    " exceeds what LAPACK supports (2^31 - 1)");
  return static_cast<int>(v);
}

// Column-major (m x n) matrix.
template <class T> struct Mat {
  int64_t m = 0, n = 0;
  std::vector<T> v;
  Mat(int64_t rows, int64_t cols) : m(rows), n(cols), v(static_cast<size_t>(rows * cols), T(0)) {}
  T& at(int64_t i, int64_t j) { return v[static_cast<size_t>(i + j * m)]; }
  T* data() { return v.data(); }
  int ld() const { return std::max(1, static_cast<int>(m)); }
  static Mat from_rows(const T* x, int64_t rows, int64_t cols) {
    Mat c(rows, cols);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) c.at(i, j) = x[i * cols + j];
    return c;
  }
  // The leading (rows x cols) block into row-major `out`.
  void to_rows(T* out, int64_t rows, int64_t cols) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) out[i * cols + j] = at(i, j);
  }
  void fill(T x) { std::fill(v.begin(), v.end(), x); }
  void triu() {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = j + 1; i < m; ++i) at(i, j) = T(0);
  }
};

using lapack::c64;
using lapack::Real;

template <class T> constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();
template <>
constexpr c64 kNaN<c64> = c64(std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::quiet_NaN());

template <class T> void set_eye(T* out, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[i * cols + j] = T(i == j);
}

template <class T> bool all_finite(const T* x, int64_t size) {
  for (int64_t i = 0; i < size; ++i)
    if (!std::isfinite(std::abs(x[i]))) return false;
  return true;
}

// One matrix `x` (m x n, row-major) of the batch; writes output `l.output` to `out`.
template <class T>
void one(Op op, const LinalgAttrs& l, const T* x, int64_t m, int64_t n, const T* b, int64_t bm,
         int64_t bn, void* out) {
  int64_t k = std::min(m, n);
  T* o = static_cast<T*>(out);
  switch (op) {
  case Op::Cholesky: {
    Mat<T> a = Mat<T>::from_rows(x, n, n);
    int info = n ? lapack::potrf<T>(true, dim(n), a.data(), a.ld()) : 0;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < j; ++i) a.at(i, j) = T(0);
    if (info != 0) a.fill(kNaN<T>);
    return a.to_rows(o, n, n);
  }
  case Op::TriangularSolve: {
    Mat<T> a = Mat<T>::from_rows(x, n, n), c = Mat<T>::from_rows(b, bm, bn);
    if (bm && bn)
      lapack::trsm<T>(l.left_side, l.lower, l.transpose_a, l.unit_diagonal, dim(bm), dim(bn),
                      a.data(), a.ld(), c.data(), c.ld());
    return c.to_rows(o, bm, bn);
  }
  case Op::Lu: {
    Mat<T> a = Mat<T>::from_rows(x, m, n);
    std::vector<int> piv(static_cast<size_t>(k), 0);
    if (k) lapack::getrf<T>(dim(m), dim(n), a.data(), a.ld(), piv.data());
    if (l.output == 0) return a.to_rows(o, m, n);
    int32_t* p = static_cast<int32_t*>(out);
    if (l.output == 1) {
      for (int64_t i = 0; i < k; ++i) p[i] = piv[static_cast<size_t>(i)] - 1;
      return;
    }
    std::iota(p, p + m, 0); // JAX's lu_pivots_to_permutation: the swaps in order
    for (int64_t i = 0; i < k; ++i) std::swap(p[i], p[piv[static_cast<size_t>(i)] - 1]);
    return;
  }
  case Op::Qr: {
    int64_t kq = l.full_matrices ? m : k;
    if (m == 0 || n == 0) {
      if (l.output == 0) return set_eye(o, m, kq);
      return std::fill(o, o + kq * n, T(0));
    }
    Mat<T> r = Mat<T>::from_rows(x, m, n);
    std::vector<T> tau(static_cast<size_t>(k));
    lapack::geqrf<T>(dim(m), dim(n), r.data(), r.ld(), tau.data());
    if (l.output == 1) {
      r.triu();
      return r.to_rows(o, kq, n);
    }
    // JAX's _qr_lowering: Q from the reflectors in r's leading columns.
    Mat<T> q(m, std::max(kq, k));
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < m; ++i) q.at(i, j) = r.at(i, j);
    lapack::orgqr<T>(dim(m), dim(q.n), dim(k), q.data(), q.ld(), tau.data());
    return q.to_rows(o, m, kq);
  }
  case Op::Eigh: {
    Mat<T> a = Mat<T>::from_rows(x, n, n);
    std::vector<Real<T>> w(static_cast<size_t>(n));
    int info = n ? lapack::syevd<T>(l.lower, dim(n), a.data(), a.ld(), w.data()) : 0;
    if (info != 0) a.fill(kNaN<T>), std::fill(w.begin(), w.end(), kNaN<Real<T>>);
    if (l.output == 0) return a.to_rows(o, n, n);
    std::copy(w.begin(), w.end(), static_cast<Real<T>*>(out));
    return;
  }
  case Op::Svd: {
    int64_t ucols = l.full_matrices ? m : k, vrows = l.full_matrices ? n : k;
    if (k == 0) { // JAX's _empty_svd
      if (l.output == 1)
        return l.full_matrices ? set_eye(o, m, m) : std::fill(o, o + m * ucols, T(0));
      if (l.output == 2)
        return l.full_matrices ? set_eye(o, n, n) : std::fill(o, o + vrows * n, T(0));
      return;
    }
    bool uv = l.compute_uv || l.output != 0;
    char jobz = !uv ? 'N' : l.full_matrices ? 'A' : 'S';
    Mat<T> a = Mat<T>::from_rows(x, m, n), u(uv ? m : 1, uv ? ucols : 1),
           vt(uv ? vrows : 1, uv ? n : 1);
    std::vector<Real<T>> s(static_cast<size_t>(k));
    int info = lapack::gesdd<T>(jobz, dim(m), dim(n), a.data(), a.ld(), s.data(), u.data(), u.ld(),
                                vt.data(), vt.ld());
    // XLA's LAPACK reports a non-finite operand as a failure (NaN everywhere);
    // the system's may return partly finite vectors: treat it as failed too.
    if (info == 0 && !all_finite(x, m * n)) info = 1;
    if (info != 0) std::fill(s.begin(), s.end(), kNaN<Real<T>>), u.fill(kNaN<T>), vt.fill(kNaN<T>);
    if (l.output == 1) return u.to_rows(o, m, ucols);
    if (l.output == 2) return vt.to_rows(o, vrows, n);
    std::copy(s.begin(), s.end(), static_cast<Real<T>*>(out));
    return;
  }
  case Op::Hessenberg: { // JAX's _hessenberg_cpu_lowering: gehrd with ilo = 1, ihi = n
    Mat<T> a = Mat<T>::from_rows(x, n, n);
    std::vector<T> tau(static_cast<size_t>(std::max<int64_t>(n - 1, 1)));
    int info = n ? lapack::gehrd<T>(dim(n), a.data(), a.ld(), tau.data()) : 0;
    if (info != 0) a.fill(kNaN<T>), std::fill(tau.begin(), tau.end(), kNaN<T>);
    if (l.output == 0) return a.to_rows(o, n, n);
    std::copy(tau.begin(), tau.begin() + std::max<int64_t>(n - 1, 0), o);
    return;
  }
  case Op::Tridiagonal: { // sytrd (hetrd)
    Mat<T> a = Mat<T>::from_rows(x, n, n);
    size_t off = static_cast<size_t>(std::max<int64_t>(n - 1, 1));
    std::vector<Real<T>> d(static_cast<size_t>(n)), e(off);
    std::vector<T> tau(off);
    int info = lapack::sytrd<T>(l.lower, dim(n), a.data(), a.ld(), d.data(), e.data(), tau.data());
    if (info != 0) {
      a.fill(kNaN<T>), std::fill(tau.begin(), tau.end(), kNaN<T>);
      std::fill(d.begin(), d.end(), kNaN<Real<T>>), std::fill(e.begin(), e.end(), kNaN<Real<T>>);
    }
    if (l.output == 0) return a.to_rows(o, n, n);
    Real<T>* r = static_cast<Real<T>*>(out);
    if (l.output == 1) return (void)std::copy(d.begin(), d.end(), r);
    if (l.output == 2) return (void)std::copy(e.begin(), e.begin() + (n - 1), r);
    std::copy(tau.begin(), tau.begin() + (n - 1), o);
    return;
  }
  case Op::Geqrf: { // the packed factorization and its scalars, as jaxlib's geqrf kernel
    Mat<T> r = Mat<T>::from_rows(x, m, n);
    std::vector<T> tau(static_cast<size_t>(std::max<int64_t>(k, 1)));
    if (k) lapack::geqrf<T>(dim(m), dim(n), r.data(), r.ld(), tau.data());
    if (l.output == 0) return r.to_rows(o, m, n);
    std::copy(tau.begin(), tau.begin() + k, o);
    return;
  }
  case Op::HouseholderProduct: { // orgqr (ungqr) of the k = bm reflectors in a's columns
    Mat<T> q = Mat<T>::from_rows(x, m, n);
    if (n) lapack::orgqr<T>(dim(m), dim(n), dim(bm), q.data(), q.ld(), b);
    return q.to_rows(o, m, n);
  }
  default:
    break;
  }
  internal_error(__FILE__, __LINE__, std::string("not a linalg op: ") + op_name(op));
}

template <class T>
Array run(Op op, std::span<const Array> in, const LinalgAttrs& l, const AVal& oa) {
  const Shape& s = in[0].shape();
  size_t nb = s.size() - 2;
  int64_t m = s[nb], n = s[nb + 1], batch = 1;
  for (size_t i = 0; i < nb; ++i) batch *= s[i];
  int64_t bm = 0, bn = 0;
  const T* b = nullptr;
  // An empty operand may have no buffer at all (compiled code passes none): read none.
  if (in.size() > 1) { // householder_product's second operand is a batch of vectors
    bm = in[1].shape()[nb],
    bn = static_cast<size_t>(in[1].ndim()) > nb + 1 ? in[1].shape()[nb + 1] : 1;
    b = in[1].size() ? in[1].as<T>() : nullptr;
  }
  const T* x = in[0].size() ? in[0].as<T>() : nullptr;
  Array out(oa.dtype, oa.shape, oa.weak);
  if (out.size() == 0) return out;
  int64_t per = batch ? out.size() / batch : 0;
  char* o = static_cast<char*>(out.data());
  for (int64_t i = 0; i < batch; ++i)
    one<T>(op, l, x ? x + i * m * n : nullptr, m, n, b ? b + i * bm * bn : nullptr, bm, bn,
           o + i * per * static_cast<int64_t>(dtype_size(oa.dtype)));
  return out;
}

// ormqr (a, taus, c): each c of the batch multiplied by the Q of a's k reflectors.
template <class T> Array ormqr(std::span<const Array> in, const LinalgAttrs& l, const AVal& oa) {
  const Shape& s = in[0].shape();
  size_t nb = s.size() - 2;
  int64_t m = s[nb], n = s[nb + 1], k = in[1].shape()[nb];
  int64_t cr = in[2].shape()[nb], cc = in[2].shape()[nb + 1], batch = 1;
  for (size_t i = 0; i < nb; ++i) batch *= s[i];
  Array out(oa.dtype, oa.shape, oa.weak);
  if (out.size() == 0) return out;
  T* o = out.as<T>();
  std::copy(in[2].as<T>(), in[2].as<T>() + out.size(), o);
  if (k == 0) return out;
  for (int64_t b = 0; b < batch; ++b) {
    Mat<T> a = Mat<T>::from_rows(in[0].as<T>() + b * m * n, m, n);
    Mat<T> c = Mat<T>::from_rows(o + b * cr * cc, cr, cc);
    lapack::ormqr<T>(l.left_side, l.transpose_a, dim(cr), dim(cc), dim(k), a.data(), a.ld(),
                     in[1].as<T>() + b * k, c.data(), c.ld());
    c.to_rows(o + b * cr * cc, cr, cc);
  }
  return out;
}

} // namespace

Array linalg(Op op, std::span<const Array> in, const OpAttrs& a, const AVal& oa) {
  if (op == Op::Eig || op == Op::Schur) return eig_schur(op, in[0], a, oa);
  DType d = in[0].dtype();
  if (op == Op::Ormqr)
    return d == DType::Float64     ? ormqr<double>(in, a.linalg, oa)
           : d == DType::Complex64 ? ormqr<c64>(in, a.linalg, oa)
                                   : ormqr<float>(in, a.linalg, oa);
  if (d == DType::Float64) return run<double>(op, in, a.linalg, oa);
  if (d == DType::Complex64) return run<c64>(op, in, a.linalg, oa);
  return run<float>(op, in, a.linalg, oa);
}

} // namespace pxl::ref
