// Element types and JAX's type promotion (x64 disabled: Python ints are int32,
// Python floats float32; Python scalars are "weak" and defer to the array's type).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pxl {

// The narrow integer types come last so the older dtypes keep their values.
enum class DType : uint8_t {
  Bool,
  Int32,
  UInt32,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Int8,
  UInt8,
  Int16,
  UInt16,
  Complex64, // two float32s (real, imaginary), like std::complex<float>
  // JAX's narrow integers: one byte each, holding the value sign- or
  // zero-extended (always within range), arithmetic wrapping at their width.
  Int2,
  Int4,
  UInt2,
  UInt4,
  // JAX's (ml_dtypes') small floats, one byte each: computed in float32 and
  // rounded to nearest even when stored, as XLA's CPU backend does.
  Float8E4M3FN,
  Float8E5M2,
  Float8E4M3FNUZ,
  Float8E5M2FNUZ,
  Float8E4M3B11FNUZ,
  Float8E4M3,
  Float8E3M4,
  Float8E8M0FNU,
  Float4E2M1FN
};
// The case labels of every small float, for switches that treat them alike
// (the list stays exhaustive for -Wswitch): `PXL_SMALL_FLOAT_CASES: ...`.
#define PXL_SMALL_FLOAT_CASES                                                                      \
  case DType::Float8E4M3FN:                                                                        \
  case DType::Float8E5M2:                                                                          \
  case DType::Float8E4M3FNUZ:                                                                      \
  case DType::Float8E5M2FNUZ:                                                                      \
  case DType::Float8E4M3B11FNUZ:                                                                   \
  case DType::Float8E4M3:                                                                          \
  case DType::Float8E3M4:                                                                          \
  case DType::Float8E8M0FNU:                                                                       \
  case DType::Float4E2M1FN

// Every dtype, in the order jnp lists them (for tables and name lookups).
inline constexpr DType kAllDTypes[] = {
    DType::Bool,           DType::Int2,           DType::Int4,
    DType::Int8,           DType::Int16,          DType::Int32,
    DType::UInt2,          DType::UInt4,          DType::UInt8,
    DType::UInt16,         DType::UInt32,         DType::Float4E2M1FN,
    DType::Float8E3M4,     DType::Float8E4M3,     DType::Float8E4M3B11FNUZ,
    DType::Float8E4M3FN,   DType::Float8E4M3FNUZ, DType::Float8E5M2,
    DType::Float8E5M2FNUZ, DType::Float8E8M0FNU,  DType::Float16,
    DType::BFloat16,       DType::Float32,        DType::Float64,
    DType::Complex64};

size_t dtype_size(DType d);
const char* dtype_name(DType d); // "float32", "int32", "bool", ...
// JAX's short name in jaxprs and types: "f32", "i4" (int4), "f8_e4m3fn", ...
const char* dtype_short_name(DType d);
std::optional<DType>
dtype_from_name(std::string_view name); // accepts "float32", "f32"? no: numpy names only
// The float8/float4 types (ml_dtypes'): stored as a byte, never in a fused kernel.
constexpr bool is_small_float(DType d) {
  return d >= DType::Float8E4M3FN && d <= DType::Float4E2M1FN;
}
// XLA's CPU backend computes bfloat16 and the small floats in float32,
// converting around each fusion, so its simplifier's rewrites see float32.
constexpr bool upcast_around_fusion(DType d) { return d == DType::BFloat16 || is_small_float(d); }
constexpr bool is_floating(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 ||
         d == DType::Float64 || is_small_float(d);
}
inline bool is_complex(DType d) { return d == DType::Complex64; }
// Types no fused or device kernel computes: complex64 and the small floats run
// on the reference kernels as host steps.
inline bool host_steps_only(DType d) { return is_complex(d) || is_small_float(d); }
// numpy's inexact: floating or complex.
inline bool is_inexact(DType d) { return is_floating(d) || is_complex(d); }
// The real type of a complex dtype's parts (float32); other dtypes are their own.
inline DType real_dtype(DType d) { return is_complex(d) ? DType::Float32 : d; }
constexpr bool is_signed_int(DType d) {
  return d == DType::Int8 || d == DType::Int16 || d == DType::Int32 || d == DType::Int2 ||
         d == DType::Int4;
}
constexpr bool is_unsigned_int(DType d) {
  return d == DType::UInt8 || d == DType::UInt16 || d == DType::UInt32 || d == DType::UInt2 ||
         d == DType::UInt4;
}
constexpr bool is_integer(DType d) { return is_signed_int(d) || is_unsigned_int(d); }
// int2/int4/uint2/uint4: JAX keeps them out of implicit promotion and most
// reductions; they are stored one per byte.
constexpr bool is_narrow_int(DType d) {
  return d == DType::Int2 || d == DType::Int4 || d == DType::UInt2 || d == DType::UInt4;
}
// An integer dtype's width in bits (2, 4, 8, 16 or 32); 8 * size otherwise.
int dtype_bits(DType d);
// The integer of the given signedness and width (2, 4, 8, 16 or 32 bits).
DType int_dtype(bool is_signed, int bits);
// An integer dtype's smallest and largest values.
int64_t int_min(DType d);
int64_t int_max(DType d);
// Wraps an int64 into d's range (two's complement, like a C cast to the type).
int64_t wrap_to(DType d, int64_t v);

struct PromotedType {
  DType dtype;
  bool weak;
};
// JAX's lattice: bool < int(weak) < int32/uint32 ... < float(weak) < f16/bf16 < f32 < f64,
// and float(weak) < complex(weak) < complex64 (a strong float joined with a weak
// complex is a strong complex64). A weak operand only fixes the kind
// (int/float/complex), the strong operand fixes the width.
// A narrow integer joins only itself, bool and Python's int (a small float
// also Python's float); any other pair with one throws JAX's
// TypePromotionError text (E0105).
PromotedType promote_types(DType a, bool a_weak, DType b, bool b_weak);
// That error's message for dtypes as Python prints a tuple of their names
// (names: "'int4', \"<class 'float'>\"").
std::string narrow_promotion_message(const std::string& names);
// The same for small floats ("8-bit floats do not support implicit promotion", or 4-bit).
std::string small_float_promotion_message(const std::string& names, bool four_bit);

// A small float's bits <-> float: to a small float rounds to nearest even as
// XLA converts (overflow: inf where the type has it, else NaN, except
// float4_e2m1fn, which has neither and saturates; float8_e8m0fnu, powers of
// two only, takes NaN for zero and negatives).
uint8_t float_to_small(DType d, double f);
double small_to_float(DType d, uint8_t bits);
// The largest finite value of a small float.
double small_float_max(DType d);

// IEEE half and bfloat16 <-> float conversions (round to nearest even).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

} // namespace pxl
