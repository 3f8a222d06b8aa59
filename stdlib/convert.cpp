#include "stdlib/convert.hpp"

#include "lang/args.hpp"
#include "lang/dtype_names.hpp"
#include "lang/methods.hpp"

namespace pxl {

bool is_x64_name(const std::string& alias) {
  const std::string name = canonical_dtype_name(alias);
  return name == "int64" || name == "uint64" || name == "complex128";
}

DType required_dtype(const Value& v, const std::string& what) {
  std::optional<DType> d = value_to_dtype(v);
  if (!d) throw Error(ErrCode::Type, what + " must be a dtype, not " + type_name(v));
  return *d;
}

std::optional<DType> value_to_dtype(const Value& v) {
  if (v.is_none()) return std::nullopt;
  if (v.is_obj(ObjKind::DType)) return v.as<DTypeObj>()->dtype;
  if (v.is_obj(ObjKind::Str)) {
    const std::string s = canonical_dtype_name(v.as<StrObj>()->value); // 'f4' is float32
    if (auto d = dtype_from_name(s)) return d;
    // x64 is off: JAX truncates the 64-bit integers to 32 bits.
    if (s == "int64") return DType::Int32;
    if (s == "uint64") return DType::UInt32;
    if (s == "complex128") return DType::Complex64;
    throw Error(ErrCode::DType, "data type '" + v.as<StrObj>()->value + "' not understood", Span{},
                "use float32, float64, float16, bfloat16, int8, int16, int32, uint8, uint16, "
                "uint32, complex64 or bool");
  }
  if (v.is_obj(ObjKind::Builtin)) {
    const std::string& n = v.as<BuiltinObj>()->name;
    if (n == "float") return DType::Float32; // JAX canonicalises Python float to float32
    if (n == "int") return DType::Int32;
    if (n == "bool") return DType::Bool;
    if (n == "complex") return DType::Complex64; // complex128, truncated with x64 off
  }
  throw Error(ErrCode::DType, "expected a dtype, got a " + type_name(v) + " value");
}

Shape value_to_shape(const Value& v, const std::string& what) {
  Shape s = value_to_int_list(v, what);
  for (int64_t d : s)
    if (d < 0) throw Error(ErrCode::Value, what + ": negative dimension " + std::to_string(d));
  return s;
}

Scalar value_to_scalar(InterpreterImpl& in, const Value& v, const std::string& what) {
  Value s = v;
  if (v.is_obj(ObjKind::Array)) s = array_to_scalar(in, v, Span{});
  if (s.is_bool()) return Scalar::of_bool(s.b);
  if (s.is_int()) return Scalar::of_int(s.i);
  if (s.is_float()) return Scalar::of_float(s.f);
  if (s.is_obj(ObjKind::Complex))
    return Scalar::of_complex(s.as<ComplexObj>()->re, s.as<ComplexObj>()->im);
  throw Error(ErrCode::Type, what + " must be a number, not " + type_name(v));
}

} // namespace pxl
