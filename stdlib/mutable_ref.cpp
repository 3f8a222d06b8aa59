#include "stdlib/mutable_ref.hpp"

#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/np.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/trace_origin.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

namespace {

const AVal& aval_of(const Value& array) { return array.as<ArrayObj>()->tensor->aval; }

// JAX's name of a reference's type: Ref{float32[3]}.
std::string ref_type(const AVal& a) {
  std::string dims;
  for (size_t i = 0; i < a.shape.size(); ++i) dims += (i ? "," : "") + std::to_string(a.shape[i]);
  return std::string("Ref{") + dtype_name(a.dtype) + "[" + dims + "]}";
}

bool is_traced_array(const Value& v) {
  const Tensor& t = v.as<ArrayObj>()->tensor;
  return t->trace != nullptr;
}

Value call_method(InterpreterImpl& in, const Value& obj, const char* name, ValueList args) {
  return in.call(in.get_attr(obj, name, Span{}), std::move(args), Span{});
}

// ref[...] and ref[()]: the whole array.
bool is_whole(const Value& index) {
  return index.is_obj(ObjKind::Ellipsis) ||
         (index.is_obj(ObjKind::Tuple) && index.as<TupleObj>()->items.empty());
}

// What JAX's swap/addupdate check before writing `v` at `index`: the value
// has the reference's dtype and exactly the indexed shape (no broadcasting).
Value checked_update(InterpreterImpl& in, const Value& current, const Value& index, const Value& v,
                     const char* op) {
  const AVal& ref = aval_of(current);
  Value value = v.is_obj(ObjKind::Array) ? v : make_array(in.to_tensor(v, Span{}));
  const AVal& got = aval_of(value);
  if (got.dtype != ref.dtype)
    throw Error(ErrCode::Value, std::string("Invalid dtype for `") + op +
                                    "`. Ref dtype: " + dtype_name(ref.dtype) +
                                    ". Value dtype: " + dtype_name(got.dtype) + ". ");
  bool whole = is_whole(index);
  Shape expected = whole ? ref.shape : aval_of(in.get_item(current, index, Span{})).shape;
  if (got.shape != expected)
    throw Error(ErrCode::Value, std::string("Invalid shape for `") + op +
                                    "`. Ref shape: " + shape_str(ref.shape) + ". Expected shape: " +
                                    shape_str(expected) + ". Value shape: " + shape_str(got.shape) +
                                    ". Transforms: (" + (whole ? "" : "NDIndexer,") + "). ");
  return value;
}

// The message of a write to a reference from outside a trace that refuses
// it (the derivatives, pmap, shard_map, custom rules).
std::string refused_write(const TraceContext& tc, const RefObj& r) {
  const std::string& what = tc.what();
  if (what == "vjp" || what == "jvp" || what == "linearize" || what == "jacfwd" ||
      what == "jacrev" || what == "hessian")
    return differentiated_write_message(r);
  return "a mutable array reference of type " + ref_type_name(r) + " made outside " + what +
         " cannot be written inside it (jit, scan, fori_loop, while_loop and cond can)";
}

// ref[index] = value (op "swap"), or += it ("addupdate").
void write_at(InterpreterImpl& in, RefObj& r, const Value& index, const Value& v, const char* op) {
  if (auto* tc = dynamic_cast<TraceContext*>(&in.ops()))
    if (!tc->ref_writes_ok && !ref_made_in(r, *tc))
      throw Error(ErrCode::Unsupported, refused_write(*tc, r));
  Value current = load_ref(in, r);
  Value value = checked_update(in, current, index, v, op);
  const bool swap = std::string(op) == "swap";
  Value next;
  if (is_whole(index)) { // (the value itself, typed as the reference's)
    next = swap ? value : in.binary_op(BinOpKind::Add, current, value, Span{});
    const Tensor& t = next.as<ArrayObj>()->tensor;
    if (t->aval.weak != aval_of(current).weak) {
      OpAttrs at;
      at.dtype = t->aval.dtype;
      at.weak = aval_of(current).weak;
      next = make_array(in.ops().bind(Op::ConvertElementType, at, std::vector<Tensor>{t}));
    }
  } else {
    Value at = in.get_item(in.get_attr(current, "at", Span{}), index, Span{});
    next = call_method(in, at, swap ? "set" : "add", {value});
  }
  store_ref(in, r.shared_from_this(), next);
  // (Eagerly JAX stores the value as a strongly typed array.)
  if (!dynamic_cast<TraceContext*>(&in.ops())) r.value = strongly_typed(in, r.value);
}

Value make_ref(InterpreterImpl& in, const Value& x, const char* fname) {
  if (as_ref(x))
    throw Error(ErrCode::Type, std::string(fname) + ": cannot make a reference to a reference");
  if (!x.is_obj(ObjKind::Array) && !x.is_number())
    throw Error(ErrCode::Type, std::string("Error interpreting argument to ") + fname +
                                   " as a JAX value. The problematic value is of type <class '" +
                                   pxl::type_name(x) + "'> and was passed to " + fname +
                                   " at position 0.");
  auto r = std::make_shared<RefObj>();
  r->value = x.is_obj(ObjKind::Array) ? x : make_array(in.to_tensor(x, Span{}));
  if (auto* tc = dynamic_cast<TraceContext*>(&in.ops())) {
    r->owner = tc->ref_token;
    r->made_eagerly = false;
  }
  return Value::object(r);
}

std::shared_ptr<RefObj> ref_arg(const Value& v, const char* fname) {
  auto r = as_ref(v);
  if (!r)
    throw Error(ErrCode::Type, std::string(fname) +
                                   "() needs a mutable array reference (jax.new_ref), not " +
                                   pxl::type_name(v));
  return r;
}

// The index a jax.ref function was given: () when left out.
Value index_or_all(const ArgReader& r, size_t i) {
  return r.has(i) && !r[i].is_none() ? r[i] : make_tuple({});
}

// jax.typeof of a reference: its type, Ref{float32[3]}.
struct AbstractRefObj : OpaqueObj {
  AVal aval;
  std::string type_name() const override { return "AbstractRef"; }
  std::string repr() const override { return ref_type(aval); }
  bool equals(const OpaqueObj& other) const override {
    auto* o = dynamic_cast<const AbstractRefObj*>(&other);
    return o && o->aval.shape == aval.shape && o->aval.dtype == aval.dtype;
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "shape") {
      ValueList dims;
      for (int64_t d : aval.shape) dims.push_back(Value::integer(d));
      out = make_tuple(std::move(dims));
    } else if (name == "ndim") {
      out = Value::integer(static_cast<int64_t>(aval.shape.size()));
    } else {
      return false;
    }
    return true;
  }
  std::vector<std::string> attr_names() const override { return {"ndim", "shape"}; }
};

} // namespace

std::string RefObj::repr() const {
  std::string s = pxl::repr(value);
  if (is_traced_array(value)) {
    size_t open = s.find('(');
    return (open == std::string::npos ? s : s.substr(0, open)) + "(" + ref_type(aval_of(value)) +
           ")";
  }
  return s.rfind("Array(", 0) == 0 ? "Ref(" + s.substr(6) : "Ref(" + s + ")";
}

bool RefObj::get_attr(InterpreterImpl& in, const std::string& name, Value& out) {
  if (name == "shape" || name == "dtype" || name == "ndim" || name == "size" ||
      name == "sharding" || name == "weak_type") {
    out = in.get_attr(value, name, Span{});
    return true;
  }
  if (name == "__getitem__" || name == "__setitem__") {
    auto self = shared_from_this();
    bool get = name == "__getitem__";
    out = make_builtin(name, [self, get](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(get ? "__getitem__" : "__setitem__", a, {"idx", "value"}, get ? 1 : 2);
      if (get) return in.get_item(load_ref(in, *self), r[0], Span{});
      write_at(in, *self, r[0], r[1], "swap");
      return Value::none();
    });
    return true;
  }
  if (name == "addupdate") {
    auto self = shared_from_this();
    out = make_builtin("addupdate", [self](InterpreterImpl& in, CallArgs& a) {
      ArgReader r("addupdate", a, {"x", "idx"}, 1);
      write_at(in, *self, index_or_all(r, 1), r[0], "addupdate");
      return Value::none();
    });
    return true;
  }
  return false;
}

std::vector<std::string> RefObj::attr_names() const {
  return {"addupdate", "dtype", "ndim", "shape", "sharding", "size"};
}

bool RefObj::get_item(InterpreterImpl& in, const Value& index, Value& out) {
  out = in.get_item(load_ref(in, *this), index, Span{});
  return true;
}

bool RefObj::set_item(InterpreterImpl& in, const Value& index, const Value& v) {
  write_at(in, *this, index, v, "swap");
  return true;
}

bool RefObj::items(InterpreterImpl& in, ValueList& out) {
  out = in.iterate(load_ref(in, *this), Span{});
  return true;
}

std::string ref_type_name(const RefObj& r) { return ref_type(aval_of(r.value)); }

Value ref_abstract_type(InterpreterImpl& in, RefObj& r) {
  auto t = std::make_shared<AbstractRefObj>();
  t->aval = aval_of(load_ref(in, r));
  return Value::object(t);
}

std::string vmapped_write_message(const RefObj& r) {
  return "performing a set/swap operation with vmapped value on an unbatched array reference of "
         "type " +
         ref_type_name(r) + ". Move the array reference to be an argument to the vmapped function?";
}

std::string differentiated_write_message(const RefObj& r) {
  return "performing a set/swap operation with a differentiated value on a non-differentiated "
         "array reference of type " +
         ref_type_name(r) +
         ". Move the array reference to be an argument of the differentiated "
         "function?";
}

Value strongly_typed(InterpreterImpl& in, const Value& array) {
  const Tensor& t = array.as<ArrayObj>()->tensor;
  return t->aval.weak ? make_array(np::astype(in.ops(), t, t->aval.dtype)) : array;
}

std::shared_ptr<RefObj> as_ref(const Value& v) {
  if (!v.is_obj(ObjKind::Opaque)) return nullptr;
  auto* r = dynamic_cast<RefObj*>(v.as<OpaqueObj>());
  return r ? r->shared_from_this() : nullptr;
}

bool ref_made_in(const RefObj& r, const TraceContext& tc) {
  return !r.made_eagerly && !r.owner.owner_before(tc.ref_token) &&
         !tc.ref_token.owner_before(r.owner);
}

bool ref_from_outside(const RefObj& r, const TraceContext& tc) {
  return r.made_eagerly || (!r.owner.expired() && !ref_made_in(r, tc));
}

RefFrameScope::RefFrameScope(InterpreterImpl& in) : in_(in) { in_.ref_frames.push_back(&frame); }

RefFrameScope::~RefFrameScope() {
  for (auto it = frame.writes.rbegin(); it != frame.writes.rend(); ++it) it->ref->value = it->saved;
  if (!in_.ref_frames.empty() && in_.ref_frames.back() == &frame) in_.ref_frames.pop_back();
}

void store_ref(InterpreterImpl& in, const std::shared_ptr<RefObj>& r, Value v) {
  for (RefFrame* f : in.ref_frames) f->touched = true;
  if (!in.ref_frames.empty()) {
    RefFrame& top = *in.ref_frames.back();
    bool seen = false;
    for (const RefWrite& w : top.writes) seen = seen || w.ref == r;
    if (!seen) top.writes.push_back({r, r->value});
  }
  r->value = std::move(v);
}

Value load_ref(InterpreterImpl& in, RefObj& r) {
  for (RefFrame* f : in.ref_frames) f->touched = true;
  return r.value;
}

void refuse_ref_results(
    InterpreterImpl& in, const Value& out, const Value& fn, const std::string& what,
    const Span& where, const std::vector<std::pair<std::shared_ptr<RefObj>, std::string>>& passed) {
  ValueList leaves;
  TreeDef tree = tree_flatten(in, out, leaves);
  for (size_t i = 0; i < leaves.size(); ++i) {
    auto r = as_ref(leaves[i]);
    if (!r) continue;
    std::string origin;
    for (const auto& [p, name] : passed)
      if (p == r && !name.empty())
        origin = "\n\nThe returned mutable array was passed in as the argument " + name + ".";
    throw Error(ErrCode::Value,
                "function " + function_source_info(fn) + " traced for " + what +
                    " returned a mutable array reference of type " + ref_type_name(*r) +
                    (tree.kind == TreeDef::Kind::Leaf
                         ? ""
                         : " at output tree path result" + leaf_keystrs(tree)[i]) +
                    ", but mutable array references cannot be returned." + origin,
                where);
  }
}

Value apply_ref_outputs(InterpreterImpl& in, const TracedFunction& t, const Value& out,
                        bool strong) {
  if (t.ref_outputs.empty()) return out;
  const ValueList& parts = *sequence_items(out);
  const ValueList& finals = *sequence_items(parts[1]);
  for (size_t k = 0; k < t.ref_outputs.size(); ++k)
    store_ref(in, t.ref_outputs[k], strong ? strongly_typed(in, finals[k]) : finals[k]);
  return parts[0];
}

void add_mutable_refs(InterpreterImpl& in, Value& jax) {
  ModuleBuilder ref("jax.ref");
  ref.fn("new_ref", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("new_ref", a, {"init_val", "memory_space", "kind"}, 1);
    return make_ref(in, r[0], "new_ref");
  });
  ref.fn("freeze", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("freeze", a, {"ref"}, 1);
    return load_ref(in, *ref_arg(r[0], "freeze"));
  });
  // Eagerly JAX has no evaluation rule for it; traced it is a reference to
  // values that are not set yet (pxl's are zeros).
  ref.fn("empty_ref", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("empty_ref", a, {"ty", "memory_space", "kind"}, 1);
    if (!dynamic_cast<TraceContext*>(&in.ops()))
      throw Error(ErrCode::Unsupported, "Evaluation rule for 'empty_ref' not implemented");
    Value like = in.call(
        in.get_attr(in.import_module("jax.numpy", Span{}, ""), "zeros", Span{}),
        ValueList{in.get_attr(r[0], "shape", Span{}), in.get_attr(r[0], "dtype", Span{})}, Span{});
    return make_ref(in, like, "empty_ref");
  });
  ref.fn("get", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("get", a, {"ref", "idx"}, 1);
    return in.get_item(load_ref(in, *ref_arg(r[0], "get")), index_or_all(r, 1), Span{});
  });
  ref.fn("set", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("set", a, {"ref", "idx", "value"}, 3);
    write_at(in, *ref_arg(r[0], "set"), index_or_all(r, 1), r[2], "swap");
    return Value::none();
  });
  ref.fn("swap", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("swap", a, {"ref", "idx", "value"}, 3);
    auto ref = ref_arg(r[0], "swap");
    Value old = in.get_item(load_ref(in, *ref), index_or_all(r, 1), Span{});
    write_at(in, *ref, index_or_all(r, 1), r[2], "swap");
    return old;
  });
  ref.fn("addupdate", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("addupdate", a, {"ref", "idx", "x"}, 3);
    write_at(in, *ref_arg(r[0], "addupdate"), index_or_all(r, 1), r[2], "addupdate");
    return Value::none();
  });
  ref.val("Ref", make_type("Ref"));
  // For lax_loops.pxl's cond on a traced predicate, whose branches run one
  // after the other in the same trace: fn(*operands) with the references it
  // writes restored afterwards, and the writes as [(ref, value), ...]; cond
  // then stores the selection of the branches' values (_ref_store).
  auto& lax = jax.as<ModuleObj>()->env->vars.at("lax").as<ModuleObj>()->env->vars;
  lax["_with_ref_writes"] = make_builtin("_with_ref_writes", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_with_ref_writes", a, {"fn", "operands"}, 2);
    const ValueList* operands = sequence_items(r[1]);
    if (!operands) throw Error(ErrCode::Internal, "_with_ref_writes: operands must be a tuple");
    RefFrameScope frame(in);
    Value out = in.call(r[0], *operands, Span{});
    ValueList writes;
    for (const RefWrite& w : frame.frame.writes)
      writes.push_back(make_tuple({Value::object(w.ref), w.ref->value}));
    return make_tuple({out, make_list(std::move(writes))});
  });
  lax["_refuse_ref_results"] =
      make_builtin("_refuse_ref_results", [](InterpreterImpl& in, CallArgs& a) {
        ArgReader r("_refuse_ref_results", a, {"out", "fn", "what"}, 3);
        refuse_ref_results(in, r[0], r[1], r.get_str(2), Span{});
        return Value::none();
      });
  lax["_ref_store"] = make_builtin("_ref_store", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_ref_store", a, {"ref", "value"}, 2);
    store_ref(in, ref_arg(r[0], "_ref_store"), r[1]);
    return Value::none();
  });
  ref.val("AbstractRef", make_type("AbstractRef"));
  Value mod = ref.value();
  auto& vars = jax.as<ModuleObj>()->env->vars;
  vars["ref"] = mod;
  for (const char* n : {"new_ref", "freeze", "empty_ref", "Ref"})
    vars[n] = mod.as<ModuleObj>()->env->vars.at(n);
  in.register_module("jax.ref", mod);
}

} // namespace pxl
