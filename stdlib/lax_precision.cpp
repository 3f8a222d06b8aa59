#include "stdlib/lax_precision.hpp"

#include "ir/op.hpp"
#include "lang/args.hpp"
#include "lang/diag.hpp"
#include "lang/interp_impl.hpp"

namespace pxl {

namespace {

// One operand's precision: a lax.Precision or a name JAX accepts; anything
// else (a DotAlgorithmPreset, its name) is accepted and leaves it None.
uint8_t precision_code(const Value& v) {
  std::string name;
  if (auto* p =
          v.is_obj(ObjKind::Opaque) ? dynamic_cast<PrecisionObj*>(v.as<OpaqueObj>()) : nullptr)
    name = p->name;
  else if (v.is_obj(ObjKind::Str))
    name = v.as<StrObj>()->value;
  if (name == "DEFAULT" || name == "default" || name == "fastest" || name == "bfloat16")
    return kPrecisionDefault;
  if (name == "HIGH" || name == "high" || name == "tensorfloat32" || name == "bfloat16_3x")
    return kPrecisionHigh;
  if (name == "HIGHEST" || name == "highest" || name == "float32") return kPrecisionHighest;
  return kPrecisionNone;
}

} // namespace

bool PrecisionObj::get_attr(InterpreterImpl&, const std::string& attr, Value& out) {
  for (const char* n : {"DEFAULT", "HIGH", "HIGHEST"})
    if (attr == n) return out = Value::object(std::make_shared<PrecisionObj>(n)), true;
  return false;
}

std::array<uint8_t, 2> dot_precision(InterpreterImpl& in, Value v, const char* fn) {
  if (v.is_none()) {
    Value config = in.get_attr(in.import_module("jax", Span{}, ""), "config", Span{});
    v = in.get_attr(config, "jax_default_matmul_precision", Span{});
    if (v.is_none()) return {kPrecisionNone, kPrecisionNone};
  }
  std::array<uint8_t, 2> p;
  if (const ValueList* pair = sequence_items(v)) {
    if (pair->size() != 2)
      throw Error(ErrCode::Value, std::string(fn) + "(): precision must be a pair of values");
    p = {precision_code((*pair)[0]), precision_code((*pair)[1])};
  } else {
    p = {precision_code(v), precision_code(v)};
  }
  if (p[0] == kPrecisionNone || p[1] == kPrecisionNone) return {kPrecisionNone, kPrecisionNone};
  return p;
}

Value precision_value(const std::array<uint8_t, 2>& p) {
  if (p[0] == kPrecisionNone) return Value();
  return make_tuple({Value::object(std::make_shared<PrecisionObj>(precision_name(p[0]))),
                     Value::object(std::make_shared<PrecisionObj>(precision_name(p[1])))});
}

} // namespace pxl
