#include "stdlib/lax_precision.hpp"

#include "ir/op.hpp"
#include "lang/args.hpp"
#include "lang/diag.hpp"
#include "lang/interp_impl.hpp"

namespace pxl {

namespace {

// A name of lax.DotAlgorithmPreset's members (stdlib/lax_checked.pxl).
bool is_preset_name(InterpreterImpl& in, const std::string& n) {
  Value lax = in.get_attr(in.import_module("jax", Span{}, ""), "lax", Span{});
  return in.has_attr(in.get_attr(lax, "DotAlgorithmPreset", Span{}), n);
}

[[noreturn]] void bad_precision(const Value& v) {
  throw Error(ErrCode::Value,
              "Precision argument must be one of:\n- None,\n- a string in ['highest', 'float32', "
              "'high', 'bfloat16_3x', 'tensorfloat32', 'default', 'bfloat16', 'fastest', None],\n"
              "- a lax.Precision value,\n- a tuple of two lax.Precision values or strings,\n- a "
              "lax.DotAlgorithmPreset or the name of one of these presets, or\n- a "
              "lax.DotAlgorithm value;\nbut got " +
                  str(v) + ".");
}

// One operand's precision: a lax.Precision or a name JAX accepts. A
// DotAlgorithmPreset (or its name) is accepted and leaves it None: the CPU
// computes in the operands' type. Anything else is JAX's ValueError.
uint8_t precision_code(InterpreterImpl& in, const Value& v, const Value& whole) {
  std::string name;
  if (auto* p =
          v.is_obj(ObjKind::Opaque) ? dynamic_cast<PrecisionObj*>(v.as<OpaqueObj>()) : nullptr)
    name = p->name;
  else if (v.is_obj(ObjKind::Str))
    name = v.as<StrObj>()->value;
  else if (type_name(v) == "DotAlgorithmPreset")
    return kPrecisionNone;
  else
    bad_precision(whole);
  if (name == "DEFAULT" || name == "default" || name == "fastest" || name == "bfloat16")
    return kPrecisionDefault;
  if (name == "HIGH" || name == "high" || name == "tensorfloat32" || name == "bfloat16_3x")
    return kPrecisionHigh;
  if (name == "HIGHEST" || name == "highest" || name == "float32") return kPrecisionHighest;
  if (!is_preset_name(in, name)) bad_precision(whole);
  return kPrecisionNone;
}

} // namespace

bool PrecisionObj::get_attr(InterpreterImpl&, const std::string& attr, Value& out) {
  for (const char* n : {"DEFAULT", "HIGH", "HIGHEST"})
    if (attr == n) return out = Value::object(std::make_shared<PrecisionObj>(n)), true;
  return false;
}

std::array<uint8_t, 2> dot_precision(InterpreterImpl& in, Value v) {
  if (v.is_none()) {
    Value config = in.get_attr(in.import_module("jax", Span{}, ""), "config", Span{});
    v = in.get_attr(config, "jax_default_matmul_precision", Span{});
    if (v.is_none()) return {kPrecisionNone, kPrecisionNone};
  }
  std::array<uint8_t, 2> p;
  if (const ValueList* pair = sequence_items(v)) {
    // Two lax.Precision values or two names (each checked on its own), as JAX's.
    if (pair->size() != 2) bad_precision(v);
    const Value &a = (*pair)[0], &b = (*pair)[1];
    bool names = a.is_obj(ObjKind::Str) && b.is_obj(ObjKind::Str);
    bool values = type_name(a) == "Precision" && type_name(b) == "Precision";
    if (!names && !values) bad_precision(v);
    p = {precision_code(in, a, a), precision_code(in, b, b)};
  } else {
    p = {precision_code(in, v, v), precision_code(in, v, v)};
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
