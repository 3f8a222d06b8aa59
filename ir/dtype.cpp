// Element types, JAX's promotion lattice (x64 disabled) and half/bfloat16 conversions.
#include "ir/dtype.hpp"

#include <bit>
#include <cmath>

namespace pxl {

size_t dtype_size(DType d) {
  switch (d) {
  case DType::Bool:
    return 1;
  case DType::Int32:
    return 4;
  case DType::UInt32:
    return 4;
  case DType::Float16:
    return 2;
  case DType::BFloat16:
    return 2;
  case DType::Float32:
    return 4;
  case DType::Float64:
    return 8;
  }
  return 0;
}

const char* dtype_name(DType d) {
  switch (d) {
  case DType::Bool:
    return "bool";
  case DType::Int32:
    return "int32";
  case DType::UInt32:
    return "uint32";
  case DType::Float16:
    return "float16";
  case DType::BFloat16:
    return "bfloat16";
  case DType::Float32:
    return "float32";
  case DType::Float64:
    return "float64";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  static constexpr DType all[] = {DType::Bool,     DType::Int32,   DType::UInt32, DType::Float16,
                                  DType::BFloat16, DType::Float32, DType::Float64};
  for (DType d : all)
    if (name == dtype_name(d)) return d;
  if (name == "bool_") return DType::Bool;
  return std::nullopt;
}

namespace {

// The nodes of JAX's promotion lattice that pxl's dtypes reach. IntW/FloatW are
// the weak (Python scalar) kinds; Int64 never survives: x64 is off, so it is
// canonicalised to int32 (uint32 + int32 -> int64 -> int32, as JAX does).
enum class Node { Bool, IntW, Int32, UInt32, FloatW, Float16, BFloat16, Float32, Float64 };

Node node_of(DType d, bool weak) {
  if (weak && is_integer(d)) return Node::IntW;
  if (weak && is_floating(d)) return Node::FloatW;
  switch (d) {
  case DType::Bool:
    return Node::Bool;
  case DType::Int32:
    return Node::Int32;
  case DType::UInt32:
    return Node::UInt32;
  case DType::Float16:
    return Node::Float16;
  case DType::BFloat16:
    return Node::BFloat16;
  case DType::Float32:
    return Node::Float32;
  case DType::Float64:
    return Node::Float64;
  }
  return Node::Float32;
}

PromotedType type_of(Node n) {
  switch (n) {
  case Node::Bool:
    return {DType::Bool, false};
  case Node::IntW:
    return {DType::Int32, true};
  case Node::Int32:
    return {DType::Int32, false};
  case Node::UInt32:
    return {DType::UInt32, false};
  case Node::FloatW:
    return {DType::Float32, true};
  case Node::Float16:
    return {DType::Float16, false};
  case Node::BFloat16:
    return {DType::BFloat16, false};
  case Node::Float32:
    return {DType::Float32, false};
  case Node::Float64:
    return {DType::Float64, false};
  }
  return {DType::Float32, false};
}

bool strong_int(Node n) { return n == Node::Int32 || n == Node::UInt32; }
// Rank of the strong floats: f16 and bf16 are incomparable (their join is f32).
int float_rank(Node n) {
  switch (n) {
  case Node::Float16:
  case Node::BFloat16:
    return 1;
  case Node::Float32:
    return 2;
  case Node::Float64:
    return 3;
  default:
    return 0;
  }
}

Node join(Node a, Node b) {
  if (a == b) return a;
  if (a == Node::Bool) return b;
  if (b == Node::Bool) return a;
  if (a == Node::IntW) return b; // everything else is above the weak int
  if (b == Node::IntW) return a;
  if (strong_int(a) && strong_int(b)) return Node::Int32; // int64, canonicalised
  if (strong_int(a)) return b;                            // b is FloatW or a strong float
  if (strong_int(b)) return a;
  if (a == Node::FloatW) return b;
  if (b == Node::FloatW) return a;
  // Both strong floats, different.
  int ra = float_rank(a), rb = float_rank(b);
  if (ra == rb) return Node::Float32; // float16 vs bfloat16
  return ra > rb ? a : b;
}

} // namespace

PromotedType promote_types(DType a, bool a_weak, DType b, bool b_weak) {
  // Equal types are their own join (this keeps e.g. a weak float16 a float16).
  if (a == b && a_weak == b_weak) return {a, a_weak && a != DType::Bool};
  return type_of(join(node_of(a, a_weak), node_of(b, b_weak)));
}

uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) { // inf or NaN; keep NaN quiet and non-zero
    if (mant == 0) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | (mant >> 13));
  }
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u); // overflow -> inf
  if (e <= 0) {
    // Subnormal half (or zero): shift the full significand, rounding to nearest even.
    if (e < -10) return sign;
    uint32_t m = mant | 0x800000u;
    int shift = 14 - e; // 24-bit significand -> (10 + e)-bit field
    uint32_t half = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  // Rounding may carry into the exponent, which correctly yields the next binade or inf.
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: value = mant * 2^-24, exact in float
      float v = std::ldexp(static_cast<float>(mant), -24);
      return sign ? -v : v;
    }
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u); // stay a quiet NaN
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb; // round to nearest even; overflow correctly becomes inf
  return static_cast<uint16_t>(x >> 16);
}

float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

} // namespace pxl
