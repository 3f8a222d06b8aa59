// jax.random over raw threefry keys (uint32[2]), bit-exact with JAX 0.10 on CPU
// with its defaults: jax_threefry_partitionable=True and x64 disabled. Each
// sampler is a host transcription of the corresponding function in
// jax/_src/random/core.py; the comments name the JAX steps they reproduce.
// Values are computed eagerly on the host from the concrete key and returned
// as constants, so inside a traced function the key must be concrete.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "lang/diag.hpp"
#include "runtime/threefry.hpp"
#include "stdlib/np.hpp"

namespace pxl::np {

namespace {

ThreefryKey key_of(OpContext& cx, const Tensor& key, const char* fn) {
  const Array& k = cx.concrete(key);
  if (k.dtype() == DType::UInt32 && k.shape() == Shape{2})
    return {k.as<uint32_t>()[0], k.as<uint32_t>()[1]};
  if (k.dtype() == DType::UInt32 && k.ndim() > 1 && k.shape().back() == 2) {
    Shape batch(k.shape().begin(), k.shape().end() - 1);
    throw Error(ErrCode::Value, std::string(fn) +
                                    " accepts a single key, but was given a key array of shape " +
                                    shape_str(batch) + " != (). Use jax.vmap for batching.");
  }
  throw Error(ErrCode::Type, std::string(fn) +
                                 ": expected a PRNG key (uint32 array of shape (2,)), got " +
                                 dtype_name(k.dtype()) + shape_str(k.shape()));
}

Array key_array(ThreefryKey k) {
  Array a(DType::UInt32, {2});
  a.as<uint32_t>()[0] = k[0];
  a.as<uint32_t>()[1] = k[1];
  return a;
}

void check_shape(const Shape& shape, const char* fn) {
  for (int64_t d : shape)
    if (d < 0)
      throw Error(ErrCode::Value,
                  std::string(fn) + ": shape " + shape_str(shape) + " has a negative dimension");
}

// With x64 disabled JAX canonicalises float64 to float32 (and warns); pxl does
// the same, silently.
DType float_dtype(DType dt, const char* fn) {
  if (!is_floating(dt))
    throw Error(ErrCode::DType, std::string("dtype argument to `") + fn +
                                    "` must be a float dtype, got " + dtype_name(dt));
  return dt == DType::Float64 ? DType::Float32 : dt;
}

// Rounds a float to a 16-bit float type and back (identity for float32).
float round_to(float v, DType dt) {
  if (dt == DType::Float16) return half_to_float(float_to_half(v));
  if (dt == DType::BFloat16) return bfloat16_to_float(float_to_bfloat16(v));
  return v;
}

void store(Array& a, int64_t i, float v) {
  if (a.dtype() == DType::Float16)
    a.as<uint16_t>()[i] = float_to_half(v);
  else if (a.dtype() == DType::BFloat16)
    a.as<uint16_t>()[i] = float_to_bfloat16(v);
  else
    a.as<float>()[i] = v;
}

float lax_max(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }

// jax.random._uniform: random mantissa bits under the exponent of 1.0 give a
// float in [1, 2); subtract 1, scale and shift, clamp below at minval. 16-bit
// types draw 16 bits (float16) or 8 bits (bfloat16, fewer than 8 mantissa bits)
// from the low bits of the 32-bit hash; each step rounds to the dtype.
Array uniform_array(ThreefryKey key, const Shape& shape, DType dt, float minval, float maxval) {
  int nbits = dt == DType::Float32 ? 32 : 16;
  int nmant = dt == DType::Float32 ? 23 : dt == DType::Float16 ? 10 : 7;
  int rng_bits = nmant < 8 ? 8 : nbits;
  uint32_t one_bits = dt == DType::Float32 ? 0x3f800000u : dt == DType::Float16 ? 0x3c00u : 0x3f80u;
  float lo = round_to(minval, dt), hi = round_to(maxval, dt);
  float span = round_to(hi - lo, dt);
  Array out(dt, shape);
  for (int64_t i = 0; i < out.size(); ++i) {
    uint32_t bits = threefry_bits32(key, static_cast<uint64_t>(i));
    if (rng_bits < 32) bits &= (1u << rng_bits) - 1;
    uint32_t fbits = (bits >> (rng_bits - nmant)) | one_bits;
    float f = dt == DType::Float32   ? std::bit_cast<float>(fbits)
              : dt == DType::Float16 ? half_to_float(static_cast<uint16_t>(fbits))
                                     : bfloat16_to_float(static_cast<uint16_t>(fbits));
    f -= 1.0f; // exact in every format
    float v =
        dt == DType::Float32 ? std::fma(f, span, lo) : round_to(round_to(f * span, dt) + lo, dt);
    store(out, i, lax_max(lo, v));
  }
  return out;
}

inline float f32(uint32_t bits) { return std::bit_cast<float>(bits); }

// XLA CPU's log1p for float32 (the xla.log1p.f32 intrinsic): a Cephes rational
// function for |x| < sqrt(2)-1, else a Cephes-style log(1+x). Transcribed from the
// machine code of a JAX 0.10 CPU kernel, including which multiply-adds LLVM fused
// into FMA instructions (XLA CPU always allows FMA contraction), since each
// fusion changes the rounding. std::fma is exact on any host.
float xla_log1p(float x) {
  float a = x + 1.0f;
  float large;
  if (std::isnan(a) || a < 0) {
    large = std::bit_cast<float>(0xffffffffu);
  } else if (a == 0) {
    large = -INFINITY;
  } else if (std::isinf(a)) {
    large = INFINITY;
  } else {
    float v = a > f32(0x00800000) ? a : f32(0x00800000);
    uint32_t b = std::bit_cast<uint32_t>(v);
    float e = static_cast<float>(static_cast<int32_t>(b >> 23) - 127) + 1.0f;
    float m = f32((b & 0x807fffffu) | 0x3f000000u); // mantissa in [0.5, 1)
    bool lt = m < f32(0x3f3504f3);                  // sqrt(1/2)
    if (lt) e -= 1.0f;
    float r = (m + -1.0f) + (lt ? m : 0.0f);
    float z = r * r, z3 = z * r;
    float p1 = std::fma(std::fma(r, f32(0x3d9021bb), f32(0xbdebd1b8)), r, f32(0x3def251a));
    float p2 = std::fma(std::fma(r, f32(0xbdfe5d4f), f32(0x3e11e9bf)), r, f32(0xbe2aae50));
    float p3 = std::fma(std::fma(r, f32(0x3e4cceac), f32(0xbe7ffffc)), r, f32(0x3eaaaaaa));
    float q = std::fma(z3, std::fma(z3, p1, p2), p3);
    float t = std::fma(-0.5f, z, r) + std::fma(z3, q, e * f32(0xb95e8083));
    large = std::fma(e, f32(0x3f318000), t);
  }
  if (!(std::fabs(x) < f32(0x3ed413cd))) return large;
  static const uint32_t kDen[] = {0x417101ad, 0x42a6185b, 0x435dc32d,
                                  0x439a8ca3, 0x43586d8a, 0x42707982};
  static const uint32_t kNum[] = {0x3eff40c5, 0x40d284fa, 0x41ef4b9c,
                                  0x4273cc76, 0x426473ad, 0x41a05101};
  float zero_x = x * 0.0f;
  float den = zero_x + 1.0f, num = zero_x + 4.527e-05f;
  for (uint32_t c : kDen) den = std::fma(den, x, f32(c));
  for (uint32_t c : kNum) num = std::fma(num, x, f32(c));
  float x2 = x * x;
  return x + std::fma(-x2, 0.5f, (x2 * x) * (num / den));
}

// XLA's ErfInv for float32 (Giles, "Approximating the erfinv function"), as
// lowered by chlo and compiled for CPU (Horner steps fused into FMAs).
float xla_erfinv(float x) {
  static const uint32_t kLt5[] = {0x32f16588, 0x34b84b36, 0xb66c7357, 0xb6935ac1, 0x396532db,
                                  0xbaa45408, 0xbb88e4ef, 0x3e7c8f63, 0x3fc02e2f};
  static const uint32_t kGe5[] = {0xb951f09b, 0x38d3b56b, 0x3ab0dc72, 0xbb70bde7, 0x3bbc127b,
                                  0xbbf9c5d7, 0x3c1aa57e, 0x3f8036db, 0x40354f7e};
  float l = xla_log1p(x * -x); // l = -w
  bool small = l > -5.0f;
  float t = small ? -2.5f - l : std::sqrt(-l) + -3.0f;
  const uint32_t* c = small ? kLt5 : kGe5;
  float p = f32(c[0]);
  for (int i = 1; i < 9; ++i) p = std::fma(t, p, f32(c[i]));
  return x * (std::fabs(x) == 1.0f ? INFINITY : p);
}

// The uint32 remainder of XLA, where x % 0 == x.
inline uint32_t urem(uint32_t a, uint32_t b) { return b == 0 ? a : a % b; }

// sqrt(2) * erfinv(u) elementwise, each step rounded to dt (normal, truncated_normal).
Array sqrt2_erfinv(const Array& u, DType dt) {
  float sqrt2 = round_to(static_cast<float>(std::sqrt(2.0)), dt);
  Array out(dt, u.shape());
  for (int64_t i = 0; i < out.size(); ++i) {
    float x = dt == DType::Float32   ? u.as<float>()[i]
              : dt == DType::Float16 ? half_to_float(u.as<uint16_t>()[i])
                                     : bfloat16_to_float(u.as<uint16_t>()[i]);
    store(out, i, sqrt2 * round_to(xla_erfinv(x), dt));
  }
  return out;
}

} // namespace

Tensor prng_key(OpContext& cx, int64_t seed) {
  // x64 disabled: the seed becomes an int32, whose logical shift right by 32 is 0,
  // so the key is (0, low 32 bits of the seed).
  return cx.constant(key_array(threefry_seed(static_cast<uint32_t>(seed))));
}

Tensor random_split(OpContext& cx, const Tensor& key, int64_t num) {
  ThreefryKey k = key_of(cx, key, "split");
  if (num < 0)
    throw Error(ErrCode::Value, "split: num must be non-negative, got " + std::to_string(num));
  Array out(DType::UInt32, {num, 2});
  auto* p = out.as<uint32_t>();
  for (int64_t i = 0; i < num; ++i) {
    ThreefryKey s = threefry_split_one(k, static_cast<uint64_t>(i));
    p[2 * i] = s[0];
    p[2 * i + 1] = s[1];
  }
  return cx.constant(out);
}

Tensor random_fold_in(OpContext& cx, const Tensor& key, int64_t data) {
  ThreefryKey k = key_of(cx, key, "fold_in");
  // JAX converts data with jnp.asarray(data, dtype='uint32'), which rejects
  // values outside uint32.
  if (data < 0 || data > std::numeric_limits<uint32_t>::max())
    throw Error(ErrCode::Value,
                "fold_in: data " + std::to_string(data) + " is out of bounds for uint32");
  return cx.constant(key_array(threefry_fold_in(k, static_cast<uint32_t>(data))));
}

Tensor random_uniform(OpContext& cx, const Tensor& key, const Shape& shape, DType dtype,
                      double minval, double maxval) {
  ThreefryKey k = key_of(cx, key, "uniform");
  check_shape(shape, "uniform");
  DType dt = float_dtype(dtype, "uniform");
  return cx.constant(
      uniform_array(k, shape, dt, static_cast<float>(minval), static_cast<float>(maxval)));
}

Tensor random_bits(OpContext& cx, const Tensor& key, const Shape& shape) {
  ThreefryKey k = key_of(cx, key, "bits");
  check_shape(shape, "bits");
  Array out(DType::UInt32, shape);
  for (int64_t i = 0; i < out.size(); ++i) out.as<uint32_t>()[i] = threefry_bits32(k, static_cast<uint64_t>(i));
  return cx.constant(out);
}

Tensor random_sqrt2_erfinv_uniform(OpContext& cx, const Tensor& key, const Shape& shape, DType dtype,
                                   double minval, double maxval) {
  ThreefryKey k = key_of(cx, key, "truncated_normal");
  check_shape(shape, "truncated_normal");
  DType dt = float_dtype(dtype, "truncated_normal");
  Array u = uniform_array(k, shape, dt, static_cast<float>(minval), static_cast<float>(maxval));
  return cx.constant(sqrt2_erfinv(u, dt));
}

Tensor random_normal(OpContext& cx, const Tensor& key, const Shape& shape, DType dtype) {
  ThreefryKey k = key_of(cx, key, "normal");
  check_shape(shape, "normal");
  DType dt = float_dtype(dtype, "normal");
  // _normal_real: u ~ uniform(nextafter(-1, 0), 1) in dtype; sqrt(2) * erfinv(u).
  float lo = dt == DType::Float32   ? std::nextafter(-1.0f, 0.0f)
             : dt == DType::Float16 ? half_to_float(0xbbff)
                                    : bfloat16_to_float(0xbf7f);
  return cx.constant(sqrt2_erfinv(uniform_array(k, shape, dt, lo, 1.0f), dt));
}

Tensor random_randint(OpContext& cx, const Tensor& key, const Shape& shape, int64_t minval,
                      int64_t maxval, DType dtype) {
  ThreefryKey k = key_of(cx, key, "randint");
  check_shape(shape, "randint");
  if (!is_integer(dtype))
    throw Error(ErrCode::DType,
                std::string("randint only accepts integer dtypes, got ") + dtype_name(dtype));
  // JAX draws 8- and 16-bit integers from narrower random bits (not done here).
  if (dtype_size(dtype) != 4)
    throw Error(ErrCode::Unsupported,
                std::string("randint with dtype ") + dtype_name(dtype) + " is not supported",
                Span{}, "draw int32 values and convert them with astype");
  // _randint: clip the bounds into the dtype; a maxval past the dtype's maximum
  // widens the span by one so that maximum can be drawn.
  const bool is_signed = dtype == DType::Int32;
  const int64_t tmin = is_signed ? std::numeric_limits<int32_t>::min() : 0;
  const int64_t tmax =
      is_signed ? std::numeric_limits<int32_t>::max() : std::numeric_limits<uint32_t>::max();
  bool out_of_range = maxval > tmax;
  int64_t lo = std::clamp(minval, tmin, tmax), hi = std::clamp(maxval, tmin, tmax);
  uint32_t span = static_cast<uint32_t>(hi - lo);
  if (hi <= lo) span = 1;
  if (out_of_range && hi > lo) span += 1; // may wrap to 0: then every draw is kept whole
  // 2 * 32 random bits per value reduced modulo span, using
  // 2**32 % span == ((2**16 % span) ** 2) % span in 32-bit arithmetic.
  uint32_t mult = urem(1u << 16, span);
  mult = urem(mult * mult, span);
  ThreefryKey k1 = threefry_split_one(k, 0), k2 = threefry_split_one(k, 1);
  Array out(dtype, shape);
  for (int64_t i = 0; i < out.size(); ++i) {
    uint32_t high = threefry_bits32(k1, static_cast<uint64_t>(i));
    uint32_t low = threefry_bits32(k2, static_cast<uint64_t>(i));
    uint32_t off = urem(urem(high, span) * mult + urem(low, span), span);
    uint32_t v = static_cast<uint32_t>(lo) + off; // wraps like the int32 add
    if (is_signed)
      out.as<int32_t>()[i] = static_cast<int32_t>(v);
    else
      out.as<uint32_t>()[i] = v;
  }
  return cx.constant(out);
}

Tensor random_permutation(OpContext& cx, const Tensor& key, int64_t n) {
  ThreefryKey k = key_of(cx, key, "permutation");
  if (n < 0 || n > std::numeric_limits<int32_t>::max())
    throw Error(ErrCode::Value, "permutation: n must be in [0, 2**31), got " + std::to_string(n));
  // _shuffle: repeated stable sorts by fresh 32-bit keys; the number of rounds
  // makes key collisions negligible (3 * log(n) / log(2**32 - 1), rounded up).
  const double uint32max = std::numeric_limits<uint32_t>::max();
  int rounds = static_cast<int>(std::ceil(
      3.0 * std::log(static_cast<double>(std::max<int64_t>(1, n))) / std::log(uint32max)));
  std::vector<int32_t> x(static_cast<size_t>(n));
  std::iota(x.begin(), x.end(), 0);
  std::vector<uint32_t> sort_keys(x.size());
  std::vector<size_t> order(x.size());
  std::vector<int32_t> next(x.size());
  for (int r = 0; r < rounds; ++r) {
    ThreefryKey sub = threefry_split_one(k, 1);
    k = threefry_split_one(k, 0);
    threefry_fill_bits32(sub, sort_keys.data(), n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return sort_keys[a] < sort_keys[b]; });
    for (size_t i = 0; i < order.size(); ++i) next[i] = x[order[i]];
    x.swap(next);
  }
  Array out(DType::Int32, {n});
  std::copy(x.begin(), x.end(), out.as<int32_t>());
  return cx.constant(out);
}

} // namespace pxl::np
