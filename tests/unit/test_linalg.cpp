// The linalg primitives: shape rules with JAX's messages, the LAPACK-backed
// reference kernels (each factorization checked by multiplying it back), and
// their IR text round trip.
#include <catch2/catch.hpp>

#include <cmath>
#include <complex>
#include <vector>

#include <sys/mman.h>

#include "ir/function.hpp"
#include "ir/op.hpp"
#include "lang/diag.hpp"
#include "runtime/array.hpp"
#include "runtime/lapack.hpp"

using namespace pxl;

namespace {

Array mat(const std::vector<double>& v, Shape s, DType d = DType::Float32) {
  Array a(d, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) a.set(static_cast<int64_t>(i), Scalar::of_float(v[i]));
  return a;
}
OpAttrs out(int k) {
  OpAttrs a;
  a.linalg.output = k;
  return a;
}
Array run(Op op, std::vector<Array> in, const OpAttrs& a = {}) { return eval_ref(op, a, in); }
// Row-major (m x k) times (k x n) of the first matrix of each.
std::vector<double> matmul(const Array& a, const Array& b, bool ta = false) {
  int64_t m = a.shape()[ta ? 1 : 0], k = a.shape()[ta ? 0 : 1], n = b.shape()[1];
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < k; ++l)
        c[static_cast<size_t>(i * n + j)] +=
            a.get_f64(ta ? l * m + i : i * k + l) * b.get_f64(l * n + j);
  return c;
}
void close(const std::vector<double>& got, const Array& want) {
  REQUIRE(static_cast<int64_t>(got.size()) == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == Approx(want.get_f64(static_cast<int64_t>(i))).margin(1e-5));
}
std::string err(Op op, std::vector<AVal> in, const OpAttrs& a = {}) {
  try {
    infer(op, a, in);
  } catch (const Error& e) {
    return e.message();
  }
  return "no error";
}

} // namespace

TEST_CASE("linalg shape rules", "[linalg]") {
  AVal sq{DType::Float32, {2, 4, 4}, false}, wide{DType::Float32, {3, 5}, false};
  CHECK(infer(Op::Cholesky, {}, std::vector<AVal>{sq}).shape == Shape{2, 4, 4});
  CHECK(err(Op::Cholesky, {wide}) ==
        "cholesky: The input to cholesky must be a square matrix. Got shape (3, 5).");
  CHECK(err(Op::Cholesky, {AVal{DType::Int32, {2, 2}, false}}) ==
        "cholesky: cholesky does not accept dtype int32 at position 0. Accepted dtypes at "
        "position 0 are subtypes of floating, complexfloating.");
  CHECK(err(Op::Eigh, {AVal{DType::Float32, {4}, false}}) ==
        "eigh: Input 0 to eigh must have rank at least 2, but got shape=(4,)");
  CHECK(infer(Op::Lu, out(1), std::vector<AVal>{wide}).dtype == DType::Int32);
  CHECK(infer(Op::Lu, out(1), std::vector<AVal>{wide}).shape == Shape{3});
  CHECK(infer(Op::Lu, out(2), std::vector<AVal>{wide}).shape == Shape{3});
  OpAttrs q = out(0);
  CHECK(infer(Op::Qr, q, std::vector<AVal>{wide}).shape == Shape{3, 3});
  q.linalg.output = 1;
  CHECK(infer(Op::Qr, q, std::vector<AVal>{wide}).shape == Shape{3, 5});
  OpAttrs s = out(2);
  s.linalg.full_matrices = true;
  CHECK(infer(Op::Svd, s, std::vector<AVal>{wide}).shape == Shape{5, 5});
  s.linalg.full_matrices = false;
  CHECK(infer(Op::Svd, s, std::vector<AVal>{wide}).shape == Shape{3, 5});
  OpAttrs t;
  t.linalg.left_side = true;
  CHECK(err(Op::TriangularSolve, {AVal{DType::Float32, {3, 3}, false}, wide}, t) == "no error");
  t.linalg.left_side = false;
  CHECK(err(Op::TriangularSolve, {AVal{DType::Float32, {3, 3}, false}, wide}, t) ==
        "triangular_solve: Incompatible shapes for arguments to triangular_solve: (3, 3) and "
        "(3, 5).");
}

TEST_CASE("linalg kernels multiply back to their input", "[linalg]") {
  Array a = mat({4, 2, 0.6, 2, 5, 1, 0.6, 1, 3}, {3, 3});
  Array l = run(Op::Cholesky, {a});
  CHECK(l.get_f64(1) == 0.0); // the upper triangle is zero
  Array lt = run(Op::Cholesky, {a});
  std::vector<double> llt(9, 0.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) llt[i * 3 + j] += l.get_f64(i * 3 + k) * lt.get_f64(j * 3 + k);
  close(llt, a);
  Array bad = run(Op::Cholesky, {mat({1, 2, 2, 1}, {2, 2})});
  CHECK(std::isnan(bad.get_f64(0)));

  OpAttrs ts;
  ts.linalg.left_side = true;
  ts.linalg.lower = true;
  Array b = mat({1, 2, 3, 4, 5, 6}, {3, 2});
  Array x = run(Op::TriangularSolve, {l, b}, ts);
  close(matmul(l, x), b);

  Array g = mat({1, 2, 3, 4, 5, 6, 7, 8, 10, 2, 9, 1}, {4, 3}, DType::Float64);
  Array perm = run(Op::Lu, {g}, out(2));
  CHECK(perm.dtype() == DType::Int32);
  CHECK(perm.get_f64(0) == 2); // the largest first-column entry, 7, is row 2

  OpAttrs qa = out(0), ra = out(1);
  Array qm = run(Op::Qr, {g}, qa), rm = run(Op::Qr, {g}, ra);
  CHECK(qm.shape() == Shape{4, 3});
  close(matmul(qm, rm), g);

  Array w = run(Op::Eigh, {a}, out(1));
  CHECK(w.get_f64(0) <= w.get_f64(1));
  double trace = 0;
  for (int i = 0; i < 3; ++i) trace += w.get_f64(i);
  CHECK(trace == Approx(12.0));

  OpAttrs sv;
  sv.linalg.compute_uv = true;
  Array s = run(Op::Svd, {g}, sv);
  Array u = run(Op::Svd, {g}, out(1)), vt = run(Op::Svd, {g}, out(2));
  Array us(DType::Float64, {4, 3});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      us.set(i * 3 + j, Scalar::of_float(u.get_f64(i * 3 + j) * s.get_f64(j)));
  close(matmul(us, vt), g);

  // Batches: each matrix on its own.
  Array two = mat({4, 0, 0, 9, 1, 0, 0, 16}, {2, 2, 2});
  Array lb = run(Op::Cholesky, {two});
  CHECK(lb.get_f64(3) == 3.0);
  CHECK(lb.get_f64(7) == 4.0);
}

TEST_CASE("linalg attributes round-trip through IR text", "[linalg]") {
  const char* text = R"(func @f(%0: f32[3,3], %1: f32[3,2]) -> (f32[3,2], i32[3], f32[3]) {
  %2 = triangular_solve[left_side=true lower=true transpose_a=false unit_diagonal=true] %0, %1 : f32[3,2]
  %3 = lu[output=2] %0 : i32[3]
  %4 = svd[output=0 full_matrices=false compute_uv=true] %0 : f32[3]
  return %2, %3, %4
}
)";
  Function f = parse_function(text);
  CHECK(f.body[0].attrs.linalg.unit_diagonal);
  CHECK(f.body[1].attrs.linalg.output == 2);
  CHECK(f.body[2].attrs.linalg.compute_uv);
  std::string printed = print_function(f);
  CHECK(print_function(parse_function(printed)) == printed);
}

TEST_CASE("eig and schur: geev's complex results, gees's Schur form", "[linalg]") {
  AVal sq{DType::Float32, {2, 3, 3}, false}, wide{DType::Float32, {3, 4}, false};
  OpAttrs vr = out(2);
  vr.linalg.compute_right = true;
  CHECK(infer(Op::Eig, out(0), std::vector<AVal>{sq}).shape == Shape{2, 3});
  CHECK(infer(Op::Eig, vr, std::vector<AVal>{sq}).dtype == DType::Complex64);
  CHECK(err(Op::Eig, {wide}) == "eig: The input to eig must be a square matrix. Got shape (3, 4).");
  CHECK(err(Op::Schur, {wide}) ==
        "schur: The input to schur must be a square matrix. Got shape (3, 4).");

  // [[0, -1], [1, 0]] rotates by 90 degrees: eigenvalues +-i, +i first (geev's pair order).
  Array rot = mat({0, -1, 1, 0}, {2, 2});
  Array w = run(Op::Eig, {rot}, out(0));
  const auto* ws = w.as<std::complex<float>>();
  CHECK(ws[0].imag() == Approx(1.0));
  CHECK(ws[1].imag() == Approx(-1.0));
  Array v = run(Op::Eig, {rot}, vr);
  const auto* vs = v.as<std::complex<float>>();
  // rot v = w v for the first column.
  std::complex<float> r0 = -vs[2], r1 = vs[0];
  CHECK(std::abs(r0 - ws[0] * vs[0]) < 1e-5f);
  CHECK(std::abs(r1 - ws[0] * vs[2]) < 1e-5f);

  // A non-finite matrix gives NaNs.
  Array bad = mat({1, NAN, 0, 1}, {2, 2});
  CHECK(std::isnan(run(Op::Eig, {bad}, out(0)).as<std::complex<float>>()[0].real()));

  // Schur: z t z^T = a, t quasi-triangular.
  Array a = mat({4, 1, 2, 0.5, 3, 1, 1, 0, 2}, {3, 3}, DType::Float64);
  Array t = run(Op::Schur, {a}, out(0)), z = run(Op::Schur, {a}, out(1));
  CHECK(t.dtype() == DType::Float64);
  std::vector<double> zt = matmul(z, t);
  Array zta(DType::Float64, {3, 3});
  for (int i = 0; i < 9; ++i) zta.set(i, Scalar::of_float(zt[static_cast<size_t>(i)]));
  Array zT(DType::Float64, {3, 3});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) zT.set(i * 3 + j, Scalar::of_float(z.get_f64(j * 3 + i)));
  close(matmul(zta, zT), a);
  CHECK(t.get_f64(6) == 0.0);
}

// OpenBLAS 0.3.21's cgemv 'N' reads one stride past a strided vector when m % 4
// == 2, and cgesdd's bidiagonalization calls it on rows of A: with A's last
// element right before an unmapped page it faulted (an ASan SEGV in cla_solve).
TEST_CASE("complex gesdd reads nothing past its operand", "[linalg]") {
  using c64 = std::complex<float>;
  const size_t page = 4096;
  void* mem = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  char* base = static_cast<char*>(mem);
  REQUIRE(mprotect(base + page, page, PROT_NONE) == 0);
  for (int n : {3, 4, 6}) {
    for (char jobz : {'N', 'S'}) {
      c64* a = reinterpret_cast<c64*>(base + page) - n * n; // ends at the guard page
      for (int i = 0; i < n * n; ++i)
        a[i] = c64(std::sin(1.3f * static_cast<float>(i)), std::cos(0.7f * static_cast<float>(i)));
      std::vector<float> s(static_cast<size_t>(n));
      std::vector<c64> u(static_cast<size_t>(n * n)), vt(static_cast<size_t>(n * n));
      int ld = jobz == 'N' ? 1 : n;
      CHECK(lapack::gesdd<c64>(jobz, n, n, a, n, s.data(), u.data(), ld, vt.data(), ld) == 0);
      CHECK(s[0] > 0.0f);
    }
  }
  munmap(mem, 2 * page);
}

TEST_CASE("hessenberg, tridiagonal, geqrf, householder_product and ormqr", "[linalg]") {
  AVal sq{DType::Float32, {4, 4}, false}, tall{DType::Float32, {5, 3}, false};
  AVal taus3{DType::Float32, {3}, false};
  CHECK(infer(Op::Hessenberg, out(1), std::vector<AVal>{sq}).shape == Shape{3});
  CHECK(infer(Op::Tridiagonal, out(2), std::vector<AVal>{sq}).shape == Shape{3});
  CHECK(infer(Op::Geqrf, out(1), std::vector<AVal>{tall}).shape == Shape{3});
  CHECK(err(Op::Hessenberg, {tall}) == "hessenberg: Argument to Hessenberg reduction must have "
                                       "shape [..., n, n], got shape (5, 3)");
  CHECK(err(Op::HouseholderProduct, {AVal{DType::Float32, {3, 5}, false}, taus3}) ==
        "householder_product: The first argument to householder_product must have at least as "
        "many rows as columns, got shape (3, 5)");
  OpAttrs left;
  left.linalg.left_side = true;
  CHECK(infer(Op::Ormqr, left, std::vector<AVal>{tall, taus3, AVal{DType::Float32, {5, 2}, false}})
            .shape == Shape{5, 2});
  CHECK(err(Op::Ormqr, {tall, taus3, AVal{DType::Float32, {4, 2}, false}}, left) ==
        "ormqr: ormqr with left=True expects c to have the same number of rows as the "
        "Householder matrix a. Got a shape (5, 3) and c shape (4, 2).");

  // Q from the reflectors (orgqr) times R is the input; ormqr applies the same Q.
  Array g = mat({1, 2, 3, 4, 5, 6, 7, 8, 10, 2, 9, 1, 3, 3, 7}, {5, 3}, DType::Float64);
  Array h = run(Op::Geqrf, {g}, out(0)), tau = run(Op::Geqrf, {g}, out(1));
  Array q = run(Op::HouseholderProduct, {h, tau});
  Array r(DType::Float64, {3, 3});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      r.set(i * 3 + j, Scalar::of_float(j >= i ? h.get_f64(i * 3 + j) : 0.0));
  close(matmul(q, r), g);
  Array r_full(DType::Float64, {5, 3}); // R padded with zero rows: Q_full R_full = g
  for (int64_t i = 0; i < 9; ++i) r_full.set(i, Scalar::of_float(r.get_f64(i)));
  Array qr_full = run(Op::Ormqr, {h, tau, r_full}, left);
  std::vector<double> qr_vals;
  for (int64_t i = 0; i < qr_full.size(); ++i) qr_vals.push_back(qr_full.get_f64(i));
  close(qr_vals, g);

  // Hessenberg: zero below the subdiagonal, the trace kept.
  Array a = mat({4, 1, 2, 3, 1, 5, 1, 2, 2, 1, 6, 1, 3, 2, 1, 7}, {4, 4}, DType::Float64);
  Array hs = run(Op::Hessenberg, {a}, out(0));
  double trace = 0;
  for (int i = 0; i < 4; ++i) trace += hs.get_f64(i * 5);
  CHECK(trace == Approx(22.0));
  Array d = run(Op::Tridiagonal, {a}, out(1)); // the tridiagonal form's diagonal
  CHECK(d.get_f64(0) + d.get_f64(1) + d.get_f64(2) + d.get_f64(3) == Approx(22.0));
}
