#include "runtime/collective_kernels.hpp"

#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pxl::coll {

namespace {

// Storage type T, accumulator A, and the conversions between them.
template <class T, class A> struct Plain {
  using Store = T;
  using Acc = A;
  static A load(T v) { return A(v); }
  static T store(A v) { return T(v); }
};
// The narrow integers (one per byte) accumulate in int and wrap to their
// width once, when stored.
template <DType D> struct Narrow {
  using Store = std::conditional_t<is_signed_int(D), int8_t, uint8_t>;
  using Acc = int32_t;
  static int32_t load(Store v) { return v; }
  static Store store(int32_t v) { return static_cast<Store>(wrap_to(D, v)); }
};
// The float8/float4 types accumulate in float and round once, as the half types.
template <DType D> struct SmallFloatTr {
  using Store = uint8_t;
  using Acc = float;
  static float load(uint8_t v) { return static_cast<float>(small_to_float(D, v)); }
  static uint8_t store(float v) { return float_to_small(D, v); }
};
struct Half {
  using Store = uint16_t;
  using Acc = float;
  static float load(uint16_t v) { return half_to_float(v); }
  static uint16_t store(float v) { return float_to_half(v); }
};
struct BHalf {
  using Store = uint16_t;
  using Acc = float;
  static float load(uint16_t v) {
    uint32_t bits = uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  static uint16_t store(float v) { return float_to_bfloat16(v); }
};

// Integer sums go through unsigned arithmetic so overflow wraps (as in XLA)
// instead of being undefined behaviour.
struct SumOp {
  template <class A> static A apply(A a, A b) {
    if constexpr (std::is_integral_v<A>)
      return A(std::make_unsigned_t<A>(a) + std::make_unsigned_t<A>(b));
    else
      return a + b;
  }
};
// NaN propagates (XLA's max/min): if a is NaN keep it; if b is NaN, a > b is
// false and b is chosen.
struct MaxOp {
  template <class A> static A apply(A a, A b) { return (a > b || a != a) ? a : b; }
};
struct MinOp {
  template <class A> static A apply(A a, A b) { return (a < b || a != a) ? a : b; }
};
struct OrOp {
  template <class A> static A apply(A a, A b) { return A(a | b); }
};
struct AndOp {
  template <class A> static A apply(A a, A b) { return A(a & b); }
};

// Blocks small enough that the accumulator stays in L1 while the inputs
// stream past it once each.
constexpr int64_t kBlock = 2048;

void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  size_t head = (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16;
  if (head > bytes) head = bytes;
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

// Non-temporal stores are weakly ordered: fence them before the barrier that
// publishes the outputs to other threads.
void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

template <class Tr, class Op>
void reduce_typed(const void* const* ins, int nins, void* const* outs, int nouts, int64_t n,
                  bool streaming) {
  using T = typename Tr::Store;
  using A = typename Tr::Acc;
  A acc[kBlock];
  T tmp[std::is_same_v<T, A> ? 1 : kBlock];
  // `len` is a compile-time constant for full blocks, so the loops have a
  // fixed trip count and the compiler vectorises them even at -O2.
  auto block = [&](int64_t base, auto len) {
    const T* in0 = static_cast<const T*>(ins[0]) + base;
    // XLA's all-reduce adds every participant's value to a +0 (so -0 from
    // each device sums to +0); one participant's value is passed through.
    if (std::is_same_v<Op, SumOp> && std::is_floating_point_v<A> && nins > 1)
      for (int64_t i = 0; i < len; ++i) acc[i] = Tr::load(in0[i]) + A(0);
    else
      for (int64_t i = 0; i < len; ++i) acc[i] = Tr::load(in0[i]);
    for (int r = 1; r < nins; ++r) {
      const T* in = static_cast<const T*>(ins[r]) + base;
      for (int64_t i = 0; i < len; ++i) acc[i] = Op::apply(acc[i], Tr::load(in[i]));
    }
    const void* src = acc;
    if constexpr (!std::is_same_v<T, A>) {
      // Round once, then copy the rounded block to every output.
      for (int64_t i = 0; i < len; ++i) tmp[i] = Tr::store(acc[i]);
      src = tmp;
    }
    for (int o = 0; o < nouts; ++o) {
      T* dst = static_cast<T*>(outs[o]) + base;
      if (streaming)
        stream_copy(dst, src, size_t(len) * sizeof(T));
      else
        std::memcpy(dst, src, size_t(len) * sizeof(T));
    }
  };
  int64_t base = 0;
  for (; base + kBlock <= n; base += kBlock) block(base, std::integral_constant<int64_t, kBlock>{});
  if (base < n) block(base, n - base);
  if (streaming) stream_fence();
}

template <class Tr>
void reduce_kind(ReduceKind kind, const void* const* ins, int nins, void* const* outs, int nouts,
                 int64_t n, bool st) {
  switch (kind) {
  case ReduceKind::Sum:
    return reduce_typed<Tr, SumOp>(ins, nins, outs, nouts, n, st);
  case ReduceKind::Max:
    return reduce_typed<Tr, MaxOp>(ins, nins, outs, nouts, n, st);
  case ReduceKind::Min:
    return reduce_typed<Tr, MinOp>(ins, nins, outs, nouts, n, st);
  }
}

} // namespace

void reduce(DType dtype, ReduceKind kind, const void* const* ins, int nins, void* const* outs,
            int nouts, int64_t n, bool st) {
  using B = Plain<uint8_t, uint8_t>;
  switch (dtype) {
  case DType::Bool:
    if (kind == ReduceKind::Min) return reduce_typed<B, AndOp>(ins, nins, outs, nouts, n, st);
    return reduce_typed<B, OrOp>(ins, nins, outs, nouts, n, st);
  case DType::Int8:
    return reduce_kind<Plain<int8_t, int8_t>>(kind, ins, nins, outs, nouts, n, st);
  case DType::UInt8:
    return reduce_kind<Plain<uint8_t, uint8_t>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Int16:
    return reduce_kind<Plain<int16_t, int16_t>>(kind, ins, nins, outs, nouts, n, st);
  case DType::UInt16:
    return reduce_kind<Plain<uint16_t, uint16_t>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Int2:
    return reduce_kind<Narrow<DType::Int2>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Int4:
    return reduce_kind<Narrow<DType::Int4>>(kind, ins, nins, outs, nouts, n, st);
  case DType::UInt2:
    return reduce_kind<Narrow<DType::UInt2>>(kind, ins, nins, outs, nouts, n, st);
  case DType::UInt4:
    return reduce_kind<Narrow<DType::UInt4>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float8E4M3FN:
    return reduce_kind<SmallFloatTr<DType::Float8E4M3FN>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float8E5M2:
    return reduce_kind<SmallFloatTr<DType::Float8E5M2>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float8E4M3FNUZ:
    return reduce_kind<SmallFloatTr<DType::Float8E4M3FNUZ>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float8E5M2FNUZ:
    return reduce_kind<SmallFloatTr<DType::Float8E5M2FNUZ>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float8E4M3B11FNUZ:
    return reduce_kind<SmallFloatTr<DType::Float8E4M3B11FNUZ>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float8E4M3:
    return reduce_kind<SmallFloatTr<DType::Float8E4M3>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float8E3M4:
    return reduce_kind<SmallFloatTr<DType::Float8E3M4>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float8E8M0FNU:
    return reduce_kind<SmallFloatTr<DType::Float8E8M0FNU>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float4E2M1FN:
    return reduce_kind<SmallFloatTr<DType::Float4E2M1FN>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Int32:
    return reduce_kind<Plain<int32_t, int32_t>>(kind, ins, nins, outs, nouts, n, st);
  case DType::UInt32:
    return reduce_kind<Plain<uint32_t, uint32_t>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float16:
    return reduce_kind<Half>(kind, ins, nins, outs, nouts, n, st);
  case DType::BFloat16:
    return reduce_kind<BHalf>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float32:
    return reduce_kind<Plain<float, float>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Float64:
    return reduce_kind<Plain<double, double>>(kind, ins, nins, outs, nouts, n, st);
  case DType::Complex64:
    // A sum of complex64 values is the sum of their float32 parts (complex
    // has no order: the shape rule rejects pmax/pmin of it, so only sums come).
    return reduce_kind<Plain<float, float>>(kind, ins, nins, outs, nouts, 2 * n, st);
  }
}

void copy(void* dst, const void* src, size_t bytes, bool streaming) {
  if (!streaming) {
    std::memcpy(dst, src, bytes);
    return;
  }
  stream_copy(dst, src, bytes);
  stream_fence();
}

} // namespace pxl::coll
