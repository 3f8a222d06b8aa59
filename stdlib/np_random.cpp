// jax.random over raw threefry keys (uint32[2]), bit-exact with JAX 0.10 on CPU
// with its defaults: jax_threefry_partitionable=True and x64 disabled. Each
// sampler is JAX's composite from jax/_src/random.py and jax/_src/prng.py,
// bound op by op through the OpContext: the threefry2x32 primitive on iota
// counters, bit manipulation, fma and erf_inv. So one definition serves eager
// calls (the reference kernels compute it) and traced keys (jit, vmap, pmap,
// shard_map, grad), and vmap over keys batches the elementwise hash.
// Permutation sorts by its random keys: on the host for a concrete key, by
// rank counting for a traced one (pxl has no sort primitive).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "lang/diag.hpp"
#include "runtime/threefry.hpp"
#include "stdlib/np_internal.hpp"
#include "stdlib/np_philox.hpp"

namespace pxl::np {

using namespace detail;

namespace {

// The key's shape and dtype are checked on its abstract value, so the errors
// are the same for concrete and traced keys.
std::string invalid_key_message(DType dt, const Shape& shape) {
  if (dt != DType::UInt32)
    return std::string("JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; "
                       "got dtype=") +
           dtype_name(dt);
  return "JAX encountered invalid PRNG key data: expected key_data.shape to end with (2,); got "
         "shape=" +
         shape_str(shape) + " for impl=threefry2x32";
}

// An rbg key (uint32[4] data: the rbg and unsafe_rbg implementations) rather
// than a threefry one (uint32[2]).
bool is_rbg(const Tensor& key) { return !av(key).shape.empty() && av(key).shape.back() == 4; }

void check_key(const Tensor& key, const char* fn) {
  const AVal& k = av(key);
  if (k.dtype == DType::UInt32 && (k.shape == Shape{2} || k.shape == Shape{4})) return;
  // JAX names the raw key data's shape (keys here are raw uint32[..., 2] data).
  if (k.dtype == DType::UInt32 && k.ndim() > 1 && (k.shape.back() == 2 || k.shape.back() == 4))
    throw Error(ErrCode::Value, std::string(fn) +
                                    " accepts a single key, but was given a key array of shape " +
                                    shape_str(k.shape) + " != (). Use jax.vmap for batching.");
  throw Error(ErrCode::Type, invalid_key_message(k.dtype, k.shape));
}

ThreefryKey host_key(OpContext& cx, const Tensor& key) {
  const Array& k = cx.concrete(key);
  return {k.as<uint32_t>()[0], k.as<uint32_t>()[1]};
}

void check_shape(const Shape& shape, const char* fn) {
  const int64_t limit = std::numeric_limits<uint32_t>::max();
  int64_t n = 1; // the element count, saturated just above the limit
  for (int64_t d : shape) {
    if (d < 0)
      throw Error(ErrCode::Value,
                  std::string(fn) + ": shape " + shape_str(shape) + " has a negative dimension");
    n = d == 0 ? 0 : std::min(limit + 1, n > limit / d ? limit + 1 : n * d);
  }
  // The counters are uint32 iotas (JAX's high counter word is 0 below 2**32).
  if (n > limit)
    throw Error(ErrCode::Value, std::string(fn) +
                                    ": pxl draws at most 2**32 - 1 values at once, "
                                    "got shape " +
                                    shape_str(shape));
}

// With x64 disabled JAX canonicalises float64 to float32 (and warns); pxl does
// the same, silently.
DType float_dtype(DType dt, const char* fn) {
  if (!is_floating(dt))
    throw Error(ErrCode::DType, std::string("dtype argument to `") + fn + "` must be a float" +
                                    (std::string(fn) == "normal" ? " or complex" : "") +
                                    " dtype, got " + dtype_name(dt));
  return dt == DType::Float64 ? DType::Float32 : dt;
}

Tensor u32(OpContext& cx, uint32_t v) { return constant(cx, Scalar::of_int(v), DType::UInt32); }
Tensor u32_like(OpContext& cx, uint32_t v, const Shape& shape) {
  return broadcast(cx, u32(cx, v), shape, "random");
}

// JAX's threefry_2x32 of the key over counters (x0, x1) of one shape: both words.
std::array<Tensor, 2> hash(OpContext& cx, const Tensor& key, const Tensor& x0, const Tensor& x1) {
  const Shape& s = av(x0).shape;
  return threefry2x32(cx, key_word(cx, key, 0, s), key_word(cx, key, 1, s), x0, x1);
}

// iota_2x32_shape: the (high, low) words of each element's flat index.
std::array<Tensor, 2> counters(OpContext& cx, const Shape& shape) {
  Tensor lo = reshape_to(cx, iota(cx, DType::UInt32, {shape_size(shape)}, 0), shape);
  return {u32_like(cx, 0, shape), lo};
}

// _threefry_random_bits_partitionable for 32 bits: the xor of both words; an
// rbg key's bits are lax.rng_bit_generator's (_rbg_random_bits).
Tensor bits32(OpContext& cx, const Tensor& key, const Shape& shape) {
  if (is_rbg(key)) return reshape_to(cx, philox_words(cx, key, shape_size(shape)).second, shape);
  auto [hi, lo] = counters(cx, shape);
  auto [y0, y1] = hash(cx, key, hi, lo);
  return bind(cx, Op::Xor, {}, {y0, y1});
}

// Keys as uint32[..., 2] from their two words.
Tensor stack_words(OpContext& cx, const Tensor& y0, const Tensor& y1) {
  return stack(cx, {y0, y1}, av(y0).ndim());
}

// An rbg key's two threefry halves (words 0-1 and 2-3): rbg splits and folds
// each half as a threefry key (_rbg_split, _rbg_fold_in) and joins the results.
Tensor rbg_half(OpContext& cx, const Tensor& key, int64_t h) {
  OpAttrs a;
  a.starts = {2 * h};
  a.limits = {2 * h + 2};
  a.strides = {1};
  return bind(cx, Op::Slice, a, {key});
}
Tensor rbg_join(OpContext& cx, const Tensor& a, const Tensor& b) {
  return concatenate(cx, {a, b}, static_cast<int>(av(a).ndim()) - 1);
}

// Key i of split(key, n) without the others (randint's two subkeys).
Tensor split_one(OpContext& cx, const Tensor& key, uint32_t i) {
  if (is_rbg(key))
    return rbg_join(cx, split_one(cx, rbg_half(cx, key, 0), i),
                    split_one(cx, rbg_half(cx, key, 1), i));
  auto [y0, y1] = hash(cx, key, u32(cx, 0), u32(cx, i));
  return stack_words(cx, y0, y1);
}

// jax.random._uniform: random mantissa bits under the exponent of 1.0 give a
// float in [1, 2); subtract 1, scale and shift, clamp below at minval. 16-bit
// types draw 16 bits (float16) or 8 bits (bfloat16, fewer than 8 mantissa bits)
// from the low bits of the 32-bit hash; each step rounds to the dtype, and for
// float32 XLA fuses the scale and shift into one FMA.
Tensor uniform(OpContext& cx, const Tensor& key, const Shape& shape, DType dt, const Tensor& minval,
               const Tensor& maxval) {
  int nbits = dt == DType::Float32 ? 32 : 16;
  int nmant = dt == DType::Float32 ? 23 : dt == DType::Float16 ? 10 : 7;
  int rng_bits = nmant < 8 ? 8 : nbits;
  Tensor lo = broadcast(cx, convert(cx, minval, dt, false), shape, "uniform");
  Tensor hi = broadcast(cx, convert(cx, maxval, dt, false), shape, "uniform");
  Tensor span = bind(cx, Op::Sub, {}, {hi, lo});
  Tensor bits = bits32(cx, key, shape);
  if (rng_bits < 32)
    bits = bind(cx, Op::And, {}, {bits, u32_like(cx, (1u << rng_bits) - 1, shape)});
  // The dtype's mantissa bits placed as a float32 mantissa: the same value in
  // [1, 2), exact in the dtype.
  Tensor m = bind(cx, Op::ShiftRightLogical, {}, {bits, u32_like(cx, rng_bits - nmant, shape)});
  if (nmant < 23) m = bind(cx, Op::ShiftLeft, {}, {m, u32_like(cx, 23 - nmant, shape)});
  m = bind(cx, Op::Or, {}, {m, u32_like(cx, 0x3f800000u, shape)});
  OpAttrs bc;
  bc.dtype = DType::Float32;
  Tensor f = convert(cx, bind(cx, Op::BitcastConvertType, bc, {m}), dt, false);
  auto c = [&](float v) { return fill(cx, shape, Scalar::of_float(v), dt, false); };
  f = bind(cx, Op::Sub, {}, {f, c(1.0f)}); // exact in every format
  Tensor v = dt == DType::Float32 ? bind(cx, Op::Fma, {}, {f, span, lo})
                                  : bind(cx, Op::Add, {}, {bind(cx, Op::Mul, {}, {f, span}), lo});
  return bind(cx, Op::Max, {}, {lo, v});
}

// sqrt(2) * erf_inv(u), each step rounded to u's dtype (normal, truncated_normal).
Tensor sqrt2_erfinv(OpContext& cx, const Tensor& u) {
  Tensor sqrt2 = fill(cx, av(u).shape, Scalar::of_float(static_cast<float>(std::sqrt(2.0))),
                      av(u).dtype, false);
  return bind(cx, Op::Mul, {}, {sqrt2, bind(cx, Op::ErfInv, {}, {u})});
}

// A Python float bound as JAX converts it: to float32, then the dtype.
Tensor float_bound(OpContext& cx, double v) {
  return constant(cx, Scalar::of_float(static_cast<float>(v)), DType::Float32);
}

void check_bound(const Tensor& t, const char* fn) {
  if (av(t).dtype == DType::Bool)
    throw Error(ErrCode::DType, std::string(fn) + ": minval and maxval must be numbers, got bool");
}

Tensor urem(OpContext& cx, const Tensor& a, const Tensor& b) {
  return bind(cx, Op::Rem, {}, {a, b});
}

} // namespace

// Word i of the key as a uint32 array of `shape`.
Tensor detail::key_word(OpContext& cx, const Tensor& key, int64_t i, const Shape& shape) {
  OpAttrs a;
  a.starts = {i};
  a.limits = {i + 1};
  a.strides = {1};
  return broadcast(cx, reshape_to(cx, bind(cx, Op::Slice, a, {key}), {}), shape, "random");
}

Tensor prng_key(OpContext& cx, int64_t seed) {
  // x64 disabled: the seed becomes an int32, whose logical shift right by 32 is 0,
  // so the key is (0, low 32 bits of the seed).
  ThreefryKey k = threefry_seed(static_cast<uint32_t>(seed));
  Array a(DType::UInt32, {2});
  a.as<uint32_t>()[0] = k[0];
  a.as<uint32_t>()[1] = k[1];
  return cx.constant(a);
}

Tensor random_split(OpContext& cx, const Tensor& key, int64_t num) {
  check_key(key, "split");
  if (num < 0)
    throw Error(ErrCode::Value, "split: num must be non-negative, got " + std::to_string(num));
  check_shape({num}, "split");
  if (is_rbg(key))
    return rbg_join(cx, random_split(cx, rbg_half(cx, key, 0), num),
                    random_split(cx, rbg_half(cx, key, 1), num));
  auto [hi, lo] = counters(cx, {num});
  auto [y0, y1] = hash(cx, key, hi, lo);
  return stack_words(cx, y0, y1);
}

Tensor random_fold_in(OpContext& cx, const Tensor& key, const Tensor& data) {
  check_key(key, "fold_in");
  if (av(data).ndim() != 0)
    throw Error(ErrCode::Type,
                "fold_in accepts a scalar, but was given an array of" // sic: JAX's text
                "shape " +
                    shape_str(av(data).shape) + " != (). Use jax.vmap for batching.");
  if (is_rbg(key))
    return rbg_join(cx, random_fold_in(cx, rbg_half(cx, key, 0), data),
                    random_fold_in(cx, rbg_half(cx, key, 1), data));
  // jnp.asarray(data, dtype='uint32'), then the counter (0, data).
  Tensor d = convert(cx, data, DType::UInt32, false);
  auto [y0, y1] = hash(cx, key, u32(cx, 0), d);
  return stack_words(cx, y0, y1);
}

Tensor random_fold_in(OpContext& cx, const Tensor& key, int64_t data) {
  // JAX converts data with jnp.asarray(data, dtype='uint32'), which rejects
  // Python ints outside uint32.
  if (data < 0 || data > std::numeric_limits<uint32_t>::max())
    throw Error(ErrCode::Value,
                "fold_in: data " + std::to_string(data) + " is out of bounds for uint32");
  return random_fold_in(cx, key, constant(cx, Scalar::of_int(data), DType::UInt32));
}

Tensor random_uniform(OpContext& cx, const Tensor& key, const Shape& shape, DType dtype,
                      const Tensor& minval, const Tensor& maxval) {
  check_key(key, "uniform");
  check_shape(shape, "uniform");
  DType dt = float_dtype(dtype, "uniform");
  check_bound(minval, "uniform");
  check_bound(maxval, "uniform");
  // JAX raises the bounds to the shape's rank and scales the [0, 1) draws
  // (of `shape`) by maxval - minval: a lax.mul that needs equal dimensions or 1s.
  for (const Tensor* t : {&minval, &maxval}) {
    const Shape& bs = av(*t).shape;
    bool ok = bs.size() <= shape.size();
    for (size_t i = 0; ok && i < bs.size(); ++i) {
      int64_t d = bs[bs.size() - 1 - i], want = shape[shape.size() - 1 - i];
      ok = d == 1 || d == want;
    }
    if (!ok) {
      Shape ranked(shape.size() > bs.size() ? shape.size() - bs.size() : 0, 1);
      ranked.insert(ranked.end(), bs.begin(), bs.end());
      throw Error(ErrCode::Type, "mul got incompatible shapes for broadcasting: " +
                                     shape_str(shape) + ", " + shape_str(ranked) + ".");
    }
  }
  return uniform(cx, key, shape, dt, minval, maxval);
}

Tensor random_uniform(OpContext& cx, const Tensor& key, const Shape& shape, DType dtype,
                      double minval, double maxval) {
  return random_uniform(cx, key, shape, dtype, float_bound(cx, minval), float_bound(cx, maxval));
}

std::array<Tensor, 2> threefry2x32(OpContext& cx, const Tensor& k0, const Tensor& k1,
                                   const Tensor& x0, const Tensor& x1) {
  const Shape& s = av(x0).shape;
  Tensor b0 = broadcast(cx, k0, s, "threefry_2x32"), b1 = broadcast(cx, k1, s, "threefry_2x32");
  std::array<Tensor, 2> out;
  for (int w = 0; w < 2; ++w) {
    OpAttrs a;
    a.axis = w;
    out[static_cast<size_t>(w)] = bind(cx, Op::Threefry2x32, a, {b0, b1, x0, x1});
  }
  return out;
}

Tensor random_bits(OpContext& cx, const Tensor& key, const Shape& shape) {
  check_key(key, "bits");
  check_shape(shape, "bits");
  return bits32(cx, key, shape);
}

Tensor random_sqrt2_erfinv_uniform(OpContext& cx, const Tensor& key, const Shape& shape,
                                   DType dtype, const Tensor& minval, const Tensor& maxval) {
  check_key(key, "truncated_normal");
  check_shape(shape, "truncated_normal");
  DType dt = float_dtype(dtype, "truncated_normal");
  return sqrt2_erfinv(cx, uniform(cx, key, shape, dt, minval, maxval));
}

Tensor random_normal(OpContext& cx, const Tensor& key, const Shape& shape, DType dtype) {
  check_key(key, "normal");
  check_shape(shape, "normal");
  if (is_complex(dtype)) {
    // JAX's complex normal: real and imaginary parts from split keys, each
    // divided by sqrt(2) (XLA divides the parts under JAX's jit).
    Tensor keys = random_split(cx, key, 2);
    auto part = [&](int64_t i) {
      IndexItem it;
      it.index = i;
      Tensor x = random_normal(cx, index(cx, keys, {it}), shape, DType::Float32);
      return binary(cx, BinOp::TrueDiv, x, constant(cx, Scalar::of_float(M_SQRT2), DType::Float32));
    };
    Tensor re = part(0);
    return bind(cx, Op::Complex, {}, {re, part(1)});
  }
  DType dt = float_dtype(dtype, "normal");
  // _normal_real: u ~ uniform(nextafter(-1, 0), 1) in dtype; sqrt(2) * erf_inv(u).
  float lo = dt == DType::Float32   ? std::nextafter(-1.0f, 0.0f)
             : dt == DType::Float16 ? half_to_float(0xbbff)
                                    : bfloat16_to_float(0xbf7f);
  return sqrt2_erfinv(cx, uniform(cx, key, shape, dt, float_bound(cx, lo), float_bound(cx, 1.0)));
}

Tensor random_randint(OpContext& cx, const Tensor& key, const Shape& shape, int64_t minval,
                      int64_t maxval, DType dtype) {
  check_key(key, "randint");
  check_shape(shape, "randint");
  if (!is_integer(dtype))
    throw Error(ErrCode::DType,
                std::string("randint only accepts integer dtypes, got ") + dtype_name(dtype));
  // 8- and 16-bit dtypes sample in int32 (JAX: "to avoid biased results"), with
  // the bounds clipped into the dtype (maxval one past its maximum), then convert.
  if (dtype_size(dtype) < 4) {
    const int nbits = 8 * static_cast<int>(dtype_size(dtype));
    const bool is_signed = dtype == DType::Int8 || dtype == DType::Int16;
    const int64_t tmin = is_signed ? -(int64_t{1} << (nbits - 1)) : 0;
    const int64_t tmax = is_signed ? (int64_t{1} << (nbits - 1)) - 1 : (int64_t{1} << nbits) - 1;
    Tensor v = random_randint(cx, key, shape, std::clamp(minval, tmin, tmax),
                              std::clamp(maxval, tmin, tmax + 1), DType::Int32);
    return convert(cx, v, dtype, false);
  }
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
  // 2**32 % span == ((2**16 % span) ** 2) % span in 32-bit arithmetic (x % 0 == x).
  auto host_urem = [](uint32_t a, uint32_t b) { return b == 0 ? a : a % b; };
  uint32_t mult = host_urem(1u << 16, span);
  mult = host_urem(mult * mult, span);
  Tensor high = bits32(cx, split_one(cx, key, 0), shape);
  Tensor low = bits32(cx, split_one(cx, key, 1), shape);
  Tensor sp = u32_like(cx, span, shape);
  Tensor off = bind(
      cx, Op::Add, {},
      {bind(cx, Op::Mul, {}, {urem(cx, high, sp), u32_like(cx, mult, shape)}), urem(cx, low, sp)});
  off = urem(cx, off, sp);
  // minval + offset in the dtype, wrapping like the int32 add.
  Tensor v = bind(cx, Op::Add, {}, {off, u32_like(cx, static_cast<uint32_t>(lo), shape)});
  if (!is_signed) return v;
  OpAttrs bc;
  bc.dtype = DType::Int32;
  return bind(cx, Op::BitcastConvertType, bc, {v});
}

namespace {

// One round of _shuffle on traced sort keys: a stable sort of x by s. Without
// a sort primitive the stable rank of each key is counted (O(n^2), as
// jnp.argsort in pxl), then element i moves to position rank[i].
Tensor sort_by(OpContext& cx, const Tensor& s, const Tensor& x) {
  int64_t n = av(s).shape[0];
  Shape sq{n, n};
  auto bcast = [&](const Tensor& t, int64_t axis) {
    OpAttrs a;
    a.shape = sq;
    a.axes = {axis};
    return bind(cx, Op::BroadcastInDim, a, {t});
  };
  // [i, j]: does key j sort before key i (smaller, or equal and earlier)?
  Tensor si = bcast(s, 0), sj = bcast(s, 1);
  Tensor earlier =
      bind(cx, Op::Lt, {}, {iota(cx, DType::Int32, sq, 1), iota(cx, DType::Int32, sq, 0)});
  Tensor before = bind(cx, Op::Or, {},
                       {bind(cx, Op::Lt, {}, {sj, si}),
                        bind(cx, Op::And, {}, {bind(cx, Op::Eq, {}, {sj, si}), earlier})});
  Tensor rank = reduce_axes(cx, Op::ReduceSum, convert(cx, before, DType::Int32, false), {1});
  // out[k] = x[i] for the i with rank[i] == k.
  Tensor to_k = bind(cx, Op::Eq, {}, {bcast(rank, 1), iota(cx, DType::Int32, sq, 0)});
  Tensor picked = bind(cx, Op::Select, {},
                       {to_k, bcast(x, 1), fill(cx, sq, Scalar::of_int(0), av(x).dtype, false)});
  return reduce_axes(cx, Op::ReduceSum, picked, {1});
}

} // namespace

Tensor random_permutation(OpContext& cx, const Tensor& key, int64_t n) {
  check_key(key, "permutation");
  if (n < 0 || n > std::numeric_limits<int32_t>::max())
    throw Error(ErrCode::Value, "permutation: n must be in [0, 2**31), got " + std::to_string(n));
  // _shuffle: repeated stable sorts by fresh 32-bit keys; the number of rounds
  // makes key collisions negligible (3 * log(n) / log(2**32 - 1), rounded up).
  const double uint32max = std::numeric_limits<uint32_t>::max();
  int rounds = static_cast<int>(std::ceil(
      3.0 * std::log(static_cast<double>(std::max<int64_t>(1, n))) / std::log(uint32max)));
  if (key->trace || is_rbg(key)) {
    // A traced (or rbg) key: the same rounds as ops (subkeys by split, keys by bits).
    Tensor k = key, x = iota(cx, DType::Int32, {n}, 0);
    for (int r = 0; r < rounds; ++r) {
      Tensor sub = split_one(cx, k, 1);
      k = split_one(cx, k, 0);
      x = sort_by(cx, bits32(cx, sub, {n}), x);
    }
    return x;
  }
  // A concrete key: the same sorts on the host, in O(n log n).
  ThreefryKey k = host_key(cx, key);
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
