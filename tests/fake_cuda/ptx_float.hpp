// The floating-point formats of the emulator: f32 and f64 computed natively,
// f16 and bf16 computed in double and rounded once to their width (the only
// rounding for a single add/mul; innocuous for div/sqrt, as double has more
// than twice their precision plus two bits), in any of PTX's rounding modes.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

#include "ptx_decode.hpp"

namespace ptxemu {

inline float f32_of(uint32_t u) { return std::bit_cast<float>(u); }
inline uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
inline double f64_of(uint64_t u) { return std::bit_cast<double>(u); }
inline uint64_t bits_of(double d) { return std::bit_cast<uint64_t>(d); }

// A binary format with `man` stored mantissa bits and `exp` exponent bits.
struct Small {
  int man, exp;
};
constexpr Small kHalf{10, 5}, kBf16{7, 8};

// The value of a small format's bits, exactly.
double small_to_double(uint16_t bits, Small f);
// `x` rounded to the small format in mode `rnd` (RN ties to even); NaN gives
// the canonical 0x7fff.
uint16_t double_to_small(double x, Small f, int rnd);

// A subnormal flushed to zero of the same sign (.ftz), for a format whose
// smallest normal is `tiny`.
template <class C> inline C flush(C x, C tiny) {
  return std::fabs(x) < tiny && x != 0 ? std::copysign(C{0}, x) : x;
}

// The formats as used by the handler templates: C is the compute type, lanes
// the elements in a register (f16x2), dec/enc convert one element's bits.
struct Fmt32 {
  using C = float;
  static constexpr int lanes = 1, bits = 32;
  static C dec(uint64_t v) { return f32_of(static_cast<uint32_t>(v)); }
  template <int R> static uint64_t enc(C x) { return bits_of(x); }
  static C tiny() { return 0x1p-126f; }
  static C nan() { return f32_of(0x7fffffffu); }
};
struct Fmt64 {
  using C = double;
  static constexpr int lanes = 1, bits = 64;
  static C dec(uint64_t v) { return f64_of(v); }
  template <int R> static uint64_t enc(C x) { return bits_of(x); }
  static C tiny() { return 0x1p-1022; }
  static C nan() { return f64_of(0x7fffffffffffffffull); }
};
template <const Small& S, int Lanes> struct FmtSmall {
  using C = double;
  static constexpr int lanes = Lanes, bits = 16;
  static C dec(uint64_t v) { return small_to_double(static_cast<uint16_t>(v), S); }
  template <int R> static uint64_t enc(C x) { return double_to_small(x, S, R); }
  static C tiny() { return std::ldexp(1.0, 2 - (1 << (S.exp - 1))); }
  static C nan() { return std::nan(""); }
};
using FmtF16 = FmtSmall<kHalf, 1>;
using FmtF16x2 = FmtSmall<kHalf, 2>;
using FmtBF16 = FmtSmall<kBf16, 1>;
using FmtBF16x2 = FmtSmall<kBf16, 2>;

} // namespace ptxemu
