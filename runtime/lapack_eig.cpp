// LAPACK's non-symmetric eigensolvers over OpenBLAS, called the way jaxlib's
// CPU kernels call them (jaxlib/cpu/lapack_kernels.cc): a workspace query
// first, geev's real eigenvector pairs unpacked into complex columns, and a
// non-finite operand reported as failed without calling LAPACK (which may not
// terminate on one), so the caller fills NaNs.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "runtime/lapack.hpp"

extern "C" {
void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr,
            float* wi, float* vl, const int* ldvl, float* vr, const int* ldvr, float* work,
            const int* lwork, int* info, size_t, size_t);
void cgeev_(const char* jobvl, const char* jobvr, const int* n, pxl::lapack::c64* a, const int* lda,
            pxl::lapack::c64* w, pxl::lapack::c64* vl, const int* ldvl, pxl::lapack::c64* vr,
            const int* ldvr, pxl::lapack::c64* work, const int* lwork, float* rwork, int* info,
            size_t, size_t);
void sgees_(const char* jobvs, const char* sort, void* select, const int* n, float* a,
            const int* lda, int* sdim, float* wr, float* wi, float* vs, const int* ldvs,
            float* work, const int* lwork, int* bwork, int* info, size_t, size_t);
void dgees_(const char* jobvs, const char* sort, void* select, const int* n, double* a,
            const int* lda, int* sdim, double* wr, double* wi, double* vs, const int* ldvs,
            double* work, const int* lwork, int* bwork, int* info, size_t, size_t);
void cgees_(const char* jobvs, const char* sort, void* select, const int* n, pxl::lapack::c64* a,
            const int* lda, int* sdim, pxl::lapack::c64* w, pxl::lapack::c64* vs, const int* ldvs,
            pxl::lapack::c64* work, const int* lwork, float* rwork, int* bwork, int* info, size_t,
            size_t);
}

namespace pxl::lapack {

namespace {

template <class T> int work_size(T w) { return std::max(1, static_cast<int>(std::real(w))); }

template <class T> bool all_finite(const T* a, int n) {
  for (size_t i = 0, e = static_cast<size_t>(n) * static_cast<size_t>(n); i < e; ++i)
    if (!std::isfinite(std::real(a[i])) || !std::isfinite(std::imag(a[i]))) return false;
  return true;
}

// geev's real eigenvectors: column j of a complex pair (wi[j] > 0) holds the
// real part and column j + 1 the imaginary part of v_j; v_{j+1} = conj(v_j).
void unpack(int n, const float* wi, const float* v, c64* out) {
  size_t un = static_cast<size_t>(n);
  for (size_t j = 0; j < un; ++j) {
    const float* re = v + j * un;
    if (wi[j] == 0.0f) {
      for (size_t i = 0; i < un; ++i) out[i + j * un] = c64(re[i], 0.0f);
      continue;
    }
    const float* im = re + un;
    for (size_t i = 0; i < un && j + 1 < un; ++i) {
      out[i + j * un] = c64(re[i], im[i]);
      out[i + (j + 1) * un] = c64(re[i], -im[i]);
    }
    ++j;
  }
}

} // namespace

template <> int geev<float>(bool left, bool right, int n, float* a, c64* w, c64* vl, c64* vr) {
  if (!all_finite(a, n)) return -4;
  size_t nn = static_cast<size_t>(n) * static_cast<size_t>(n);
  std::vector<float> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n)), l(nn), r(nn);
  const char* jl = left ? "V" : "N";
  const char* jr = right ? "V" : "N";
  int info = 0, lwork = -1;
  float q = 0;
  sgeev_(jl, jr, &n, a, &n, wr.data(), wi.data(), l.data(), &n, r.data(), &n, &q, &lwork, &info, 1,
         1);
  lwork = work_size(q);
  std::vector<float> work(static_cast<size_t>(lwork));
  sgeev_(jl, jr, &n, a, &n, wr.data(), wi.data(), l.data(), &n, r.data(), &n, work.data(), &lwork,
         &info, 1, 1);
  if (info != 0) return info;
  for (size_t i = 0; i < wr.size(); ++i) w[i] = c64(wr[i], wi[i]);
  if (left) unpack(n, wi.data(), l.data(), vl);
  if (right) unpack(n, wi.data(), r.data(), vr);
  return 0;
}

template <> int geev<c64>(bool left, bool right, int n, c64* a, c64* w, c64* vl, c64* vr) {
  if (!all_finite(a, n)) return -4;
  size_t nn = static_cast<size_t>(n) * static_cast<size_t>(n);
  std::vector<c64> l(left ? 1 : nn), r(right ? 1 : nn); // scratch for what is not asked for
  std::vector<float> rwork(2 * static_cast<size_t>(n));
  c64* lp = left ? vl : l.data();
  c64* rp = right ? vr : r.data();
  const char* jl = left ? "V" : "N";
  const char* jr = right ? "V" : "N";
  int info = 0, lwork = -1;
  c64 q = 0;
  cgeev_(jl, jr, &n, a, &n, w, lp, &n, rp, &n, &q, &lwork, rwork.data(), &info, 1, 1);
  lwork = work_size(q);
  std::vector<c64> work(static_cast<size_t>(lwork));
  cgeev_(jl, jr, &n, a, &n, w, lp, &n, rp, &n, work.data(), &lwork, rwork.data(), &info, 1, 1);
  return info;
}

#define PXL_GEES_REAL(T, F)                                                                        \
  template <> int gees<T>(int n, T* a, T* vs) {                                                    \
    if (!all_finite(a, n)) return -4;                                                              \
    std::vector<T> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));                         \
    int info = 0, lwork = -1, sdim = 0;                                                            \
    T q = 0;                                                                                       \
    F("V", "N", nullptr, &n, a, &n, &sdim, wr.data(), wi.data(), vs, &n, &q, &lwork, nullptr,      \
      &info, 1, 1);                                                                                \
    lwork = work_size(q);                                                                          \
    std::vector<T> work(static_cast<size_t>(lwork));                                               \
    F("V", "N", nullptr, &n, a, &n, &sdim, wr.data(), wi.data(), vs, &n, work.data(), &lwork,      \
      nullptr, &info, 1, 1);                                                                       \
    return info;                                                                                   \
  }
PXL_GEES_REAL(float, sgees_)
PXL_GEES_REAL(double, dgees_)
#undef PXL_GEES_REAL

template <> int gees<c64>(int n, c64* a, c64* vs) {
  if (!all_finite(a, n)) return -4;
  std::vector<c64> w(static_cast<size_t>(n));
  std::vector<float> rwork(static_cast<size_t>(n));
  int info = 0, lwork = -1, sdim = 0;
  c64 q = 0;
  cgees_("V", "N", nullptr, &n, a, &n, &sdim, w.data(), vs, &n, &q, &lwork, rwork.data(), nullptr,
         &info, 1, 1);
  lwork = work_size(q);
  std::vector<c64> work(static_cast<size_t>(lwork));
  cgees_("V", "N", nullptr, &n, a, &n, &sdim, w.data(), vs, &n, work.data(), &lwork, rwork.data(),
         nullptr, &info, 1, 1);
  return info;
}

} // namespace pxl::lapack
