// See ref_complex.hpp.
#include "ir/ref_complex.hpp"

#include <algorithm>
#include <cmath>

#include "ir/ref_math.hpp"

namespace pxl::ref::cplx {

namespace {

using D = std::complex<double>;

D wide(C z) { return {z.real(), z.imag()}; }
C narrow(D z) { return {static_cast<float>(z.real()), static_cast<float>(z.imag())}; }

} // namespace

C mul(C x, C y, bool scalar_y) {
  float a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  float im = scalar_y ? std::fma(a, d, b * c) : std::fma(b, c, a * d);
  return {std::fma(a, c, -(b * d)), im};
}

C div(C x, C y) {
  // Smith's algorithm: divide by the larger of |c|, |d| first so that the
  // intermediate products neither overflow nor lose the smaller part.
  float a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  if (std::fabs(c) >= std::fabs(d)) {
    if (c == 0 && d == 0) return {a / std::fabs(c), b / std::fabs(c)}; // inf or NaN, like 1/0
    float r = d / c, den = c + d * r;
    return {(a + b * r) / den, (b - a * r) / den};
  }
  float r = c / d, den = c * r + d;
  return {(a * r + b) / den, (b * r - a) / den};
}

float abs(C z) {
  float a = std::fabs(z.real()), b = std::fabs(z.imag());
  if (std::isinf(a) || std::isinf(b)) return INFINITY;
  float hi = std::max(a, b), lo = std::min(a, b);
  if (hi == 0 || std::isnan(hi) || std::isnan(lo)) return hi == 0 ? lo : NAN;
  float r = lo / hi;
  return hi * std::sqrt(1.0f + r * r);
}

C sign(C z) {
  float m = abs(z);
  if (m == 0) return {0, 0};
  return {z.real() / m, z.imag() / m};
}

C exp(C z) {
  float e = xla::exp_f32(z.real());
  float y = z.imag();
  if (y == 0) return {e, y}; // keeps exp(x) exact for real inputs
  return {e * xla::cos_f32(y), e * xla::sin_f32(y)};
}

C log(C z) {
  return {std::log(static_cast<float>(std::hypot(double(z.real()), double(z.imag())))),
          xla::atan2_f32(z.imag(), z.real())};
}
C log1p(C z) { return narrow(std::log(wide(z) + 1.0)); }
C expm1(C z) { return narrow(std::exp(wide(z)) - 1.0); }
C sqrt(C z) { return narrow(std::sqrt(wide(z))); }
C rsqrt(C z) { return narrow(1.0 / std::sqrt(wide(z))); }
// JAX lowers complex sin and cos to formulas that select a +0 part when the real part is
// zero (of either sign), and tan(z) = sin(z) / cos(z) inherits the +0 real part.
C sin(C z) {
  C r = narrow(std::sin(wide(z)));
  return z.real() == 0 ? C(0, r.imag()) : r;
}
C cos(C z) {
  C r = narrow(std::cos(wide(z)));
  return z.real() == 0 ? C(r.real(), 0) : r;
}
C tan(C z) {
  C r = narrow(std::tan(wide(z)));
  return z.real() == 0 ? C(0, r.imag()) : r;
}
C tanh(C z) { return narrow(std::tanh(wide(z))); }

C pow(C x, C y) {
  // An integral exponent multiplies by repeated squaring, as jnp.power's
  // lax.integer_pow does for Python int exponents (so (1+1j)**2 is exactly 2j).
  if (y.imag() == 0 && y.real() == std::floor(y.real()) && std::fabs(y.real()) <= 64) {
    auto n = static_cast<int>(std::fabs(y.real()));
    C acc(1, 0), base = x;
    bool first = true;
    for (; n > 0; n >>= 1) {
      if (n & 1) {
        acc = first ? base : mul(base, acc);
        first = false;
      }
      if (n > 1) base = mul(base, base);
    }
    return y.real() < 0 ? div(C(1, 0), acc) : acc;
  }
  if (x == C(0, 0)) {
    if (y == C(0, 0)) return {1, 0};
    if (y.imag() == 0 && y.real() > 0) return {0, 0};
    return {NAN, NAN};
  }
  return narrow(std::pow(wide(x), wide(y)));
}

bool is_finite(C z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }

} // namespace pxl::ref::cplx
