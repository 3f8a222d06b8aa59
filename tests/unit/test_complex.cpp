// complex64: JAX's promotion with complex, the reference FFT against a direct
// DFT, complex arithmetic of the reference kernels, and numpy/Python printing.
#include <catch2/catch.hpp>

#include <cmath>
#include <complex>
#include <numbers>

#include "ir/dtype.hpp"
#include "ir/op.hpp"
#include "runtime/format.hpp"

using namespace pxl;

namespace {

std::string promo(DType a, bool aw, DType b, bool bw) {
  PromotedType p = promote_types(a, aw, b, bw);
  PromotedType q = promote_types(b, bw, a, aw);
  REQUIRE(p.dtype == q.dtype);
  REQUIRE(p.weak == q.weak);
  return std::string(dtype_name(p.dtype)) + (p.weak ? "*" : "");
}

Array complex_array(const std::vector<std::complex<float>>& v, Shape shape) {
  Array a(DType::Complex64, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) a.as<std::complex<float>>()[i] = v[i];
  return a;
}

} // namespace

TEST_CASE("complex promotion matches JAX", "[complex]") {
  using D = DType;
  CHECK(promo(D::Complex64, false, D::Float32, false) == "complex64");
  CHECK(promo(D::Complex64, false, D::Float64, false) == "complex64"); // complex128, x64 off
  CHECK(promo(D::BFloat16, false, D::Complex64, false) == "complex64");
  CHECK(promo(D::Int32, false, D::Complex64, true) == "complex64*"); // int array * 1j
  CHECK(promo(D::Int8, false, D::Complex64, true) == "complex64*");
  CHECK(promo(D::Float16, false, D::Complex64, true) == "complex64"); // strong float * 1j
  CHECK(promo(D::Float32, true, D::Complex64, true) == "complex64*"); // 2.0 * 1j
  CHECK(promo(D::Bool, false, D::Complex64, true) == "complex64*");
  CHECK(promo(D::Complex64, false, D::Int32, true) == "complex64");
  CHECK(promo(D::Complex64, true, D::Complex64, true) == "complex64*");
}

TEST_CASE("the reference FFT agrees with a direct DFT", "[complex]") {
  for (int64_t n : {1, 2, 3, 5, 7, 8, 12, 17, 64}) {
    INFO("n = " << n);
    std::vector<std::complex<float>> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      x[static_cast<size_t>(i)] = {std::sin(0.7f * float(i)) + 0.25f, std::cos(1.3f * float(i))};
    OpAttrs a;
    a.axis = 0; // FFT
    a.shape = {n};
    Array in = complex_array(x, {n});
    Array out = eval_ref(Op::Fft, a, std::span<const Array>(&in, 1));
    a.axis = 1; // IFFT
    Array back = eval_ref(Op::Fft, a, std::span<const Array>(&out, 1));
    for (int64_t k = 0; k < n; ++k) {
      std::complex<double> want = 0;
      for (int64_t j = 0; j < n; ++j) {
        double t = -2 * std::numbers::pi * double(j * k) / double(n);
        want += std::complex<double>(x[size_t(j)]) * std::complex<double>(std::cos(t), std::sin(t));
      }
      std::complex<float> got = out.as<std::complex<float>>()[k];
      CHECK(std::abs(std::complex<double>(got) - want) < 1e-5 * (1 + std::abs(want)));
      CHECK(std::abs(back.as<std::complex<float>>()[k] - x[size_t(k)]) < 1e-5f);
    }
  }
}

TEST_CASE("RFFT and IRFFT are the half spectrum and its inverse", "[complex]") {
  for (int64_t n : {4, 5, 6, 9}) {
    INFO("n = " << n);
    Array x(DType::Float32, {2, n});
    for (int64_t i = 0; i < 2 * n; ++i) x.as<float>()[i] = float((i * 7) % 5) - 1.5f;
    OpAttrs a;
    a.axis = 2; // RFFT
    a.shape = {n};
    Array half = eval_ref(Op::Fft, a, std::span<const Array>(&x, 1));
    REQUIRE(half.shape() == Shape{2, n / 2 + 1});
    a.axis = 3; // IRFFT
    Array back = eval_ref(Op::Fft, a, std::span<const Array>(&half, 1));
    REQUIRE(back.shape() == Shape{2, n});
    for (int64_t i = 0; i < 2 * n; ++i)
      CHECK(std::fabs(back.as<float>()[i] - x.as<float>()[i]) < 1e-5f);
  }
}

TEST_CASE("complex arithmetic and absolute value in the reference kernels", "[complex]") {
  Array x = complex_array({{3, 4}, {1, 1}, {0, 0}}, {3});
  Array y = complex_array({{1, -2}, {0, 1}, {2, 0}}, {3});
  Array ins[] = {x, y};
  Array prod = eval_ref(Op::Mul, {}, ins);
  Array quot = eval_ref(Op::Div, {}, ins);
  Array mag = eval_ref(Op::Abs, {}, std::span<const Array>(&x, 1));
  CHECK(prod.as<std::complex<float>>()[0] == std::complex<float>(11, -2));
  CHECK(quot.as<std::complex<float>>()[1] == std::complex<float>(1, -1));
  CHECK(quot.as<std::complex<float>>()[2] == std::complex<float>(0, 0));
  REQUIRE(mag.dtype() == DType::Float32);
  CHECK(mag.as<float>()[0] == 5.0f);
  CHECK(mag.as<float>()[2] == 0.0f);
}

TEST_CASE("complex values print as numpy and Python print them", "[complex][format]") {
  CHECK(python_complex_repr(1, 2) == "(1+2j)");
  CHECK(python_complex_repr(0, 1.5) == "1.5j");
  CHECK(python_complex_repr(-0.0, -1) == "(-0-1j)");
  CHECK(python_complex_repr(1e20, 1) == "(1e+20+1j)");
  CHECK(python_complex_repr(NAN, INFINITY) == "(nan+infj)");
  CHECK(complex64_scalar_str(1e7f, 1) == "(1e+07+1j)");
  CHECK(complex64_scalar_str(0.1f, 0.2f) == "(0.1+0.2j)");
  CHECK(array_repr(complex_array({{1, 2}, {0, 3}}, {2})) ==
        "Array([1.+2.j, 0.+3.j], dtype=complex64)");
  CHECK(array_str(complex_array({{1, 2}, {0, 3}}, {2})) == "[1.+2.j 0.+3.j]");
  CHECK(array_repr(complex_array({{NAN, 1}, {1, INFINITY}, {2, -2}}, {3})) ==
        "Array([nan +1.j,  1.+infj,  2. -2.j], dtype=complex64)");
}
