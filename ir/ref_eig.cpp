// Reference kernels of eig and schur (LAPACK geev / gees, runtime/lapack_eig.cpp):
// like the other linalg kernels, each matrix of the batch goes to LAPACK in
// column-major order and comes back row-major; a failed (or non-finite)
// matrix gives NaNs, as JAX's _replace_not_ok_with_nan does.
#include <limits>

#include "ir/ref_util.hpp"
#include "runtime/lapack.hpp"

namespace pxl::ref {

namespace {

using lapack::c64;

// A row-major n x n matrix as column-major, and back (the transpose both ways).
template <class T> std::vector<T> col_major(const T* x, int64_t n) {
  std::vector<T> c(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) c[static_cast<size_t>(i + j * n)] = x[i * n + j];
  return c;
}
template <class T> void to_rows(const std::vector<T>& c, int64_t n, T* out) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) out[i * n + j] = c[static_cast<size_t>(i + j * n)];
}

template <class T> T nan_of() {
  if constexpr (std::is_same_v<T, c64>)
    return c64(std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN());
  else
    return std::numeric_limits<T>::quiet_NaN();
}

// Output `l.output` of one n x n matrix x into out.
template <class T> void eig_one(const LinalgAttrs& l, const T* x, int64_t n, c64* out) {
  auto un = static_cast<size_t>(n);
  std::vector<T> a = col_major(x, n);
  std::vector<c64> w(un), vl(l.compute_left ? un * un : 1), vr(l.compute_right ? un * un : 1);
  int info = lapack::geev<T>(l.compute_left, l.compute_right, static_cast<int>(n), a.data(),
                             w.data(), vl.data(), vr.data());
  if (l.output == 0) {
    for (size_t i = 0; i < un; ++i) out[i] = info == 0 ? w[i] : nan_of<c64>();
    return;
  }
  std::vector<c64>& v = l.output == 1 ? vl : vr;
  if (info != 0) std::fill(v.begin(), v.end(), nan_of<c64>());
  to_rows(v, n, out);
}

template <class T> void schur_one(const LinalgAttrs& l, const T* x, int64_t n, T* out) {
  std::vector<T> a = col_major(x, n), vs(static_cast<size_t>(n * n));
  int info = lapack::gees<T>(static_cast<int>(n), a.data(), vs.data());
  std::vector<T>& r = l.output == 0 ? a : vs;
  if (info != 0) std::fill(r.begin(), r.end(), nan_of<T>());
  to_rows(r, n, out);
}

template <class T, class O> Array run(Op op, const Array& x, const LinalgAttrs& l, const AVal& oa) {
  const Shape& s = x.shape();
  int64_t n = s.back(), batch = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) batch *= s[i];
  Array out(oa.dtype, oa.shape, oa.weak);
  if (out.size() == 0) return out;
  int64_t per = out.size() / batch;
  const T* xs = x.as<T>();
  O* o = out.as<O>();
  for (int64_t b = 0; b < batch; ++b) {
    if constexpr (std::is_same_v<O, c64>)
      if (op == Op::Eig) {
        eig_one<T>(l, xs + b * n * n, n, o + b * per);
        continue;
      }
    if constexpr (std::is_same_v<T, O>) schur_one<T>(l, xs + b * n * n, n, o + b * per);
  }
  return out;
}

} // namespace

Array eig_schur(Op op, const Array& x, const OpAttrs& a, const AVal& oa) {
  const LinalgAttrs& l = a.linalg;
  bool cx = x.dtype() == DType::Complex64;
  if (op == Op::Eig) return cx ? run<c64, c64>(op, x, l, oa) : run<float, c64>(op, x, l, oa);
  if (cx) return run<c64, c64>(op, x, l, oa);
  if (x.dtype() == DType::Float64) return run<double, double>(op, x, l, oa);
  return run<float, float>(op, x, l, oa);
}

} // namespace pxl::ref
