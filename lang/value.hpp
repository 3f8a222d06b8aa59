// Host values of the interpreter. Scalars (None, bool, int, float) are stored
// inline; everything else is a reference-counted Object, as in Python.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/tensor.hpp"
#include "lang/ast.hpp"
#include "lang/diag.hpp"

namespace pxl {

enum class ObjKind : uint8_t {
  Str,
  Tuple,
  List,
  Dict,
  Function,
  Builtin,
  BoundMethod,
  Module,
  Array,
  Slice,
  Ellipsis,
  DType,
  Device,
  Range,
  Partial,
  AtProxy,
  Opaque,
  Complex,
  BigInt // a Python int beyond 64 bits (lang/bigint.hpp); smaller ones are Value::Int
};

struct Object {
  explicit Object(ObjKind k) : kind(k) {}
  virtual ~Object() = default;
  ObjKind kind;
};

struct Value {
  enum class Tag : uint8_t { None, Bool, Int, Float, Obj } tag = Tag::None;
  union {
    bool b;
    int64_t i;
    double f;
  };
  std::shared_ptr<Object> obj;

  Value() : i(0) {}
  static Value none() { return Value(); }
  static Value boolean(bool v) {
    Value r;
    r.tag = Tag::Bool;
    r.b = v;
    return r;
  }
  static Value integer(int64_t v) {
    Value r;
    r.tag = Tag::Int;
    r.i = v;
    return r;
  }
  static Value number(double v) {
    Value r;
    r.tag = Tag::Float;
    r.f = v;
    return r;
  }
  static Value object(std::shared_ptr<Object> o) {
    Value r;
    r.tag = Tag::Obj;
    r.obj = std::move(o);
    return r;
  }
  bool is_none() const { return tag == Tag::None; }
  bool is_bool() const { return tag == Tag::Bool; }
  bool is_int() const { return tag == Tag::Int; }
  bool is_float() const { return tag == Tag::Float; }
  bool is_obj(ObjKind k) const { return tag == Tag::Obj && obj->kind == k; }
  // Python's numbers.Integral: bool counts as int.
  bool is_intlike() const { return tag == Tag::Int || tag == Tag::Bool; }
  bool is_number() const { return tag == Tag::Int || tag == Tag::Float || tag == Tag::Bool; }
  int64_t as_int() const { return tag == Tag::Bool ? (b ? 1 : 0) : i; }
  double as_float() const {
    return tag == Tag::Float ? f : tag == Tag::Bool ? (b ? 1.0 : 0.0) : static_cast<double>(i);
  }
  template <class T> T* as() const { return static_cast<T*>(obj.get()); }
};

using ValueList = std::vector<Value>;

struct StrObj : Object {
  explicit StrObj(std::string s) : Object(ObjKind::Str), value(std::move(s)) {}
  std::string value;
};
struct TupleObj : Object {
  explicit TupleObj(ValueList v) : Object(ObjKind::Tuple), items(std::move(v)) {}
  ValueList items;
};
struct ListObj : Object {
  explicit ListObj(ValueList v) : Object(ObjKind::List), items(std::move(v)) {}
  ValueList items;
};

struct ValueHash {
  size_t operator()(const Value& v) const;
};
struct ValueKeyEq {
  bool operator()(const Value& a, const Value& b) const;
};

// Insertion-ordered dict (Python 3.7+ semantics).
struct DictObj : Object {
  DictObj() : Object(ObjKind::Dict) {}
  std::vector<std::pair<Value, Value>> entries; // erased entries have a None-tag tombstone
  std::vector<bool> live;
  std::unordered_map<Value, size_t, ValueHash, ValueKeyEq> index;
  bool ordered = false; // a collections.OrderedDict: repr OrderedDict([(k, v), ...])
  // A collections.defaultdict: a missing key's value is default_factory()
  // (None: a KeyError, as a dict's).
  bool defaulted = false;
  Value default_factory;
  // A collections.Counter: a missing key counts 0 (and is not inserted); it
  // prints as Counter({k: n, ...}), most common first.
  bool counter = false;
  size_t size() const { return index.size(); }
  const Value* find(const Value& k) const;
  void set(const Value& k, Value v);
  bool erase(const Value& k);
  template <class F> void for_each(F&& f) const {
    for (size_t i = 0; i < entries.size(); ++i)
      if (live[i]) f(entries[i].first, entries[i].second);
  }
};

struct Env;
using EnvPtr = std::shared_ptr<Env>;

// A variable scope. Functions capture the Env they were defined in (closures).
struct Env {
  explicit Env(EnvPtr p = nullptr) : parent(std::move(p)) {}
  std::unordered_map<std::string, Value> vars;
  EnvPtr parent;
  // A function call's scope: the names its function declares nonlocal (owned
  // by the AST); assignments to them bind in the enclosing scope.
  const std::vector<std::string>* nonlocals = nullptr;
  const Value* lookup(const std::string& name) const {
    for (const Env* e = this; e; e = e->parent.get()) {
      auto it = e->vars.find(name);
      if (it != e->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

struct ModuleObj;

struct FunctionObj : Object {
  FunctionObj() : Object(ObjKind::Function) {}
  std::string name;
  const std::vector<Param>* params = nullptr; // owned by the AST (kept alive by `ast`)
  const Block* body = nullptr;
  LazyBody* lazy = nullptr; // instead of body: a stdlib def's, parsed at the first call
  const Expr* lambda_body = nullptr;
  std::vector<Value> defaults; // evaluated at definition time, one per param (None if absent)
  const std::vector<std::string>* nonlocals = nullptr; // the def's (owned by the AST)
  EnvPtr closure;
  std::shared_ptr<const void> ast; // keeps the defining module's AST alive
  Span span;
  ModuleObj* module = nullptr;
  // A stdlib function whose ops JAX dispatches one at a time (a plain Python
  // function, not jitted): those it calls are the user's own ops, compiled
  // alone, not part of a library composite (OpContext::library_call).
  bool eager_ops = false;
};

// A def's statements, parsed first if its body was left for later
// (lang/objects.cpp); null for a lambda (lambda_body).
const Block* function_body(const FunctionObj& f);

struct CallArgs {
  ValueList pos;
  std::vector<std::pair<std::string, Value>> kw;
};

class InterpreterImpl;
using NativeFn = std::function<Value(InterpreterImpl&, CallArgs&)>;

struct BuiltinObj : Object {
  BuiltinObj(std::string n, NativeFn f)
      : Object(ObjKind::Builtin), name(std::move(n)), fn(std::move(f)) {}
  std::string name;
  NativeFn fn;
  // Attributes a builtin class carries (PartitionSpec.UNCONSTRAINED).
  std::vector<std::pair<std::string, Value>> attrs;
};

struct BoundMethodObj : Object {
  BoundMethodObj(Value s, Value f)
      : Object(ObjKind::BoundMethod), self(std::move(s)), fn(std::move(f)) {}
  Value self;
  Value fn;
};

// Python data that cannot be called (functools.partial's "the first argument must be callable").
inline bool is_plain_data(const Value& v) {
  return v.is_none() || v.is_number() || v.is_bool() || v.is_obj(ObjKind::Str) ||
         v.is_obj(ObjKind::Tuple) || v.is_obj(ObjKind::List) || v.is_obj(ObjKind::Dict) ||
         v.is_obj(ObjKind::Complex) || v.is_obj(ObjKind::Array);
}

struct PartialObj : Object {
  PartialObj() : Object(ObjKind::Partial) {}
  Value fn;
  CallArgs bound;
  // jax.tree_util.Partial: a pytree node over its bound arguments (the
  // function is static), so it can be passed to transformed functions.
  bool pytree = false;
};

struct ModuleObj : Object {
  explicit ModuleObj(std::string n) : Object(ObjKind::Module), name(std::move(n)) {}
  std::string name;
  EnvPtr env = std::make_shared<Env>();
  // Lazily computed attribute: a module that hasn't been filled in yet.
  std::shared_ptr<const void> ast;
  std::string path; // for .pxl modules
};

struct ArrayObj : Object {
  explicit ArrayObj(Tensor t) : Object(ObjKind::Array), tensor(std::move(t)) {}
  Tensor tensor;
  // Donated to a jit call, or x.delete(): any use but .shape/.dtype is JAX's error.
  bool deleted = false;
  // JAX's error for using a deleted array ("Array has been deleted with
  // shape=int32[3]."); nothing when it is live. Every read of the data checks.
  void check_live(const Span& where = {}) const;
  // Placed on purpose (device_put to a device, results of jit over such
  // arrays): JAX's committed flag, which makes jit check its devices
  // (stdlib/jit_devices.cpp). Arrays over a mesh count as committed anyway.
  bool committed = false;
};

// A Python complex (immutable, like the scalars, but two doubles wide).
struct ComplexObj : Object {
  ComplexObj(double r, double i) : Object(ObjKind::Complex), re(r), im(i) {}
  double re, im;
};

struct SliceObj : Object {
  SliceObj(Value a, Value b, Value c)
      : Object(ObjKind::Slice), start(std::move(a)), stop(std::move(b)), step(std::move(c)) {}
  Value start, stop, step;
};

struct EllipsisObj : Object {
  EllipsisObj() : Object(ObjKind::Ellipsis) {}
};

struct DTypeObj : Object {
  explicit DTypeObj(DType d, bool x64_name = false)
      : Object(ObjKind::DType), dtype(d), wide(x64_name) {}
  DType dtype;
  // jnp.int64/uint64/complex128: x64 is off, so arrays asked for them get
  // int32/uint32/complex64 (`dtype`), but the dtype object keeps its own name
  // and itemsize.
  bool wide;
  // jnp.float32 & co. (the scalar types, printed <class 'jax.numpy.float32'>)
  // rather than a dtype (dtype('float32')); equal to their dtype, as in JAX.
  bool scalar_type = false;
  const char* name() const {
    if (wide)
      return dtype == DType::UInt32 ? "uint64" : dtype == DType::Complex64 ? "complex128" : "int64";
    return dtype_name(dtype);
  }
  size_t itemsize() const { return wide ? 2 * dtype_size(dtype) : dtype_size(dtype); }
};

struct DeviceObj : Object {
  DeviceObj(int i, std::string p) : Object(ObjKind::Device), id(i), platform(std::move(p)) {}
  int id;
  std::string platform;
};

struct RangeObj : Object {
  RangeObj(int64_t a, int64_t b, int64_t s) : Object(ObjKind::Range), start(a), stop(b), step(s) {}
  int64_t start, stop, step;
  // Computed in unsigned arithmetic: stop - start and -step may not fit in
  // int64 (range(-2**63, 2**63 - 1), a step of -2**63). A count beyond int64
  // is capped; len() of such a range is refused before it gets here.
  int64_t size() const {
    if (step > 0 ? start >= stop : start <= stop) return 0;
    uint64_t span = step > 0 ? uint64_t(stop) - uint64_t(start) : uint64_t(start) - uint64_t(stop);
    uint64_t magnitude = step > 0 ? uint64_t(step) : 0 - uint64_t(step);
    uint64_t count = (span - 1) / magnitude + 1;
    return count > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(count);
  }
};

// x.at and x.at[idx]: the functional-update helpers.
struct AtProxyObj : Object {
  AtProxyObj(Value a, Value i, bool has)
      : Object(ObjKind::AtProxy), array(std::move(a)), index(std::move(i)), has_index(has) {}
  Value array;
  Value index;
  bool has_index;
};

// Objects defined by later stages (Mesh, PartitionSpec, ...) derive from this
// and provide their type name, repr and attributes.
struct OpaqueObj : Object {
  OpaqueObj() : Object(ObjKind::Opaque) {}
  virtual std::string type_name() const = 0;
  virtual std::string repr() const = 0;
  virtual std::string str() const { return repr(); } // str()/print(); repr unless it differs
  // Returns false when there's no such attribute.
  virtual bool get_attr(InterpreterImpl&, const std::string&, Value&) { return false; }
  virtual std::vector<std::string> attr_names() const { return {}; }
  virtual bool equals(const OpaqueObj& other) const { return this == &other; }
  // Callable objects (pmap'd functions, ...) return true and set `out`.
  virtual bool call(InterpreterImpl&, CallArgs&, const Span&, Value&) { return false; }
  // functools.wraps: the function a callable object wraps (pmap'd and
  // shard_map'd functions), or null.
  virtual const Value* wrapped() const { return nullptr; }
  // Context managers (`with obj as x:`): enter returns true and sets the value
  // bound by `as`; exit runs when the block is left, normally or by an error.
  virtual bool enter(InterpreterImpl&, Value&) { return false; }
  virtual void exit(InterpreterImpl&) {}
  // Sequence-like objects (numpy object arrays, sets of devices): the items for
  // iteration, len() and `in`, and obj[index]. False when not supported.
  virtual bool items(ValueList&) const { return false; }
  // Tuple subclasses (named tuples): their items, so that they pass wherever
  // a tuple does (sequence_items, isinstance(x, tuple)), as in Python.
  virtual const ValueList* tuple_items() const { return nullptr; }
  virtual bool get_item(InterpreterImpl&, const Value&, Value&) { return false; }
  // obj[index] = v (mutable array references); false when not supported.
  virtual bool set_item(InterpreterImpl&, const Value&, const Value&) { return false; }
  // Array-like objects (typed PRNG key arrays): iteration and len() when they
  // need the interpreter (the default is items() above), truth value, and
  // Python's operators. `op` is the operator's dunder name without
  // underscores ("add", "lt", "neg", ...); `self_first` says whether this
  // object is the left operand. False: the interpreter's default behaviour.
  virtual bool items(InterpreterImpl&, ValueList& out) { return items(out); }
  virtual bool truth(InterpreterImpl&) { return true; }
  virtual bool apply_operator(InterpreterImpl&, const std::string& op, const Value& other,
                              bool self_first, Value& out) {
    (void)op, (void)other, (void)self_first, (void)out;
    return false;
  }
};

// Construction helpers.
Value make_str(std::string s);
Value make_complex(double re, double im);
Value make_tuple(ValueList v);
Value make_list(ValueList v);
Value make_array(Tensor t);
Value make_builtin(std::string name, NativeFn fn);
// A class object as type(x) returns it: <class 'name'>, usable with isinstance.
Value make_type(std::string name);

// Python-compatible printing and comparisons.
std::string type_name(const Value& v);
// A defaultdict's factory as Python shows it: the builtin types as classes
// (<class 'dict'>), None, or the callable's repr.
std::string factory_repr(const Value& f);
std::string repr(const Value& v);
std::string str(const Value& v);
// The same under numpy's print options (np.set_printoptions) for the arrays in v.
struct PrintOptions; // runtime/format.hpp
std::string repr(const Value& v, const PrintOptions& po);
std::string str(const Value& v, const PrintOptions& po);
std::string repr_string(const std::string& s);     // 'abc' with Python's quoting rules
bool values_equal(const Value& a, const Value& b); // ==, for host values
bool is_hashable(const Value& v);

} // namespace pxl
