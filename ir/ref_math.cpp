// See ref_math.hpp. The constants are the bit patterns in XLA's emitted IR.
#include "ir/ref_math.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "ir/dtype.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PXL_HAVE_SSE 1
#endif

namespace pxl::ref::xla {

namespace {

float f(uint32_t bits) { return std::bit_cast<float>(bits); }
uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

// Eigen-style clamp that lets NaN through: select(x < lo, lo, x).
float clamp_nan(float x, float lo, float hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}

float round_to(Round r, float x) {
  if (r == DType::Float16) return half_to_float(float_to_half(x));
  if (r == DType::BFloat16) return bfloat16_to_float(float_to_bfloat16(x));
  if (is_small_float(r)) return static_cast<float>(small_to_float(r, float_to_small(r, x)));
  return x;
}

// The body of exp_f32 on an already-clamped argument.
float exp_core(float x) {
  float fx = std::floor(std::fma(x, f(0x3FB8AA3B), 0.5f)); // x * log2(e) + 0.5
  fx = clamp_nan(fx, -127.0f, 127.0f);
  float r = std::fma(-fx, f(0x3F318000), x); // x - fx * ln2_hi
  r = std::fma(-fx, f(0xB95E8083), r);       // x - fx * ln2_lo
  float y = std::fma(r, f(0x39506967), f(0x3AB743CE));
  y = std::fma(y, r, f(0x3C088908));
  y = std::fma(y, r, f(0x3D2AA9C1));
  y = std::fma(y, r, f(0x3E2AAAAA));
  y = std::fma(y, r, 0.5f);
  float z = r * r;
  y = std::fma(y, z, r) + 1.0f;
  int32_t n = std::isnan(fx) ? INT32_MIN : static_cast<int32_t>(fx); // cvttps2dq
  float pow2 = f(static_cast<uint32_t>(n + 127) << 23);
  return y * pow2;
}

// The body of log_f32 for x > 0 (finite, normal after the clamp).
float log_core(float x) {
  x = x > f(0x00800000) ? x : f(0x00800000);
  uint32_t b = bits(x);
  float e = static_cast<float>(static_cast<int32_t>(b >> 23) - 127) + 1.0f;
  float m = f((b & 0x807FFFFFu) | 0x3F000000u); // mantissa in [0.5, 1)
  bool small = m < f(0x3F3504F3);               // sqrt(1/2)
  float tmp = small ? m : 0.0f;
  float xm = m - 1.0f;
  e = e - (small ? 1.0f : 0.0f);
  xm = xm + tmp;
  float x2 = xm * xm;
  float x3 = x2 * xm;
  float y = std::fma(xm, f(0x3D9021BB), f(0xBDEBD1B8));
  float y1 = std::fma(xm, f(0xBDFE5D4F), f(0x3E11E9BF));
  float y2 = std::fma(xm, f(0x3E4CCEAC), f(0xBE7FFFFC));
  y = std::fma(y, xm, f(0x3DEF251A));
  y1 = std::fma(y1, xm, f(0xBE2AAE50));
  y2 = std::fma(y2, xm, f(0x3EAAAAAA));
  y = std::fma(y, x3, y1);
  y = std::fma(y, x3, y2);
  y = std::fma(y, x3, e * f(0xB95E8083));
  float r = std::fma(-0.5f, x2, xm);
  r = r + y;
  return std::fma(e, f(0x3F318000), r);
}

float log_special(float x, float core) {
  if (x == 0.0f) return -INFINITY;
  if (x == INFINITY) return INFINITY;
  if (!(x > 0.0f)) return std::bit_cast<float>(0xFFFFFFFFu); // NaN (all bits set)
  return core;
}

} // namespace

float exp_f32(float x) { return exp_core(clamp_nan(x, -87.8f, 88.8f)); }

float log_f32(float x) { return log_special(x, x > 0.0f ? log_core(x) : 0.0f); }

float log1p_f32(float x) {
  if (std::fabs(x) < f(0x3ED413CD)) {
    // x - x^2/2 + x^3 * P(x) / Q(x).
    float x2 = x * x;
    float q = std::fma(x, 0.0f, 1.0f);
    q = std::fma(q, x, f(0x417101AD));
    q = std::fma(q, x, f(0x42A6185B));
    q = std::fma(q, x, f(0x435DC32D));
    q = std::fma(q, x, f(0x439A8CA3));
    q = std::fma(q, x, f(0x43586D8A));
    q = std::fma(q, x, f(0x42707982));
    float p = std::fma(x, 0.0f, 4.527e-05f);
    p = std::fma(p, x, f(0x3EFF40C5));
    p = std::fma(p, x, f(0x40D284FA));
    p = std::fma(p, x, f(0x41EF4B9C));
    p = std::fma(p, x, f(0x4273CC76));
    p = std::fma(p, x, f(0x426473AD));
    p = std::fma(p, x, f(0x41A05101));
    float t = (x * x2) * (p / q);
    return x + std::fma(x2, -0.5f, t);
  }
  float u = x + 1.0f;
  return log_special(u, u > 0.0f ? log_core(u) : 0.0f);
}

float tanh_f32(float x) {
  float ax = std::fabs(x);
  if (ax >= 20.0f) return std::copysign(1.0f, x);
  if (ax < 4.0e-4f) return x;
  float c = clamp_nan(x, f(0xC0FFF644), f(0x40FFF644));
  float c2 = c * c;
  float p = std::fma(c2, f(0xA59F25C0), f(0x2A61337E));
  p = std::fma(c2, p, f(0xAEBD37FF));
  p = std::fma(c2, p, f(0x335C0041));
  p = std::fma(c2, p, f(0x3779434A));
  p = std::fma(c2, p, f(0x3A270DED));
  p = std::fma(c2, p, f(0x3BA059DC));
  p = c * p;
  float q = std::fma(c2, f(0x35A0D3D8), f(0x38F895D6));
  q = std::fma(c2, q, f(0x3B14AA05));
  q = std::fma(c2, q, f(0x3BA059DD));
  return p / q;
}

float expm1_f32(float x, Round rd) {
  auto r = [rd](float v) { return round_to(rd, v); };
  float e = r(exp_core(clamp_nan(x, -87.8f, 88.8f)));
  float h = r(x * 0.5f);
  if (h == 0.0f) return x;
  if (std::fabs(x) > 0.5f) return r(e - 1.0f);
  return r(r(tanh_f32(h)) * r(e + 1.0f));
}

float erf_f32(float x) {
  if (std::fabs(x) >= f(0x407547CB)) return std::copysign(1.0f, x);
  float x2 = x * x;
  float p = std::fma(x2, f(0x39702D51), f(0x3B5F5DA2));
  p = std::fma(x2, p, f(0x3D50B6EB));
  p = std::fma(x2, p, f(0x3E3DA740));
  p = std::fma(x2, p, f(0x3F906EBA));
  p = x * p;
  float q = std::fma(x2, f(0xB3FD3906), f(0x37C588DF));
  q = std::fma(x2, q, f(0x3A856D28));
  q = std::fma(x2, q, f(0x3C6687D4));
  q = std::fma(x2, q, f(0x3DE34C21));
  q = std::fma(x2, q, f(0x3EFEB44A));
  q = std::fma(x2, q, 1.0f);
  return p / q;
}

// chlo's ErfInv for float32 (Giles, "Approximating the erfinv function"): a
// degree-8 polynomial in w - 2.5 (w < 5) or sqrt(w) - 3, w = -log(1 - x^2),
// Horner steps fused into FMAs as XLA's CPU kernel does.
float erf_inv_f32(float x) {
  float l = log1p_f32(x * -x); // -w
  bool small = l > -5.0f;
  float t = small ? -2.5f - l : std::sqrt(-l) + -3.0f;
  const uint32_t* c = small ? kErfInvSmall : kErfInvLarge;
  float p = f(c[0]);
  for (int i = 1; i < 9; ++i) p = std::fma(t, p, f(c[i]));
  return x * (std::fabs(x) == 1.0f ? INFINITY : p);
}

int rsqrt_f32_newton_steps() {
#if defined(__x86_64__) && defined(__GNUC__)
  // XLA refines the rsqrtss/rsqrtps estimate with one Newton step on AMD CPUs
  // (their estimate is more accurate) and two elsewhere; results differ in the
  // last bit otherwise.
  static const int steps = __builtin_cpu_is("amd") ? 1 : 2;
  return steps;
#else
  return 2;
#endif
}

float rsqrt_f32(float x) {
#ifdef PXL_HAVE_SSE
  float y = _mm_cvtss_f32(_mm_rsqrt_ss(_mm_set_ss(x)));
#else
  float y = 1.0f / std::sqrt(x);
#endif
  // Only positive normal numbers get the Newton steps.
  if (std::isnan(x) || !(x > 0.0f) || std::isinf(x) || !std::isnormal(x)) return y;
  for (int step = 0, n = rsqrt_f32_newton_steps(); step < n; ++step) {
    float t = std::fma(x * y, y, -1.0f);
    y = std::fma(y * -0.5f, t, y);
  }
  return y;
}

float logistic_f32(float x, Round rd) {
  auto r = [rd](float v) { return round_to(rd, v); };
  return r(1.0f / r(r(exp_f32(-x)) + 1.0f));
}

// ---- sin, cos: glibc 2.36's sinf/cosf ----
//
// x = r + n * pi/2 with |r| <= pi/4: no reduction below pi/4, one fma with a
// 53-bit pi/2 below 120, else an exact 32x96-bit fixed-point product with
// 4/pi. r is then fed to a sine or cosine polynomial in double, as the
// quadrant says. The fma calls are the multiply-adds GCC fuses in glibc's FMA
// build (the one its ifunc picks on any FMA machine).

namespace {

struct Quadrant {
  double r;  // x - n * pi/2 for |x|, or for x itself below 120
  int32_t n; // the quadrant of r
  int32_t m; // n, plus 1 where r was reduced from -x
};

Quadrant reduce_quadrant(float y) {
  uint32_t b = bits(y);
  uint32_t top = (b >> 20) & 0x7ff;
  double x = y;
  if (top < kTrigSmallTop) return {x, 0, 0};
  if (top < kTrigFastTop) {
    // 2/pi scaled by 2^24 puts the quadrant in bits 24..31: rounds, not truncates.
    int32_t n = (static_cast<int32_t>(x * kTrigHpiInv) + 0x800000) >> 24;
    return {std::fma(-static_cast<double>(n), kTrigHpi, x), n, n};
  }
  const uint32_t* w = &kInvPio4[(b >> 26) & 15];
  uint32_t xi = ((b & 0xffffff) | 0x800000) << ((b >> 23) & 7);
  uint64_t r0 = xi * w[0]; // only its low 32 bits matter
  uint64_t r1 = static_cast<uint64_t>(xi) * w[4];
  uint64_t r2 = static_cast<uint64_t>(xi) * w[8];
  r0 = ((r2 >> 32) | (r0 << 32)) + r1; // x * 4/pi mod 8, in 2.62 fixed point
  uint64_t n = (r0 + (1ull << 61)) >> 62;
  r0 -= n << 62;
  double r = static_cast<double>(static_cast<int64_t>(r0)) * kTrigPio2p63;
  return {r, static_cast<int32_t>(n), static_cast<int32_t>(n + (b >> 31))};
}

// sin(r) (odd == false) or cos(r), negated in the quadrants that need it.
float quadrant_poly(double r, bool odd, int32_t m) {
  double r2 = r * r, v;
  if (odd) {
    double r4 = r2 * r2;
    double c2 = std::fma(r2, kTrigCos[4], kTrigCos[3]);
    double c1 = std::fma(r2, kTrigCos[1], kTrigCos[0]);
    v = std::fma(r4 * r2, c2, std::fma(r4, kTrigCos[2], c1));
  } else {
    double r3 = r * r2;
    double s1 = std::fma(r2, kTrigSin[2], kTrigSin[1]);
    v = std::fma(r3 * r2, s1, std::fma(r3, kTrigSin[0], r));
  }
  float f = static_cast<float>(v);
  bool neg = odd ? (m >> 1) & 1 : (m ^ (m >> 1)) & 1;
  return neg ? -f : f;
}

} // namespace

float sin_f32(float x) {
  uint32_t top = (bits(x) >> 20) & 0x7ff;
  if (top < kTrigTinyTop) return x;
  if (top >= 0x7f8) return (x - x) / (x - x); // inf, NaN
  Quadrant q = reduce_quadrant(x);
  return quadrant_poly(q.r, q.n & 1, q.m);
}

float cos_f32(float x) {
  uint32_t top = (bits(x) >> 20) & 0x7ff;
  if (top < kTrigTinyTop) return 1.0f;
  if (top >= 0x7f8) return (x - x) / (x - x);
  Quadrant q = reduce_quadrant(x);
  return quadrant_poly(q.r, !(q.n & 1), q.m);
}

// ---- pow: glibc 2.36's powf ----
//
// x^y = 2^(y log2 x) in double: log2 x from the table of c and a degree-5
// polynomial in z/c - 1, 2^t from 2^(k/32) and a cubic. Negative x is allowed
// for integer y (odd y flips the sign bit of the exp2 scale).

namespace {

// y (finite, nonzero): 0 not an integer, 1 odd, 2 even.
int pow_checkint(uint32_t iy) {
  int e = static_cast<int>((iy >> 23) & 0xff);
  if (e < 0x7f) return 0;
  if (e > 0x7f + 23) return 2;
  if (iy & ((1u << (0x7f + 23 - e)) - 1)) return 0;
  if (iy & (1u << (0x7f + 23 - e))) return 1;
  return 2;
}

bool zero_inf_nan(uint32_t i) { return 2 * i - 1 >= 2u * 0x7f800000 - 1; }
bool signaling_nan(uint32_t i) { return 2 * (i ^ 0x00400000) > 2u * 0x7fc00000; }

double pow_log2(uint32_t ix) {
  uint32_t tmp = ix - 0x3f330000;
  uint32_t i = (tmp >> 19) & 15;
  uint32_t top = tmp & 0xff800000;
  double z = std::bit_cast<float>(ix - top);
  double k = static_cast<double>(static_cast<int32_t>(top) >> 23);
  double r = std::fma(z, kPowInvc[i], -1.0);
  double y0 = kPowLogc[i] + k;
  double r2 = r * r;
  double y = std::fma(kPowLog2Poly[0], r, kPowLog2Poly[1]);
  double p = std::fma(kPowLog2Poly[2], r, kPowLog2Poly[3]);
  double q = std::fma(kPowLog2Poly[4], r, y0);
  q = std::fma(p, r2, q);
  return std::fma(y, r2 * r2, q);
}

float pow_exp2(double x, uint64_t sign_bias) {
  double kd = x + kExp2fShift;
  uint64_t ki = std::bit_cast<uint64_t>(kd);
  kd -= kExp2fShift;
  double r = x - kd;
  uint64_t t = kExp2fTab[ki % 32] + ((ki + sign_bias) << 47);
  double z = std::fma(kExp2fPoly[0], r, kExp2fPoly[1]);
  double y = std::fma(kExp2fPoly[2], r, 1.0);
  y = std::fma(z, r * r, y);
  return static_cast<float>(y * std::bit_cast<double>(t));
}

} // namespace

float pow_f32(float x, float y) {
  uint64_t sign_bias = 0;
  uint32_t ix = bits(x), iy = bits(y);
  if (ix - 0x00800000 >= 0x7f800000 - 0x00800000 || zero_inf_nan(iy)) {
    if (zero_inf_nan(iy)) {
      if (2 * iy == 0) return signaling_nan(ix) ? x + y : 1.0f;
      if (ix == 0x3f800000) return signaling_nan(iy) ? x + y : 1.0f;
      if (2 * ix > 2u * 0x7f800000 || 2 * iy > 2u * 0x7f800000) return x + y;
      if (2 * ix == 2 * 0x3f800000) return 1.0f;
      if ((2 * ix < 2 * 0x3f800000) == !(iy & 0x80000000)) return 0.0f; // |x|<1, y=inf...
      return y * y;
    }
    if (zero_inf_nan(ix)) {
      float x2 = x * x;
      if ((ix & 0x80000000) && pow_checkint(iy) == 1) x2 = -x2;
      return (iy & 0x80000000) ? 1.0f / x2 : x2;
    }
    if (ix & 0x80000000) { // finite x < 0
      int yint = pow_checkint(iy);
      if (yint == 0) return (x - x) / (x - x);
      if (yint == 1) sign_bias = 1u << 16;
      ix &= 0x7fffffff;
    }
    if (ix < 0x00800000) { // subnormal: normalize
      ix = bits(x * 0x1p23f) & 0x7fffffff;
      ix -= 23u << 23;
    }
  }
  double ylogx = static_cast<double>(y) * pow_log2(ix);
  if (ylogx > kPowOverflow) return sign_bias ? -INFINITY : INFINITY;
  if (ylogx <= -150.0) return sign_bias ? -0.0f : 0.0f;
  return pow_exp2(ylogx, sign_bias);
}

// ---- atan2: glibc 2.36's atan2f (fdlibm) ----

namespace {

// fdlibm's atanf: a reduction by one of four points, then an odd polynomial
// split into two halves in z^2.
float atan_f32(float x) {
  int32_t hx = static_cast<int32_t>(bits(x));
  uint32_t ix = static_cast<uint32_t>(hx) & 0x7fffffff;
  if (ix >= 0x4c000000) { // |x| >= 2^25
    if (ix > 0x7f800000) return x + x;
    return hx > 0 ? kAtanHi[3] + kAtanLo[3] : -kAtanHi[3] - kAtanLo[3];
  }
  int id;
  if (ix < 0x3ee00000) { // |x| < 0.4375
    if (ix < 0x31000000) return x;
    id = -1;
  } else {
    x = std::fabs(x);
    if (ix < 0x3f300000) {
      id = 0, x = (2.0f * x - 1.0f) / (2.0f + x);
    } else if (ix < 0x3f980000) {
      id = 1, x = (x - 1.0f) / (x + 1.0f);
    } else if (ix < 0x401c0000) {
      id = 2, x = (x - 1.5f) / (1.0f + 1.5f * x);
    } else {
      id = 3, x = -1.0f / x;
    }
  }
  const float* a = kAtanPoly;
  float z = x * x, w = z * z;
  float s1 = z * (a[0] + w * (a[2] + w * (a[4] + w * (a[6] + w * (a[8] + w * a[10])))));
  float s2 = w * (a[1] + w * (a[3] + w * (a[5] + w * (a[7] + w * a[9]))));
  if (id < 0) return x - x * (s1 + s2);
  float r = kAtanHi[id] - ((x * (s1 + s2) - kAtanLo[id]) - x);
  return hx < 0 ? -r : r;
}

} // namespace

float atan2_f32(float y, float x) {
  int32_t hx = static_cast<int32_t>(bits(x)), hy = static_cast<int32_t>(bits(y));
  uint32_t ix = static_cast<uint32_t>(hx) & 0x7fffffff, iy = static_cast<uint32_t>(hy) & 0x7fffffff;
  if (ix > 0x7f800000 || iy > 0x7f800000) return x + y;
  if (hx == 0x3f800000) return atan_f32(y);
  int m = ((hy >> 31) & 1) | ((hx >> 30) & 2); // 2 * sign(x) + sign(y)
  if (iy == 0) return m < 2 ? y : m == 2 ? kAtanPi : -kAtanPi;
  if (ix == 0) return hy < 0 ? -kAtanPio2 : kAtanPio2;
  if (ix == 0x7f800000) {
    float quarter = iy == 0x7f800000 ? kAtanPio4 : 0.0f;
    float half = iy == 0x7f800000 ? 3.0f * kAtanPio4 : kAtanPi;
    return m == 0 ? quarter : m == 1 ? -quarter : m == 2 ? half : -half;
  }
  if (iy == 0x7f800000) return hy < 0 ? -kAtanPio2 : kAtanPio2;
  int k = static_cast<int>(iy - ix) >> 23;
  float z;
  if (k > kAtan2Far)
    z = kAtanPio2 + 0.5f * kAtanPiLo;
  else if (hx < 0 && k < -kAtan2Far)
    z = 0.0f;
  else
    z = atan_f32(std::fabs(y / x));
  switch (m) {
  case 0:
    return z;
  case 1:
    return -z;
  case 2:
    return kAtanPi - (z - kAtanPiLo);
  default:
    return (z - kAtanPiLo) - kAtanPi;
  }
}

// ---- float64 ----

namespace {

double d(uint64_t b) { return std::bit_cast<double>(b); }

} // namespace

double tanh_f64(double x) {
  if (std::fabs(x) >= 20.0) return std::copysign(1.0, x);
  double c = x < d(0xC031B6D58F246197) ? d(0xC031B6D58F246197) : x;
  c = c > d(0x4031B6D58F246197) ? d(0x4031B6D58F246197) : c;
  double c2 = c * c;
  static constexpr uint64_t kP[] = {0x3C2C3C836C04B4C8, 0x3CEC3379F905E662, 0x3D929AFF6C8EDD96,
                                    0x3E2525A389DCE7C2, 0x3EA708819BE51CD9, 0x3F18996F4026A7FA,
                                    0x3F787F80B957ED00, 0x3FC36FBA9B450E5A, 0x3FF0000000000000};
  static constexpr uint64_t kQ[] = {0x3C90AABCA9A5FEA0, 0x3D4232981AA2BBA8, 0x3DDEE2F015EA8065,
                                    0x3E681F1947C52304, 0x3EE26C82AB46D140, 0x3F4B2E7C4D488C04,
                                    0x3FA1998830265B50, 0x3FDF0D32A2F7DC79, 0x3FF0000000000000};
  double p = d(0x3B3F9F82E5D782DF);
  for (uint64_t k : kP) p = std::fma(c2, p, d(k));
  double q = d(0x3BBE8630CF903250);
  for (uint64_t k : kQ) q = std::fma(c2, q, d(k));
  return (c * p) / q;
}

double exp_f64(double x) {
  const double lo = d(0xC086232BDD7ABCD2), hi = d(0x40862E42FEFA39EF);
  if (std::isnan(x)) return x;
  if (x < lo) return 0.0;
  if (x > hi) return INFINITY;
  double n = std::floor(std::fma(x, d(0x3FF71547652B82FE), 0.5));
  double g = std::fma(-n, d(0x3FE62E4000000000), x);
  g = std::fma(-n, d(0x3EB7F7D1CF79ABCA), g);
  double gg = g * g;
  double p = std::fma(gg, d(0x3F2089CDD5E44BE8), d(0x3F9F06D10CCA2C7E));
  p = std::fma(p, gg, 1.0) * g;
  double q = std::fma(gg, d(0x3EC92EB6BC365FA0), d(0x3F64AE39B508B6C0));
  q = std::fma(q, gg, d(0x3FCD17099887E074));
  q = std::fma(q, gg, 2.0);
  double r = std::fma(p / (q - p), 2.0, 1.0);
  int64_t ni = std::clamp<int64_t>(static_cast<int64_t>(n), -2099, 2099);
  int64_t b = ni >> 2;
  double s1 = d(static_cast<uint64_t>(b << 52) + 0x3FF0000000000000u);
  double s2 = d(static_cast<uint64_t>((ni - 3 * b) << 52) + 0x3FF0000000000000u);
  return r * s1 * s1 * s1 * s2;
}

double expm1_f64(double x) {
  double e = exp_f64(x);
  double h = x * 0.5;
  if (h == 0.0) return x;
  if (std::fabs(x) > 0.5) return e - 1.0;
  return tanh_f64(h) * (e + 1.0);
}

double log1p_f64(double x) {
  if (!(std::fabs(x) < d(0x3FDA827999FCEF32))) return std::log(x + 1.0);
  static constexpr uint64_t kQ[] = {0x402E20359E903E37, 0x4054C30B52213498, 0x406BB86590FCFB56,
                                    0x407351945DC908A5, 0x406B0DB13E48E066, 0x404E0F304466448E};
  static constexpr uint64_t kP[] = {0x3FDFE818A0FE1A83, 0x401A509F46F4FA53, 0x403DE9738B8CB9C9,
                                    0x404E798EB86C3351, 0x404C8E7597479A10, 0x40340A202D99830A};
  double x2 = x * x;
  double q = std::fma(x, 0.0, 1.0);
  for (uint64_t k : kQ) q = std::fma(q, x, d(k));
  double p = std::fma(x, 0.0, d(0x3F07BC0962B395CA));
  for (uint64_t k : kP) p = std::fma(p, x, d(k));
  double t = (x * x2) * (p / q);
  return x + std::fma(x2, -0.5, t);
}

double erf_inv_f64(double x) {
  double l = log1p_f64(x * -x);
  bool small = l > -5.0;
  double t = small ? -2.5 - l : std::sqrt(-l) + -3.0;
  const uint32_t* c = small ? kErfInvSmall : kErfInvLarge;
  double p = f(c[0]);
  for (int i = 1; i < 9; ++i) p = std::fma(t, p, static_cast<double>(f(c[i])));
  return x * (std::fabs(x) == 1.0 ? INFINITY : p);
}

double logistic_f64(double x) { return 1.0 / (exp_f64(-x) + 1.0); }

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512vl"))) static double rsqrt14(double x) {
  return _mm_cvtsd_f64(_mm_rsqrt14_sd(_mm_setzero_pd(), _mm_set_sd(x)));
}
#endif

double rsqrt_f64(double x) {
#if defined(__x86_64__) && defined(__GNUC__)
  // XLA uses vrsqrt14 plus two Newton steps where AVX-512 is available.
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) {
    double y = rsqrt14(x);
    if (std::isnan(x) || !(x > 0.0) || std::isinf(x) || !std::isnormal(x)) return y;
    for (int i = 0; i < 2; ++i) {
      double t = std::fma(x * y, y, -1.0);
      y = std::fma(y * -0.5, t, y);
    }
    return y;
  }
#endif
  return 1.0 / std::sqrt(x);
}

#ifdef PXL_HAVE_SSE
ScopedFlushDenormal::ScopedFlushDenormal() : saved_(_mm_getcsr()) {
  _mm_setcsr(saved_ | 0x8040u); // FTZ | DAZ
}
ScopedFlushDenormal::~ScopedFlushDenormal() { _mm_setcsr(saved_); }
#else
ScopedFlushDenormal::ScopedFlushDenormal() {}
ScopedFlushDenormal::~ScopedFlushDenormal() {}
#endif

} // namespace pxl::ref::xla
