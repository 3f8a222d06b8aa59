// Element types, JAX's promotion lattice (x64 disabled) and half/bfloat16 conversions.
#include "ir/dtype.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <string>

#include "lang/diag.hpp"

namespace pxl {

size_t dtype_size(DType d) {
  switch (d) {
  case DType::Bool:
  case DType::Int8:
  case DType::UInt8:
  case DType::Int2:
  case DType::Int4:
  case DType::UInt2:
  case DType::UInt4:
  PXL_SMALL_FLOAT_CASES:
    return 1;
  case DType::Int16:
  case DType::UInt16:
  case DType::Float16:
  case DType::BFloat16:
    return 2;
  case DType::Int32:
  case DType::UInt32:
  case DType::Float32:
    return 4;
  case DType::Float64:
  case DType::Complex64:
    return 8;
  }
  return 0;
}

const char* dtype_name(DType d) {
  switch (d) {
  case DType::Bool:
    return "bool";
  case DType::Int8:
    return "int8";
  case DType::UInt8:
    return "uint8";
  case DType::Int16:
    return "int16";
  case DType::UInt16:
    return "uint16";
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
  case DType::Complex64:
    return "complex64";
  case DType::Int2:
    return "int2";
  case DType::Int4:
    return "int4";
  case DType::UInt2:
    return "uint2";
  case DType::UInt4:
    return "uint4";
  case DType::Float8E4M3FN:
    return "float8_e4m3fn";
  case DType::Float8E5M2:
    return "float8_e5m2";
  case DType::Float8E4M3FNUZ:
    return "float8_e4m3fnuz";
  case DType::Float8E5M2FNUZ:
    return "float8_e5m2fnuz";
  case DType::Float8E4M3B11FNUZ:
    return "float8_e4m3b11fnuz";
  case DType::Float8E4M3:
    return "float8_e4m3";
  case DType::Float8E3M4:
    return "float8_e3m4";
  case DType::Float8E8M0FNU:
    return "float8_e8m0fnu";
  case DType::Float4E2M1FN:
    return "float4_e2m1fn";
  }
  return "?";
}

const char* dtype_short_name(DType d) {
  switch (d) {
  case DType::Bool:
    return "bool";
  case DType::Int8:
    return "i8";
  case DType::UInt8:
    return "u8";
  case DType::Int16:
    return "i16";
  case DType::UInt16:
    return "u16";
  case DType::Int32:
    return "i32";
  case DType::UInt32:
    return "u32";
  case DType::Float16:
    return "f16";
  case DType::BFloat16:
    return "bf16";
  case DType::Float32:
    return "f32";
  case DType::Float64:
    return "f64";
  case DType::Complex64:
    return "c64";
  case DType::Int2:
    return "i2";
  case DType::Int4:
    return "i4";
  case DType::UInt2:
    return "u2";
  case DType::UInt4:
    return "u4";
  case DType::Float8E4M3FN:
    return "f8_e4m3fn";
  case DType::Float8E5M2:
    return "f8_e5m2";
  case DType::Float8E4M3FNUZ:
    return "f8_e4m3fnuz";
  case DType::Float8E5M2FNUZ:
    return "f8_e5m2fnuz";
  case DType::Float8E4M3B11FNUZ:
    return "f8_e4m3b11fnuz";
  case DType::Float8E4M3:
    return "f8_e4m3";
  case DType::Float8E3M4:
    return "f8_e3m4";
  case DType::Float8E8M0FNU:
    return "f8_e8m0fnu";
  case DType::Float4E2M1FN:
    return "f4_e2m1fn";
  }
  return "?";
}

int dtype_bits(DType d) {
  switch (d) {
  case DType::Int2:
  case DType::UInt2:
    return 2;
  case DType::Int4:
  case DType::UInt4:
  case DType::Float4E2M1FN:
    return 4;
  default:
    return static_cast<int>(8 * dtype_size(d));
  }
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType d : kAllDTypes)
    if (name == dtype_name(d)) return d;
  if (name == "bool_") return DType::Bool;
  return std::nullopt;
}

DType int_dtype(bool is_signed, int bits) {
  if (bits <= 2) return is_signed ? DType::Int2 : DType::UInt2;
  if (bits <= 4) return is_signed ? DType::Int4 : DType::UInt4;
  if (bits <= 8) return is_signed ? DType::Int8 : DType::UInt8;
  if (bits <= 16) return is_signed ? DType::Int16 : DType::UInt16;
  return is_signed ? DType::Int32 : DType::UInt32;
}

int64_t int_min(DType d) {
  if (!is_signed_int(d)) return 0;
  return -(int64_t{1} << (dtype_bits(d) - 1));
}

int64_t int_max(DType d) {
  int bits = dtype_bits(d);
  return is_signed_int(d) ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
}

int64_t wrap_to(DType d, int64_t v) {
  int bits = dtype_bits(d);
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (is_signed_int(d) && (u >> (bits - 1)) != 0) u |= ~mask; // sign-extend
  return static_cast<int64_t>(u);
}

namespace {

// A node of JAX's promotion lattice. Bool, the weak (Python scalar) kinds
// IntW/FloatW, the strong integers (signedness and width; width 64 is
// int64, which never survives: x64 is off, so it is canonicalised to int32)
// and the strong floats.
struct Node {
  enum Kind { Bool, IntW, Int, FloatW, Float, ComplexW, Complex } kind;
  bool is_signed = false;     // Int
  int bits = 0;               // Int: 8..64
  DType flt = DType::Float32; // Float
};

Node node_of(DType d, bool weak) {
  if (d == DType::Bool) return {Node::Bool};
  if (is_complex(d)) return {weak ? Node::ComplexW : Node::Complex};
  if (is_integer(d)) {
    if (weak) return {Node::IntW};
    return {Node::Int, is_signed_int(d), static_cast<int>(8 * dtype_size(d))};
  }
  if (weak) return {Node::FloatW};
  return {Node::Float, false, 0, d};
}

PromotedType type_of(const Node& n) {
  switch (n.kind) {
  case Node::Bool:
    return {DType::Bool, false};
  case Node::IntW:
    return {DType::Int32, true};
  case Node::Int:
    return {int_dtype(n.is_signed, n.bits), false};
  case Node::FloatW:
    return {DType::Float32, true};
  case Node::Float:
    return {n.flt, false};
  case Node::ComplexW:
    return {DType::Complex64, true};
  case Node::Complex:
    return {DType::Complex64, false};
  }
  return {DType::Float32, false};
}

// Rank of the strong floats: f16 and bf16 are incomparable (their join is f32).
int float_rank(DType d) {
  switch (d) {
  case DType::Float16:
  case DType::BFloat16:
    return 1;
  case DType::Float32:
    return 2;
  default:
    return 3;
  }
}

// Two strong integers: the wider of one signedness; a signed type holds an
// unsigned one only when it is wider, else the join is the signed type of
// twice the unsigned width (uint8+int8 = int16, uint32+int32 = int64).
Node join_ints(const Node& a, const Node& b) {
  if (a.is_signed == b.is_signed) return a.bits >= b.bits ? a : b;
  const Node& s = a.is_signed ? a : b;
  const Node& u = a.is_signed ? b : a;
  if (s.bits > u.bits) return s;
  return {Node::Int, true, 2 * u.bits};
}

Node join(const Node& a, const Node& b) {
  // Kinds in lattice order: a lower kind is below everything of a higher one.
  if (a.kind != b.kind) {
    const Node& hi = a.kind > b.kind ? a : b;
    const Node& lo = a.kind > b.kind ? b : a;
    // A strong float is not below the weak complex: their join is complex64
    // (complex128 for float64, which is complex64 with x64 off).
    if (hi.kind == Node::ComplexW && lo.kind == Node::Float) return {Node::Complex};
    return hi;
  }
  switch (a.kind) {
  case Node::Int:
    return join_ints(a, b);
  case Node::Float: {
    if (a.flt == b.flt) return a;
    int ra = float_rank(a.flt), rb = float_rank(b.flt);
    if (ra == rb) return {Node::Float, false, 0, DType::Float32}; // float16 vs bfloat16
    return ra > rb ? a : b;
  }
  default:
    return a;
  }
}

} // namespace

std::string narrow_promotion_message(const std::string& names) {
  return "Input dtypes (" + names +
         ") have no available implicit dtype promotion path. To avoid unintended promotion, "
         "1-bit, 2-bit and 4-bit integers do not support implicit promotion. If you'd like your "
         "inputs to be promoted to another type, you can do so explicitly using e.g. "
         "x.astype('int32')";
}

namespace {

// A dtype as Python's str() names it in JAX's messages ('int4', "<class 'float'>").
std::string python_type_name(DType d, bool weak) {
  if (weak && d != DType::Bool)
    return is_complex(d)    ? "\"<class 'complex'>\""
           : is_floating(d) ? "\"<class 'float'>\""
                            : "\"<class 'int'>\"";
  return std::string("'") + dtype_name(d) + "'";
}

bool is_float8(DType d) { return is_small_float(d) && d != DType::Float4E2M1FN; }

} // namespace

std::string small_float_promotion_message(const std::string& names, bool four_bit) {
  const char* kind = four_bit ? "4-bit" : "8-bit";
  return "Input dtypes (" + names +
         ") have no available implicit dtype promotion path. To avoid unintended promotion, " +
         kind +
         " floats do not support implicit promotion. If you'd like your inputs to be promoted "
         "to another type, you can do so explicitly using e.g. x.astype('float32')";
}

PromotedType promote_types(DType a, bool a_weak, DType b, bool b_weak) {
  // Equal types are their own join (this keeps e.g. a weak float16 a float16).
  if (a == b && a_weak == b_weak) return {a, a_weak && a != DType::Bool};
  // JAX's lattice keeps the narrow integers and the small floats apart: each is
  // above bool and Python's int only (a small float also above Python's
  // float), and nothing else joins it (a TypePromotionError, as JAX's).
  auto isolated = [](DType d) { return is_narrow_int(d) || is_small_float(d); };
  if (isolated(a) || isolated(b)) {
    auto below = [](DType n, DType o, bool o_weak) {
      if (o == n || o == DType::Bool) return true;
      return o_weak && !is_narrow_int(o) &&
             (is_integer(o) || (is_small_float(n) && o == DType::Float32));
    };
    if (isolated(a) && below(a, b, b_weak)) return {a, false};
    if (isolated(b) && below(b, a, a_weak)) return {b, false};
    const std::string names = python_type_name(a, a_weak) + ", " + python_type_name(b, b_weak);
    if (is_small_float(a) || is_small_float(b))
      throw Error(ErrCode::Value,
                  small_float_promotion_message(names, !is_float8(a) && !is_float8(b)));
    throw Error(ErrCode::Value, narrow_promotion_message(names));
  }
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

namespace {

// A small float's layout: exponent and mantissa widths, bias, and how it
// spells the values IEEE formats keep for all-ones exponents.
struct SmallFloat {
  int ebits, mbits, bias;
  enum Specials {
    Ieee, // inf and NaN at the all-ones exponent
    Fn,   // no inf; NaN only with an all-ones exponent and mantissa
    Fnuz, // no inf, no -0: NaN is the sign bit alone
    None, // neither (float4_e2m1fn): overflow saturates
    E8m0  // unsigned powers of two: 0xff is NaN
  } specials;
};

SmallFloat layout(DType d) {
  switch (d) {
  case DType::Float8E4M3FN:
    return {4, 3, 7, SmallFloat::Fn};
  case DType::Float8E5M2:
    return {5, 2, 15, SmallFloat::Ieee};
  case DType::Float8E4M3FNUZ:
    return {4, 3, 8, SmallFloat::Fnuz};
  case DType::Float8E5M2FNUZ:
    return {5, 2, 16, SmallFloat::Fnuz};
  case DType::Float8E4M3B11FNUZ:
    return {4, 3, 11, SmallFloat::Fnuz};
  case DType::Float8E4M3:
    return {4, 3, 7, SmallFloat::Ieee};
  case DType::Float8E3M4:
    return {3, 4, 3, SmallFloat::Ieee};
  case DType::Float8E8M0FNU:
    return {8, 0, 127, SmallFloat::E8m0};
  default: // Float4E2M1FN
    return {2, 1, 1, SmallFloat::None};
  }
}

double decode(const SmallFloat& f, unsigned bits) {
  if (f.specials == SmallFloat::E8m0)
    return bits == 0xff ? NAN : std::ldexp(1.0, static_cast<int>(bits) - f.bias);
  const unsigned sign_bit = 1u << (f.ebits + f.mbits);
  if (f.specials == SmallFloat::Fnuz && bits == sign_bit) return NAN;
  const unsigned emax = (1u << f.ebits) - 1, mmax = (1u << f.mbits) - 1;
  const unsigned exp = (bits >> f.mbits) & emax, mant = bits & mmax;
  const bool neg = (bits & sign_bit) != 0;
  double v;
  if (f.specials == SmallFloat::Ieee && exp == emax)
    v = mant == 0 ? INFINITY : NAN;
  else if (f.specials == SmallFloat::Fn && exp == emax && mant == mmax)
    v = NAN;
  else if (exp == 0)
    v = std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mbits);
  else
    v = std::ldexp(static_cast<double>(mant + (1u << f.mbits)),
                   static_cast<int>(exp) - f.bias - f.mbits);
  return neg ? -v : v;
}

// Every code's value, and the largest finite one, per small float.
struct SmallFloatTable {
  double value[256]; // (double: float8_e8m0fnu's least value is a float32 subnormal)
  double max = 0;
};
const SmallFloatTable& table(DType d) {
  static const auto tables = [] {
    std::array<SmallFloatTable, 9> t{};
    for (int k = 0; k < 9; ++k) {
      DType d = static_cast<DType>(static_cast<int>(DType::Float8E4M3FN) + k);
      SmallFloat f = layout(d);
      const unsigned codes = 1u << (f.specials == SmallFloat::E8m0 ? 8 : 1 + f.ebits + f.mbits);
      for (unsigned c = 0; c < 256; ++c) {
        double v = c < codes ? decode(f, c) : NAN;
        t[static_cast<size_t>(k)].value[c] = v;
        if (std::isfinite(v))
          t[static_cast<size_t>(k)].max = std::max(t[static_cast<size_t>(k)].max, v);
      }
    }
    return t;
  }();
  return tables[static_cast<size_t>(d) - static_cast<size_t>(DType::Float8E4M3FN)];
}

} // namespace

double small_to_float(DType d, uint8_t bits) { return table(d).value[bits]; }

double small_float_max(DType d) { return table(d).max; }

uint8_t float_to_small(DType d, double x) {
  const SmallFloat f = layout(d);
  const double max = small_float_max(d);
  if (f.specials == SmallFloat::E8m0) {
    if (!(x > 0) || std::isinf(x)) return 0xff; // NaN, zero, negatives, inf
    int e;
    double m = std::frexp(x, &e);                  // x = m 2^e, m in [0.5, 1)
    int biased = (m >= 0.75 ? e : e - 1) + f.bias; // halfway rounds up
    return biased > 254 ? 0xff : static_cast<uint8_t>(std::max(biased, 0));
  }
  const unsigned sign_bit = 1u << (f.ebits + f.mbits);
  const unsigned emax = (1u << f.ebits) - 1, mmax = (1u << f.mbits) - 1;
  const unsigned sign = std::signbit(x) ? sign_bit : 0;
  auto nan = [&]() -> uint8_t {
    switch (f.specials) {
    case SmallFloat::Ieee:
      return static_cast<uint8_t>(sign | (emax << f.mbits) | (1u << (f.mbits - 1)));
    case SmallFloat::Fn:
      return static_cast<uint8_t>(sign | (emax << f.mbits) | mmax);
    default: // fnuz: the sign bit alone; float4_e2m1fn has no NaN, and XLA gives -0
      return static_cast<uint8_t>(sign_bit);
    }
  };
  if (std::isnan(x)) return nan();
  double a = std::fabs(x);
  double v = a;
  if (std::isfinite(a) && a != 0) { // round to the representable value nearest a (ties even)
    int e;
    std::frexp(a, &e);
    const int exp = std::max(e - 1, 1 - f.bias); // subnormals share the least exponent
    const double quantum = std::ldexp(1.0, exp - f.mbits);
    v = std::nearbyint(a / quantum) * quantum;
  }
  if (v > max) {
    if (f.specials == SmallFloat::Ieee) return static_cast<uint8_t>(sign | (emax << f.mbits));
    if (f.specials == SmallFloat::None)
      v = max;
    else
      return nan();
  }
  if (v == 0) return static_cast<uint8_t>(f.specials == SmallFloat::Fnuz ? 0 : sign);
  int e;
  std::frexp(v, &e);
  const int biased = e - 1 + f.bias;
  if (biased <= 0) // subnormal: the mantissa counts quanta of the least exponent
    return static_cast<uint8_t>(sign | static_cast<unsigned>(std::ldexp(v, f.bias - 1 + f.mbits)));
  const unsigned mant = static_cast<unsigned>(std::ldexp(v, f.mbits - (e - 1))) - (1u << f.mbits);
  return static_cast<uint8_t>(sign | (static_cast<unsigned>(biased) << f.mbits) | mant);
}

} // namespace pxl
