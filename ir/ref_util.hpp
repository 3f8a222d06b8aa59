// Helpers shared by the reference kernels (ir/ref_*.cpp): typed element access,
// dtype dispatch, index iteration and elementwise maps. Internal to ir/.
#pragma once
#include <cmath>
#include <complex>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ir/op.hpp"
#include "lang/diag.hpp"
#include "runtime/array.hpp"

namespace pxl::ref {

// Storage type S and compute type C of each dtype. float16/bfloat16 compute in
// float and round on store (JAX/XLA's CPU behaviour for half types).
template <DType D> struct Elem;
template <> struct Elem<DType::Bool> {
  using S = uint8_t;
  using C = bool;
  static C load(S s) { return s != 0; }
  static S store(C c) { return c ? 1 : 0; }
};
// Integers compute in their own type, so arithmetic wraps at their width.
template <class T> struct IntElem {
  using S = T;
  using C = T;
  static C load(S s) { return s; }
  static S store(C c) { return c; }
};
// The narrow integers compute in a byte and wrap to their width when stored
// (sums, products and quotients agree modulo 2^bits with the byte's).
template <class T, int Bits> struct NarrowIntElem {
  using S = T;
  using C = T;
  static C load(S s) { return s; }
  static S store(C c) {
    constexpr unsigned kMask = (1u << Bits) - 1;
    unsigned u = static_cast<unsigned>(c) & kMask;
    if (std::is_signed_v<T> && (u >> (Bits - 1)) != 0) u |= ~kMask; // sign-extend
    return static_cast<T>(u);
  }
};
template <> struct Elem<DType::Int2> : NarrowIntElem<int8_t, 2> {};
template <> struct Elem<DType::Int4> : NarrowIntElem<int8_t, 4> {};
template <> struct Elem<DType::UInt2> : NarrowIntElem<uint8_t, 2> {};
template <> struct Elem<DType::UInt4> : NarrowIntElem<uint8_t, 4> {};
template <> struct Elem<DType::Int8> : IntElem<int8_t> {};
template <> struct Elem<DType::UInt8> : IntElem<uint8_t> {};
template <> struct Elem<DType::Int16> : IntElem<int16_t> {};
template <> struct Elem<DType::UInt16> : IntElem<uint16_t> {};
template <> struct Elem<DType::Int32> : IntElem<int32_t> {};
template <> struct Elem<DType::UInt32> : IntElem<uint32_t> {};
template <> struct Elem<DType::Float16> {
  using S = uint16_t;
  using C = float;
  static C load(S s) { return half_to_float(s); }
  static S store(C c) { return float_to_half(c); }
};
template <> struct Elem<DType::BFloat16> {
  using S = uint16_t;
  using C = float;
  static C load(S s) { return bfloat16_to_float(s); }
  static S store(C c) { return float_to_bfloat16(c); }
};
// The small floats compute in float and round on store, like the half types.
template <DType D> struct SmallFloatElem {
  using S = uint8_t;
  using C = float;
  static C load(S s) { return static_cast<C>(small_to_float(D, s)); }
  static S store(C c) { return float_to_small(D, c); }
};
template <> struct Elem<DType::Float8E4M3FN> : SmallFloatElem<DType::Float8E4M3FN> {};
template <> struct Elem<DType::Float8E5M2> : SmallFloatElem<DType::Float8E5M2> {};
template <> struct Elem<DType::Float8E4M3FNUZ> : SmallFloatElem<DType::Float8E4M3FNUZ> {};
template <> struct Elem<DType::Float8E5M2FNUZ> : SmallFloatElem<DType::Float8E5M2FNUZ> {};
template <> struct Elem<DType::Float8E4M3B11FNUZ> : SmallFloatElem<DType::Float8E4M3B11FNUZ> {};
template <> struct Elem<DType::Float8E4M3> : SmallFloatElem<DType::Float8E4M3> {};
template <> struct Elem<DType::Float8E3M4> : SmallFloatElem<DType::Float8E3M4> {};
template <> struct Elem<DType::Float8E8M0FNU> : SmallFloatElem<DType::Float8E8M0FNU> {};
template <> struct Elem<DType::Float4E2M1FN> : SmallFloatElem<DType::Float4E2M1FN> {};
template <> struct Elem<DType::Float32> {
  using S = float;
  using C = float;
  static C load(S s) { return s; }
  static S store(C c) { return c; }
};
template <> struct Elem<DType::Float64> {
  using S = double;
  using C = double;
  static C load(S s) { return s; }
  static S store(C c) { return c; }
};

// complex64 computes in std::complex<float> (XLA's CPU complex arithmetic).
template <> struct Elem<DType::Complex64> {
  using S = std::complex<float>;
  using C = std::complex<float>;
  static C load(S s) { return s; }
  static S store(C c) { return c; }
};

// Calls f.template operator()<D>() for the runtime dtype d.
template <class F> decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
  case DType::Bool:
    return f.template operator()<DType::Bool>();
  case DType::Int8:
    return f.template operator()<DType::Int8>();
  case DType::UInt8:
    return f.template operator()<DType::UInt8>();
  case DType::Int16:
    return f.template operator()<DType::Int16>();
  case DType::UInt16:
    return f.template operator()<DType::UInt16>();
  case DType::Int32:
    return f.template operator()<DType::Int32>();
  case DType::UInt32:
    return f.template operator()<DType::UInt32>();
  case DType::Float16:
    return f.template operator()<DType::Float16>();
  case DType::BFloat16:
    return f.template operator()<DType::BFloat16>();
  case DType::Float32:
    return f.template operator()<DType::Float32>();
  case DType::Float64:
    return f.template operator()<DType::Float64>();
  case DType::Complex64:
    return f.template operator()<DType::Complex64>();
  case DType::Int2:
    return f.template operator()<DType::Int2>();
  case DType::Int4:
    return f.template operator()<DType::Int4>();
  case DType::UInt2:
    return f.template operator()<DType::UInt2>();
  case DType::UInt4:
    return f.template operator()<DType::UInt4>();
  case DType::Float8E4M3FN:
    return f.template operator()<DType::Float8E4M3FN>();
  case DType::Float8E5M2:
    return f.template operator()<DType::Float8E5M2>();
  case DType::Float8E4M3FNUZ:
    return f.template operator()<DType::Float8E4M3FNUZ>();
  case DType::Float8E5M2FNUZ:
    return f.template operator()<DType::Float8E5M2FNUZ>();
  case DType::Float8E4M3B11FNUZ:
    return f.template operator()<DType::Float8E4M3B11FNUZ>();
  case DType::Float8E4M3:
    return f.template operator()<DType::Float8E4M3>();
  case DType::Float8E3M4:
    return f.template operator()<DType::Float8E3M4>();
  case DType::Float8E8M0FNU:
    return f.template operator()<DType::Float8E8M0FNU>();
  case DType::Float4E2M1FN:
    return f.template operator()<DType::Float4E2M1FN>();
  }
  internal_error(__FILE__, __LINE__, "bad dtype");
}

// Dtype classes a kernel is instantiated for (the shape rule already rejected
// the others, so a mismatch here is an internal error).
// kAny is the ordered dtypes (complex has no order).
enum Kinds : unsigned { kBool = 1, kInt = 2, kFloat = 4, kNum = 6, kAny = 7, kComplex = 8 };
template <DType D> constexpr bool in_kinds(unsigned k) {
  if constexpr (D == DType::Bool)
    return k & kBool;
  else if constexpr (D == DType::Complex64)
    return k & kComplex;
  else if constexpr (!is_floating(D))
    return k & kInt;
  else
    return k & kFloat;
}

inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// The flat offsets of the elements of a box of `shape` over `axes`, in
// row-major order of those axes (each axis's offset from `strides`).
inline std::vector<int64_t> box_offsets(const Shape& shape, const std::vector<int64_t>& axes,
                                        const std::vector<int64_t>& strides) {
  std::vector<int64_t> offs{0};
  for (int64_t ax : axes) {
    std::vector<int64_t> next;
    next.reserve(offs.size() * static_cast<size_t>(shape[static_cast<size_t>(ax)]));
    for (int64_t o : offs)
      for (int64_t i = 0; i < shape[static_cast<size_t>(ax)]; ++i)
        next.push_back(o + i * strides[static_cast<size_t>(ax)]);
    offs = std::move(next);
  }
  return offs;
}

// Calls f(idx, flat) for every multi-index of `shape` in row-major order.
template <class F> void for_each_index(const Shape& shape, F&& f) {
  int64_t n = shape_size(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(static_cast<const std::vector<int64_t>&>(idx), flat);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// Integer arithmetic that wraps instead of overflowing (signed overflow is UB in
// C++). U is at least `unsigned`: narrower types would promote to (signed) int,
// and uint16 * uint16 can overflow an int.
template <class T> using WrapU = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
template <class T> T wrap_add(T a, T b) {
  using U = WrapU<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T> T wrap_sub(T a, T b) {
  using U = WrapU<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T> T wrap_mul(T a, T b) {
  using U = WrapU<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

template <class T> constexpr bool is_float_v = std::is_floating_point_v<T>;
template <class T> struct is_complex_t : std::false_type {};
template <class T> struct is_complex_t<std::complex<T>> : std::true_type {};
template <class T> constexpr bool is_complex_v = is_complex_t<T>::value;
template <class T> constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// out[i] = fn(x[i]), result dtype x's, or bool when `Pred` (is_finite).
template <unsigned K, bool Pred = false, class Fn>
void map_unary(const Array& x, Array& out, Fn fn) {
  visit_dtype(x.dtype(), [&]<DType D>() {
    if constexpr (in_kinds<D>(K)) {
      using E = Elem<D>;
      using O = std::conditional_t<Pred, Elem<DType::Bool>, E>;
      const auto* xs = x.as<typename E::S>();
      auto* os = out.as<typename O::S>();
      for (int64_t i = 0; i < x.size(); ++i)
        os[i] = O::store(static_cast<typename O::C>(fn(E::load(xs[i]))));
    } else {
      internal_error(__FILE__, __LINE__, "map_unary: unexpected dtype");
    }
  });
}

// out[i] = fn(a[i], b[i]); `Pred` selects a bool result (comparisons).
template <unsigned K, bool Pred = false, class Fn>
void map_binary(const Array& a, const Array& b, Array& out, Fn fn) {
  visit_dtype(a.dtype(), [&]<DType D>() {
    if constexpr (in_kinds<D>(K)) {
      using E = Elem<D>;
      using O = std::conditional_t<Pred, Elem<DType::Bool>, E>;
      const auto* as = a.as<typename E::S>();
      const auto* bs = b.as<typename E::S>();
      auto* os = out.as<typename O::S>();
      for (int64_t i = 0; i < a.size(); ++i)
        os[i] = O::store(static_cast<typename O::C>(fn(E::load(as[i]), E::load(bs[i]))));
    } else {
      internal_error(__FILE__, __LINE__, "map_binary: unexpected dtype");
    }
  });
}

// a < b, a <= b: complex64 compares lexicographically (real part, then
// imaginary part), as XLA does.
template <class T> bool less(T a, T b) {
  if constexpr (is_complex_v<T>)
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  else
    return a < b;
}
template <class T> bool less_equal(T a, T b) {
  if constexpr (is_complex_v<T>)
    return a.real() < b.real() || (a.real() == b.real() && a.imag() <= b.imag());
  else
    return a <= b;
}

// NaN-propagating max/min (lax.max/min, jnp.maximum/minimum).
template <bool Max, class T> T nan_extremum(T a, T b) {
  if constexpr (is_complex_v<T>) {
    return (Max ? less(b, a) : less(a, b)) ? a : b;
  } else {
    if constexpr (is_float_v<T>) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
      // -0 orders below +0, as in XLA's max/min.
      bool sa = std::signbit(static_cast<double>(a)), sb = std::signbit(static_cast<double>(b));
      if (a == b && sa != sb) return sa == Max ? b : a;
    }
    return (Max ? a > b : a < b) ? a : b;
  }
}
template <class T> T nan_max(T a, T b) { return nan_extremum<true>(a, b); }
template <class T> T nan_min(T a, T b) { return nan_extremum<false>(a, b); }

// Kernels too long to write inline in ref_kernels.cpp's switch.
Array convert(const Array& x, const AVal& out);
Array iota(const OpAttrs& a, const AVal& out);
Array broadcast_in_dim(const Array& x, const OpAttrs& a, const AVal& out);
Array transpose(const Array& x, const std::vector<int64_t>& perm, const AVal& out);
Array slice(const Array& x, const OpAttrs& a, const AVal& out);
Array rev(const Array& x, const OpAttrs& a, const AVal& out);
Array concatenate(std::span<const Array> xs, const OpAttrs& a, const AVal& out);
Array pad(const Array& x, const Array& value, const OpAttrs& a, const AVal& out);
enum class Reduction { Sum, Prod, Max, Min, And, Or };
Array reduce(Reduction r, const Array& x, const OpAttrs& a, const AVal& out);
Array arg_reduce(bool is_max, const Array& x, const OpAttrs& a, const AVal& out);
Array cumsum(const Array& x, const OpAttrs& a, const AVal& out);
Array fft(const Array& x, const OpAttrs& a, const AVal& out);     // ref_fft.cpp
Array argsort(const Array& x, const OpAttrs& a, const AVal& out); // ref_sort.cpp
Array dot_general(const Array& l, const Array& r, const OpAttrs& a, const AVal& out);
// sum over a.axes of l * r, the products fused in (ir/ref_mul_reduce.cpp).
Array mul_reduce_sum(const Array& l, const Array& r, const OpAttrs& a, const AVal& out);
// cholesky, triangular_solve, lu, qr, eigh, svd, eig, schur (ir/ref_linalg.cpp).
Array linalg(Op op, std::span<const Array> in, const OpAttrs& a, const AVal& out);
// eig and schur (ir/ref_eig.cpp), which linalg hands on.
Array eig_schur(Op op, const Array& x, const OpAttrs& a, const AVal& out);
// dot_general's dims of an operand of rank `rank` that are neither batch nor
// contracting, and the product of `dims` of shape `s` (also the CUDA gemm's).
std::vector<int64_t> free_dims(int rank, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contract);
int64_t prod_dims(const Shape& s, const std::vector<int64_t>& dims);
Array take(const Array& x, const Array& idx, const OpAttrs& a, const AVal& out);
Array scatter(const Array& x, const Array& idx, const Array& upd, const OpAttrs& a,
              const AVal& out);
// scatter's update of `out`'s own elements (out holds the operand's): what a
// scatter that may take its operand's bytes runs (runtime/spmd_steps.hpp).
void scatter_into(Array& out, const Array& idx, const Array& upd, const OpAttrs& a);

} // namespace pxl::ref
