// Array creation: np.array/asarray, full/zeros/ones(_like), arange, linspace, eye, astype.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lang/tracer.hpp"
#include "stdlib/np_internal.hpp"

namespace pxl::np {

using namespace detail;

namespace {

void check_int32(int64_t v) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    throw Error(ErrCode::Value,
                "Python int " + std::to_string(v) + " too large to convert to int32");
}

DType default_dtype(const Scalar& v) {
  switch (v.kind) {
  case Scalar::Kind::Bool:
    return DType::Bool;
  case Scalar::Kind::Int:
    check_int32(v.i);
    return DType::Int32;
  case Scalar::Kind::Float:
    return DType::Float32;
  case Scalar::Kind::Complex:
    return DType::Complex64;
  }
  return DType::Float32;
}

double as_double(const Scalar& s) { return s.real(); }

} // namespace

void check_python_int(int64_t v, DType d) {
  // (ml_dtypes' narrow integers take any Python int, wrapped)
  if (is_integer(d) && !is_narrow_int(d) && (v < int_min(d) || v > int_max(d)))
    throw Error(ErrCode::Value,
                "Python integer " + std::to_string(v) + " out of bounds for " + dtype_name(d));
}

void check_python_scalar(const Scalar& v, DType d) {
  if (!is_integer(d)) return;
  if (v.kind == Scalar::Kind::Int) return check_python_int(v.i, d);
  if (v.kind == Scalar::Kind::Complex)
    throw Error(ErrCode::Type, "int() argument must be a string, a bytes-like object or a real "
                               "number, not 'complex'");
  double f = v.real();
  if (std::isnan(f)) throw Error(ErrCode::Value, "cannot convert float NaN to integer");
  if (std::isinf(f)) throw Error(ErrCode::Value, "cannot convert float infinity to integer");
  double t = std::trunc(f);
  if (t >= -0x1p63 && t < 0x1p63) return check_python_int(static_cast<int64_t>(t), d);
  throw Error(ErrCode::Value, "Python int too large to convert to C long");
}

Tensor scalar(OpContext& cx, const Scalar& v, std::optional<DType> dtype, bool weak) {
  DType d = dtype ? *dtype : default_dtype(v);
  // Python bools are never weak in JAX; only ints and floats are.
  return constant(cx, v, d, weak && d != DType::Bool);
}

Tensor from_host(OpContext& cx, const std::vector<Scalar>& flat, const Shape& shape,
                 std::optional<DType> dtype) {
  if (static_cast<int64_t>(flat.size()) != shape_size(shape))
    throw Error(ErrCode::Value, "array: " + std::to_string(flat.size()) +
                                    " values do not fill shape " + shape_str(shape));
  DType d = DType::Bool;
  if (dtype) {
    d = *dtype;
    for (const Scalar& s : flat) check_python_scalar(s, d);
  } else {
    // No values: numpy's default float (jnp.array([]) is float32).
    if (flat.empty()) d = DType::Float32;
    for (const Scalar& s : flat) {
      if (s.kind == Scalar::Kind::Complex)
        d = DType::Complex64;
      else if (s.kind == Scalar::Kind::Float && d != DType::Complex64)
        d = DType::Float32;
      else if (s.kind == Scalar::Kind::Int && d == DType::Bool)
        d = DType::Int32;
    }
    // JAX's wording for an element of a list differs from a lone Python int's.
    if (d == DType::Int32)
      for (const Scalar& s : flat)
        if (s.i < std::numeric_limits<int32_t>::min() || s.i > std::numeric_limits<int32_t>::max())
          throw Error(ErrCode::Value,
                      "Python integer " + std::to_string(s.i) + " out of bounds for int32");
  }
  Array a(d, shape);
  for (size_t i = 0; i < flat.size(); ++i) a.set(static_cast<int64_t>(i), flat[i]);
  return cx.constant(std::move(a));
}

Tensor full(OpContext& cx, const Shape& shape, const Scalar& v, std::optional<DType> dtype) {
  // jnp.full((2,), 2) is weakly typed, like the scalar it is built from.
  DType d = dtype ? *dtype : default_dtype(v);
  return fill(cx, shape, v, d, !dtype && d != DType::Bool, true);
}

Tensor zeros(OpContext& cx, const Shape& shape, DType dtype) {
  return fill(cx, shape, Scalar::of_int(0), dtype, false, true);
}

Tensor ones(OpContext& cx, const Shape& shape, DType dtype) {
  return fill(cx, shape, Scalar::of_int(1), dtype, false, true);
}

Tensor full_like(OpContext& cx, const Tensor& x, const Scalar& v, std::optional<DType> dtype) {
  // The result takes x's dtype and weak type unless a dtype is given.
  return fill(cx, av(x).shape, v, dtype ? *dtype : av(x).dtype, dtype ? false : av(x).weak, true);
}

namespace {

// arange inside a trace: JAX's ops, so a jaxpr shows them as JAX's does: iota
// alone (arange(n)), start + iota (arange(start, stop)), or start + step * iota
// in the working dtype (float32 for the 16-bit floats), converted to the dtype.
Tensor traced_arange(OpContext& cx, const Scalar& start, const Scalar& step, int64_t n, DType d,
                     bool step_given) {
  if (is_complex(d)) // pxl's iota is real: the range in float32, converted
    return convert(cx, traced_arange(cx, start, step, n, DType::Float32, step_given), d, false);
  if (!step_given) {
    Tensor i = iota(cx, d, {n}, 0);
    if (start.real() == 0) return i;
    return binary(cx, BinOp::Add, constant(cx, start, d, false), i);
  }
  DType wd = d == DType::Float16 || d == DType::BFloat16 ? DType::Float32 : d;
  Tensor r = binary(cx, BinOp::Mul, constant(cx, step, wd, false), iota(cx, wd, {n}, 0));
  r = binary(cx, BinOp::Add, constant(cx, start, wd, false), r);
  return convert(cx, r, d, false);
}

} // namespace

Tensor arange(OpContext& cx, const Scalar& start, const Scalar& stop, const Scalar& step,
              std::optional<DType> dtype, bool step_given) {
  bool all_int = start.kind != Scalar::Kind::Float && stop.kind != Scalar::Kind::Float &&
                 step.kind != Scalar::Kind::Float;
  DType d = dtype ? *dtype : (all_int ? DType::Int32 : DType::Float32);
  int64_t n = 0;
  if (all_int) {
    if (step.i == 0) throw Error(ErrCode::ZeroDivision, "division by zero"); // as JAX
    int64_t span = stop.i - start.i;
    n = step.i > 0 ? (span + step.i - 1) / step.i : (span + step.i + 1) / step.i;
    if (d == DType::Int32) {
      check_int32(start.i);
      if (n > 0) check_int32(start.i + (n - 1) * step.i);
    }
  } else {
    double st = as_double(step);
    if (st == 0) throw Error(ErrCode::ZeroDivision, "float division by zero"); // as JAX
    double len = std::ceil((as_double(stop) - as_double(start)) / st);
    if (!std::isfinite(len))
      throw Error(ErrCode::Value, "arange: the number of values is not finite");
    n = static_cast<int64_t>(len);
  }
  n = std::max<int64_t>(n, 0);
  if (dynamic_cast<TraceContext*>(&cx)) return traced_arange(cx, start, step, n, d, step_given);
  // As JAX: start + step * iota in the working dtype (float32 for the 16-bit floats and
  // float32), each operation rounded, then converted to the dtype.
  Array a(d, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (all_int) {
      a.set(i, Scalar::of_int(start.i + i * step.i));
    } else if (!is_inexact(d)) {
      int64_t s0 = static_cast<int64_t>(as_double(start)),
              s1 = static_cast<int64_t>(as_double(step));
      a.set(i, Scalar::of_int(s0 + i * s1));
    } else if (d == DType::Float64) {
      a.set(i, Scalar::of_float(as_double(start) + as_double(step) * static_cast<double>(i)));
    } else {
      volatile float prod = static_cast<float>(as_double(step)) * static_cast<float>(i);
      float v = static_cast<float>(as_double(start)) + prod;
      a.set(i, Scalar::of_float(v));
    }
  }
  return cx.constant(std::move(a));
}

namespace {

// How XLA's CPU loop for a concrete linspace of `num` values (`div` steps)
// rounds each value: which indices have 1 - i * r constant-folded (unrolled
// code) and which fuse start * (1 - t) rather than stop * t into the fma.
struct LinspaceLoop {
  int64_t folded_from = 0;   // indices from here on are folded
  bool unrolled_one = false; // i = 1 of wholly unrolled code fuses start * (1 - t)
  bool odd_parts = false;    // every index fuses start * (1 - t)
  bool folded(int64_t i) const { return i >= folded_from; }
  bool fuses_start(int64_t i) const { return odd_parts || (unrolled_one && i == 1 && folded(i)); }
};

LinspaceLoop linspace_loop(int64_t num, int64_t div, bool inexact) {
  LinspaceLoop l;
  // Measured where XLA's LLVM targets AVX-512: the loop is unrolled whole below
  // 352 float steps (288 for an integer result, whose loop also floors and
  // converts), else vectorized 32 at a time with its remainder unrolled (a float
  // result's; an integer one's stays a loop). Unrolled, i = 1 drops its multiply
  // by 1, and for div <= 32 the fma then fuses start * (1 - t). Past 4442 values
  // (4255 for integers) XLA emits the loop otherwise: nothing is folded, and an
  // odd div fuses start * (1 - t) everywhere.
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512) { // elsewhere: unrolled up to 375 values, else one vector loop
    l.folded_from = num <= 375 ? 0 : div;
    // Zen 3 (AMD family 19h, AVX2) fuses i = 1 as AVX-512 machines do (measured up to 33 values;
    // its longer loops are not modelled); Zen 2 and earlier do not.
    static const bool zen3 = __builtin_cpu_is("amdfam19h");
    l.unrolled_one = zen3 && inexact && div <= 32;
    return l;
  }
  const int64_t vector_from = inexact ? 352 : 288, parts_from = inexact ? 4442 : 4255;
  const int64_t lanes = 32;
  if (div < vector_from)
    l.folded_from = 0;
  else if (inexact && num <= parts_from)
    l.folded_from = div / lanes * lanes;
  else
    l.folded_from = div;
  l.unrolled_one = inexact && div <= 32;
  l.odd_parts = num > parts_from && div % 2 == 1;
  return l;
}

} // namespace

Tensor linspace(OpContext& cx, double start, double stop, int64_t num, bool endpoint,
                std::optional<DType> dtype) {
  if (num < 0)
    throw Error(ErrCode::Value,
                "linspace: number of samples, " + std::to_string(num) + ", must be non-negative");
  DType d = dtype ? *dtype : DType::Float32;
  // JAX's formula start * (1 - t) + stop * t with t = i / div, as XLA compiles
  // it: the division becomes a multiply by r = 1 / div, stop * t is reassociated to
  // (stop * r) * i and the final add is fused into an fma. Unrolled code
  // constant-folds 1 - i * r, where a vector loop computes it as an fma too.
  // float32 is the computation type for int too; the half types round at every
  // step. (These rules were fitted to JAX 0.10 on CPUs.)
  int64_t div = endpoint ? num - 1 : num;
  LinspaceLoop loop = linspace_loop(num, div, is_inexact(d));
  // Inside a program XLA compiles whole (jit, pmap) the bounds are its
  // constants: LLVM folds the unrolled code's products and sums one by one,
  // without fusing them (measured: every value of 0.1 ... 1.3 up to 351 steps).
  const bool constant_bounds = !rewrite_division_here(cx, false);
  Array a(d, {num});
  for (int64_t i = 0; i < num; ++i) {
    double v;
    if (i == 0) {
      v = start;
    } else if (endpoint && i == num - 1) {
      v = stop;
    } else if (d == DType::Float64) {
      double r = 1.0 / static_cast<double>(div), fi = static_cast<double>(i);
      double c = loop.folded(i) ? 1.0 - fi * r : std::fma(-fi, r, 1.0);
      v = std::fma(stop * r, fi, start * c);
    } else if (d == DType::Float16) {
      // Every op rounds to float16; as for float32 the division is a multiply
      // by r = 1 / div and stop * t is reassociated to i * (stop * r).
      auto h = [](float x) { return half_to_float(float_to_half(x)); };
      float fs = h(static_cast<float>(start)), fe = h(static_cast<float>(stop));
      float r = h(1.0f / static_cast<float>(div)), fi = static_cast<float>(i);
      v = h(h(fs * h(1.0f - h(fi * r))) + h(fi * h(fe * r)));
    } else if (d == DType::BFloat16) {
      // Every op rounds to bfloat16, which XLA computes as written (its
      // bfloat16 arithmetic goes through float32 before the simplifier runs).
      auto h = [](float x) { return bfloat16_to_float(float_to_bfloat16(x)); };
      float fs = h(static_cast<float>(start)), fe = h(static_cast<float>(stop));
      float t = h(static_cast<float>(i) / static_cast<float>(div));
      v = h(h(fs * h(1.0f - t)) + h(fe * t));
    } else {
      float fs = static_cast<float>(start), fe = static_cast<float>(stop);
      float r = 1.0f / static_cast<float>(div), fi = static_cast<float>(i);
      float c = loop.folded(i) ? 1.0f - fi * r : std::fma(-fi, r, 1.0f);
      if (constant_bounds && loop.folded(i) && is_inexact(d)) {
        volatile float start_part = fs * c, stop_part = fi * (fe * r); // (rounded each)
        v = start_part + stop_part;
      } else {
        v = loop.fuses_start(i) ? std::fma(fs, c, (fe * r) * fi) : std::fma(fe * r, fi, fs * c);
      }
    }
    if (!is_inexact(d) && d != DType::Bool) v = std::floor(v);
    a.set(i, Scalar::of_float(v));
  }
  return cx.constant(std::move(a));
}

std::vector<Tensor> linspace_terms(OpContext& cx, int64_t num, bool endpoint, bool inexact) {
  int64_t div = endpoint ? num - 1 : num;
  LinspaceLoop loop = linspace_loop(num, div, inexact);
  float r = 1.0f / static_cast<float>(div);
  Array index(DType::Float32, {div}), rest(DType::Float32, {div}), fuse(DType::Bool, {div});
  for (int64_t i = 0; i < div; ++i) {
    float fi = static_cast<float>(i);
    index.set(i, Scalar::of_float(fi));
    rest.set(i, Scalar::of_float(loop.folded(i) ? 1.0f - fi * r : std::fma(-fi, r, 1.0f)));
    fuse.set(i, Scalar::of_bool(loop.fuses_start(i)));
  }
  Array step(DType::Float32, {});
  step.set(0, Scalar::of_float(r));
  return {cx.constant(std::move(index)), cx.constant(std::move(rest)), cx.constant(std::move(fuse)),
          cx.constant(std::move(step))};
}

Tensor eye(OpContext& cx, int64_t n, std::optional<int64_t> m, int64_t k, DType dtype) {
  int64_t cols = m ? *m : n;
  if (n < 0 || cols < 0) throw Error(ErrCode::Value, "eye: negative dimensions are not allowed");
  // JAX's _eye: row + k == col, from iotas (so a jaxpr shows JAX's steps).
  Shape s{n, cols};
  Scalar kk = Scalar::of_int(std::clamp<int64_t>(k, -(int64_t{1} << 31), (int64_t{1} << 31) - 1));
  Tensor rows = iota(cx, DType::Int32, s, 0), cols_iota = iota(cx, DType::Int32, s, 1);
  Tensor shifted = bind(cx, Op::Add, {}, {rows, fill(cx, s, kk, DType::Int32, false)});
  Tensor mask = bind(cx, Op::Eq, {}, {shifted, cols_iota});
  return convert(cx, mask, dtype, false);
}

Tensor astype(OpContext& cx, const Tensor& x, DType dtype) { return convert(cx, x, dtype, false); }

} // namespace pxl::np
