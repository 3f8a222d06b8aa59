#include "lang/value.hpp"

#include "lang/bigint.hpp"
#include "lang/dict_equal.hpp"
#include "lang/dtype_names.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "runtime/format.hpp"
#include "runtime/sharded.hpp"

namespace pxl {

namespace {
// JAX prints an array of partial sums (a shard_map result with unreduced
// out_specs) by its type alone: its values are not one array yet.
std::optional<std::string> unreduced_repr(const TensorImpl& t) {
  if (!t.sharded || t.sharded->spec.unreduced.empty()) return std::nullopt;
  std::string shape = "(";
  for (size_t i = 0; i < t.aval.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(t.aval.shape[i]);
  shape += t.aval.shape.size() == 1 ? ",)" : ")";
  return "Array(shape=" + shape + ", dtype=" + dtype_name(t.aval.dtype) +
         ", sharding=NamedSharding(mesh=" + t.sharded->mesh.jax_str() +
         ", spec=" + t.sharded->spec.repr() + ", memory_kind=device))";
}
} // namespace

Value make_str(std::string s) { return Value::object(std::make_shared<StrObj>(std::move(s))); }
Value make_complex(double re, double im) {
  return Value::object(std::make_shared<ComplexObj>(re, im));
}
Value make_tuple(ValueList v) { return Value::object(std::make_shared<TupleObj>(std::move(v))); }
Value make_list(ValueList v) { return Value::object(std::make_shared<ListObj>(std::move(v))); }
Value make_array(Tensor t) { return Value::object(std::make_shared<ArrayObj>(std::move(t))); }
Value make_builtin(std::string name, NativeFn fn) {
  return Value::object(std::make_shared<BuiltinObj>(std::move(name), std::move(fn)));
}

// ---- dict ---------------------------------------------------------------

const Value* DictObj::find(const Value& k) const {
  auto it = index.find(k);
  return it == index.end() ? nullptr : &entries[it->second].second;
}

void DictObj::set(const Value& k, Value v) {
  auto it = index.find(k);
  if (it != index.end()) {
    entries[it->second].second = std::move(v);
    return;
  }
  index.emplace(k, entries.size());
  entries.emplace_back(k, std::move(v));
  live.push_back(true);
}

bool DictObj::erase(const Value& k) {
  auto it = index.find(k);
  if (it == index.end()) return false;
  live[it->second] = false;
  entries[it->second] = {Value(), Value()};
  index.erase(it);
  return true;
}

// ---- hashing and equality --------------------------------------------------

size_t ValueHash::operator()(const Value& v) const {
  switch (v.tag) {
  case Value::Tag::None:
    return 0x9e3779b9;
  case Value::Tag::Bool:
  case Value::Tag::Int:
    return std::hash<int64_t>()(v.as_int());
  case Value::Tag::Float: {
    // Equal numbers hash equal across int/float (1 == 1.0), as in Python.
    double f = v.f;
    if (std::floor(f) == f && std::fabs(f) < 9.2e18)
      return std::hash<int64_t>()(static_cast<int64_t>(f));
    return std::hash<double>()(f);
  }
  case Value::Tag::Obj:
    break;
  }
  switch (v.obj->kind) {
  case ObjKind::Str:
    return std::hash<std::string>()(v.as<StrObj>()->value);
  case ObjKind::Tuple: {
    size_t h = 0x345678;
    for (const auto& x : v.as<TupleObj>()->items) h = h * 1000003 ^ (*this)(x);
    return h;
  }
  case ObjKind::DType:
    return (static_cast<size_t>(v.as<DTypeObj>()->dtype) * 2 + v.as<DTypeObj>()->wide) * 7919;
  case ObjKind::Device:
    return std::hash<int>()(v.as<DeviceObj>()->id) ^ 0x5bd1e995; // equal devices, equal keys
  case ObjKind::BigInt: {
    // Equal to a float only when the float holds it exactly: then hash alike.
    const BigInt& b = v.as<BigIntObj>()->value;
    auto d = b.to_double();
    if (d && BigInt::from_double(*d) == b) return std::hash<double>()(*d);
    return std::hash<std::string>()(b.to_string());
  }
  case ObjKind::Range: {
    // Equal ranges (the same sequence) hash alike: by length, first item, step.
    const auto* r = v.as<RangeObj>();
    int64_t n = r->size();
    size_t h = std::hash<int64_t>()(n) * 1000003;
    if (n > 0) h ^= std::hash<int64_t>()(r->start);
    if (n > 1) h = h * 31 ^ std::hash<int64_t>()(r->step);
    return h;
  }
  case ObjKind::Complex: {
    // A complex with no imaginary part hashes as its real part (1+0j == 1).
    const auto* c = v.as<ComplexObj>();
    size_t h = (*this)(Value::number(c->re));
    return c->im == 0 ? h : h ^ (std::hash<double>()(c->im) * 1000003);
  }
  case ObjKind::Opaque: {
    // Opaque objects may define equality by value (tree_util's key entries),
    // so equal ones must hash alike: the type and repr decide.
    const auto* o = v.as<OpaqueObj>();
    return std::hash<std::string>()(o->type_name()) * 31 ^ std::hash<std::string>()(o->repr());
  }
  default:
    return std::hash<const void*>()(v.obj.get());
  }
}

bool ValueKeyEq::operator()(const Value& a, const Value& b) const { return values_equal(a, b); }

// The same class: type(x) against a builtin class, or two class objects (lang/builtins.cpp).
bool same_class(const Value& a, const Value& b);
bool is_builtin_class(const std::string& name); // int, tuple, ...: lang/builtins.cpp

namespace {

// NumPy's dtype == str: the string names the dtype (its name or an alias,
// np.dtype('float32') == 'f4'); jnp.float32 & co. are classes, never equal to a string.
bool dtype_equals_name(const DTypeObj& d, const std::string& s) {
  return !d.scalar_type && canonical_dtype_name(s) == d.name();
}

} // namespace

// NumPy's dtype == bool: the builtin class names dtype('bool') (int, float and
// complex name 64-bit dtypes, which pxl's arrays never have).
static bool dtype_equals_builtin(const Value& d, const Value& cls) {
  return d.is_obj(ObjKind::DType) && cls.is_obj(ObjKind::Builtin) &&
         !d.as<DTypeObj>()->scalar_type && d.as<DTypeObj>()->dtype == DType::Bool &&
         cls.as<BuiltinObj>()->name == "bool";
}

bool values_equal(const Value& a, const Value& b) {
  if (dtype_equals_builtin(a, b) || dtype_equals_builtin(b, a)) return true;
  if (a.is_obj(ObjKind::DType) && b.is_obj(ObjKind::Str))
    return dtype_equals_name(*a.as<DTypeObj>(), b.as<StrObj>()->value);
  if (b.is_obj(ObjKind::DType) && a.is_obj(ObjKind::Str))
    return dtype_equals_name(*b.as<DTypeObj>(), a.as<StrObj>()->value);
  if (is_bigint(a) || is_bigint(b)) {
    const Value& big = is_bigint(a) ? a : b;
    const Value& other = is_bigint(a) ? b : a;
    const BigInt& x = big.as<BigIntObj>()->value;
    if (is_py_int(other)) return x == to_bigint(other);
    if (other.is_float()) return compare_with_double(x, other.f) == 0;
    if (other.is_obj(ObjKind::Complex))
      return other.as<ComplexObj>()->im == 0 &&
             compare_with_double(x, other.as<ComplexObj>()->re) == 0;
    return false;
  }
  if (a.is_obj(ObjKind::Complex) || b.is_obj(ObjKind::Complex)) {
    auto parts = [](const Value& v, double& re, double& im) {
      if (v.is_obj(ObjKind::Complex)) {
        re = v.as<ComplexObj>()->re;
        im = v.as<ComplexObj>()->im;
        return true;
      }
      re = v.as_float();
      im = 0;
      return v.is_number();
    };
    double ar, ai, br, bi;
    if (!parts(a, ar, ai) || !parts(b, br, bi)) return false;
    return ar == br && ai == bi;
  }
  if (a.is_number() && b.is_number()) {
    // Beyond 2**53 an int may not be a double: compared exactly, as Python.
    const int64_t exact = int64_t{1} << 53;
    const Value& i = a.is_int() ? a : b;
    if (a.is_float() != b.is_float() && i.is_int() && (i.i > exact || i.i < -exact))
      return compare_with_double(BigInt(i.i), a.is_float() ? a.f : b.f) == 0;
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.tag != b.tag) return false;
  switch (a.tag) {
  case Value::Tag::None:
    return true;
  case Value::Tag::Bool:
  case Value::Tag::Int:
  case Value::Tag::Float:
    return false; // handled above
  case Value::Tag::Obj:
    break;
  }
  if (a.obj == b.obj) return true;
  if (same_class(a, b)) return true; // type(()) == tuple
  if (a.obj->kind != b.obj->kind) return false;
  switch (a.obj->kind) {
  case ObjKind::Str:
    return a.as<StrObj>()->value == b.as<StrObj>()->value;
  case ObjKind::Tuple:
  case ObjKind::List: {
    const ValueList& x =
        a.obj->kind == ObjKind::Tuple ? a.as<TupleObj>()->items : a.as<ListObj>()->items;
    const ValueList& y =
        b.obj->kind == ObjKind::Tuple ? b.as<TupleObj>()->items : b.as<ListObj>()->items;
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!values_equal(x[i], y[i])) return false;
    return true;
  }
  case ObjKind::Dict:
    return dicts_equal(*a.as<DictObj>(), *b.as<DictObj>(), values_equal);
  case ObjKind::DType:
    return a.as<DTypeObj>()->dtype == b.as<DTypeObj>()->dtype &&
           a.as<DTypeObj>()->wide == b.as<DTypeObj>()->wide;
  case ObjKind::Device:
    return a.as<DeviceObj>()->id == b.as<DeviceObj>()->id &&
           a.as<DeviceObj>()->platform == b.as<DeviceObj>()->platform;
  case ObjKind::Range: { // as sequences, as in Python: range(0, 3, 2) == range(0, 4, 2)
    auto* x = a.as<RangeObj>();
    auto* y = b.as<RangeObj>();
    int64_t n = x->size();
    if (n != y->size()) return false;
    return n == 0 || (x->start == y->start && (n == 1 || x->step == y->step));
  }
  case ObjKind::Slice: {
    auto* x = a.as<SliceObj>();
    auto* y = b.as<SliceObj>();
    return values_equal(x->start, y->start) && values_equal(x->stop, y->stop) &&
           values_equal(x->step, y->step);
  }
  case ObjKind::Ellipsis:
    return true;
  case ObjKind::Opaque:
    return a.as<OpaqueObj>()->equals(*b.as<OpaqueObj>());
  default:
    return false;
  }
}

bool is_hashable(const Value& v) {
  if (v.tag != Value::Tag::Obj) return true;
  switch (v.obj->kind) {
  case ObjKind::List:
  case ObjKind::Dict:
  case ObjKind::Array:
    return false;
  case ObjKind::Tuple:
    for (const auto& x : v.as<TupleObj>()->items)
      if (!is_hashable(x)) return false;
    return true;
  default:
    return true;
  }
}

// ---- printing ----------------------------------------------------------------

std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  static const char* hex = "0123456789abcdef";
  for (unsigned char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

std::string type_name(const Value& v) {
  switch (v.tag) {
  case Value::Tag::None:
    return "NoneType";
  case Value::Tag::Bool:
    return "bool";
  case Value::Tag::Int:
    return "int";
  case Value::Tag::Float:
    return "float";
  case Value::Tag::Obj:
    break;
  }
  switch (v.obj->kind) {
  case ObjKind::Str:
    return "str";
  case ObjKind::Tuple:
    return "tuple";
  case ObjKind::List:
    return "list";
  case ObjKind::Dict:
    return v.as<DictObj>()->ordered     ? "OrderedDict"
           : v.as<DictObj>()->defaulted ? "defaultdict"
           : v.as<DictObj>()->counter   ? "Counter"
                                        : "dict";
  case ObjKind::Function:
    return "function";
  case ObjKind::Builtin:
    return "builtin_function_or_method";
  case ObjKind::BoundMethod:
    return "method";
  case ObjKind::Module:
    return "module";
  case ObjKind::Array: {
    const Tensor& t = v.as<ArrayObj>()->tensor;
    return t->sharded && t->sharded->spans_devices() ? "ShardedArray" : "Array";
  }
  case ObjKind::Slice:
    return "slice";
  case ObjKind::Ellipsis:
    return "ellipsis";
  case ObjKind::DType:
    return "dtype";
  case ObjKind::Device:
    return v.as<DeviceObj>()->platform == "cpu" ? "CpuDevice" : "CudaDevice";
  case ObjKind::Range:
    return "range";
  case ObjKind::Complex:
    return "complex";
  case ObjKind::BigInt:
    return "int";
  case ObjKind::Partial: // (functools.partial, or jax.tree_util.Partial: a pytree)
    return v.as<PartialObj>()->pytree ? "Partial" : "partial";
  case ObjKind::AtProxy:
    return "_IndexUpdateHelper";
  case ObjKind::Opaque:
    return v.as<OpaqueObj>()->type_name();
  }
  return "object";
}

std::string factory_repr(const Value& f) {
  if (f.is_obj(ObjKind::Builtin)) {
    const std::string& n = f.as<BuiltinObj>()->name;
    for (const char* t :
         {"dict", "list", "set", "frozenset", "tuple", "int", "float", "str", "bool", "complex"})
      if (n == t) return "<class '" + n + "'>";
  }
  return repr(f);
}

// The containers being printed, innermost last: a list or dict met again inside itself prints
// as Python's [...] / {...} (without this, l.append(l); l.append(l) printed 2**200 items).
using ReprActive = std::vector<const void*>;
struct ReprGuard {
  ReprActive& active;
  bool recursive;
  ReprGuard(ReprActive& a, const void* obj)
      : active(a), recursive(std::find(a.begin(), a.end(), obj) != a.end()) {
    if (!recursive) active.push_back(obj);
  }
  ~ReprGuard() {
    if (!recursive) active.pop_back();
  }
  ReprGuard(const ReprGuard&) = delete;
  ReprGuard& operator=(const ReprGuard&) = delete;
};

static std::string seq_repr(const ValueList& items, const char* open, const char* close,
                            bool one_tuple, int depth, const PrintOptions& po, ReprActive& active);

static std::string repr_depth(const Value& v, int depth, const PrintOptions& po,
                              ReprActive& active);

// Counter({'a': 2, 'b': 1}): most common first (numbers by value, equal ones
// in insertion order, as Python's most_common), Counter() when empty.
static std::string counter_repr(const DictObj& d, int depth, const PrintOptions& po,
                                ReprActive& active) {
  std::vector<std::pair<Value, Value>> items;
  d.for_each([&](const Value& k, const Value& v) { items.push_back({k, v}); });
  if (items.empty()) return "Counter()";
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return a.second.is_number() && b.second.is_number() &&
           a.second.as_float() > b.second.as_float();
  });
  std::string out = "Counter({";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + repr_depth(items[i].first, depth + 1, po, active) + ": " +
           repr_depth(items[i].second, depth + 1, po, active);
  return out + "})";
}

static std::string repr_depth(const Value& v, int depth, const PrintOptions& po,
                              ReprActive& active) {
  if (depth > 200) return "...";
  switch (v.tag) {
  case Value::Tag::None:
    return "None";
  case Value::Tag::Bool:
    return v.b ? "True" : "False";
  case Value::Tag::Int:
    return std::to_string(v.i);
  case Value::Tag::Float:
    return python_float_repr(v.f);
  case Value::Tag::Obj:
    break;
  }
  switch (v.obj->kind) {
  case ObjKind::Str:
    return repr_string(v.as<StrObj>()->value);
  case ObjKind::Tuple:
    return seq_repr(v.as<TupleObj>()->items, "(", ")", true, depth, po, active);
  case ObjKind::List: {
    ReprGuard guard(active, v.obj.get());
    if (guard.recursive) return "[...]";
    return seq_repr(v.as<ListObj>()->items, "[", "]", false, depth, po, active);
  }
  case ObjKind::Dict: {
    ReprGuard guard(active, v.obj.get());
    if (guard.recursive) return "{...}";
    if (v.as<DictObj>()->counter) return counter_repr(*v.as<DictObj>(), depth, po, active);
    bool ordered = v.as<DictObj>()->ordered;
    std::string out = ordered ? "OrderedDict([" : "{";
    if (v.as<DictObj>()->defaulted)
      out = "defaultdict(" + factory_repr(v.as<DictObj>()->default_factory) + ", {";
    bool first = true;
    v.as<DictObj>()->for_each([&](const Value& k, const Value& x) {
      if (!first) out += ", ";
      first = false;
      if (ordered)
        out += "(" + repr_depth(k, depth + 1, po, active) + ", " +
               repr_depth(x, depth + 1, po, active) + ")";
      else
        out += repr_depth(k, depth + 1, po, active) + ": " + repr_depth(x, depth + 1, po, active);
    });
    return out + (ordered ? "])" : v.as<DictObj>()->defaulted ? "})" : "}");
  }
  case ObjKind::Function:
    return "<function " + v.as<FunctionObj>()->name + ">";
  case ObjKind::Builtin: // Python's builtin classes print as classes: <class 'tuple'>
    if (is_builtin_class(v.as<BuiltinObj>()->name))
      return "<class '" + v.as<BuiltinObj>()->name + "'>";
    return "<built-in function " + v.as<BuiltinObj>()->name + ">";
  case ObjKind::BoundMethod:
    return "<bound method>";
  case ObjKind::Module:
    return "<module '" + v.as<ModuleObj>()->name + "'>";
  case ObjKind::Array: {
    v.as<ArrayObj>()->check_live();
    const Tensor& t = v.as<ArrayObj>()->tensor;
    if (std::optional<std::string> u = unreduced_repr(*t)) return *u;
    if (t->concrete) return array_repr(*t->concrete, po);
    if (t->sharded) return array_repr(t->sharded->assemble(), po);
    if (po.tracer_repr)
      if (std::optional<std::string> s = po.tracer_repr(*t)) return *s;
    // JAX's repr of a traced value: JitTracer(float32[8,2]), "~" marking a weak type.
    std::string dims;
    for (size_t i = 0; i < t->aval.shape.size(); ++i)
      dims += (i ? "," : "") + std::to_string(t->aval.shape[i]);
    return std::string("JitTracer(") + (t->aval.weak ? "~" : "") + dtype_name(t->aval.dtype) + "[" +
           dims + "])";
  }
  case ObjKind::Slice: {
    auto* s = v.as<SliceObj>();
    return "slice(" + repr_depth(s->start, depth + 1, po, active) + ", " +
           repr_depth(s->stop, depth + 1, po, active) + ", " +
           repr_depth(s->step, depth + 1, po, active) + ")";
  }
  case ObjKind::Ellipsis:
    return "Ellipsis";
  case ObjKind::DType:
    if (v.as<DTypeObj>()->scalar_type)
      return std::string("<class 'jax.numpy.") + v.as<DTypeObj>()->name() + "'>";
    // numpy writes the ml_dtypes types without quotes: dtype(bfloat16)
    if (DType d = v.as<DTypeObj>()->dtype;
        d == DType::BFloat16 || is_narrow_int(d) || is_small_float(d))
      return std::string("dtype(") + dtype_name(d) + ")";
    return std::string("dtype('") + v.as<DTypeObj>()->name() + "')";
  case ObjKind::Device:
    return (v.as<DeviceObj>()->platform == "cpu" ? "CpuDevice(id=" : "CudaDevice(id=") +
           std::to_string(v.as<DeviceObj>()->id) + ")";
  case ObjKind::Range: {
    auto* r = v.as<RangeObj>();
    return "range(" + std::to_string(r->start) + ", " + std::to_string(r->stop) +
           (r->step != 1 ? ", " + std::to_string(r->step) : "") + ")";
  }
  case ObjKind::Partial: { // Python's: the function, then the bound arguments
    const PartialObj& p = *v.as<PartialObj>();
    std::string s =
        (p.pytree ? "Partial(" : "functools.partial(") + repr_depth(p.fn, depth + 1, po, active);
    for (const Value& a : p.bound.pos) s += ", " + repr_depth(a, depth + 1, po, active);
    for (const auto& [k, a] : p.bound.kw)
      s += ", " + k + "=" + repr_depth(a, depth + 1, po, active);
    return s + ")";
  }
  case ObjKind::AtProxy:
    return "_IndexUpdateHelper";
  case ObjKind::Opaque:
    return v.as<OpaqueObj>()->repr();
  case ObjKind::Complex:
    return python_complex_repr(v.as<ComplexObj>()->re, v.as<ComplexObj>()->im);
  case ObjKind::BigInt: {
    std::string s = v.as<BigIntObj>()->value.to_string();
    if (s.size() - (s[0] == '-') > 4300) // Python 3.11's default sys.int_info limit
      throw Error(ErrCode::Value, "Exceeds the limit (4300 digits) for integer string conversion; "
                                  "use sys.set_int_max_str_digits() to increase the limit");
    return s;
  }
  }
  return "<object>";
}

static std::string seq_repr(const ValueList& items, const char* open, const char* close,
                            bool one_tuple, int depth, const PrintOptions& po, ReprActive& active) {
  std::string out = open;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += repr_depth(items[i], depth + 1, po, active);
  }
  if (one_tuple && items.size() == 1) out += ",";
  return out + close;
}

std::string repr(const Value& v, const PrintOptions& po) {
  ReprActive active;
  return repr_depth(v, 0, po, active);
}
std::string repr(const Value& v) { return repr(v, PrintOptions{}); }

std::string str(const Value& v) { return str(v, PrintOptions{}); }

void ArrayObj::check_live(const Span& where) const {
  if (!deleted) return;
  std::string dims;
  for (size_t i = 0; i < tensor->aval.shape.size(); ++i)
    dims += (i ? "," : "") + std::to_string(tensor->aval.shape[i]);
  // JAX raises a RuntimeError; pxl has no code of its own for it.
  throw Error(ErrCode::Value,
              "Array has been deleted with shape=" + std::string(dtype_name(tensor->aval.dtype)) +
                  "[" + dims + "].",
              where);
}

std::string str(const Value& v, const PrintOptions& po) {
  if (v.is_obj(ObjKind::Str)) return v.as<StrObj>()->value;
  if (v.is_obj(ObjKind::DType))
    return v.as<DTypeObj>()->scalar_type ? repr(v) : v.as<DTypeObj>()->name();
  if (v.is_obj(ObjKind::Device)) // JAX: str(device) is "cpu:0", repr is "CpuDevice(id=0)"
    return v.as<DeviceObj>()->platform + ":" + std::to_string(v.as<DeviceObj>()->id);
  if (v.is_obj(ObjKind::Array)) {
    v.as<ArrayObj>()->check_live();
    const Tensor& t = v.as<ArrayObj>()->tensor;
    if (std::optional<std::string> u = unreduced_repr(*t)) return *u;
    if (t->concrete) return array_str(*t->concrete, po);
    if (t->sharded) return array_str(t->sharded->assemble(), po);
  }
  if (v.is_obj(ObjKind::Opaque)) return v.as<OpaqueObj>()->str();
  return repr(v, po);
}

} // namespace pxl

namespace pxl {

bool dicts_equal(const DictObj& x, const DictObj& y,
                 const std::function<bool(const Value&, const Value&)>& item_equal) {
  if (x.size() != y.size()) return false;
  if (x.ordered && y.ordered) { // OrderedDicts compare in order too, as Python's
    ValueList kx, ky;
    x.for_each([&](const Value& k, const Value&) { kx.push_back(k); });
    y.for_each([&](const Value& k, const Value&) { ky.push_back(k); });
    for (size_t i = 0; i < kx.size(); ++i)
      if (!values_equal(kx[i], ky[i])) return false;
  }
  bool eq = true;
  x.for_each([&](const Value& k, const Value& v) {
    if (!eq) return;
    const Value* o = y.find(k);
    eq = o && item_equal(v, *o);
  });
  return eq;
}

} // namespace pxl
