// See ref_complex.hpp.
#include "ir/ref_complex.hpp"

#include <algorithm>
#include <cmath>

#include "ir/ref_math.hpp"
#include "ir/ref_util.hpp" // nan_max, nan_min: XLA's NaN-propagating max/min

namespace pxl::ref::cplx {

namespace {

// x * y - z and z - x * y in one rounding, as the fused multiply-subtracts
// XLA's code compiles to: a NaN operand comes through unchanged (std::fma of
// a negated operand would flip its sign bit).
float fms(float x, float y, float z) {
  if (std::isnan(x) || std::isnan(y) || std::isnan(z))
    return std::isnan(x) ? x : std::isnan(y) ? y : z;
  return std::fma(x, y, -z);
}
float fnma(float x, float y, float z) {
  if (std::isnan(x) || std::isnan(y) || std::isnan(z))
    return std::isnan(x) ? x : std::isnan(y) ? y : z;
  return std::fma(-x, y, z);
}

} // namespace

C mul(C x, C y, bool scalar_y) {
  float a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  float im = scalar_y ? std::fma(a, d, b * c) : std::fma(b, c, a * d);
  return {fms(a, c, b * d), im};
}

// XLA's complex division: Smith's algorithm (divide by the larger of |c|,
// |d| first), its products fused into fmas as XLA's CPU backend compiles
// them, then C99 Annex G's recoveries where both parts came out NaN.
C div(C x, C y) {
  float a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  float re, im;
  if (std::fabs(c) >= std::fabs(d)) {
    float r = d / c, den = std::fma(d, r, c);
    re = std::fma(b, r, a) / den;
    im = fnma(a, r, b) / den;
  } else {
    float r = c / d, den = std::fma(c, r, d);
    re = std::fma(a, r, b) / den;
    im = fms(b, r, a) / den;
  }
  if (!(std::isnan(re) && std::isnan(im))) return {re, im};
  auto unit = [](float v) { return std::copysign(std::isinf(v) ? 1.0f : 0.0f, v); };
  if (c == 0 && d == 0 && (!std::isnan(a) || !std::isnan(b))) {
    float inf = std::copysign(INFINITY, c); // x / 0: an infinity in x's directions
    return {inf * a, inf * b};
  }
  if ((std::isinf(a) || std::isinf(b)) && std::isfinite(c) && std::isfinite(d)) {
    float ua = unit(a), ub = unit(b); // inf / finite
    return {INFINITY * (ua * c + ub * d), INFINITY * (ub * c - ua * d)};
  }
  if ((std::isinf(c) || std::isinf(d)) && std::isfinite(a) && std::isfinite(b)) {
    float uc = unit(c), ud = unit(d); // finite / inf
    return {0.0f * (a * uc + b * ud), 0.0f * (b * uc - a * ud)};
  }
  return {re, im};
}

float abs(C z) {
  float a = std::fabs(z.real()), b = std::fabs(z.imag());
  if (std::isnan(a) || std::isnan(b)) return NAN; // (XLA's: NaN over inf)
  if (std::isinf(a) || std::isinf(b)) return INFINITY;
  float hi = std::max(a, b), lo = std::min(a, b);
  if (hi == 0) return lo;
  float r = lo / hi;
  return hi * std::sqrt(std::fma(r, r, 1.0f)); // (XLA's 1 + r * r, fused)
}

// JAX's complex square: (a - b)(a + b) + 2ab i, with an exact zero real part
// where |a| = |b| (finite).
C square(C z) {
  float a = z.real(), b = z.imag();
  float re = std::isfinite(a) && std::fabs(a) == std::fabs(b) ? 0.0f : (a - b) * (a + b);
  return {re, (a * b) * 2.0f};
}

C sign(C z) {
  float m = abs(z);
  if (m == 0) return z;
  return {z.real() / m, z.imag() / m};
}

// XLA's complex exponential: e^a (cos b + i sin b), through e^(a/2) twice
// where e^a alone overflows, and a +0 imaginary part wherever b is zero.
C exp(C z) {
  float a = z.real(), b = z.imag();
  float ea = xla::exp_f32(a), c = xla::cos_f32(b), s = xla::sin_f32(b);
  float re = ea * c, im = ea * s;
  if (ea == INFINITY) {
    float eh = xla::exp_f32(a * 0.5f);
    re = (eh * c) * eh;
    im = (eh * s) * eh;
  }
  return {re, b == 0 ? 0.0f : im};
}

namespace {

// The rounding error of sq = v * v: Dekker's split of v at 4097, its
// products fused where XLA's have one use.
float square_error(float v, float sq) {
  float h = v * 4097.0f, hi = h + (v - h), lo = v - hi, cross = hi * lo;
  return std::fma(lo, lo, (std::fma(hi, hi, -sq) + cross) + cross);
}

// The rounding error of s = a + b (Knuth's two-sum).
float two_sum_error(float a, float b, float s) {
  float bb = s - a, aa = s - bb;
  return (a - aa) + (b - bb);
}

} // namespace

// XLA's complex log: the real part is log1p(|z|^2 - 1) / 2 near the unit
// circle, with |z|^2 - 1 summed from Dekker's exact squares of x and y
// (products fused where XLA's have one use), else log(max) + log1p(r^2) / 2.
C log(C z) {
  float x = z.real(), y = z.imag();
  float xs = x * x, ys = y * y;
  bool y_bigger = ys > xs;
  float mx = y_bigger ? ys : xs, mn = y_bigger ? xs : ys;
  float mx_1 = mx + -1.0f, sum = mx_1 + mn;
  float ey = square_error(y, ys), s1 = sum + ey;
  float ex = square_error(x, xs), s2 = s1 + ex;
  float err = (((mx - mx) + (mn - (sum - mx_1))) + (ey - (s1 - sum))) + (ex - (s2 - s1));
  float m1 = s2 + err; // |z|^2 - 1
  float re;
  if (std::fabs(m1) < 0.5f) {
    re = xla::log1p_f32(m1) * 0.5f;
  } else {
    float ax = std::fabs(x), ay = std::fabs(y), hi = nan_max(ax, ay), lo = nan_min(ax, ay);
    float r = lo == hi ? 1.0f : lo / hi;
    re = std::fma(xla::log1p_f32(r * r), 0.5f, xla::log_f32(hi));
  }
  return {re, xla::atan2_f32(y, x)};
}

// XLA's complex log1p: the real part is log(max) + log1p(r^2) / 2 for huge
// parts, log((x + 1)^2 + y^2) / 2 near -1, else log1p(2x + x^2 + y^2) / 2
// with that sum compensated (exact squares, two-sums).
C log1p(C z) {
  float x = z.real(), y = z.imag(), ax = std::fabs(x), ay = std::fabs(y);
  float xp1 = x + 1.0f, re;
  float mx = nan_max(ax, ay);
  if (mx > 1.84467419e17f) {
    float mn = nan_min(ax, ay), q = mn / mx;
    re = std::fma(xla::log1p_f32(mn == mx ? 1.0f : q * q), 0.5f, xla::log_f32(mx));
  } else {
    float ys = y * y;
    if (std::fabs(xp1) + ay < 0.2f) {
      re = xla::log_f32(std::fma(xp1, xp1, ys)) * 0.5f;
    } else {
      float x2 = x + x, s1 = x2 + ys, xs = x * x, s2 = s1 + xs;
      float ey = square_error(y, ys), s3 = s2 + ey;
      float ex = square_error(x, xs), s4 = s3 + ex;
      float err =
          ((two_sum_error(x2, ys, s1) + two_sum_error(s1, xs, s2)) + two_sum_error(s2, ey, s3)) +
          two_sum_error(s3, ex, s4);
      re = xla::log1p_f32(s4 + err) * 0.5f;
    }
  }
  return {re, xla::atan2_f32(y, xp1)};
}
namespace {

// XLA's cos(x) - 1: Cephes' cosm1 polynomial in x^2 (its coefficients
// rounded to float32, Horner's steps fused) up to (pi/4)^2, else cos(x) - 1.
float cosm1(float x) {
  static constexpr float kCoeffs[] = {4.7377507964246204691685E-14f, -1.1470284843425359765671E-11f,
                                      2.0876754287081521758361E-9f,  -2.7557319214999787979814E-7f,
                                      2.4801587301570552304991E-5f,  -1.3888888888888872993737E-3f,
                                      4.1666666666666666609054E-2f};
  float xx = x * x;
  if (xx > 0.61685f) return xla::cos_f32(x) + -1.0f;
  float poly = 0.0f;
  for (float c : kCoeffs) poly = std::fma(poly, xx, c);
  return std::fma(xx * xx, poly, -0.5f * xx);
}

} // namespace

// XLA's complex expm1: (expm1(a) cos b + (cos b - 1)) + i e^a sin b, with
// e^a = expm1(a) + 1 and cos b = (cos b - 1) + 1; an imaginary part of +0
// where b is zero.
C expm1(C z) {
  float a = z.real(), b = z.imag();
  float em1 = xla::expm1_f32(a), cm1 = cosm1(b);
  float re = std::fma(em1, cm1 + 1.0f, cm1);
  return {re, b == 0 ? 0.0f : (em1 + 1.0f) * xla::sin_f32(b)};
}
namespace {

// functional_algorithms' hypot of (mx, mn), mx >= mn >= 0, as XLA's complex
// expansions compute it: mx * sqrt(1 + (mn/mx)^2), mx (1 + q^2 / 2) where the
// square root rounds to 1, mx sqrt(2) for equal parts.
float fa_hypot(float mx, float mn) {
  float q = mn / mx, q2 = q * q, s = std::sqrt(q2 + 1.0f);
  float h = s == 1.0f && q2 > 0.0f ? std::fma(mx * q2, 0.5f, mx) : mx * s;
  return mx == mn ? mx * 1.41421354f : h;
}

} // namespace

// XLA's complex sqrt (functional_algorithms): sqrt((|z| + |x|) / 2) and
// |y| / (2 that), with rescaled forms where that underflows or overflows and
// for |x| = |y|; the parts swap and take signs by the quadrant.
C sqrt(C z) {
  const float rsqrt2 = 0.707106769f, sqrt2 = 1.41421354f;
  float x = z.real(), y = z.imag(), ax = std::fabs(x), ay = std::fabs(y);
  bool eq = ax == ay;
  float r = eq ? 1.0f : (ax < ay ? ax / ay : ay / ax);
  float sax = std::sqrt(ax), say = std::sqrt(ay);
  float h = fa_hypot(nan_max(ax, ay), nan_min(ax, ay));
  float t = std::sqrt(std::fma(h, 0.5f, ax * 0.5f));
  bool t_bad = t == 0.0f || t == INFINITY;
  float ar = std::fabs(r), h1 = fa_hypot(nan_max(ar, 1.0f), nan_min(ar, 1.0f));
  float s1 = std::sqrt(h1 + 1.0f), s2 = std::sqrt(r + h1);
  float u = eq      ? sax * 1.09868407f
            : t_bad ? (ax > ay ? sax * (s1 * rsqrt2) : say * (s2 * rsqrt2))
                    : t;
  float ratio = eq ? 1.0f : (ax < ay ? sax / say : say / sax);
  float v = eq      ? say * 0.455089867f
            : t_bad ? (ax > ay ? (say * ratio) / (s1 * sqrt2) : say / (s2 * sqrt2))
                    : ay / (t * 2.0f);
  float re = x >= 0 ? u : v, im = x < 0 ? u : v;
  return {re, y < 0 ? -im : im};
}
// XLA's complex rsqrt: rsqrt(|z|) (as rsqrt(max) * sqrt(rsqrt(1 + q^2)), the
// order its CPU code computes rsqrt(sqrt(1 + q^2)) in, measured against JAX
// 0.10.2; rsqrt(min) where that is NaN) times cos and sin of -arg(z) / 2;
// inf - nan i at zero, signed zeros for infinite parts.
C rsqrt(C z) {
  float a = z.real(), b = z.imag(), aa = std::fabs(a), ab = std::fabs(b);
  float mx = nan_max(aa, ab), mn = nan_min(aa, ab), q = mn / mx;
  float r = xla::rsqrt_f32(mx) * std::sqrt(xla::rsqrt_f32(std::fma(q, q, 1.0f)));
  if (std::isnan(r)) r = xla::rsqrt_f32(mn);
  float angle = xla::atan2_f32(b, a) * -0.5f;
  float re = r * xla::cos_f32(angle), im = r * xla::sin_f32(angle);
  if (a == 0 && b == 0) return {INFINITY, NAN};
  if ((ab == INFINITY && std::isnan(a)) || aa == INFINITY)
    return {std::copysign(0.0f, a), -std::copysign(0.0f, b)};
  return {re, im};
}
// JAX's complex sin and cos: sinh and cosh of the imaginary part from
// expm1 (no cancellation for small b), a +0 part selected where the real part
// is zero (of either sign).
namespace {
struct SinhCosh {
  float sinh, cosh;
};
SinhCosh sinh_cosh_expm1(float b) {
  float e1 = xla::expm1_f32(b), e2 = xla::expm1_f32(-b);
  return {(e1 - e2) * 0.5f, ((e1 + e2) + 2.0f) * 0.5f};
}
} // namespace

C sin(C z) {
  float a = z.real();
  SinhCosh h = sinh_cosh_expm1(z.imag());
  float im = xla::cos_f32(a) * h.sinh;
  return {a == 0 ? 0.0f : xla::sin_f32(a) * h.cosh, im};
}
C cos(C z) {
  float a = z.real();
  SinhCosh h = sinh_cosh_expm1(z.imag());
  float re = xla::cos_f32(a) * h.cosh;
  return {re, a == 0 ? 0.0f : -xla::sin_f32(a) * h.sinh};
}
// tan(z) = -i tanh(iz), as XLA computes it.
C tan(C z) {
  C t = tanh(C(-z.imag(), z.real()));
  return {t.imag(), -t.real()};
}

// XLA's complex tanh: (2 sinh 2a + 4i sin b cos b) / (2 cosh 2a - 2 + 4 cos^2 b)
// from expm1(2a) and expm1(-2a); sign(a) + 0i once those overflow, a +0
// imaginary part at b = 0.
C tanh(C z) {
  float a = z.real(), b = z.imag();
  float two_a = a + a;
  float e1 = xla::expm1_f32(two_a), e2 = xla::expm1_f32(-1.0f * two_a);
  if (std::isinf(e1) || std::isinf(e2)) { // (XLA's: NaN for a finite a and b inf or NaN)
    if (!std::isinf(a) && !std::isfinite(b)) return {NAN, NAN};
    return {std::copysign(1.0f, a), 0.0f};
  }
  float cb = xla::cos_f32(b), sb = xla::sin_f32(b);
  float denom = (e1 + e2) + (cb * cb) * 4.0f;
  return {(e1 - e2) / denom, b == 0 ? 0.0f : (4.0f * (cb * sb)) / denom};
}

C pow(C x, C y) {
  // XLA's EmitComplexPower: (a+bi)^(c+di) = |x|^c e^(-d arg x) (cos q + i sin q)
  // with q = c arg x + d ln|x|, in float32 with XLA's libm routines
  // (so (-2+0j) ** (2+0j) is 4+7e-7j, as JAX's; integer_pow multiplies instead).
  float a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  // XLA's special cases (measured): x^0 = 1^y = 1; 0^y is 0 for a positive real
  // y, NaN otherwise; inf^y is inf or 0 for a real y of that sign.
  if ((c == 0 && d == 0) || (a == 1 && b == 0)) return {1, 0};
  if (a == 0 && b == 0) return c > 0 && d == 0 ? C(0, 0) : C(NAN, NAN);
  if (a == INFINITY && b == 0 && d == 0 && !std::isnan(c)) return c > 0 ? C(INFINITY, 0) : C(0, 0);
  float r = abs(x), arg = xla::atan2_f32(b, a);
  float coeff = xla::pow_f32(r, c) * xla::exp_f32(-d * arg);
  float q = std::fma(c, arg, d * xla::log_f32(r)); // LLVM fuses it in XLA's kernel
  return {coeff * xla::cos_f32(q), coeff * xla::sin_f32(q)};
}

bool is_finite(C z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }

} // namespace pxl::ref::cplx
