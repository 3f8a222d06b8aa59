// jax.numpy's dtype queries: finfo, iinfo, result_type, promote_types,
// issubdtype and numpy's abstract scalar classes (floating, integer, ...).
// finfo's float fields are 0-d arrays of the dtype, as numpy scalars of that
// type behave in JAX (strong, so `x * finfo(x.dtype).eps` keeps x's dtype).
#include <cfloat>
#include <cmath>

#include "lang/args.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/np.hpp"
#include "stdlib/np_internal.hpp"

namespace pxl {

namespace {

struct FloatInfo {
  int bits, nmant, nexp, precision, machep, maxexp, minexp;
  double eps, max, tiny, resolution, epsneg, subnormal;
  const char* repr; // numpy's repr, whose number formatting is per type
  // str()'s numbers as numpy prints them for the type: resolution, eps,
  // epsneg, tiny, max, smallest_subnormal.
  const char* text[6];
};

const FloatInfo& float_info(DType d) {
  static const FloatInfo f16{16, 10, 5, 3, -10, 16, -14, std::ldexp(1.0, -10), 65504.0, std::ldexp(1.0, -14),
                             0.0010004043579101562, std::ldexp(1.0, -11), std::ldexp(1.0, -24),
                             "finfo(resolution=0.001, min=-6.55040e+04, max=6.55040e+04, dtype=float16)",
                             {"0.001", "0.000977", "0.0004883", "6.104e-05", "6.55e+04", "6e-08"}};
  static const FloatInfo bf16{16, 7, 8, 2, -7, 128, -126, std::ldexp(1.0, -7), 3.3895313892515355e+38,
                              std::ldexp(1.0, -126), 0.010009765625, std::ldexp(1.0, -8), std::ldexp(1.0, -133),
                              "finfo(resolution=0.0100098, min=-3.38953e+38, max=3.38953e+38, dtype=bfloat16)",
                              {"0.0100098", "0.0078125", "0.00390625", "1.17549e-38", "3.38953e+38", "9.18355e-41"}};
  static const FloatInfo f32{32, 23, 8, 6, -23, 128, -126, std::ldexp(1.0, -23), FLT_MAX, std::ldexp(1.0, -126),
                             static_cast<double>(1e-6f), std::ldexp(1.0, -24), std::ldexp(1.0, -149),
                             "finfo(resolution=1e-06, min=-3.4028235e+38, max=3.4028235e+38, dtype=float32)",
                             {"1e-06", "1.1920929e-07", "5.9604645e-08", "1.1754944e-38", "3.4028235e+38", "1e-45"}};
  static const FloatInfo f64{64, 52, 11, 15, -52, 1024, -1022, DBL_EPSILON, DBL_MAX, DBL_MIN, 1e-15,
                             std::ldexp(1.0, -53), std::ldexp(1.0, -1074),
                             "finfo(resolution=1e-15, min=-1.7976931348623157e+308, "
                             "max=1.7976931348623157e+308, dtype=float64)",
                             {"1e-15", "2.220446049250313e-16", "1.1102230246251565e-16", "2.2250738585072014e-308",
                              "1.7976931348623157e+308", "5e-324"}};
  switch (d) {
  case DType::Float16:
    return f16;
  case DType::BFloat16:
    return bf16;
  case DType::Float64:
    return f64;
  default:
    return f32;
  }
}

// The dtype of a finfo/iinfo/issubdtype argument: a dtype, a dtype name, an
// array (its dtype) or a Python scalar type.
DType dtype_of(InterpreterImpl& in, const Value& v) {
  if (v.is_obj(ObjKind::Array)) return v.as<ArrayObj>()->tensor->aval.dtype;
  if (v.is_obj(ObjKind::DType) || v.is_obj(ObjKind::Str) || v.is_obj(ObjKind::Builtin)) return *value_to_dtype(v);
  return in.to_tensor(v, Span{})->aval.dtype;
}

struct FInfoObj : OpaqueObj {
  DType dtype;
  explicit FInfoObj(DType d) : dtype(d) {}
  std::string type_name() const override { return "finfo"; }
  std::string repr() const override { return float_info(dtype).repr; }
  std::string str() const override { // numpy's "Machine parameters" table
    const FloatInfo& f = float_info(dtype);
    auto n = [](int v) { return std::to_string(v); };
    const std::string rule = "---------------------------------------------------------------\n";
    return "Machine parameters for " + std::string(dtype_name(dtype)) + "\n" + rule +
           "precision = " + n(f.precision) + "   resolution = " + f.text[0] + "\n" +
           "machep = " + n(f.machep) + "   eps =        " + f.text[1] + "\n" +
           "negep =  " + n(f.machep - 1) + "   epsneg =     " + f.text[2] + "\n" +
           "minexp = " + n(f.minexp) + "   tiny =       " + f.text[3] + "\n" +
           "maxexp = " + n(f.maxexp) + "   max =        " + f.text[4] + "\n" +
           "nexp =   " + n(f.nexp) + "   min =        -max\n" +
           "smallest_normal = " + f.text[3] + "   smallest_subnormal = " + f.text[5] + "\n" + rule;
  }
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override {
    const FloatInfo& f = float_info(dtype);
    auto num = [&](double v) { return make_array(np::scalar(in.ops(), Scalar::of_float(v), dtype, false)); };
    if (name == "eps") return out = num(f.eps), true;
    if (name == "max") return out = num(f.max), true;
    if (name == "min") return out = num(-f.max), true;
    if (name == "tiny" || name == "smallest_normal") return out = num(f.tiny), true;
    if (name == "resolution") return out = num(f.resolution), true;
    if (name == "epsneg") return out = num(f.epsneg), true;
    if (name == "smallest_subnormal") return out = num(f.subnormal), true;
    if (name == "dtype") return out = Value::object(std::make_shared<DTypeObj>(dtype)), true;
    const std::pair<const char*, int> ints[] = {{"bits", f.bits},     {"nmant", f.nmant},   {"nexp", f.nexp},
                                                {"precision", f.precision}, {"machep", f.machep},
                                                {"maxexp", f.maxexp}, {"minexp", f.minexp}, {"negep", f.machep - 1},
                                                {"iexp", f.nexp}};
    for (auto [n, v] : ints)
      if (name == n) return out = Value::integer(v), true;
    return false;
  }
  std::vector<std::string> attr_names() const override {
    return {"bits", "dtype", "eps", "epsneg", "iexp", "machep", "max", "maxexp", "min", "minexp",
            "negep", "nexp", "nmant", "precision", "resolution", "smallest_normal", "smallest_subnormal", "tiny"};
  }
};

struct IInfoObj : OpaqueObj {
  DType dtype;
  explicit IInfoObj(DType d) : dtype(d) {}
  int64_t lo() const { return int_min(dtype); }
  int64_t hi() const { return int_max(dtype); }
  std::string type_name() const override { return "iinfo"; }
  std::string repr() const override {
    return "iinfo(min=" + std::to_string(lo()) + ", max=" + std::to_string(hi()) + ", dtype=" + dtype_name(dtype) + ")";
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "min") return out = Value::integer(lo()), true;
    if (name == "max") return out = Value::integer(hi()), true;
    if (name == "bits")
      return out = Value::integer(static_cast<int64_t>(8 * dtype_size(dtype))), true;
    if (name == "kind") return out = make_str(is_signed_int(dtype) ? "i" : "u"), true;
    if (name == "dtype") return out = Value::object(std::make_shared<DTypeObj>(dtype)), true;
    return false;
  }
  std::vector<std::string> attr_names() const override { return {"bits", "dtype", "kind", "max", "min"}; }
};

// numpy's abstract scalar classes, for issubdtype.
enum class Category {
  Generic,
  Number,
  Integer,
  SignedInteger,
  UnsignedInteger,
  Inexact,
  Floating,
  ComplexFloating
};

struct CategoryObj : OpaqueObj {
  Category cat;
  std::string name;
  CategoryObj(Category c, std::string n) : cat(c), name(std::move(n)) {}
  std::string type_name() const override { return "type"; }
  std::string repr() const override { return "<class 'numpy." + name + "'>"; }
  bool equals(const OpaqueObj& o) const override {
    auto* c = dynamic_cast<const CategoryObj*>(&o);
    return c && c->cat == cat;
  }
};

bool in_category(DType d, Category c) {
  switch (c) {
  case Category::Generic:
    return true;
  case Category::Number:
    return d != DType::Bool;
  case Category::Integer:
    return is_integer(d);
  case Category::SignedInteger:
    return is_signed_int(d);
  case Category::UnsignedInteger:
    return is_unsigned_int(d);
  case Category::Inexact:
    return is_inexact(d);
  case Category::Floating:
    return is_floating(d);
  case Category::ComplexFloating:
    return is_complex(d);
  }
  return false;
}

// A value's (dtype, weak) as jnp.result_type sees it: Python scalars are weak.
PromotedType operand_type(InterpreterImpl& in, const Value& v) {
  if (v.is_obj(ObjKind::DType) || v.is_obj(ObjKind::Str) || v.is_obj(ObjKind::Builtin))
    return {*value_to_dtype(v), false};
  const AVal& av = in.to_tensor(v, Span{})->aval;
  return {av.dtype, av.weak};
}

} // namespace

// nextafter of one value of a float type, via its bits (16-bit types too).
double np::next_toward(double x, double to, DType dt) {
  if (std::isnan(x) || std::isnan(to)) return NAN;
  if (x == to) return to;
  if (dt == DType::Float64) return std::nextafter(x, to);
  if (dt == DType::Float32) return std::nextafter(static_cast<float>(x), static_cast<float>(to));
  bool half = dt == DType::Float16;
  uint16_t bits = half ? float_to_half(static_cast<float>(x)) : float_to_bfloat16(static_cast<float>(x));
  if (x == 0) bits = static_cast<uint16_t>((to > 0 ? 0 : 0x8000) | 1);
  else if ((x < to) == (x > 0)) ++bits; // away from zero
  else --bits;
  return half ? half_to_float(bits) : bfloat16_to_float(bits);
}

void def_dtype_queries(ModuleBuilder& b) {
  b.fn("broadcast_shapes", [](InterpreterImpl&, CallArgs& a) {
    if (!a.kw.empty()) throw Error(ErrCode::Arguments, "broadcast_shapes() takes shapes only");
    Shape out;
    for (const Value& v : a.pos) out = np::detail::broadcast_shapes("broadcast_shapes", out, value_to_shape(v, "broadcast_shapes()"));
    ValueList d;
    for (int64_t x : out) d.push_back(Value::integer(x));
    return make_tuple(std::move(d));
  });
  // Eager only: computed on the host from concrete values (like JAX's result).
  b.fn("nextafter", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("nextafter", a, {"x1", "x2"}, 2);
    Tensor x = in.to_tensor(r[0], Span{});
    Tensor y = in.to_tensor(r[1], Span{});
    PromotedType t = promote_types(x->aval.dtype, x->aval.weak, y->aval.dtype, y->aval.weak);
    if (!is_floating(t.dtype)) t = {DType::Float32, t.weak};
    Shape shape = np::detail::broadcast_shapes("nextafter", x->aval.shape, y->aval.shape);
    Array xs = in.ops().concrete(np::astype(in.ops(), np::broadcast_to(in.ops(), x, shape), DType::Float64));
    Array ys = in.ops().concrete(np::astype(in.ops(), np::broadcast_to(in.ops(), y, shape), DType::Float64));
    // Written in the result type directly: a conversion could flush subnormals.
    Array out(t.dtype, shape);
    for (int64_t i = 0; i < out.size(); ++i) {
      double v = np::next_toward(xs.as<double>()[i], ys.as<double>()[i], t.dtype);
      if (t.dtype == DType::Float64) out.as<double>()[i] = v;
      else if (t.dtype == DType::Float32) out.as<float>()[i] = static_cast<float>(v);
      else if (t.dtype == DType::Float16) out.as<uint16_t>()[i] = float_to_half(static_cast<float>(v));
      else out.as<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v));
    }
    return make_array(in.ops().constant(out));
  });
  b.fn("finfo", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("finfo", a, {"dtype"}, 1);
    DType d = dtype_of(in, r[0]);
    if (!is_inexact(d))
      throw Error(ErrCode::DType, std::string("finfo(): data type ") + dtype_name(d) + " not inexact");
    return Value::object(std::make_shared<FInfoObj>(real_dtype(d))); // complex64: its float32 parts'
  });
  b.fn("iinfo", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("iinfo", a, {"int_type"}, 1);
    DType d = dtype_of(in, r[0]);
    if (!is_integer(d))
      throw Error(ErrCode::DType, std::string("iinfo(): invalid integer data type '") + dtype_name(d) + "'");
    return Value::object(std::make_shared<IInfoObj>(d));
  });
  b.fn("result_type", [](InterpreterImpl& in, CallArgs& a) {
    if (a.pos.empty() || !a.kw.empty()) throw Error(ErrCode::Arguments, "result_type() takes one or more arrays or dtypes");
    PromotedType t = operand_type(in, a.pos[0]);
    for (size_t i = 1; i < a.pos.size(); ++i) {
      PromotedType u = operand_type(in, a.pos[i]);
      t = promote_types(t.dtype, t.weak, u.dtype, u.weak);
    }
    return Value::object(std::make_shared<DTypeObj>(t.dtype));
  });
  b.fn("promote_types", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("promote_types", a, {"a", "b"}, 2);
    return Value::object(std::make_shared<DTypeObj>(
        promote_types(*value_to_dtype(r[0]), false, *value_to_dtype(r[1]), false).dtype));
  });
  static const std::pair<Category, const char*> cats[] = {
      {Category::Generic, "generic"},         {Category::Number, "number"},
      {Category::Integer, "integer"},         {Category::SignedInteger, "signedinteger"},
      {Category::UnsignedInteger, "unsignedinteger"}, {Category::Inexact, "inexact"},
      {Category::Floating, "floating"},       {Category::ComplexFloating, "complexfloating"}};
  for (auto [c, n] : cats) b.val(n, Value::object(std::make_shared<CategoryObj>(c, n)));
  b.fn("issubdtype", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("issubdtype", a, {"arg1", "arg2"}, 2);
    auto category = [](const Value& v) -> const CategoryObj* {
      if (!v.is_obj(ObjKind::Opaque)) return nullptr;
      return dynamic_cast<const CategoryObj*>(v.as<OpaqueObj>());
    };
    const CategoryObj* c1 = category(r[0]);
    const CategoryObj* c2 = category(r[1]);
    if (c1) { // a class is a subclass of a class that contains it
      if (!c2) return Value::boolean(false);
      bool sub = c1->cat == c2->cat || c2->cat == Category::Generic ||
                 (c2->cat == Category::Number && c1->cat != Category::Generic) ||
                 (c2->cat == Category::Integer &&
                  (c1->cat == Category::SignedInteger || c1->cat == Category::UnsignedInteger)) ||
                 (c2->cat == Category::Inexact &&
                  (c1->cat == Category::Floating || c1->cat == Category::ComplexFloating));
      return Value::boolean(sub);
    }
    DType d1 = dtype_of(in, r[0]);
    if (c2) return Value::boolean(in_category(d1, c2->cat));
    return Value::boolean(d1 == dtype_of(in, r[1]));
  });
}

} // namespace pxl
