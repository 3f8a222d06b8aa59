// Typed PRNG key arrays: the key<fry> dtype, key arrays' attributes, indexing
// and operators (JAX's errors for arithmetic on keys), and the jnp functions
// that rearrange key arrays by rearranging their data.
#include "stdlib/prng_key.hpp"

#include "lang/args.hpp"
#include "lang/type_object.hpp"
#include "runtime/sharded.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/shape_dtype_struct.hpp"
#include "stdlib/sharding.hpp"

namespace pxl {

namespace {

// A key dtype's name from its implementation's tag: key<fry> (threefry2x32),
// key<rbg>, key<urbg> (unsafe_rbg).
std::string key_dtype_name(const std::string& tag) { return "key<" + tag + ">"; }

Error type_error(const std::string& m) { return Error(ErrCode::Type, m); }

// The dtype of key arrays (JAX's KeyTy, printed key<fry>), one per implementation.
struct KeyDTypeObj : OpaqueObj {
  explicit KeyDTypeObj(std::string t) : tag(std::move(t)) {}
  std::string tag;
  std::string type_name() const override { return "KeyTy"; }
  std::string repr() const override { return key_dtype_name(tag); }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "name") return out = make_str(key_dtype_name(tag)), true;
    if (name == "itemsize") return out = Value::integer(tag == "fry" ? 8 : 16), true;
    return false;
  }
  std::vector<std::string> attr_names() const override { return {"itemsize", "name"}; }
  bool equals(const OpaqueObj& o) const override {
    auto* d = dynamic_cast<const KeyDTypeObj*>(&o);
    return d && d->tag == tag;
  }
};

// jax.dtypes.prng_key and jax.dtypes.extended: the classes key dtypes belong to.
struct KeyClassObj : OpaqueObj {
  explicit KeyClassObj(std::string n) : name(std::move(n)) {}
  std::string name;
  std::string type_name() const override { return "type"; }
  std::string repr() const override { return "<class 'jax.dtypes." + name + "'>"; }
  bool equals(const OpaqueObj& o) const override {
    auto* c = dynamic_cast<const KeyClassObj*>(&o);
    return c && c->name == name;
  }
};

template <class T> const T* opaque_as(const Value& v) {
  return v.is_obj(ObjKind::Opaque) ? dynamic_cast<const T*>(v.as<OpaqueObj>()) : nullptr;
}

Value key_dtype_value(const std::string& tag) {
  return Value::object(std::make_shared<KeyDTypeObj>(tag));
}

Tensor data_of(const KeyArrayObj& k) { return k.tensor(); }
// Key arrays of the implementation `tag` over new data.
Value wrap(Tensor data, const std::string& tag) {
  return make_key_array(make_array(std::move(data)), tag);
}

int wrap_negative_axis(int64_t axis, size_t ndim) {
  return static_cast<int>(axis < 0 ? axis + static_cast<int64_t>(ndim) : axis);
}

Shape with_key_axis(Shape s, const KeyArrayObj& k) {
  s.push_back(k.width());
  return s;
}

// A key array reshaped (the key shape; one -1 allowed).
Value reshape_keys(InterpreterImpl& in, const KeyArrayObj& k, const std::vector<int64_t>& shape) {
  Shape s(shape.begin(), shape.end());
  return wrap(np::reshape(in.ops(), data_of(k), with_key_axis(s, k)), k.tag);
}

Value squeeze_keys(InterpreterImpl& in, const KeyArrayObj& k, const Value& axis) {
  Shape ks = k.shape();
  std::vector<int> axes;
  if (axis.is_none()) {
    for (size_t i = 0; i < ks.size(); ++i)
      if (ks[i] == 1) axes.push_back(static_cast<int>(i));
  } else {
    std::vector<int> given = value_to_axes(axis, "squeeze() axis").value_or(std::vector<int>{});
    for (int a : given) axes.push_back(wrap_negative_axis(a, ks.size()));
  }
  return wrap(np::squeeze(in.ops(), data_of(k), axes), k.tag);
}

// The dtype name JAX's promotion errors give an operand: Python scalars are
// weak int32/float32/complex64.
std::optional<std::string> operand_dtype(const Value& v) {
  if (v.is_bool()) return "bool";
  if (v.is_int()) return "int32";
  if (v.is_float()) return "float32";
  if (v.is_obj(ObjKind::Complex)) return "complex64";
  if (v.is_obj(ObjKind::Array)) return dtype_name(v.as<ArrayObj>()->tensor->aval.dtype);
  return std::nullopt;
}

// Whether `v` (a value or nested sequence) holds a key array.
bool holds_key(const Value& v, int depth = 0) {
  if (as_key_array(v)) return true;
  const ValueList* items = depth < 32 ? sequence_items(v) : nullptr;
  if (!items) return false;
  for (const Value& x : *items)
    if (holds_key(x, depth + 1)) return true;
  return false;
}

[[noreturn]] void promotion_error(const std::string& tag = "fry") {
  throw Error(ErrCode::Value,
              "dtype=" + key_dtype_name(tag) + " is not a valid dtype for JAX type promotion.");
}

// The key arrays of a sequence argument (all must be keys), as their data;
// `tag` is their implementation's.
std::vector<Tensor> key_datas(InterpreterImpl& in, const Value& seq, size_t& key_ndim,
                              std::string& tag) {
  std::vector<Tensor> out;
  for (const Value& x : in.iterate(seq, Span{})) {
    const KeyArrayObj* k = as_key_array(x);
    if (!k) promotion_error();
    key_ndim = k->shape().size();
    tag = k->tag;
    out.push_back(data_of(*k));
  }
  return out;
}

// jnp.array/asarray of a key array (itself) or of nested lists of key arrays (stacked).
Value keyed_array(InterpreterImpl& in, const Value& v) {
  if (as_key_array(v)) return v;
  const ValueList* items = sequence_items(v);
  if (!items) promotion_error();
  std::vector<Tensor> parts;
  std::string tag = "fry";
  for (const Value& x : *items) {
    Value k = keyed_array(in, x);
    parts.push_back(data_of(*as_key_array(k)));
    tag = as_key_array(k)->tag;
  }
  if (parts.empty()) promotion_error();
  return wrap(np::stack(in.ops(), parts, 0), tag);
}

// The index items of the key data for an index of a key array of `nd` axes:
// the same, with the data's own axis left whole after an ellipsis.
std::vector<np::IndexItem> key_index(InterpreterImpl& in, const Value& index, size_t nd) {
  std::vector<np::IndexItem> items = to_index_items(in, index, Span{});
  size_t used = 0;
  bool ellipsis = false;
  for (const auto& it : items) {
    using K = np::IndexItem::Kind;
    if (it.kind == K::Ellipsis)
      ellipsis = true;
    else if (it.kind == K::Array && it.array->aval.dtype == DType::Bool)
      used += it.array->aval.shape.size();
    else if (it.kind != K::NewAxis)
      ++used;
  }
  if (used > nd)
    throw Error(ErrCode::ArrayIndex, "Too many indices: array is " + std::to_string(nd) +
                                         "-dimensional, but " + std::to_string(used) +
                                         " were indexed");
  if (ellipsis) {
    np::IndexItem all;
    all.kind = np::IndexItem::Kind::Slice;
    items.push_back(all);
  }
  return items;
}

// keys.at[index]: .get() and .set(keys) (JAX's gather and scatter of keys).
struct KeyAtObj : OpaqueObj {
  KeyAtObj(Value d, std::string t, Value i = Value(), bool has = false)
      : data(std::move(d)), tag(std::move(t)), index(std::move(i)), has_index(has) {}
  Value data;
  std::string tag;
  Value index;
  bool has_index;
  std::string type_name() const override { return "_IndexUpdateRef"; }
  std::string repr() const override { return "_IndexUpdateRef"; }
  bool get_item(InterpreterImpl&, const Value& i, Value& out) override {
    if (has_index) return false;
    out = Value::object(std::make_shared<KeyAtObj>(data, tag, i, true));
    return true;
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (!has_index || (name != "get" && name != "set")) return false;
    Value d = data, i = index;
    std::string tg = tag;
    if (name == "get") {
      out = make_builtin("get", [d, i, tg](InterpreterImpl& in, CallArgs&) {
        const Tensor& t = d.as<ArrayObj>()->tensor;
        return wrap(np::index(in.ops(), t, key_index(in, i, t->aval.shape.size() - 1)), tg);
      });
    } else {
      out = make_builtin("set", [d, i, tg](InterpreterImpl& in, CallArgs& a) {
        ArgReader r("set", a, {"values", "indices_are_sorted", "unique_indices", "mode"}, 1);
        const KeyArrayObj* v = as_key_array(r[0]);
        if (!v) promotion_error();
        const Tensor& t = d.as<ArrayObj>()->tensor;
        return wrap(np::index_update(in.ops(), t, key_index(in, i, t->aval.shape.size() - 1),
                                     v->tensor(), np::UpdateMode::Set),
                    tg);
      });
    }
    return true;
  }
};

// Replaces np.<name> with a function that handles key arrays with `keyed`
// (returning true) and leaves everything else to numpy's.
void wrap_np(const Value& np, const char* name,
             std::function<bool(InterpreterImpl&, CallArgs&, Value&)> keyed) {
  auto& vars = np.as<ModuleObj>()->env->vars;
  Value orig = vars.at(name);
  vars[name] = make_builtin(name, [orig, keyed](InterpreterImpl& in, CallArgs& a) {
    Value out;
    if (keyed(in, a, out)) return out;
    if (orig.is_obj(ObjKind::Builtin)) return orig.as<BuiltinObj>()->fn(in, a);
    return in.call(orig, a, Span{});
  });
}

bool any_key(const CallArgs& a, std::initializer_list<size_t> positions,
             std::initializer_list<const char*> names) {
  for (size_t p : positions)
    if (p < a.pos.size() && as_key_array(a.pos[p])) return true;
  for (const auto& [k, v] : a.kw)
    for (const char* n : names)
      if (k == n && as_key_array(v)) return true;
  return false;
}

void install_np_wrappers(const Value& np) {
  wrap_np(np, "stack", [](InterpreterImpl& in, CallArgs& a, Value& out) {
    ArgReader r("stack", a, {"arrays", "axis", "out", "dtype"}, 1);
    if (!holds_key(r[0])) return false;
    size_t nd = 0;
    std::string tag;
    std::vector<Tensor> ds = key_datas(in, r[0], nd, tag);
    out = wrap(np::stack(in.ops(), ds, wrap_negative_axis(r.get_int(1, 0), nd + 1)), tag);
    return true;
  });
  wrap_np(np, "concatenate", [](InterpreterImpl& in, CallArgs& a, Value& out) {
    ArgReader r("concatenate", a, {"arrays", "axis", "dtype"}, 1);
    if (!holds_key(r[0])) return false;
    size_t nd = 0;
    std::string tag;
    std::vector<Tensor> ds = key_datas(in, r[0], nd, tag);
    if (r.has(1) && r[1].is_none()) { // axis=None: the flattened key arrays
      for (Tensor& d : ds) d = np::reshape(in.ops(), d, {-1, d->aval.shape.back()});
      out = wrap(np::concatenate(in.ops(), ds, 0), tag);
      return true;
    }
    out = wrap(np::concatenate(in.ops(), ds, wrap_negative_axis(r.get_int(1, 0), nd)), tag);
    return true;
  });
  wrap_np(np, "reshape", [](InterpreterImpl& in, CallArgs& a, Value& out) {
    if (!any_key(a, {0}, {"a"})) return false;
    ArgReader r("reshape", a, {"a", "newshape", "order", "shape"}, 1);
    out = reshape_keys(in, *as_key_array(r[0]),
                       value_to_int_list(r.has(1) ? r[1] : r[3], "reshape() shape"));
    return true;
  });
  wrap_np(np, "ravel", [](InterpreterImpl& in, CallArgs& a, Value& out) {
    if (!any_key(a, {0}, {"a"})) return false;
    ArgReader r("ravel", a, {"a", "order"}, 1);
    out = reshape_keys(in, *as_key_array(r[0]), {-1});
    return true;
  });
  wrap_np(np, "broadcast_to", [](InterpreterImpl& in, CallArgs& a, Value& out) {
    if (!any_key(a, {0}, {"array"})) return false;
    ArgReader r("broadcast_to", a, {"array", "shape"}, 2);
    Shape s = value_to_shape(r[1], "broadcast_to() shape");
    const KeyArrayObj& k = *as_key_array(r[0]);
    out = wrap(np::broadcast_to(in.ops(), data_of(k), with_key_axis(s, k)), k.tag);
    return true;
  });
  wrap_np(np, "expand_dims", [](InterpreterImpl& in, CallArgs& a, Value& out) {
    if (!any_key(a, {0}, {"a"})) return false;
    ArgReader r("expand_dims", a, {"a", "axis"}, 2);
    const KeyArrayObj& k = *as_key_array(r[0]);
    std::vector<int> axes = *value_to_axes(r[1], "expand_dims() axis");
    size_t out_nd = k.shape().size() + axes.size();
    for (int& ax : axes) ax = wrap_negative_axis(ax, out_nd);
    out = wrap(np::expand_dims(in.ops(), data_of(k), axes), k.tag);
    return true;
  });
  wrap_np(np, "squeeze", [](InterpreterImpl& in, CallArgs& a, Value& out) {
    if (!any_key(a, {0}, {"a"})) return false;
    ArgReader r("squeeze", a, {"a", "axis"}, 1);
    out = squeeze_keys(in, *as_key_array(r[0]), r[1]);
    return true;
  });
  wrap_np(np, "where", [](InterpreterImpl& in, CallArgs& a, Value& out) {
    if (!any_key(a, {1, 2}, {"x", "y"})) return false;
    ArgReader r("where", a, {"condition", "x", "y"}, 3);
    const KeyArrayObj *x = as_key_array(r[1]), *y = as_key_array(r[2]);
    if (!x || !y) promotion_error();
    Tensor c = in.to_tensor(r[0], Span{});
    c = np::expand_dims(in.ops(), c, {static_cast<int>(c->aval.shape.size())});
    out = wrap(np::where(in.ops(), c, data_of(*x), data_of(*y)), x->tag);
    return true;
  });
  for (const char* name : {"array", "asarray"}) {
    wrap_np(np, name, [name](InterpreterImpl& in, CallArgs& a, Value& out) {
      ArgReader r(name, a, {"object", "dtype", "copy", "order", "ndmin", "device"}, 1);
      if (!holds_key(r[0])) return false;
      if (r.has(1) && !r[1].is_none())
        throw Error(ErrCode::Value, "Cannot convert_element_type from " + key_dtype_name("fry") +
                                        " to " + pxl::str(r[1]));
      out = keyed_array(in, r[0]);
      return true;
    });
  }
}

} // namespace

Value make_key_array(Value data, std::string tag) {
  return Value::object(std::make_shared<KeyArrayObj>(std::move(data), std::move(tag)));
}

void check_key_type(const Value& v) {
  if (as_key_array(v) || is_key_data(v)) return;
  if (v.is_none() || v.is_obj(ObjKind::List) || v.is_obj(ObjKind::Tuple) || v.is_obj(ObjKind::Dict))
    throw Error(ErrCode::Type, "unexpected PRNG key type " + pxl::str(type_of(v)));
  throw Error(ErrCode::Type, "JAX encountered invalid PRNG key data: expected key_data to have "
                             "ndim, shape, and dtype attributes. Got " +
                                 pxl::str(v));
}

const KeyArrayObj* as_key_array(const Value& v) { return opaque_as<KeyArrayObj>(v); }

bool is_key_data(const Value& v) { return v.is_obj(ObjKind::Array) || shape_dtype_struct_aval(v); }

const Tensor& KeyArrayObj::tensor() const {
  if (!data.is_obj(ObjKind::Array))
    throw type_error("the key array is a ShapeDtypeStruct (from eval_shape): it has no values");
  return data.as<ArrayObj>()->tensor;
}

Shape KeyArrayObj::shape() const {
  const AVal* a = shape_dtype_struct_aval(data);
  Shape s = a ? a->shape : tensor()->aval.shape;
  if (!s.empty()) s.pop_back();
  return s;
}

std::string KeyArrayObj::repr() const {
  if (!data.is_obj(ObjKind::Array))
    return "ShapeDtypeStruct(shape=" + shape_str(shape()) + ", dtype=" + key_dtype_name(tag) + ")";
  const Tensor& t = tensor();
  bool concrete = t->concrete || t->sharded;
  if (!concrete) { // a traced key, as JAX's repr of a tracer: JitTracer(key<fry>[3])
    std::string dims;
    Shape s = shape();
    for (size_t i = 0; i < s.size(); ++i) dims += (i ? "," : "") + std::to_string(s[i]);
    return "JitTracer(" + key_dtype_name(tag) + "[" + dims + "])";
  }
  return "Array(" + shape_str(shape()) + ", dtype=" + key_dtype_name(tag) + ") overlaying:\n" +
         pxl::str(data);
}

namespace {

// JAX lays a key array's data out by the keys' spec with one more None entry,
// for the key words' axis (P('x') keys: P('x', None) data; P() keys: P(None,)
// data), and types the keys by the data's first entries (P(None,) for those
// P() keys). pxl's data carries the keys' own spec: `data` with that entry
// added, when its spec stops within the key dimensions.
Value physical_data(const Value& data) {
  if (!data.is_obj(ObjKind::Array)) return data;
  const auto* a = data.as<ArrayObj>();
  const Tensor& t = a->tensor;
  if (!t->sharded || t->aval.shape.empty() ||
      t->sharded->spec.entries.size() >= t->aval.shape.size() ||
      !t->sharded->spec.unconstrained.empty())
    return data;
  auto d = std::make_shared<ShardedData>();
  d->pull_log = t->sharded->pull_log;
  d->mesh = t->sharded->mesh;
  d->spec = t->sharded->spec;
  d->spec.entries.emplace_back();
  d->global = t->sharded->global;
  d->shards = t->sharded->shards;
  Value out = make_array(make_sharded_tensor(std::move(d)));
  out.as<ArrayObj>()->committed = a->committed;
  return out;
}

} // namespace

bool KeyArrayObj::get_attr(InterpreterImpl& in, const std::string& name, Value& out) {
  Shape s = shape();
  // Methods hold their own key array (key arrays are immutable).
  auto self_of = [&] { return std::make_shared<const KeyArrayObj>(data, tag); };
  if (name == "shape") {
    ValueList dims;
    for (int64_t d : s) dims.push_back(Value::integer(d));
    return out = make_tuple(std::move(dims)), true;
  }
  if (name == "ndim") return out = Value::integer(static_cast<int64_t>(s.size())), true;
  if (name == "size") {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return out = Value::integer(n), true;
  }
  if (name == "dtype") return out = key_dtype_value(tag), true;
  if (name == "itemsize") return out = Value::integer(tag == "fry" ? 8 : 16), true;
  if (name == "T") {
    std::vector<int> perm;
    for (size_t i = s.size(); i-- > 0;) perm.push_back(static_cast<int>(i));
    perm.push_back(static_cast<int>(s.size()));
    return out = wrap(np::transpose(in.ops(), tensor(), perm), tag), true;
  }
  if (name == "reshape") {
    out = make_builtin("reshape", [self = self_of()](InterpreterImpl& in, CallArgs& a) {
      // x.reshape(2, 3) or x.reshape((2, 3)), as arrays' reshape.
      Value shape = a.pos.size() == 1 ? a.pos[0] : make_tuple(a.pos);
      for (const auto& [k, v] : a.kw)
        if (k == "shape") shape = v;
      return reshape_keys(in, *self, value_to_int_list(shape, "reshape() shape"));
    });
    return true;
  }
  if (name == "ravel" || name == "flatten") {
    out = make_builtin(name, [self = self_of()](InterpreterImpl& in, CallArgs&) {
      return reshape_keys(in, *self, {-1});
    });
    return true;
  }
  if (name == "squeeze") {
    out = make_builtin("squeeze", [self = self_of()](InterpreterImpl& in, CallArgs& a) {
      ArgReader r("squeeze", a, {"axis"});
      return squeeze_keys(in, *self, r[0]);
    });
    return true;
  }
  if (name == "at") return out = Value::object(std::make_shared<KeyAtObj>(data, tag)), true;
  // Where the keys lie is where their data lies (a spec naming the data's
  // trailing word axis never arises: device_put lays keys out by their shape).
  if (name == "sharding") {
    out = in.get_attr(physical_data(data), name, Span{});
    // (A NamedSharding's spec cut to the key dimensions.)
    if (auto* so =
            out.is_obj(ObjKind::Opaque) ? dynamic_cast<ShardingObj*>(out.as<OpaqueObj>()) : nullptr;
        so && !so->single_device && !so->is_abstract() && so->spec.entries.size() > s.size()) {
      auto cut = std::make_shared<ShardingObj>(*so);
      cut->spec.entries.resize(s.size());
      out = Value::object(cut);
    }
    return true;
  }
  if (name == "devices" || name == "committed" || name == "is_fully_replicated")
    return out = in.get_attr(data, name, Span{}), true;
  if (name == "block_until_ready" || name == "copy") {
    Value me = make_key_array(data, tag);
    out = make_builtin(name, [me](InterpreterImpl&, CallArgs&) { return me; });
    return true;
  }
  return false;
}

std::vector<std::string> KeyArrayObj::attr_names() const {
  return {"T",         "at",      "block_until_ready",
          "committed", "copy",    "devices",
          "dtype",     "flatten", "is_fully_replicated",
          "itemsize",  "ndim",    "ravel",
          "reshape",   "shape",   "sharding",
          "size",      "squeeze"};
}

bool KeyArrayObj::get_item(InterpreterImpl& in, const Value& index, Value& out) {
  out = wrap(np::index(in.ops(), tensor(), key_index(in, index, shape().size())), tag);
  return true;
}

bool KeyArrayObj::items(InterpreterImpl& in, ValueList& out) {
  Shape s = shape();
  if (s.empty()) throw type_error("iteration over a 0-d key array");
  for (int64_t i = 0; i < s[0]; ++i) {
    np::IndexItem it;
    it.index = i;
    out.push_back(wrap(np::index(in.ops(), tensor(), {it}), tag));
  }
  return true;
}

bool KeyArrayObj::truth(InterpreterImpl&) {
  throw type_error("key array cannot be converted to boolean.");
}

bool KeyArrayObj::apply_operator(InterpreterImpl& in, const std::string& op, const Value& other,
                                 bool self_first, Value& out) {
  const std::string key = key_dtype_name(tag);
  if (op == "pos") return out = make_key_array(data, tag), true;
  if (op == "neg")
    throw type_error("neg does not accept dtype " + key +
                     ". Accepted dtypes are subtypes of integer, floating, complexfloating.");
  if (op == "invert")
    throw type_error("not does not accept dtype " + key +
                     ". Accepted dtypes are subtypes of integer, bool.");
  bool cmp = op == "lt" || op == "le" || op == "gt" || op == "ge" || op == "eq" || op == "ne";
  if (const KeyArrayObj* o = as_key_array(other)) { // lax's checks of two keys
    if (op == "eq" || op == "ne") {                 // keys compare by their whole data
      Tensor x = self_first ? tensor() : o->tensor(), y = self_first ? o->tensor() : tensor();
      bool eq = op == "eq";
      Tensor c = np::binary(in.ops(), eq ? np::BinOp::Eq : np::BinOp::Ne, x, y);
      int last = static_cast<int>(c->aval.shape.size()) - 1;
      out = make_array(np::reduce(in.ops(), eq ? np::ReduceOp::All : np::ReduceOp::Any, c,
                                  std::vector<int>{last}));
      return true;
    }
    static const std::pair<const char*, const char*> lax_names[] = {
        {"add", "add"}, {"sub", "sub"}, {"mul", "mul"}, {"and", "and"}, {"or", "or"},
        {"xor", "xor"}, {"lt", "lt"},   {"le", "le"},   {"gt", "gt"},   {"ge", "ge"}};
    for (auto [py, lax] : lax_names) {
      if (op != py) continue;
      std::string accepted = cmp ? "integer, floating, bool"
                             : (op == "and" || op == "or" || op == "xor")
                                 ? "integer, bool"
                                 : "integer, floating, complexfloating";
      throw type_error(std::string(lax) + " does not accept dtype " + key +
                       " at position 0. Accepted dtypes at position 0 are subtypes of " + accepted +
                       ".");
    }
    throw type_error("Cannot interpret '" + key + "' as a data type");
  }
  std::optional<std::string> od = operand_dtype(other);
  if (!od) return false; // Python's unsupported-operand error
  if ((op == "pow" && self_first) || op == "matmul")
    throw type_error("Cannot interpret '" + key + "' as a data type");
  if (cmp) { // a reflected comparison swaps its sides (Python's __gt__ for <)
    static const std::pair<const char*, const char*> names[] = {
        {"lt", "less"},          {"le", "less_equal"}, {"gt", "greater"},
        {"ge", "greater_equal"}, {"eq", "equal"},      {"ne", "not_equal"}};
    static const std::pair<const char*, const char*> mirror[] = {
        {"lt", "gt"}, {"gt", "lt"}, {"le", "ge"}, {"ge", "le"}};
    std::string o = op;
    if (!self_first)
      for (auto [a, b] : mirror)
        if (op == a) o = b;
    for (auto [py, jnp] : names)
      if (o == py)
        throw type_error(std::string(jnp) + " does not accept dtypes " + key + ", " + *od + ".");
  }
  static const std::pair<const char*, const char*> names[] = {{"add", "add"},
                                                              {"sub", "subtract"},
                                                              {"mul", "multiply"},
                                                              {"truediv", "true_divide"},
                                                              {"floordiv", "floor_divide"},
                                                              {"mod", "remainder"},
                                                              {"pow", "power"},
                                                              {"and", "bitwise_and"},
                                                              {"or", "bitwise_or"},
                                                              {"xor", "bitwise_xor"},
                                                              {"lshift", "left_shift"},
                                                              {"rshift", "right_shift"}};
  for (auto [py, jnp] : names)
    if (op == py)
      throw type_error(std::string(jnp) + " does not accept dtypes " + (self_first ? key : *od) +
                       ", " + (self_first ? *od : key) + ".");
  return false;
}

std::optional<bool> key_issubdtype(const Value& a, const Value& b) {
  bool a_dtype = opaque_as<KeyDTypeObj>(a) != nullptr,
       b_dtype = opaque_as<KeyDTypeObj>(b) != nullptr;
  const KeyClassObj *a_cls = opaque_as<KeyClassObj>(a), *b_cls = opaque_as<KeyClassObj>(b);
  if (!a_dtype && !b_dtype && !a_cls && !b_cls) return std::nullopt;
  if (a_dtype) return b_dtype || b_cls;
  if (a_cls) return b_cls && (b_cls->name == a_cls->name || b_cls->name == "extended");
  return false; // a numeric dtype is not a key dtype
}

void install_key_arrays(InterpreterImpl& in, const Value& np, const Value& random) {
  (void)in;
  install_np_wrappers(np);
  auto& vars = random.as<ModuleObj>()->env->vars;
  vars["_wrap_keys"] = make_builtin("wrap_key_data", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("wrap_key_data", a, {"data", "tag"}, 1);
    return make_key_array(make_array(in.to_tensor(r[0], Span{})),
                          r.has(1) ? r.get_str(1) : std::string("fry"));
  });
  // A key array's implementation tag: fry, rbg or urbg (unsafe_rbg).
  vars["_key_tag"] = make_builtin("_key_tag", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_key_tag", a, {"keys"}, 1);
    const KeyArrayObj* k = as_key_array(r[0]);
    return k ? make_str(k->tag) : Value();
  });
  vars["_unwrap_keys"] = make_builtin("key_data", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("key_data", a, {"keys"}, 1);
    const KeyArrayObj* k = as_key_array(r[0]);
    return k ? physical_data(k->data) : r[0];
  });
  vars["_check_key_type"] = make_builtin("_check_key_type", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_check_key_type", a, {"key"}, 1);
    check_key_type(r[0]);
    return Value();
  });
  vars["_is_key_array"] = make_builtin("_is_key_array", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_is_key_array", a, {"x"}, 1);
    return Value::boolean(as_key_array(r[0]) != nullptr);
  });
  vars["_prng_key_class"] = Value::object(std::make_shared<KeyClassObj>("prng_key"));
  vars["_extended_class"] = Value::object(std::make_shared<KeyClassObj>("extended"));
}

} // namespace pxl
