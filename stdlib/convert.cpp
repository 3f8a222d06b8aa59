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
  if (v.is_obj(ObjKind::Array))
    throw Error(ErrCode::Value, "Passing an array as a dtype argument is no longer supported; "
                                "instead of dtype=arr use dtype=arr.dtype.");
  // numpy's text for a value that names no dtype (jnp.ones((2,), 3)).
  throw Error(ErrCode::Type, "Cannot interpret '" + str(v) + "' as a data type");
}

Shape value_to_shape(const Value& v, const std::string& what) {
  Shape s = value_to_int_list(v, what);
  for (int64_t d : s)
    if (d < 0) throw Error(ErrCode::Value, what + ": negative dimension " + std::to_string(d));
  return s;
}

Shape canonical_shape(InterpreterImpl& in, const Value& v, bool nonnegative) {
  // array_creation.canonicalize_shape: a sequence (or a 1-d array) of
  // dimensions, or one dimension standing for a 1-tuple of it.
  ValueList items;
  std::string shown;
  if (const ValueList* seq = sequence_items(v)) {
    items = *seq;
    shown = repr(v);
  } else if (v.is_obj(ObjKind::Array) && v.as<ArrayObj>()->tensor->aval.ndim() > 0) {
    return value_to_shape(v, "shape");
  } else {
    items.push_back(v);
    shown = "(" + repr(v) + ",)";
  }
  const std::string invalid =
      "Shapes must be 1D sequences of concrete values of integer type, got " + shown + ".";
  Shape out;
  for (const Value& d : items) {
    if (d.is_intlike()) {
      out.push_back(d.as_int());
      continue;
    }
    if (!d.is_obj(ObjKind::Array)) throw Error(ErrCode::Type, invalid);
    const Tensor& t = d.as<ArrayObj>()->tensor;
    if (!t->aval.shape.empty() || !(is_integer(t->aval.dtype) || t->aval.dtype == DType::Bool))
      throw Error(ErrCode::Type, invalid);
    try {
      out.push_back(in.ops().concrete(t).get(0).i);
    } catch (const Error& e) {
      // A traced dimension: JAX's hint, then the tracer's origin (which the
      // transformation fills in from the concretisation text that follows).
      if (e.code() != ErrCode::ConcreteValue) throw;
      throw Error(ErrCode::Type, invalid +
                                     "\nIf using `jit`, try using `static_argnums` or applying "
                                     "`jit` to smaller subfunctions.\n" +
                                     e.message());
    }
  }
  // lax.full's broadcast_in_dim check.
  if (nonnegative)
    for (int64_t d : out)
      if (d < 0) {
        std::string s = "(";
        for (size_t i = 0; i < out.size(); ++i) s += (i ? ", " : "") + std::to_string(out[i]);
        throw Error(ErrCode::Type,
                    "broadcast_in_dim shape must have every element be nonnegative, got " + s +
                        (out.size() == 1 ? ",)." : ")."));
      }
  return out;
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
