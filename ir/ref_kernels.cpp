// The reference interpreter of the primitives: one case per op. Elementwise
// math is written inline here; longer kernels live in ref_structural.cpp,
// ref_reduce.cpp, ref_dot.cpp and ref_index.cpp.
#include <cmath>
#include <limits>
#include <vector>

#include "ir/ref_complex.hpp"
#include "ir/ref_in_place.hpp"
#include "ir/ref_math.hpp"
#include "ir/ref_util.hpp"
#include "runtime/threefry.hpp"

namespace pxl {

namespace {

using namespace ref;

template <class T> T int_div(T a, T b) {
  // XLA's integer division: x / 0 = -1 (all bits set), INT_MIN / -1 = INT_MIN.
  if (b == 0) return static_cast<T>(-1);
  if constexpr (std::is_signed_v<T>)
    if (a == std::numeric_limits<T>::min() && b == -1) return a;
  return a / b;
}

template <class T> T int_rem(T a, T b) {
  // XLA: x % 0 = x, INT_MIN % -1 = 0.
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>)
    if (a == std::numeric_limits<T>::min() && b == -1) return 0;
  return a % b;
}

template <class T> T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) { // only +-1 have integer reciprocals; XLA gives 0 otherwise
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? -1 : 1;
      return 0;
    }
  }
  T result = 1;
  while (exp != 0) {
    if (exp & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exp = static_cast<T>(static_cast<std::make_unsigned_t<T>>(exp) >> 1);
  }
  return result;
}

// Shifts by >= the bit width give 0 (or the sign fill), like XLA.
template <class T> T shift_left(T a, T s) {
  using U = std::make_unsigned_t<T>;
  U n = static_cast<U>(s);
  return n >= 8 * sizeof(T) ? T(0) : static_cast<T>(static_cast<U>(a) << n);
}
template <class T> T shift_right_logical(T a, T s) {
  using U = std::make_unsigned_t<T>;
  U n = static_cast<U>(s);
  return n >= 8 * sizeof(T) ? T(0) : static_cast<T>(static_cast<U>(a) >> n);
}
// XLA's arithmetic shift reads the bits as signed also for unsigned types.
template <class T> T shift_right_arithmetic(T a, T s) {
  using U = std::make_unsigned_t<T>;
  using I = std::make_signed_t<T>;
  U n = static_cast<U>(s);
  I v = static_cast<I>(a);
  return static_cast<T>(n >= 8 * sizeof(T) ? (v < 0 ? I(-1) : I(0)) : I(v >> n));
}

// The shifts of a narrow integer (int2/int4/uint2/uint4) at its own width:
// the count is read unsigned at that width, and the arithmetic shift's sign is
// the width's top bit for the unsigned types too (the i2/i4 LLVM computes on).
Array narrow_shift(Op op, const Array& x, const Array& s, Array out) {
  const int bits = dtype_bits(x.dtype());
  const int64_t mask = (int64_t{1} << bits) - 1;
  for (int64_t i = 0; i < out.size(); ++i) {
    const int64_t v = x.get(i).i & mask, n = s.get(i).i & mask;
    const int64_t sv = (v >> (bits - 1)) != 0 ? v - (mask + 1) : v; // sign-extended
    int64_t r;
    if (op == Op::ShiftLeft)
      r = n >= bits ? 0 : v << n;
    else if (op == Op::ShiftRightLogical)
      r = n >= bits ? 0 : v >> n;
    else
      r = n >= bits ? (sv < 0 ? -1 : 0) : sv >> n;
    out.set(i, Scalar::of_int(r)); // wraps to the width
  }
  return out;
}

// Calls f32(v) or f64(v) by the compute type (half types compute in float32).
template <class F32, class F64> auto by_width(F32 f32, F64 f64) {
  return [=](auto v) {
    if constexpr (std::is_same_v<decltype(v), double>)
      return f64(v);
    else
      return f32(v);
  };
}

// Calls real(v) for real compute types and cx(v) for complex64.
template <class R, class Cx> auto or_cx(R real, Cx cx) {
  return [=](auto v) {
    if constexpr (is_complex_v<decltype(v)>)
      return cx(v);
    else
      return real(v);
  };
}
template <class R, class Cx> auto or_cx2(R real, Cx cx) {
  return [=](auto x, auto y) {
    if constexpr (is_complex_v<decltype(x)>)
      return cx(x, y);
    else
      return real(x, y);
  };
}

// out[i] = fn(x[i]) from complex64 to float32 (real, imag, abs).
template <class Fn> Array complex_to_real(const Array& x, Array out, Fn fn) {
  const auto* xs = x.as<std::complex<float>>();
  auto* os = out.as<float>();
  for (int64_t i = 0; i < x.size(); ++i) os[i] = fn(xs[i]);
  return out;
}

xla::Round rounding_of(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || is_small_float(d) ? d : DType::Float32;
}

Array select(const Array& p, const Array& t, const Array& f, Array out) {
  const auto* ps = p.as<uint8_t>();
  bool scalar_pred = p.ndim() == 0;
  visit_dtype(t.dtype(), [&]<DType D>() {
    using S = typename Elem<D>::S;
    const S* ts = t.as<S>();
    const S* fs = f.as<S>();
    S* os = out.as<S>();
    for (int64_t i = 0; i < out.size(); ++i) os[i] = ps[scalar_pred ? 0 : i] ? ts[i] : fs[i];
  });
  return out;
}

Array eval(Op op, const OpAttrs& a, std::span<const Array> in);

// `out` (exp or log of `x`) with the elements that XLA computes with the C
// library's function `libm` when the op asks for it (OpAttrs::libm_tail).
template <class Fn> Array with_libm_tail(const OpAttrs& a, const Array& x, Array out, Fn libm) {
  int64_t start = xla::libm_tail_start(x.ndim(), x.size());
  if (!a.libm_tail || x.dtype() != DType::Float32 || start < 0) return out;
  const float* xs = x.as<float>();
  float* os = out.as<float>();
  for (int64_t i = start; i < x.size(); ++i) os[i] = libm(xs[i]);
  return out;
}

// integer_pow as XLA expands it: products by squaring, each rounded in the
// operand's dtype by the mul kernel, then 1 / acc for a negative exponent.
Array integer_pow(const Array& base, int64_t n) {
  auto mul = [](const Array& p, const Array& q) {
    Array pq[] = {p, q};
    return eval(Op::Mul, {}, pq);
  };
  Array x = base;
  std::optional<Array> acc;
  for (uint64_t e = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n); e > 0;) {
    if (e & 1) acc = acc ? mul(x, *acc) : x; // (XLA's operand order: complex products round by it)
    e >>= 1;
    if (e > 0) x = mul(x, x);
  }
  Array one(base.dtype(), base.shape(), base.weak_type());
  for (int64_t i = 0; i < one.size(); ++i) one.set(i, Scalar::of_int(1));
  if (!acc) return one;
  if (n > 0) return *acc;
  Array quotient[] = {one, *acc};
  return eval(Op::Div, {}, quotient);
}

Array eval(Op op, const OpAttrs& a, std::span<const Array> in) {
  std::vector<AVal> avals;
  for (const Array& x : in) avals.push_back(x.aval());
  AVal oa = infer(op, a, avals);
  auto fresh = [&] { return Array(oa.dtype, oa.shape, oa.weak); };
  auto un = [&]<unsigned K, bool Pred = false>(auto fn) {
    Array out = fresh();
    map_unary<K, Pred>(in[0], out, fn);
    return out;
  };
  auto bin = [&]<unsigned K, bool Pred = false>(auto fn) {
    Array out = fresh();
    map_binary<K, Pred>(in[0], in[1], out, fn);
    return out;
  };
  const bool shift =
      op == Op::ShiftLeft || op == Op::ShiftRightLogical || op == Op::ShiftRightArithmetic;
  if (shift && is_narrow_int(oa.dtype)) return narrow_shift(op, in[0], in[1], fresh());
  switch (op) {
  // ---- unary ----
  case Op::Neg:
    return un.template operator()<kNum | kComplex>([](auto v) {
      if constexpr (is_int_v<decltype(v)>)
        return wrap_sub(decltype(v)(0), v);
      else
        return -v;
    });
  case Op::Exp:
    return with_libm_tail(a, in[0],
                          un.template operator()<kFloat | kComplex>(
                              or_cx(by_width(xla::exp_f32, xla::exp_f64), cplx::exp)),
                          [](float v) { return std::exp(v); });
  case Op::Log:
    return with_libm_tail(
        a, in[0],
        un.template operator()<kFloat | kComplex>(
            or_cx(by_width(xla::log_f32, [](double v) { return std::log(v); }), cplx::log)),
        [](float v) { return std::log(v); });
  case Op::Log1p:
    return un.template operator()<kFloat | kComplex>(
        or_cx(by_width(xla::log1p_f32, xla::log1p_f64), cplx::log1p));
  case Op::Expm1:
    return un.template operator()<kFloat | kComplex>(or_cx(
        // XLA expands a float16 expm1 in float16 steps but a bfloat16 one in
        // float32 (JAX's bfloat16 results are the float32 value rounded once).
        by_width([r = in[0].dtype() == DType::Float16 || is_small_float(in[0].dtype())
                          ? in[0].dtype()
                          : DType::Float32](float v) { return xla::expm1_f32(v, r); },
                 xla::expm1_f64),
        cplx::expm1));
  case Op::Sqrt:
    return un.template operator()<kFloat | kComplex>(
        or_cx([](auto v) { return std::sqrt(v); }, cplx::sqrt));
  case Op::Rsqrt:
    return un.template operator()<kFloat | kComplex>(
        or_cx(by_width(xla::rsqrt_f32, xla::rsqrt_f64), cplx::rsqrt));
  case Op::Tanh:
    return un.template operator()<kFloat | kComplex>(
        or_cx(by_width(xla::tanh_f32, xla::tanh_f64), cplx::tanh));
  case Op::Sin:
    return un.template operator()<kFloat | kComplex>(
        or_cx(by_width(xla::sin_f32, [](double v) { return std::sin(v); }), cplx::sin));
  case Op::Cos:
    return un.template operator()<kFloat | kComplex>(
        or_cx(by_width(xla::cos_f32, [](double v) { return std::cos(v); }), cplx::cos));
  case Op::Tan:
    return un.template operator()<kFloat | kComplex>(
        or_cx([](auto v) { return std::tan(v); }, cplx::tan));
  case Op::Cbrt: // (float16 and bfloat16 in float32, rounded once, as XLA's)
    return un.template operator()<kFloat>([](auto v) { return std::cbrt(v); });
  case Op::Abs:
    if (is_complex(in[0].dtype())) return complex_to_real(in[0], fresh(), cplx::abs);
    return un.template operator()<kNum>([](auto v) {
      using T = decltype(v);
      if constexpr (std::is_unsigned_v<T>)
        return v;
      else if constexpr (is_int_v<T>)
        return v < 0 ? wrap_sub(T(0), v) : v;
      else
        return std::abs(v);
    });
  case Op::Sign:
    return un.template operator()<kNum | kComplex>([](auto v) {
      using T = decltype(v);
      if constexpr (is_complex_v<T>)
        return cplx::sign(v);
      else if constexpr (std::is_unsigned_v<T>)
        return T(v > 0);
      else if constexpr (is_int_v<T>)
        return T((v > 0) - (v < 0));
      else
        return std::isnan(v) || v == 0 ? v : (v > 0 ? T(1) : T(-1)); // keeps -0.0, NaN
    });
  case Op::Floor:
    return un.template operator()<kFloat>([](auto v) { return std::floor(v); });
  case Op::Ceil:
    return un.template operator()<kFloat>([](auto v) { return std::ceil(v); });
  case Op::Round:
    // nearbyint in the default rounding mode rounds half to even, as numpy does.
    return un.template operator()<kFloat>([](auto v) { return std::nearbyint(v); });
  case Op::IsFinite:
    return un.template operator()<kFloat | kComplex, true>(
        or_cx([](auto v) { return std::isfinite(v); }, cplx::is_finite));
  case Op::Logistic:
    return un.template operator()<kFloat>(
        by_width([r = rounding_of(in[0].dtype())](float v) { return xla::logistic_f32(v, r); },
                 xla::logistic_f64));
  case Op::Erf:
    return un.template operator()<kFloat>(
        by_width(xla::erf_f32, [](double v) { return std::erf(v); }));
  case Op::ErfInv:
    return un.template operator()<kFloat>(by_width(xla::erf_inv_f32, xla::erf_inv_f64));
  case Op::Not:
    return un.template operator()<kBool | kInt>([](auto v) {
      if constexpr (std::is_same_v<decltype(v), bool>)
        return !v;
      else
        return decltype(v)(~v);
    });
  case Op::IntegerPow:
    return integer_pow(in[0], a.exponent);
  case Op::Square: {
    if (is_complex(in[0].dtype()))
      return un.template operator()<kComplex>([](auto v) { return cplx::square(v); });
    Array xx[] = {in[0], in[0]};
    return eval(Op::Mul, {}, xx);
  }
  case Op::Real:
    return complex_to_real(in[0], fresh(), [](std::complex<float> z) { return z.real(); });
  case Op::Imag:
    return complex_to_real(in[0], fresh(), [](std::complex<float> z) { return z.imag(); });
  case Op::ShardingConstraint:
    return in[0];
  case Op::Conj:
    return un.template operator()<kComplex>([](auto v) { return std::conj(v); });
  // ---- binary ----
  case Op::Add:
    return bin.template operator()<kNum | kComplex>([](auto x, auto y) {
      if constexpr (is_int_v<decltype(x)>)
        return wrap_add(x, y);
      else
        return x + y;
    });
  case Op::Sub:
    return bin.template operator()<kNum | kComplex>([](auto x, auto y) {
      if constexpr (is_int_v<decltype(x)>)
        return wrap_sub(x, y);
      else
        return x - y;
    });
  case Op::Mul:
    return bin.template operator()<kNum | kComplex>([&a](auto x, auto y) {
      if constexpr (is_int_v<decltype(x)>)
        return wrap_mul(x, y);
      else if constexpr (is_complex_v<decltype(x)>)
        return a.scalar_lhs ? cplx::mul(y, x, true) : cplx::mul(x, y, a.scalar_rhs);
      else
        return x * y;
    });
  case Op::Div:
    return bin.template operator()<kNum | kComplex>([](auto x, auto y) {
      if constexpr (is_int_v<decltype(x)>)
        return int_div(x, y);
      else if constexpr (is_complex_v<decltype(x)>)
        return cplx::div(x, y);
      else
        return x / y;
    });
  case Op::Rem:
    return bin.template operator()<kNum>([](auto x, auto y) {
      if constexpr (is_int_v<decltype(x)>)
        return int_rem(x, y);
      else
        return std::fmod(x, y);
    });
  case Op::Pow:
    return bin.template operator()<kNum | kComplex>([](auto x, auto y) {
      if constexpr (is_int_v<decltype(x)>)
        return int_pow(x, y);
      else if constexpr (is_complex_v<decltype(x)>)
        return cplx::pow(x, y);
      else if constexpr (std::is_same_v<decltype(x), float>)
        return xla::pow_f32(x, y);
      else
        return std::pow(x, y);
    });
  case Op::Max:
    return bin.template operator()<kAny | kComplex>([](auto x, auto y) { return nan_max(x, y); });
  case Op::Min:
    return bin.template operator()<kAny | kComplex>([](auto x, auto y) { return nan_min(x, y); });
  case Op::And:
    return bin.template operator()<kBool | kInt>([](auto x, auto y) { return x & y; });
  case Op::Or:
    return bin.template operator()<kBool | kInt>([](auto x, auto y) { return x | y; });
  case Op::Xor:
    return bin.template operator()<kBool | kInt>([](auto x, auto y) { return x ^ y; });
  case Op::Atan2:
    return bin.template operator()<kFloat>([](auto x, auto y) {
      if constexpr (std::is_same_v<decltype(x), float>)
        return xla::atan2_f32(x, y);
      else
        return std::atan2(x, y);
    });
  case Op::ShiftLeft:
    return bin.template operator()<kInt>([](auto x, auto y) { return shift_left(x, y); });
  case Op::ShiftRightLogical:
    return bin.template operator()<kInt>([](auto x, auto y) { return shift_right_logical(x, y); });
  case Op::ShiftRightArithmetic:
    return bin.template operator()<kInt>(
        [](auto x, auto y) { return shift_right_arithmetic(x, y); });
  case Op::Complex: {
    Array out = fresh();
    const float *re = in[0].as<float>(), *im = in[1].as<float>();
    auto* os = out.as<std::complex<float>>();
    for (int64_t i = 0; i < out.size(); ++i) os[i] = {re[i], im[i]};
    return out;
  }
  case Op::Eq:
    return bin.template operator()<kAny | kComplex, true>([](auto x, auto y) { return x == y; });
  case Op::Ne:
    return bin.template operator()<kAny | kComplex, true>([](auto x, auto y) { return x != y; });
  case Op::Lt:
    return bin.template operator()<kAny | kComplex, true>(
        [](auto x, auto y) { return less(x, y); });
  case Op::Le:
    return bin.template operator()<kAny | kComplex, true>(
        [](auto x, auto y) { return less_equal(x, y); });
  case Op::Gt:
    return bin.template operator()<kAny | kComplex, true>(
        [](auto x, auto y) { return less(y, x); });
  case Op::Ge:
    return bin.template operator()<kAny | kComplex, true>(
        [](auto x, auto y) { return less_equal(y, x); });
  case Op::Select:
    return select(in[0], in[1], in[2], fresh());
  case Op::Fma: {
    Array out = fresh();
    visit_dtype(oa.dtype, [&]<DType D>() {
      if constexpr (in_kinds<D>(kFloat)) {
        using E = Elem<D>;
        const auto *x = in[0].as<typename E::S>(), *y = in[1].as<typename E::S>(),
                   *z = in[2].as<typename E::S>();
        auto* o = out.as<typename E::S>();
        for (int64_t i = 0; i < out.size(); ++i)
          o[i] = E::store(std::fma(E::load(x[i]), E::load(y[i]), E::load(z[i])));
      }
    });
    return out;
  }
  case Op::Threefry2x32: {
    Array out = fresh();
    const uint32_t *k0 = in[0].as<uint32_t>(), *k1 = in[1].as<uint32_t>(),
                   *x0 = in[2].as<uint32_t>(), *x1 = in[3].as<uint32_t>();
    auto* o = out.as<uint32_t>();
    for (int64_t i = 0; i < out.size(); ++i)
      o[i] = threefry2x32({k0[i], k1[i]}, x0[i], x1[i])[static_cast<size_t>(a.axis)];
    return out;
  }
  // ---- types ----
  case Op::ConvertElementType:
    return convert(in[0], oa);
  case Op::BitcastConvertType: {
    Array out = fresh();
    if (is_narrow_int(oa.dtype)) { // int4 <-> uint4: the same bits, extended anew
      for (int64_t i = 0; i < out.size(); ++i) out.set(i, in[0].get(i));
      return out;
    }
    std::memcpy(out.data(), in[0].data(), in[0].nbytes());
    return out;
  }
  case Op::Iota:
    return iota(a, oa);
  // ---- structural ----
  case Op::BroadcastInDim:
    return broadcast_in_dim(in[0], a, oa);
  case Op::Reshape:
    return in[0].reshaped(oa.shape).with_weak(oa.weak); // buffers are immutable
  case Op::Transpose:
    return transpose(in[0], a.perm, oa);
  case Op::Slice:
    return slice(in[0], a, oa);
  case Op::Rev:
    return rev(in[0], a, oa);
  case Op::Concatenate:
    return concatenate(in, a, oa);
  case Op::Pad:
    return pad(in[0], in[1], a, oa);
  // ---- reductions, scans ----
  case Op::ReduceSum:
    return reduce(Reduction::Sum, in[0], a, oa);
  case Op::ReduceMax:
    return reduce(Reduction::Max, in[0], a, oa);
  case Op::ReduceMin:
    return reduce(Reduction::Min, in[0], a, oa);
  case Op::ReduceProd:
    return reduce(Reduction::Prod, in[0], a, oa);
  case Op::ReduceAnd:
    return reduce(Reduction::And, in[0], a, oa);
  case Op::ReduceOr:
    return reduce(Reduction::Or, in[0], a, oa);
  case Op::Argmax:
    return arg_reduce(true, in[0], a, oa);
  case Op::Argmin:
    return arg_reduce(false, in[0], a, oa);
  case Op::Cumsum:
    return cumsum(in[0], a, oa);
  case Op::Fft:
    return fft(in[0], a, oa);
  case Op::Argsort:
    return argsort(in[0], a, oa);
  // ---- contraction, indexing ----
  case Op::DotGeneral:
    return dot_general(in[0], in[1], a, oa);
  case Op::MulReduceSum:
    return mul_reduce_sum(in[0], in[1], a, oa);
  case Op::Take:
    return take(in[0], in[1], a, oa);
  case Op::Cholesky:
  case Op::TriangularSolve:
  case Op::Lu:
  case Op::Qr:
  case Op::Eigh:
  case Op::Svd:
  case Op::Eig:
  case Op::Schur:
  case Op::Hessenberg:
  case Op::Tridiagonal:
  case Op::HouseholderProduct:
  case Op::Geqrf:
  case Op::Ormqr:
    return linalg(op, in, a, oa);
  case Op::Scatter:
    return scatter(in[0], in[1], in[2], a, oa);
  case Op::Psum:
  case Op::Pmax:
  case Op::Pmin:
  case Op::AllGather:
  case Op::PsumScatter:
  case Op::Ppermute:
  case Op::AllToAll:
  case Op::AxisIndex:
  case Op::DebugPrint:
  case Op::HostCallback:
  case Op::SpmdCall:
  case Op::While:
  case Op::CustomCall: // lowered before it runs (ir/custom_call.hpp)
    // Collectives need the other devices and effects the host: their kernel is
    // the SPMD executor's.
    break;
  }
  internal_error(__FILE__, __LINE__, std::string("no reference kernel for ") + op_name(op));
}

} // namespace

Array eval_ref(Op op, const OpAttrs& a, std::span<const Array> in) {
  xla::ScopedFlushDenormal ftz; // XLA's CPU runtime flushes denormals to zero
  Array out = eval(op, a, in);
  int device = in.empty() ? 0 : in[0].device(); // results stay on their operands' device
  return out.device() == device ? out : out.on_device(device);
}

bool updates_in_place(Op op) { return op == Op::Scatter; }

void eval_ref_in_place(Op op, const OpAttrs& a, Array& x, std::span<const Array> rest) {
  PXL_ASSERT(updates_in_place(op) && rest.size() == 2, "no in-place kernel for this op");
  xla::ScopedFlushDenormal ftz;
  scatter_into(x, rest[0], rest[1], a);
}

} // namespace pxl
