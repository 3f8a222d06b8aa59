// Python's built-in functions (DESIGN §2), with Python's semantics and errors.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <tuple>

#include "ir/aval_text.hpp"
#include "lang/args.hpp"
#include "lang/bigint.hpp"
#include "lang/interp_impl.hpp"
#include "lang/lazy_iter.hpp"
#include "lang/methods.hpp"
#include "lang/py_complex.hpp"
#include "lang/py_set.hpp"
#include "lang/range_make.hpp"
#include "lang/std_streams.hpp"
#include "lang/system_exit.hpp"
#include "lang/tracer.hpp"
#include "lang/type_object.hpp"
#include "lang/utf8.hpp"
#include "stdlib/np.hpp"

namespace pxl {

namespace {

// The value of type(x): prints as <class 'int'>, has __name__. `name` is
// pxl's type name (what isinstance and equality compare); `path` is the
// class's module-qualified name as Python prints it.
struct TypeObj : OpaqueObj {
  TypeObj(std::string n, std::string p) : name(std::move(n)), path(std::move(p)) {}
  std::string name, path;
  std::string type_name() const override { return "type"; }
  std::string repr() const override { return "<class '" + path + "'>"; }
  bool get_attr(InterpreterImpl&, const std::string& attr, Value& out) override {
    if (attr != "__name__") return false;
    out = make_str(path.substr(path.rfind('.') + 1));
    return true;
  }
  // The class itself, by its qualified name: jax.Array (the abstract class) is
  // not type(x)'s ArrayImpl, although isinstance(x, jax.Array) holds; a CPU
  // and a CUDA device's classes are both jax.Device.
  bool equals(const OpaqueObj& o) const override {
    auto* t = dynamic_cast<const TypeObj*>(&o);
    return t && t->path == path;
  }
  // type(x)(...) constructs as the builtin class does (type(3)("4") == 4).
  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    Value cls = in.builtin(name);
    if (!cls.is_obj(ObjKind::Builtin)) return false;
    out = in.call(cls, a, where);
    return true;
  }
};

// iter(x): the items of x, taken one at a time by next() and by loops (which
// take all that are left), as Python's iterators. The items are listed when
// the iterator is made (pxl's containers are immutable or copied on use).
struct IteratorObj : LazyIterObj {
  IteratorObj(ValueList v, std::string kind) : items_(std::move(v)), kind_(std::move(kind)) {}
  std::string type_name() const override { return kind_; }
  std::string repr() const override { return "<" + kind_ + " object>"; }
  bool items(ValueList& out) const override {
    out.assign(items_.begin() + static_cast<std::ptrdiff_t>(pos_), items_.end());
    pos_ = items_.size();
    return true;
  }
  bool next(InterpreterImpl&, Value& out) override {
    if (pos_ >= items_.size()) return false;
    out = items_[pos_++];
    return true;
  }

private:
  ValueList items_;
  std::string kind_;
  mutable size_t pos_ = 0;
};

} // namespace

Value make_type(std::string name) {
  std::string path = name;
  return make_type_at(std::move(name), std::move(path));
}

Value make_type_at(std::string name, std::string path) {
  return Value::object(std::make_shared<TypeObj>(std::move(name), std::move(path)));
}

namespace {

// The classes of JAX's objects as type(x) prints them in JAX 0.10 (the
// classes pxl's own type names stand for). A sharded array stays a
// ShardedArray, as DESIGN.md has it.
std::string jax_class_path(const std::string& name) {
  static const std::pair<const char*, const char*> kPaths[] = {
      {"Array", "jaxlib._jax.ArrayImpl"},
      {"PRNGKeyArray", "jax._src.random.prng.PRNGKeyArray"},
      {"Ref", "jax._src.core.Ref"},
      {"Partial", "jax.tree_util.Partial"},
      {"OrderedDict", "collections.OrderedDict"},
      {"defaultdict", "collections.defaultdict"},
      {"Counter", "collections.Counter"},
      {"CpuDevice", "jaxlib._jax.Device"},
      {"CudaDevice", "jaxlib._jax.Device"},
      {"PartitionSpec", "jax.P"},
      {"PyTreeDef", "jaxlib._jax.pytree.PyTreeDef"},
      {"PjitFunction", "jaxlib._jax.PjitFunction"},
      {"Mesh", "jax._src.mesh.Mesh"},
      {"NamedSharding", "jax.sharding.NamedSharding"},
      {"SingleDeviceSharding", "jax.sharding.SingleDeviceSharding"},
      {"ShapeDtypeStruct", "jax.ShapeDtypeStruct"},
      {"ClosedJaxpr", "jax._src.core.ClosedJaxpr"},
      {"ShapedArray", "jax._src.core.ShapedArray"},
      {"_IndexUpdateHelper", "jax._src.numpy.array_methods._IndexUpdateHelper"},
      {"finfo", "ml_dtypes._finfo.finfo"},
      {"iinfo", "ml_dtypes._iinfo.iinfo"},
  };
  for (const auto& [pxl_name, path] : kPaths)
    if (name == pxl_name) return path;
  return name;
}

// type() of a dtype: NumPy's class of that dtype (numpy.dtypes.Float32DType;
// bfloat16's is numpy.dtype[bfloat16]); of a scalar type (jnp.float32) JAX's
// metaclass.
Value dtype_class(const DTypeObj& d) {
  if (d.scalar_type) return make_type_at("_ScalarMeta", "jax._src.numpy.scalar_types._ScalarMeta");
  const std::string n = d.name();
  if (n == "bfloat16") return make_type_at("dtype[bfloat16]", "numpy.dtype[bfloat16]");
  std::string cls = n.rfind("uint", 0) == 0
                        ? "UInt" + n.substr(4)
                        : std::string(1, static_cast<char>(n[0] - 'a' + 'A')) + n.substr(1);
  return make_type_at("dtype[" + n + "]", "numpy.dtypes." + cls + "DType");
}

} // namespace

Value type_of(const Value& v) {
  if (v.is_obj(ObjKind::DType)) return dtype_class(*v.as<DTypeObj>());
  std::string name = type_name(v);
  return make_type_at(name, jax_class_path(name));
}

// Python's builtin classes, which pxl has as builtin functions: type(x) of
// their instances is the class itself, so `type(x) is tuple` holds.
namespace {
const char* const kClasses[] = {"int",   "float", "bool", "str",       "list",
                                "tuple", "dict",  "set",  "frozenset", "complex"};
} // namespace

bool is_builtin_class(const std::string& name) {
  for (const char* c : kClasses)
    if (name == c) return true;
  return false;
}

bool same_class(const Value& a, const Value& b) {
  auto type_of = [](const Value& v) -> const TypeObj* {
    return v.is_obj(ObjKind::Opaque) ? dynamic_cast<const TypeObj*>(v.as<OpaqueObj>()) : nullptr;
  };
  const TypeObj* t = type_of(a);
  // A class is one object in Python: type(d) is jax.Device.
  if (const TypeObj* u = type_of(b); t && u) return t->equals(*u);
  const Value* other = &b;
  if (!t) t = type_of(b), other = &a;
  if (!t || !other->is_obj(ObjKind::Builtin) || other->as<BuiltinObj>()->name != t->name)
    return false;
  return is_builtin_class(t->name);
}

namespace {

// jax.sharding.Sharding's subclasses, by pxl's type name.
bool is_sharding_class(const std::string& name) {
  return name == "NamedSharding" || name == "SingleDeviceSharding";
}

// Does value `v` belong to the class named by `cls` (a builtin like int, or a type(x) value)?
bool instance_of(const Value& v, const Value& cls) {
  std::string want;
  if (cls.is_obj(ObjKind::Builtin))
    want = cls.as<BuiltinObj>()->name;
  else if (cls.is_obj(ObjKind::Opaque) && dynamic_cast<TypeObj*>(cls.as<OpaqueObj>()))
    want = static_cast<TypeObj*>(cls.as<OpaqueObj>())->name;
  else if (const ValueList* alts = sequence_items(cls)) {
    for (const Value& c : *alts)
      if (instance_of(v, c)) return true;
    return false;
  } else if (cls.is_obj(ObjKind::DType)) {
    return false;
  } else if (cls.is_obj(ObjKind::Opaque) && cls.as<OpaqueObj>()->type_name() == "type") {
    return false; // NumPy's scalar classes (jnp.floating, ...): pxl has no NumPy scalars
  } else {
    throw Error(ErrCode::Type, "isinstance() arg 2 must be a type or tuple of types");
  }
  std::string have = type_name(v);
  if (want == have) return true;
  if (want == "int" && v.is_bool()) return true;              // (a big int's type name is "int")
  if (want == "dict" && v.is_obj(ObjKind::Dict)) return true; // OrderedDict, defaultdict
  if (want == "tuple" && v.is_obj(ObjKind::Opaque) && v.as<OpaqueObj>()->tuple_items()) return true;
  if ((want == "Array" || want == "ndarray" || want == "ArrayImpl") && v.is_obj(ObjKind::Array))
    return true;
  if (want == "Array" && have == "PRNGKeyArray") return true; // typed keys are jax.Arrays
  if (want == "ShardedArray" && have == "ShardedArray") return true;
  if (want == "Device" && v.is_obj(ObjKind::Device)) return true; // jax.Device
  if (want == "Sharding" && is_sharding_class(have)) return true; // jax.sharding.Sharding
  return false;
}

namespace {
// The name of a class (a builtin type such as int, or a TypeObj such as
// jax.Array or type(x)); empty when `cls` is not one.
std::string class_name(const Value& cls) {
  if (cls.is_obj(ObjKind::Builtin)) return cls.as<BuiltinObj>()->name;
  if (cls.is_obj(ObjKind::Opaque) && dynamic_cast<TypeObj*>(cls.as<OpaqueObj>())) {
    const std::string& path = static_cast<TypeObj*>(cls.as<OpaqueObj>())->path;
    return path.substr(path.rfind('.') + 1); // its __name__: ArrayImpl is not Array
  }
  return {};
}

// issubclass over the classes pxl names: a class is its own subclass and
// object's; bool is an int; the array classes (ArrayImpl, a ShardedArray, a
// typed key array) are jax.Array (= jnp.ndarray).
bool subclass_of(const Value& cls, const Value& base) {
  if (const ValueList* alts = sequence_items(base)) {
    for (const Value& b : *alts)
      if (subclass_of(cls, b)) return true;
    return false;
  }
  std::string c = class_name(cls), b = class_name(base);
  if (b.empty())
    throw Error(ErrCode::Type,
                "issubclass() arg 2 must be a class, a tuple of classes, or a union");
  if (c == b || b == "object") return true;
  if (c == "bool" && b == "int") return true;
  bool array_class = c == "ArrayImpl" || c == "ShardedArray" || c == "PRNGKeyArray";
  if (b == "Sharding" && is_sharding_class(c)) return true;
  return array_class && (b == "Array" || b == "ndarray");
}
} // namespace

// jax.config's jax_disable_jit flag (as stdlib/jit.cpp reads it).
static bool round_jit_disabled(InterpreterImpl& in) {
  Value config = in.get_attr(in.import_module("jax", Span{}, ""), "config", Span{});
  return in.truthy(in.get_attr(config, "jax_disable_jit", Span{}), Span{});
}

Value py_round(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("round", a, {"number", "ndigits"}, 1);
  Value x = r[0];
  if (x.is_obj(ObjKind::Array)) {
    int64_t nd = r.get_int(1, 0);
    Tensor t = x.as<ArrayObj>()->tensor;
    if (!r.has(1) || r[1].is_none()) {
      // round(x) without ndigits: JAX's __round__ rounds, then converts to int.
      CallArgs fa;
      fa.pos = {x, Value::integer(0)};
      Value f = py_round(in, fa);
      return make_array(np::astype(in.ops(), f.as<ArrayObj>()->tensor, DType::Int32));
    }
    // Integers stay integers (JAX), and JAX has no negative decimals for them.
    DType dt = t->aval.dtype;
    if (dt == DType::Bool) // JAX's round checks for a number type first
      throw Error(ErrCode::Value, "data type <class 'numpy.bool'> not inexact");
    if (is_integer(dt) && nd >= 0) return x;
    if (is_integer(dt))
      throw Error(ErrCode::Unsupported, "integer np.round not implemented for decimals < 0");
    // As JAX: more decimals than the dtype's largest value has digits leave x unchanged.
    double max_digits = dt == DType::Float16 ? 4.8 : dt == DType::Float64 ? 308.25 : 38.53;
    if (static_cast<double>(nd) > max_digits) return x;
    if (dt == DType::Complex64 && nd != 0) { // JAX rounds the real and imaginary parts apart
      auto part = [&](Op op) {
        Tensor xs[] = {t};
        CallArgs pa;
        pa.pos = {make_array(in.ops().bind(op, {}, xs)), Value::integer(nd)};
        return py_round(in, pa).as<ArrayObj>()->tensor;
      };
      Tensor parts[] = {part(Op::Real), part(Op::Imag)};
      return make_array(in.ops().bind(Op::Complex, {}, parts));
    }
    if (nd == 0) return make_array(np::unary(in.ops(), np::UnOp::Round, t));
    if (dt == DType::Float16) { // as JAX: rounded in float32 (scaling in float16 loses digits)
      CallArgs va;
      va.pos = {make_array(np::astype(in.ops(), t, DType::Float32)), Value::integer(nd)};
      Tensor r32 = py_round(in, va).as<ArrayObj>()->tensor;
      return make_array(np::astype(in.ops(), r32, dt));
    }
    // JAX's round multiplies by and divides by lax._const(x, 10^nd): a weak Python scalar
    // for a 0-d weak x, else a strong constant of x's dtype, so only a 0-d weak x gives a
    // weak result.
    bool weak = t->aval.weak && t->aval.shape.empty();
    double p10 = std::pow(10.0, static_cast<double>(nd));
    Tensor scale = np::scalar(in.ops(), Scalar::of_float(p10));
    Tensor y = np::unary(in.ops(), np::UnOp::Round, np::binary(in.ops(), np::BinOp::Mul, t, scale));
    // Under jax_disable_jit JAX runs jnp.round primitive by primitive: the 10^nd is no
    // constant then, and the division is rewritten only where it broadcasts (jnp's `/`).
    if (round_jit_disabled(in))
      return make_array(np::binary(in.ops(), np::BinOp::TrueDiv, y,
                                   np::scalar(in.ops(), Scalar::of_float(p10), dt, weak)));
    // Otherwise XLA turns the division by the constant into a multiplication by its
    // reciprocal (whatever the shape); bfloat16 arithmetic is upcast to float32 around the
    // fusion, so there the reciprocal (of the constant rounded to bfloat16) and the
    // product stay float32.
    DType cd = dt == DType::BFloat16 ? DType::Float32 : dt;
    Tensor divisor =
        np::astype(in.ops(), np::scalar(in.ops(), Scalar::of_float(p10), dt, false), cd);
    if (weak) divisor = np::scalar(in.ops(), Scalar::of_float(p10), cd, true);
    Tensor inv = np::binary(in.ops(), np::BinOp::TrueDiv,
                            np::scalar(in.ops(), Scalar::of_float(1.0), cd, weak), divisor);
    Tensor prod =
        np::binary(in.ops(), np::BinOp::Mul, cd == dt ? y : np::astype(in.ops(), y, cd), inv);
    return make_array(weak && cd == dt ? prod : np::astype(in.ops(), prod, dt));
  }
  if (is_bigint(x)) {
    if (!r.has(1) || r[1].is_none() || r.get_int(1) >= 0) return x;
    // To a multiple of 10**-ndigits, halves to even.
    int64_t nd = r.get_int(1);
    BigInt p = BigInt::pow(BigInt(10), static_cast<uint64_t>(std::min<int64_t>(-nd, 100000)));
    BigInt q, rem;
    BigInt::divmod(x.as<BigIntObj>()->value, p, q, rem);
    int c = BigInt::compare(rem + rem, p);
    if (c > 0 || (c == 0 && !(q & BigInt(1)).is_zero())) q = q + BigInt(1);
    return make_int(q * p);
  }
  if (x.is_intlike()) {
    int64_t n = x.as_int();
    if (!r.has(1) || r[1].is_none() || r.get_int(1) >= 0) return Value::integer(n);
    // round(1234, -2) == 1200: to a multiple of 10^-ndigits, halves to even.
    int64_t nd = r.get_int(1);
    if (nd < -18) return Value::integer(0);
    int64_t p = 1;
    for (int64_t k = 0; k < -nd; ++k) p *= 10;
    int64_t q = n / p, rem = n % p;
    if (rem < 0) rem += p, q -= 1; // floor division
    if (2 * (rem % p) > p || (2 * rem == p && (q & 1))) q += 1;
    return Value::integer(q * p);
  }
  double f = value_to_float(x, "round() argument");
  if (!r.has(1) || r[1].is_none()) {
    if (!std::isfinite(f))
      throw Error(ErrCode::Value, "cannot convert float " + repr(x) + " to integer");
    double rounded = std::nearbyint(f); // default rounding mode: half to even, as Python
    return make_int(BigInt::from_double(rounded));
  }
  int64_t nd = std::clamp<int64_t>(r.get_int(1), -308, 308);
  if (!std::isfinite(f)) return x;
  if (nd >= 0) {
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(nd), f); // correctly rounded
    return Value::number(std::strtod(buf, nullptr));
  }
  double p = std::pow(10.0, static_cast<double>(-nd));
  return Value::number(std::nearbyint(f / p) * p);
}

// pow(base, exp, mod) of ints, as Python: the result takes mod's sign, a
// negative exponent inverts base modulo mod.
int64_t pow_mod(const Value& base, const Value& exp, const Value& mod) {
  if (!base.is_intlike() || !exp.is_intlike() || !mod.is_intlike())
    throw Error(ErrCode::Type, "pow() 3rd argument not allowed unless all arguments are integers");
  int64_t m = mod.as_int(), e = exp.as_int();
  if (m == 0) throw Error(ErrCode::Value, "pow() 3rd argument cannot be 0");
  using u128 = unsigned __int128;
  uint64_t um = m < 0 ? 0 - static_cast<uint64_t>(m) : static_cast<uint64_t>(m);
  auto reduce = [&](int64_t x) { // x mod |m| in [0, |m|)
    int64_t r = static_cast<int64_t>(static_cast<__int128>(x) % static_cast<__int128>(um));
    return static_cast<uint64_t>(r < 0 ? r + static_cast<__int128>(um) : r);
  };
  uint64_t b = reduce(base.as_int());
  if (e < 0) { // the inverse of b modulo |m| by the extended Euclidean algorithm
    __int128 g = static_cast<__int128>(um), x = static_cast<__int128>(b), s0 = 0, s1 = 1;
    while (x != 0) {
      __int128 q = g / x, t = g - q * x;
      g = x, x = t;
      t = s0 - q * s1;
      s0 = s1, s1 = t;
    }
    if (g != 1) throw Error(ErrCode::Value, "base is not invertible for the given modulus");
    s0 %= static_cast<__int128>(um);
    b = static_cast<uint64_t>(s0 < 0 ? s0 + static_cast<__int128>(um) : s0);
    e = e == INT64_MIN ? INT64_MAX : -e; // (INT64_MIN is beyond any practical use)
  }
  uint64_t r = um == 1 ? 0 : 1;
  for (uint64_t k = static_cast<uint64_t>(e); k; k >>= 1) {
    if (k & 1) r = static_cast<uint64_t>(static_cast<u128>(r) * b % um);
    b = static_cast<uint64_t>(static_cast<u128>(b) * b % um);
  }
  // Python's result has the sign of the modulus.
  return m < 0 && r != 0 ? static_cast<int64_t>(r) + m : static_cast<int64_t>(r);
}

// pow(base, exp, mod) when an operand is beyond 64 bits (a non-negative
// exponent; a negative one needs an inverse, which pow_mod finds for 64 bits).
Value pow_mod_big(const Value& base, const Value& exp, const Value& mod) {
  if (!is_py_int(base) || !is_py_int(exp) || !is_py_int(mod))
    throw Error(ErrCode::Type, "pow() 3rd argument not allowed unless all arguments are integers");
  BigInt m = to_bigint(mod), e = to_bigint(exp), q, b;
  if (m.is_zero()) throw Error(ErrCode::Value, "pow() 3rd argument cannot be 0");
  if (e.negative())
    throw Error(ErrCode::Unsupported,
                "pow() with a negative exponent and a modulus beyond 64 bits");
  BigInt::divmod(to_bigint(base), m, q, b);
  BigInt r(1);
  BigInt::divmod(r, m, q, r);
  for (; !e.is_zero(); e = e.shr(1)) {
    if (!(e & BigInt(1)).is_zero()) BigInt::divmod(r * b, m, q, r);
    BigInt::divmod(b * b, m, q, b);
  }
  return make_int(r);
}

// hash(x) as CPython computes it for numbers and tuples of them (ints modulo
// 2**61 - 1, floats by their exact value, tuples by xxHash), so printed hashes
// agree with Python's; other values hash by pxl's own function (CPython's
// string hashes are randomized per run anyway).
int64_t python_hash(const Value& v) {
  constexpr uint64_t kModulus = (uint64_t{1} << 61) - 1;
  auto fix = [](int64_t h) { return h == -1 ? -2 : h; };
  if (is_bigint(v)) return v.as<BigIntObj>()->value.py_hash();
  if (v.is_intlike()) {
    int64_t x = v.as_int();
    uint64_t m = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
    auto h = static_cast<int64_t>(m % kModulus);
    return fix(x < 0 ? -h : h);
  }
  if (v.is_float()) {
    double d = v.f;
    if (std::isinf(d)) return d > 0 ? 314159 : -314159;
    if (std::isnan(d)) return 0; // CPython: the object's identity
    int e = 0;
    double m = std::frexp(d, &e);
    int sign = 1;
    if (m < 0) sign = -1, m = -m;
    uint64_t x = 0;
    while (m != 0) {
      x = ((x << 28) & kModulus) | x >> (61 - 28);
      m *= 268435456.0;
      e -= 28;
      auto y = static_cast<uint64_t>(m);
      m -= static_cast<double>(y);
      x += y;
      if (x >= kModulus) x -= kModulus;
    }
    e = e >= 0 ? e % 61 : 61 - 1 - ((-1 - e) % 61);
    x = ((x << e) & kModulus) | x >> (61 - e);
    return fix(static_cast<int64_t>(x) * sign);
  }
  if (v.is_obj(ObjKind::Tuple)) {
    const uint64_t p1 = 11400714785074694791ULL, p2 = 14029467366897019727ULL,
                   p5 = 2870177450012600261ULL;
    const auto& items = v.as<TupleObj>()->items;
    uint64_t acc = p5;
    for (const Value& x : items) {
      acc += static_cast<uint64_t>(python_hash(x)) * p2;
      acc = (acc << 31) | (acc >> 33);
      acc *= p1;
    }
    acc += items.size() ^ (p5 ^ 3527539UL);
    if (acc == static_cast<uint64_t>(-1)) return 1546275796;
    return static_cast<int64_t>(acc);
  }
  return static_cast<int64_t>(ValueHash()(v) >> 1);
}

Value min_max(InterpreterImpl& in, CallArgs& a, bool is_max) {
  const char* name = is_max ? "max" : "min";
  Value key, dflt;
  bool has_default = false;
  for (auto& [k, v] : a.kw) {
    if (k == "key")
      key = v;
    else if (k == "default")
      dflt = v, has_default = true;
    else
      throw Error(ErrCode::Arguments,
                  std::string(name) + "() got an unexpected keyword argument '" + k + "'");
  }
  if (a.pos.empty())
    throw Error(ErrCode::Type, std::string(name) + " expected at least 1 argument, got 0");
  ValueList items = a.pos.size() == 1 ? in.iterate(a.pos[0], Span{}) : a.pos;
  if (items.empty()) {
    if (has_default) return dflt;
    throw Error(ErrCode::Value, std::string(name) + "() arg is an empty sequence");
  }
  Value best = items[0];
  Value best_key = key.is_none() ? best : in.call(key, ValueList{best}, Span{});
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key.is_none() ? items[i] : in.call(key, ValueList{items[i]}, Span{});
    bool better = is_max ? in.less_than(best_key, k, Span{}) : in.less_than(k, best_key, Span{});
    if (better) best = items[i], best_key = k;
  }
  return best;
}

// The Python scalar of array `x` for int(x) / float(x); a traced one is JAX's
// ConcretizationTypeError naming the conversion, then pxl's account of the
// trace (which jit replaces by JAX's origin text: stdlib/trace_origin.hpp).
Value scalar_for_conversion(InterpreterImpl& in, const Value& x, const std::string& fn) {
  try {
    return array_to_python_scalar(in, x, Span{});
  } catch (Error& e) {
    if (e.code() != ErrCode::ConcreteValue) throw;
    const AVal& aval = x.as<ArrayObj>()->tensor->aval;
    const std::string type = array_type_str(aval.dtype, aval.shape);
    std::string why = e.message();
    if (!why.empty()) why[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(why[0])));
    throw Error(
        ErrCode::ConcreteValue,
        "ConcretizationTypeError: Abstract tracer value encountered where concrete value is "
        "expected: "
        "traced array with shape " +
            type + "\nThe problem arose with the `" + fn +
            "` function. If trying to convert the data type of a value, try using `x.astype(" + fn +
            ")` or `jnp.array(x, " + fn + ")` instead. " + why +
            "\n\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError",
        e.span(), e.hint());
  }
}

// operator.index(x) of an integer array of one element (its __index__), for
// range(); a traced one is JAX's TracerIntegerConversionError, then pxl's
// account of the trace (which jit replaces by JAX's origin text). Other values
// come back unchanged.
Value index_of_array(InterpreterImpl& in, const Value& x) {
  if (!x.is_obj(ObjKind::Array)) return x;
  const AVal& aval = x.as<ArrayObj>()->tensor->aval;
  if (!is_integer(aval.dtype) && aval.dtype != DType::Bool) return x;
  try {
    return array_to_python_scalar(in, x, Span{});
  } catch (Error& e) {
    if (e.code() != ErrCode::ConcreteValue) throw;
    const std::string type = array_type_str(aval.dtype, aval.shape);
    std::string why = e.message();
    if (!why.empty()) why[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(why[0])));
    throw Error(
        ErrCode::ConcreteValue,
        "TracerIntegerConversionError: The __index__() method was called on traced array with "
        "shape " +
            type + " " + why +
            "\nSee "
            "https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerIntegerConversionError",
        e.span(), e.hint());
  }
}

// Python 3.11's default limit on decimal digits in int(str) (sys.int_info).
constexpr size_t kMaxStrDigits = 4300;

Value to_int(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("int", a, {"x", "base"});
  if (!r.has(0)) return Value::integer(0);
  const Value& x = r[0];
  if (x.is_intlike()) return Value::integer(x.as_int());
  if (is_bigint(x)) return x;
  if (x.is_float()) {
    if (std::isinf(x.f)) throw Error(ErrCode::Value, "cannot convert float infinity to integer");
    if (std::isnan(x.f)) throw Error(ErrCode::Value, "cannot convert float NaN to integer");
    return make_int(BigInt::from_double(x.f));
  }
  if (x.is_obj(ObjKind::Str)) {
    std::string s = x.as<StrObj>()->value;
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    std::string t = b == std::string::npos ? "" : s.substr(b, e - b + 1);
    int base = static_cast<int>(r.get_int(1, 10));
    if (base != 0 && (base < 2 || base > 36))
      throw Error(ErrCode::Value, "int() base must be >= 2 and <= 36, or 0");
    auto bad = [&]() {
      return Error(ErrCode::Value,
                   "invalid literal for int() with base " + std::to_string(base) + ": " + repr(x));
    };
    // Python's prefixes: 0x 0o 0b (any base when 0, the matching one otherwise).
    std::string sign = !t.empty() && (t[0] == '+' || t[0] == '-') ? t.substr(0, 1) : "";
    std::string digits = t.substr(sign.size());
    int b2 = base;
    if (digits.size() > 1 && digits[0] == '0') {
      char p = static_cast<char>(std::tolower(static_cast<unsigned char>(digits[1])));
      int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
      if (pb && (base == 0 || base == pb)) {
        b2 = pb;
        digits = digits.substr(2);
      } else if (base == 0 && digits.find_first_not_of('0') != std::string::npos) {
        throw bad(); // "017": leading zeros need a prefix
      }
    }
    if (b2 == 0) b2 = 10;
    if (digits.empty() || digits[0] == '+' || digits[0] == '-' ||
        std::isspace(static_cast<unsigned char>(digits[0])))
      throw bad();
    if (b2 == 10 && digits.size() > kMaxStrDigits &&
        digits.find_first_not_of("0123456789") == std::string::npos)
      throw Error(ErrCode::Value,
                  "Exceeds the limit (4300 digits) for integer string conversion: value has " +
                      std::to_string(digits.size()) +
                      " digits; use sys.set_int_max_str_digits() to increase the limit");
    std::optional<BigInt> v = BigInt::parse(digits, b2);
    if (!v) throw bad();
    return make_int(sign == "-" ? -*v : *v);
  }
  if (x.is_obj(ObjKind::Array)) {
    Value s = scalar_for_conversion(in, x, "int");
    CallArgs again;
    again.pos.push_back(s);
    return to_int(in, again);
  }
  throw Error(ErrCode::Type,
              "int() argument must be a string or a number, not '" + type_name(x) + "'");
}

Value to_float(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("float", a, {"x"});
  if (!r.has(0)) return Value::number(0.0);
  const Value& x = r[0];
  if (x.is_number()) return Value::number(x.as_float());
  if (is_bigint(x)) return Value::number(bigint_to_double(x.as<BigIntObj>()->value));
  if (x.is_obj(ObjKind::Str)) {
    std::string s = x.as<StrObj>()->value;
    size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    std::string t = b == std::string::npos ? "" : s.substr(b, e - b + 1);
    std::string low = t;
    for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (low == "inf" || low == "+inf" || low == "infinity") return Value::number(INFINITY);
    if (low == "-inf" || low == "-infinity") return Value::number(-INFINITY);
    if (low == "nan" || low == "+nan" || low == "-nan") return Value::number(NAN);
    char* end = nullptr;
    double v = t.empty() ? 0 : std::strtod(t.c_str(), &end);
    if (t.empty() || *end || low.find("x") != std::string::npos)
      throw Error(ErrCode::Value, "could not convert string to float: " + repr(x));
    return Value::number(v);
  }
  if (x.is_obj(ObjKind::Array))
    return Value::number(scalar_for_conversion(in, x, "float").as_float());
  throw Error(ErrCode::Type,
              "float() argument must be a string or a number, not '" + type_name(x) + "'");
}

} // namespace

// str() as print and str see it: a value traced by an eager shard_map call
// can say what each device holds.
std::string display_str(InterpreterImpl& in, const Value& v) {
  if (v.is_obj(ObjKind::Array)) {
    const Tensor& t = v.as<ArrayObj>()->tensor;
    auto* tc = dynamic_cast<TraceContext*>(&in.ops());
    if (tc && tc->describe && tc->owns(t))
      if (std::optional<std::string> s = tc->describe(tc->value_of(t))) return *s;
  }
  return str(v, in.print_options());
}

void InterpreterImpl::install_builtins() {
  auto def = [&](const std::string& name, NativeFn fn) {
    builtins_->vars[name] = make_builtin(name, std::move(fn));
  };

  def("print", [](InterpreterImpl& in, CallArgs& a) {
    std::string sep = " ", end = "\n";
    Value file;
    for (auto& [k, v] : a.kw) {
      if (k == "sep")
        sep = v.is_none() ? " " : value_to_str(v, "sep");
      else if (k == "end")
        end = v.is_none() ? "\n" : value_to_str(v, "end");
      else if (k == "file")
        file = v;
      else if (k != "flush")
        throw Error(ErrCode::Arguments, "print() got an unexpected keyword argument '" + k + "'");
    }
    std::string line;
    for (size_t i = 0; i < a.pos.size(); ++i) {
      if (i) line += sep;
      line += display_str(in, a.pos[i]);
    }
    auto* stream =
        file.is_obj(ObjKind::Opaque) ? dynamic_cast<StdStreamObj*>(file.as<OpaqueObj>()) : nullptr;
    if (!file.is_none() && !stream) { // any object with write(), as in Python
      in.call(in.get_attr(file, "write", Span{}), ValueList{make_str(line + end)}, Span{});
      return Value();
    }
    std::ostream& os = stream && stream->is_err ? in.err() : in.out();
    os << line << end;
    os.flush();
    return Value();
  });
  // exit(status=None) / quit(): stop the program (lang/system_exit.hpp), as
  // Python's sys.exit: None is status 0, an int is the status, anything else
  // is printed to stderr and the status is 1.
  for (const char* name : {"exit", "quit"})
    def(name, [name](InterpreterImpl&, CallArgs& a) -> Value {
      ArgReader r(name, a, {"code"}, 0);
      SystemExit e;
      if (r.has(0) && !r[0].is_none()) {
        if (r[0].is_intlike())
          e.status = static_cast<int>(r[0].as_int() & 0xFF); // (the OS keeps 8 bits)
        else
          e.status = 1, e.message = str(r[0]);
      }
      throw e;
    });
  def("len", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("len", a, {"obj"}, 1);
    return Value::integer(in.length(r[0], Span{}));
  });
  def("range", [](InterpreterImpl& in, CallArgs& a) {
    for (Value& v : a.pos) v = index_of_array(in, v);
    for (auto& kv : a.kw) kv.second = index_of_array(in, kv.second);
    ArgReader r("range", a, {"start", "stop", "step"}, 1);
    int64_t start = 0, stop, step = 1;
    if (r.has(1))
      start = r.get_int(0), stop = r.get_int(1);
    else
      stop = r.get_int(0);
    if (r.has(2)) step = r.get_int(2);
    if (step == 0) throw Error(ErrCode::Value, "range() arg 3 must not be zero");
    return make_range(start, stop, step);
  });
  def("type", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("type", a, {"object"}, 1);
    return type_of(r[0]);
  });
  def("isinstance", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("isinstance", a, {"obj", "class_or_tuple"}, 2);
    return Value::boolean(instance_of(r[0], r[1]));
  });
  def("issubclass", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("issubclass", a, {"cls", "class_or_tuple"}, 2);
    if (class_name(r[0]).empty()) throw Error(ErrCode::Type, "issubclass() arg 1 must be a class");
    return Value::boolean(subclass_of(r[0], r[1]));
  });
  def("str", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("str", a, {"object"});
    return make_str(r.has(0) ? display_str(in, r[0]) : std::string());
  });
  def("repr", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("repr", a, {"object"}, 1);
    return make_str(repr(r[0], in.print_options()));
  });
  def("format", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("format", a, {"value", "format_spec"}, 1);
    return make_str(in.format_value(r[0], r.has(1) ? r.get_str(1) : std::string(), Span{}));
  });
  def("int", to_int);
  def("float", to_float);
  def("complex", complex_builtin);
  def("bool", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("bool", a, {"x"});
    return Value::boolean(r.has(0) && in.truthy(r[0], Span{}));
  });
  def("list", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("list", a, {"iterable"});
    return make_list(r.has(0) ? in.iterate(r[0], Span{}) : ValueList{});
  });
  def("set", [](InterpreterImpl& in, CallArgs& a) { return set_builtin(in, a, false); });
  def("frozenset", [](InterpreterImpl& in, CallArgs& a) { return set_builtin(in, a, true); });
  def("tuple", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("tuple", a, {"iterable"});
    return make_tuple(r.has(0) ? in.iterate(r[0], Span{}) : ValueList{});
  });
  def("dict", [](InterpreterImpl& in, CallArgs& a) {
    auto d = std::make_shared<DictObj>();
    if (a.pos.size() > 1) throw Error(ErrCode::Arguments, "dict expected at most 1 argument");
    if (!a.pos.empty()) {
      if (a.pos[0].is_obj(ObjKind::Dict)) {
        a.pos[0].as<DictObj>()->for_each([&](const Value& k, const Value& v) { d->set(k, v); });
      } else {
        for (const Value& kv : in.iterate(a.pos[0], Span{})) {
          ValueList pair = in.iterate(kv, Span{});
          if (pair.size() != 2)
            throw Error(ErrCode::Value, "dictionary update sequence element has length " +
                                            std::to_string(pair.size()) + "; 2 is required");
          if (!is_hashable(pair[0]))
            throw Error(ErrCode::Type, "unhashable type: '" + type_name(pair[0]) + "'");
          d->set(pair[0], pair[1]);
        }
      }
    }
    for (auto& [k, v] : a.kw) d->set(make_str(k), v);
    return Value::object(d);
  });
  // dict.fromkeys(iterable, value=None): one shared value per key.
  builtins_->vars["dict"].as<BuiltinObj>()->attrs.emplace_back(
      "fromkeys", make_builtin("fromkeys", [](InterpreterImpl& in, CallArgs& a) {
        ArgReader r("fromkeys", a, {"iterable", "value"}, 1);
        auto d = std::make_shared<DictObj>();
        for (const Value& k : in.iterate(r[0], Span{})) {
          if (!is_hashable(k))
            throw Error(ErrCode::Type, "unhashable type: '" + type_name(k) + "'");
          d->set(k, r[1]);
        }
        return Value::object(d);
      }));
  def("zip", [](InterpreterImpl& in, CallArgs& a) {
    bool strict = false;
    for (auto& [k, v] : a.kw) {
      if (k != "strict")
        throw Error(ErrCode::Arguments, "zip() got an unexpected keyword argument '" + k + "'");
      strict = in.truthy(v, Span{});
    }
    if (std::any_of(a.pos.begin(), a.pos.end(), [](const Value& x) { return as_lazy_iter(x); })) {
      // Iterators (count(), iter(x), ...) give their items one at a time:
      // stop at the first argument that runs out, as Python does.
      std::vector<ValueList> listed(a.pos.size());
      for (size_t k = 0; k < a.pos.size(); ++k)
        if (!as_lazy_iter(a.pos[k])) listed[k] = in.iterate(a.pos[k], Span{});
      ValueList out;
      for (size_t i = 0;; ++i) {
        ValueList t;
        for (size_t k = 0; k < a.pos.size(); ++k) {
          Value x;
          LazyIterObj* it = as_lazy_iter(a.pos[k]);
          if (it ? !it->next(in, x) : i >= listed[k].size()) return make_list(std::move(out));
          t.push_back(it ? x : listed[k][i]);
        }
        out.push_back(make_tuple(std::move(t)));
      }
    }
    std::vector<ValueList> seqs;
    for (const Value& x : a.pos) seqs.push_back(in.iterate(x, Span{}));
    size_t n = seqs.empty() ? 0 : SIZE_MAX;
    for (auto& s : seqs) n = std::min(n, s.size());
    if (strict) // Python's texts name the first argument of another length
      for (size_t k = 1; k < seqs.size(); ++k)
        if (seqs[k].size() != seqs[0].size()) {
          std::string which = "argument" + std::string(k == 1 ? " " : "s 1-") + std::to_string(k);
          throw Error(ErrCode::Value, "zip() argument " + std::to_string(k + 1) + " is " +
                                          (seqs[k].size() < seqs[0].size() ? "shorter" : "longer") +
                                          " than " + which);
        }
    ValueList out;
    for (size_t i = 0; i < n; ++i) {
      ValueList t;
      for (auto& s : seqs) t.push_back(s[i]);
      out.push_back(make_tuple(std::move(t)));
    }
    return make_list(std::move(out));
  });
  def("enumerate", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("enumerate", a, {"iterable", "start"}, 1);
    int64_t k = r.get_int(1, 0);
    ValueList out;
    for (const Value& x : in.iterate(r[0], Span{}))
      out.push_back(make_tuple({Value::integer(k++), x}));
    return make_list(std::move(out));
  });
  def("iter", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("iter", a, {"object"}, 1);
    if (as_lazy_iter(r[0])) return r[0]; // an iterator is its own iterator
    std::string kind = r[0].is_obj(ObjKind::List)    ? "list_iterator"
                       : r[0].is_obj(ObjKind::Tuple) ? "tuple_iterator"
                       : r[0].is_obj(ObjKind::Dict)  ? "dict_keyiterator"
                       : r[0].is_obj(ObjKind::Str)   ? "str_ascii_iterator"
                                                     : "iterator";
    return Value::object(std::make_shared<IteratorObj>(in.iterate(r[0], Span{}), kind));
  });
  def("next", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("next", a, {"iterator", "default"}, 1);
    auto* it = as_lazy_iter(r[0]);
    if (!it) throw Error(ErrCode::Type, "'" + type_name(r[0]) + "' object is not an iterator");
    Value out;
    if (it->next(in, out)) return out;
    if (r.has(1)) return r[1];
    throw Error(ErrCode::Value, "StopIteration");
  });
  def("reversed", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("reversed", a, {"sequence"}, 1);
    ValueList items = in.iterate(r[0], Span{});
    std::reverse(items.begin(), items.end());
    return make_list(std::move(items));
  });
  def("sorted", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("sorted", a, {"iterable", "key", "reverse"}, 1);
    ValueList items = in.iterate(r[0], Span{});
    bool rev = r.get_bool(2, false);
    std::vector<Value> keys;
    for (auto& x : items) keys.push_back(r[1].is_none() ? x : in.call(r[1], ValueList{x}, Span{}));
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return rev ? in.less_than(keys[y], keys[x], Span{}) : in.less_than(keys[x], keys[y], Span{});
    });
    ValueList out;
    for (size_t i : order) out.push_back(items[i]);
    return make_list(std::move(out));
  });
  def("min", [](InterpreterImpl& in, CallArgs& a) { return min_max(in, a, false); });
  def("max", [](InterpreterImpl& in, CallArgs& a) { return min_max(in, a, true); });
  def("abs", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("abs", a, {"x"}, 1);
    const Value& x = r[0];
    if (x.is_obj(ObjKind::Array))
      return make_array(np::unary(in.ops(), np::UnOp::Abs, x.as<ArrayObj>()->tensor));
    if (x.is_intlike()) {
      if (x.as_int() == INT64_MIN) return make_int(-BigInt(INT64_MIN));
      return Value::integer(std::llabs(x.as_int()));
    }
    if (is_bigint(x))
      return x.as<BigIntObj>()->value.negative() ? make_int(-x.as<BigIntObj>()->value) : x;
    if (x.is_float()) return Value::number(std::fabs(x.f));
    if (is_py_complex(x))
      return Value::number(std::hypot(x.as<ComplexObj>()->re, x.as<ComplexObj>()->im));
    throw Error(ErrCode::Type, "bad operand type for abs(): '" + type_name(x) + "'");
  });
  def("sum", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("sum", a, {"iterable", "start"}, 1);
    Value acc = r.has(1) ? r[1] : Value::integer(0);
    for (const Value& x : in.iterate(r[0], Span{}))
      acc = in.binary_op(BinOpKind::Add, acc, x, Span{});
    return acc;
  });
  def("any", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("any", a, {"iterable"}, 1);
    for (const Value& x : in.iterate(r[0], Span{}))
      if (in.truthy(x, Span{})) return Value::boolean(true);
    return Value::boolean(false);
  });
  def("all", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("all", a, {"iterable"}, 1);
    for (const Value& x : in.iterate(r[0], Span{}))
      if (!in.truthy(x, Span{})) return Value::boolean(false);
    return Value::boolean(true);
  });
  def("map", [](InterpreterImpl& in, CallArgs& a) {
    if (a.pos.size() < 2) throw Error(ErrCode::Arguments, "map() must have at least two arguments");
    std::vector<ValueList> seqs;
    for (size_t i = 1; i < a.pos.size(); ++i) seqs.push_back(in.iterate(a.pos[i], Span{}));
    size_t n = SIZE_MAX;
    for (auto& s : seqs) n = std::min(n, s.size());
    ValueList out;
    for (size_t i = 0; i < n; ++i) {
      ValueList args;
      for (auto& s : seqs) args.push_back(s[i]);
      out.push_back(in.call(a.pos[0], std::move(args), Span{}));
    }
    return make_list(std::move(out));
  });
  def("filter", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("filter", a, {"function", "iterable"}, 2);
    ValueList out;
    for (const Value& x : in.iterate(r[1], Span{}))
      if (r[0].is_none() ? in.truthy(x, Span{})
                         : in.truthy(in.call(r[0], ValueList{x}, Span{}), Span{}))
        out.push_back(x);
    return make_list(std::move(out));
  });
  def("round", py_round);
  def("pow", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("pow", a, {"base", "exp", "mod"}, 2);
    if (!r.has(2) || r[2].is_none()) return in.binary_op(BinOpKind::Pow, r[0], r[1], Span{});
    if (is_bigint(r[0]) || is_bigint(r[1]) || is_bigint(r[2])) return pow_mod_big(r[0], r[1], r[2]);
    return Value::integer(pow_mod(r[0], r[1], r[2]));
  });
  def("divmod", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("divmod", a, {"a", "b"}, 2);
    try {
      return make_tuple({in.binary_op(BinOpKind::FloorDiv, r[0], r[1], Span{}),
                         in.binary_op(BinOpKind::Mod, r[0], r[1], Span{})});
    } catch (Error& e) { // Python names divmod() itself for operands it cannot take
      const std::string floordiv = "unsupported operand type(s) for //:";
      if (e.code() != ErrCode::Type || e.message().rfind(floordiv, 0) != 0) throw;
      throw Error(ErrCode::Type,
                  "unsupported operand type(s) for divmod():" + e.message().substr(floordiv.size()),
                  e.span(), e.hint());
    }
  });
  def("hasattr", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("hasattr", a, {"obj", "name"}, 2);
    return Value::boolean(in.has_attr(r[0], r.get_str(1)));
  });
  // dir(obj): its attribute names, sorted (a module's: every name it defines).
  def("dir", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("dir", a, {"object"}, 1);
    std::vector<std::string> names = in.attr_names(r[0]);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    ValueList out;
    for (auto& n : names) out.push_back(make_str(std::move(n)));
    return make_list(std::move(out));
  });
  def("getattr", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("getattr", a, {"obj", "name", "default"}, 2);
    if (r.has(2) && !in.has_attr(r[0], r.get_str(1))) return r[2];
    return in.get_attr(r[0], r.get_str(1), Span{});
  });
  // Callable objects of the standard library, by their Python type names: jnp.add
  // & co. (ufunc), jit/pmap/vmap/grad'd functions, custom_jvp/vjp, compiled stages.
  auto is_callable_object = [](const Value& v) {
    if (!v.is_obj(ObjKind::Opaque)) return false;
    static const char* const names[] = {
        "ufunc",      "PjitFunction", "PmapFunction", "function", "builtin_function_or_method",
        "custom_jvp", "custom_vjp",   "Compiled"};
    std::string t = type_name(v);
    return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return t == n; });
  };
  def("callable", [is_callable_object](InterpreterImpl&, CallArgs& a) {
    ArgReader r("callable", a, {"obj"}, 1);
    const Value& v = r[0];
    return Value::boolean(v.is_obj(ObjKind::Function) || v.is_obj(ObjKind::Builtin) ||
                          v.is_obj(ObjKind::BoundMethod) || v.is_obj(ObjKind::Partial) ||
                          v.is_obj(ObjKind::DType) || is_callable_object(v));
  });
  def("hash", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("hash", a, {"obj"}, 1);
    if (!is_hashable(r[0]))
      throw Error(ErrCode::Type, "unhashable type: '" + type_name(r[0]) + "'");
    return Value::integer(python_hash(r[0]));
  });
  // id(x): the object's address, so it agrees with `is`; None, bools,
  // numbers have no object in pxl, and equal ones share an id (as Python's
  // cached small ints do).
  def("id", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("id", a, {"obj"}, 1);
    const Value& v = r[0];
    if (v.tag == Value::Tag::Obj)
      return Value::integer(static_cast<int64_t>(reinterpret_cast<intptr_t>(v.obj.get())));
    return Value::integer(static_cast<int64_t>(ValueHash()(v) >> 1) ^ static_cast<int64_t>(v.tag));
  });
  def("chr", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("chr", a, {"i"}, 1);
    int64_t cp = r.get_int(0);
    if (cp < 0 || cp > 0x10FFFF) throw Error(ErrCode::Value, "chr() arg not in range(0x110000)");
    return make_str(utf8_encode(static_cast<uint32_t>(cp)));
  });
  // hex, oct, bin: an integer in base 16, 8 or 2 with Python's prefix ('-0x1f').
  for (auto [name, base, prefix] :
       {std::tuple{"hex", 16, "0x"}, std::tuple{"oct", 8, "0o"}, std::tuple{"bin", 2, "0b"}}) {
    def(name, [name = std::string(name), base = base,
               prefix = std::string(prefix)](InterpreterImpl&, CallArgs& a) {
      ArgReader r(name.c_str(), a, {"number"}, 1);
      if (is_bigint(r[0])) {
        std::string d = r[0].as<BigIntObj>()->value.to_string(base);
        return make_str(d[0] == '-' ? "-" + prefix + d.substr(1) : prefix + d);
      }
      int64_t v = r.get_int(0);
      uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
      std::string digits;
      do {
        digits.insert(digits.begin(), "0123456789abcdef"[m % static_cast<uint64_t>(base)]);
        m /= static_cast<uint64_t>(base);
      } while (m);
      return make_str((v < 0 ? "-" : "") + prefix + digits);
    });
  }
  def("ord", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("ord", a, {"c"}, 1);
    const std::string& s = r.get_str(0);
    if (s.empty())
      throw Error(ErrCode::Type, "ord() expected a character, but string of length 0 found");
    std::optional<uint32_t> cp = utf8_single(s);
    if (!cp)
      throw Error(ErrCode::Type, "ord() expected a character, but a longer string was found");
    return Value::integer(*cp);
  });
  def("slice", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("slice", a, {"start", "stop", "step"}, 1);
    if (!r.has(1)) return Value::object(std::make_shared<SliceObj>(Value(), r[0], Value()));
    return Value::object(std::make_shared<SliceObj>(r[0], r[1], r[2]));
  });
  builtins_->vars["None"] = Value();
  builtins_->vars["Ellipsis"] = ellipsis_;
}

} // namespace pxl
