// Element types and JAX's type promotion (x64 disabled: Python ints are int32,
// Python floats float32; Python scalars are "weak" and defer to the array's type).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pxl {

enum class DType : uint8_t { Bool, Int32, UInt32, Float16, BFloat16, Float32, Float64 };

size_t dtype_size(DType d);
const char* dtype_name(DType d); // "float32", "int32", "bool", ...
std::optional<DType> dtype_from_name(std::string_view name); // accepts "float32", "f32"? no: numpy names only
inline bool is_floating(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}
inline bool is_integer(DType d) { return d == DType::Int32 || d == DType::UInt32; }

struct PromotedType {
  DType dtype;
  bool weak;
};
// JAX's lattice: bool < int(weak) < int32/uint32 ... < float(weak) < f16/bf16 < f32 < f64.
// A weak operand only fixes the kind (int/float), the strong operand fixes the width.
PromotedType promote_types(DType a, bool a_weak, DType b, bool b_weak);

// IEEE half and bfloat16 <-> float conversions (round to nearest even).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

} // namespace pxl
