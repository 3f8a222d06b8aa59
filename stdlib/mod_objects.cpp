// Host objects that pxl code cannot define itself (it has no classes), made
// for the stdlib's .pxl modules through `types` and `collections`: named tuples
// (collections.namedtuple: jnp.unique_all's result), objects read with []
// (jnp.r_, jnp.mgrid, ...: types._subscriptable) and context managers built
// from two functions (jnp.printoptions, jax.named_scope: types._context).
#include "lang/args.hpp"
#include "lang/lazy_iter.hpp"
#include "lang/methods.hpp"
#include "lang/py_set.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/namedtuple.hpp"
#include "stdlib/trace_origin.hpp"

namespace pxl {

namespace {

struct NamedTupleObj : OpaqueObj {
  std::shared_ptr<const NamedTupleType> type;
  ValueList values;
  ValueList children; // the pytree children when the type has aux fields (else values are)
  const std::vector<std::string>& fields() const { return type->fields; }
  std::string type_name() const override { return type->name; }
  std::string repr() const override {
    if (type->repr) return type->repr(values);
    std::string s = type->name + "(";
    for (size_t i = 0; i < values.size(); ++i)
      s += (i ? ", " : "") + fields()[i] + "=" + pxl::repr(values[i]);
    return s + ")";
  }
  std::string str() const override { return type->str ? type->str(values) : repr(); }
  bool items(ValueList& out) const override {
    if (!type->tuple_like) return false;
    out = values;
    return true;
  }
  const ValueList* tuple_items() const override { return type->tuple_like ? &values : nullptr; }
  // The pxl function `ops[name]`, or null when the class has none.
  const Value* op_fn(const char* name) const {
    return type->ops.is_obj(ObjKind::Dict) ? type->ops.as<DictObj>()->find(make_str(name))
                                           : nullptr;
  }
  bool items(InterpreterImpl& in, ValueList& out) override {
    if (type->tuple_like) return items(out);
    // len() and iteration: obj[0], obj[1], ... (JAX's sparse __iter__).
    const Value* f = op_fn("len");
    const Value* get = op_fn("getitem");
    if (!f || !get) return false;
    Value self = make_namedtuple(type, values);
    Value n = in.call(*f, {self}, Span{});
    out.clear();
    for (int64_t i = 0; i < (n.is_int() ? n.as_int() : 0); ++i)
      out.push_back(in.call(*get, {self, Value::integer(i)}, Span{}));
    return true;
  }
  // Python's operators: a sparse class's `ops[op]`, else a stdlib class's
  // dunder methods (__mul__, __rmul__, ...: Rotation composition); else
  // the interpreter's default.
  bool apply_operator(InterpreterImpl& in, const std::string& op, const Value& other,
                      bool self_first, Value& out) override {
    if (const Value* f = op_fn(op.c_str())) {
      out = in.call(*f, {make_namedtuple(type, values), other, Value::boolean(self_first)}, Span{});
      return true;
    }
    Value method;
    std::string name = self_first ? "__" + op + "__" : "__r" + op + "__";
    if (!type->attr || !type->attr(in, values, name, method)) return false;
    out = in.call(method, {other}, Span{});
    return true;
  }
  bool get_item(InterpreterImpl& in, const Value& index, Value& out) override {
    if (!type->tuple_like) {
      const Value* f = op_fn("getitem");
      if (!f) return false;
      return out = in.call(*f, {make_namedtuple(type, values), index}, Span{}), true;
    }
    Value method; // a stdlib class's own __getitem__ (Rotation[1:3])
    if (type->attr && type->attr(in, values, "__getitem__", method))
      return out = in.call(method, {index}, Span{}), true;
    if (index.is_obj(ObjKind::Slice)) // a slice of a named tuple is a plain tuple
      return out = in.get_item(make_tuple(values), index, Span{}), true;
    if (!index.is_int()) return false;
    int64_t i = index.as_int(), n = static_cast<int64_t>(values.size());
    if (i < -n || i >= n) throw Error(ErrCode::Index, "tuple index out of range");
    out = values[static_cast<size_t>(i < 0 ? i + n : i)];
    return true;
  }
  bool get_attr(InterpreterImpl& in, const std::string& attr, Value& out) override {
    for (size_t i = 0; i < fields().size(); ++i)
      if (fields()[i] == attr) return out = values[i], true;
    if (type->attr && type->attr(in, values, attr, out)) return true;
    if (type->attrs.is_obj(ObjKind::Dict))
      if (const Value* f = type->attrs.as<DictObj>()->find(make_str(attr)))
        return out = in.call(*f, {make_namedtuple(type, values)}, Span{}), true;
    if (!type->tuple_like) return false; // no tuple methods
    if (attr == "_fields") {
      ValueList names;
      for (const auto& f : fields()) names.push_back(make_str(f));
      return out = make_tuple(std::move(names)), true;
    }
    if (attr == "_asdict") {
      auto t = type;
      ValueList vs = values;
      out = make_builtin("_asdict", [t, vs](InterpreterImpl&, CallArgs& a) {
        ArgReader r("_asdict", a, {});
        auto d = std::make_shared<DictObj>();
        for (size_t i = 0; i < t->fields.size(); ++i) d->set(make_str(t->fields[i]), vs[i]);
        return Value::object(d);
      });
      return true;
    }
    if (attr == "_replace") { // a copy with the named fields changed
      auto t = type;
      ValueList vs = values;
      out = make_builtin("_replace", [t, vs](InterpreterImpl&, CallArgs& a) {
        if (!a.pos.empty())
          throw Error(ErrCode::Arguments, "_replace() takes 1 positional argument but " +
                                              std::to_string(a.pos.size() + 1) + " were given");
        ValueList out = vs;
        for (const auto& [k, v] : a.kw) {
          size_t i = 0;
          while (i < t->fields.size() && t->fields[i] != k) ++i;
          if (i == t->fields.size())
            throw Error(ErrCode::Value, "Got unexpected field names: ['" + k + "']");
          out[i] = v;
        }
        return make_namedtuple(t, std::move(out));
      });
      return true;
    }
    return false;
  }
  std::vector<std::string> attr_names() const override {
    std::vector<std::string> names = fields();
    if (type->attrs.is_obj(ObjKind::Dict))
      type->attrs.as<DictObj>()->for_each(
          [&](const Value& k, const Value&) { names.push_back(value_to_str(k, "attr")); });
    return names;
  }
  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    if (type->call.is_none()) return false;
    CallArgs args = a;
    args.pos.insert(args.pos.begin(), make_namedtuple(type, values)); // self
    out = in.call(type->call, args, where);
    return true;
  }
  bool equals(const OpaqueObj& o) const override {
    // Python compares named tuples as tuples: by their values alone.
    auto* t = dynamic_cast<const NamedTupleObj*>(&o);
    if (!t || t->values.size() != values.size()) return false;
    for (size_t i = 0; i < values.size(); ++i)
      if (!values_equal(values[i], t->values[i])) return false;
    return true;
  }
};

// obj[index] calls fn(index): numpy's index-trick objects (r_, c_, mgrid, s_).
struct SubscriptableObj : OpaqueObj {
  std::string name;
  Value fn;
  std::string type_name() const override { return name; }
  std::string repr() const override { return "<" + name + " object>"; }
  bool get_item(InterpreterImpl& in, const Value& index, Value& out) override {
    out = in.call(fn, {index}, Span{});
    return true;
  }
};

// `with obj [as x]:` calls enter() (its result is x) and, however the block is
// left, exit().
struct ContextObj : OpaqueObj {
  std::string name;
  Value enter_fn, exit_fn;
  std::string type_name() const override { return name; }
  std::string repr() const override { return "<" + name + " object>"; }
  bool enter(InterpreterImpl& in, Value& out) override {
    out = enter_fn.is_none() ? Value() : in.call(enter_fn, {}, Span{});
    return true;
  }
  void exit(InterpreterImpl& in) override {
    if (!exit_fn.is_none()) in.call(exit_fn, {}, Span{});
  }
};

// An object with named attributes and, optionally, a call (jit(f).lower(...)'s
// Lowered and Compiled objects: types._object(name, attrs, call)).
struct AttrObj : OpaqueObj {
  std::string name;
  std::vector<std::pair<std::string, Value>> attrs;
  Value call_fn;
  std::string repr_text; // what repr() shows; empty: <name object>
  std::string str_text;  // what str()/print show; empty: the repr (an enum member differs)
  std::string type_name() const override { return name; }
  std::string repr() const override {
    return repr_text.empty() ? "<" + name + " object>" : repr_text;
  }
  std::string str() const override { return str_text.empty() ? repr() : str_text; }
  bool get_attr(InterpreterImpl&, const std::string& attr, Value& out) override {
    for (const auto& [k, v] : attrs)
      if (k == attr) return out = v, true;
    return false;
  }
  std::vector<std::string> attr_names() const override {
    std::vector<std::string> names;
    for (const auto& kv : attrs) names.push_back(kv.first);
    return names;
  }
  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    if (call_fn.is_none()) return false;
    out = in.call(call_fn, a, where);
    return true;
  }
};

std::vector<std::string> field_names(const Value& v) {
  std::vector<std::string> out;
  if (v.is_obj(ObjKind::Str)) {
    std::string cur;
    for (char c : value_to_str(v, "namedtuple() field_names") + " ") {
      if (c == ' ' || c == ',') {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    return out;
  }
  const ValueList* items = sequence_items(v);
  if (!items)
    throw Error(ErrCode::Type,
                "namedtuple() field_names must be a string or a sequence of strings");
  for (const Value& x : *items) out.push_back(value_to_str(x, "namedtuple() field name"));
  return out;
}

// The constructor of the named tuple class `type`: Name(*values, **fields).
} // namespace

Value namedtuple_class(std::shared_ptr<NamedTupleType> type) {
  std::shared_ptr<const NamedTupleType> t = std::move(type);
  Value cls = make_builtin(t->name, [t](InterpreterImpl&, CallArgs& a) {
    const std::string& name = t->name;
    const std::vector<std::string>& fields = t->fields;
    if (a.pos.size() > fields.size())
      throw Error(ErrCode::Arguments, name + "() takes " + std::to_string(fields.size()) +
                                          " positional arguments but " +
                                          std::to_string(a.pos.size()) + " were given");
    ValueList values(fields.size());
    std::vector<bool> set(fields.size(), false);
    for (size_t i = 0; i < a.pos.size(); ++i) values[i] = a.pos[i], set[i] = true;
    for (const auto& [k, v] : a.kw) {
      size_t i = 0;
      while (i < fields.size() && fields[i] != k) ++i;
      if (i == fields.size())
        throw Error(ErrCode::Arguments, name + "() got an unexpected keyword argument '" + k + "'");
      if (set[i])
        throw Error(ErrCode::Arguments, name + "() got multiple values for argument '" + k + "'");
      values[i] = v, set[i] = true;
    }
    for (size_t i = 0; i < set.size(); ++i)
      if (!set[i])
        throw Error(ErrCode::Arguments, name + "() missing required argument '" + fields[i] + "'");
    return make_namedtuple(t, std::move(values));
  });
  // The class's _fields, as Python's (pytree code tells named tuple classes by it).
  ValueList names;
  for (const std::string& f : t->fields) names.push_back(make_str(f));
  cls.as<BuiltinObj>()->attrs.emplace_back("_fields", make_tuple(std::move(names)));
  return cls;
}

void add_object_makers(ModuleBuilder& types, ModuleBuilder& collections) {
  types.fn("_subscriptable", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_subscriptable", a, {"name", "fn"}, 2);
    auto obj = std::make_shared<SubscriptableObj>();
    obj->name = r.get_str(0);
    obj->fn = r[1];
    return Value::object(obj);
  });
  types.fn("_object", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_object", a, {"name", "attrs", "call", "repr", "str"}, 2);
    auto obj = std::make_shared<AttrObj>();
    obj->name = r.get_str(0);
    if (!r[1].is_obj(ObjKind::Dict)) throw Error(ErrCode::Type, "_object() attrs must be a dict");
    r[1].as<DictObj>()->for_each([&](const Value& k, const Value& v) {
      obj->attrs.push_back({value_to_str(k, "_object() attribute name"), v});
    });
    if (r.has(2)) obj->call_fn = r[2];
    if (r.has(3)) obj->repr_text = r.get_str(3);
    if (r.has(4)) obj->str_text = r.get_str(4);
    return Value::object(obj);
  });
  types.fn("_context", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_context", a, {"name", "enter", "exit"}, 3);
    auto obj = std::make_shared<ContextObj>();
    obj->name = r.get_str(0);
    obj->enter_fn = r[1];
    obj->exit_fn = r[2];
    return Value::object(obj);
  });
  // itertools' endless iterators (lang/lazy_iter.hpp) and chain, for
  // stdlib/itertools.pxl: chain is a builtin so that it can carry
  // chain.from_iterable.
  types.fn("_count", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("count", a, {"start", "step"});
    Value start = r.has(0) ? r[0] : Value::integer(0), step = r.has(1) ? r[1] : Value::integer(1);
    for (const Value& v : {start, step})
      if (!v.is_number() && !v.is_obj(ObjKind::Complex))
        throw Error(ErrCode::Type, "a number is required");
    return make_count_iter(start, step);
  });
  types.fn("_cycle", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("cycle", a, {"iterable"}, 1);
    return make_cycle_iter(in.iterate(r[0], Span{}));
  });
  types.fn("_repeat", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("repeat", a, {"object"}, 1);
    return make_repeat_iter(r[0]);
  });
  {
    auto chain = [](InterpreterImpl& in, const ValueList& iterables) {
      ValueList out;
      for (const Value& it : iterables)
        for (Value& x : in.iterate(it, Span{})) out.push_back(std::move(x));
      return make_list(std::move(out));
    };
    Value c = make_builtin("chain", [chain](InterpreterImpl& in, CallArgs& a) {
      if (!a.kw.empty()) throw Error(ErrCode::Type, "chain() takes no keyword arguments");
      return chain(in, a.pos);
    });
    c.as<BuiltinObj>()->attrs.emplace_back(
        "from_iterable", make_builtin("from_iterable", [chain](InterpreterImpl& in, CallArgs& a) {
          ArgReader r("from_iterable", a, {"iterable"}, 1);
          return chain(in, in.iterate(r[0], Span{}));
        }));
    types.val("_chain", c);
  }
  // make_jaxpr shows the calls of stdlib functions JAX wraps in jit as jit equations.
  types.val("_jaxpr_jit", jaxpr_jit_decorator());
  // Errors of the kinds JAX raises (ValueError, TypeError, NotImplementedError)
  // for pxl code, which has no raise: types._value_error("...") fails with E0105.
  types.fn("_value_error", [](InterpreterImpl&, CallArgs& a) -> Value {
    ArgReader r("_value_error", a, {"message"}, 1);
    throw Error(ErrCode::Value, r.get_str(0));
  });
  types.fn("_type_error", [](InterpreterImpl&, CallArgs& a) -> Value {
    ArgReader r("_type_error", a, {"message"}, 1);
    throw Error(ErrCode::Type, r.get_str(0));
  });
  types.fn("_sharding_type_error", [](InterpreterImpl&, CallArgs& a) -> Value {
    ArgReader r("_sharding_type_error", a, {"message"}, 1);
    throw Error(ErrCode::Spec, "ShardingTypeError: " + r.get_str(0)); // as sharding_rules.cpp's
  });
  types.fn("_attribute_error", [](InterpreterImpl&, CallArgs& a) -> Value {
    ArgReader r("_attribute_error", a, {"message"}, 1);
    throw Error(ErrCode::Attribute, r.get_str(0)); // JAX's AttributeError (a removed name)
  });
  types.fn("_index_error", [](InterpreterImpl&, CallArgs& a) -> Value {
    ArgReader r("_index_error", a, {"message"}, 1);
    throw Error(ErrCode::ArrayIndex, r.get_str(0)); // JAX's IndexError of an array index
  });
  // _concrete(x, context): the array x, whose value pxl code needs; a traced
  // one is JAX's ConcretizationTypeError naming the use (`context`).
  types.fn("_concrete", [](InterpreterImpl& in, CallArgs& a) -> Value {
    ArgReader r("_concrete", a, {"x", "context"}, 2);
    if (!r[0].is_obj(ObjKind::Array)) return r[0];
    const Tensor& t = r[0].as<ArrayObj>()->tensor;
    try {
      in.ops().concrete(t);
    } catch (Error& e) {
      if (e.code() != ErrCode::ConcreteValue) throw;
      throw concretization_error(e, t->aval, r.get_str(1));
    }
    return r[0];
  });
  types.fn("_unsupported_error", [](InterpreterImpl&, CallArgs& a) -> Value {
    ArgReader r("_unsupported_error", a, {"message"}, 1);
    throw Error(ErrCode::Unsupported, r.get_str(0)); // JAX's NotImplementedError
  });
  // JAX's check_arraylike: _check_arraylike(fn_name, *args) raises its
  // TypeError for the first argument that is a Python container, a string
  // or None rather than an array or a scalar.
  types.fn("_check_arraylike", [](InterpreterImpl&, CallArgs& a) -> Value {
    if (a.pos.empty() || !a.pos[0].is_obj(ObjKind::Str))
      throw Error(ErrCode::Arguments, "_check_arraylike(name, *args) needs the function's name");
    for (size_t i = 1; i < a.pos.size(); ++i) {
      const Value& v = a.pos[i];
      bool container = v.is_none() || v.is_obj(ObjKind::List) || v.is_obj(ObjKind::Tuple) ||
                       v.is_obj(ObjKind::Dict) || v.is_obj(ObjKind::Str) || py_set_items(v);
      if (!container) continue; // arrays of every kind, scalars
      throw Error(ErrCode::Type, a.pos[0].as<StrObj>()->value +
                                     " requires ndarray or scalar arguments, got <class '" +
                                     type_name(v) + "'> at position " + std::to_string(i - 1) +
                                     ".");
    }
    return Value::none();
  });
  // OrderedDict(items, **kw) / defaultdict(factory, items, **kw): a dict made
  // as dict(items, **kw) is, flagged (lang/value.hpp DictObj).
  collections.fn("OrderedDict", [](InterpreterImpl& in, CallArgs& a) {
    Value d = in.call(in.builtin("dict"), a, Span{});
    d.as<DictObj>()->ordered = true;
    return d;
  });
  collections.fn("defaultdict", [](InterpreterImpl& in, CallArgs& a) {
    Value factory;
    CallArgs rest = a;
    if (!rest.pos.empty()) {
      factory = rest.pos.front();
      rest.pos.erase(rest.pos.begin());
    }
    CallArgs check;
    check.pos = {factory};
    if (!factory.is_none() && !in.truthy(in.call(in.builtin("callable"), check, Span{}), Span{}))
      throw Error(ErrCode::Type, "first argument must be callable or None");
    Value d = in.call(in.builtin("dict"), rest, Span{});
    d.as<DictObj>()->defaulted = true;
    d.as<DictObj>()->default_factory = factory;
    return d;
  });
  // Counter(iterable_or_mapping=None, **kwds): a dict of counts (lang/value.hpp DictObj).
  collections.fn("Counter", [](InterpreterImpl& in, CallArgs& a) {
    auto keywords = std::move(a.kw);
    a.kw.clear();
    ArgReader r("Counter", a, {"iterable"});
    auto d = std::make_shared<DictObj>();
    d->counter = true;
    count_into(in, *d, r.has(0) ? r[0] : Value(), keywords, false);
    return Value::object(d);
  });
  collections.fn("namedtuple", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("namedtuple", a, {"typename", "field_names"}, 2);
    auto type = std::make_shared<NamedTupleType>();
    type->name = r.get_str(0);
    type->fields = field_names(r[1]);
    return namedtuple_class(std::move(type));
  });
  // types._pytree_namedtuple(typename, field_names, num_aux, call=None,
  // methods=None, properties=None, class_attrs=None): a named tuple class
  // whose last num_aux fields are pytree node data (see NamedTupleType), what
  // JAX code makes with a class and register_pytree_node, or a class JAX
  // derives from typing.NamedTuple (jax.scipy.spatial.transform.Rotation).
  // `call(self, *args)` makes its instances callable; `methods` maps names to
  // fn(self, ...) (obj.name is bound to obj; __getitem__, __len__ and operator
  // dunders such as __mul__ serve obj[i], len(obj) and the operators);
  // `properties` maps names to fn(self), run on attribute access; `class_attrs`
  // are attributes of the class itself (its classmethods: Rotation.from_quat).
  types.fn("_pytree_namedtuple", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r(
        "_pytree_namedtuple", a,
        {"typename", "field_names", "num_aux", "call", "methods", "properties", "class_attrs"}, 3);
    auto type = std::make_shared<NamedTupleType>();
    type->name = r.get_str(0);
    type->fields = field_names(r[1]);
    int64_t n = r.get_int(2);
    if (n < 0 || static_cast<size_t>(n) > type->fields.size())
      throw Error(ErrCode::Value,
                  "_pytree_namedtuple() num_aux must be between 0 and the number of fields");
    type->num_aux = static_cast<size_t>(n);
    if (r.has(3)) type->call = r[3];
    auto named = [&](size_t i) {
      std::vector<std::pair<std::string, Value>> out;
      if (!r.has(i) || r[i].is_none()) return out;
      if (!r[i].is_obj(ObjKind::Dict))
        throw Error(ErrCode::Type, "_pytree_namedtuple() methods must be dicts");
      r[i].as<DictObj>()->for_each([&](const Value& k, const Value& v) {
        out.push_back({value_to_str(k, "_pytree_namedtuple() method name"), v});
      });
      return out;
    };
    auto methods = named(4), properties = named(5), class_attrs = named(6);
    if (!methods.empty() || !properties.empty()) {
      // The hook sees an instance's values; it rebuilds the instance (self)
      // from them. The type holds the hook, so the hook holds it weakly.
      std::weak_ptr<const NamedTupleType> weak = type;
      type->attr = [weak, methods, properties](InterpreterImpl& in, const ValueList& values,
                                               const std::string& attr, Value& out) {
        auto self = [&] { return make_namedtuple(weak.lock(), values); };
        for (const auto& [k, fn] : properties)
          if (k == attr) return out = in.call(fn, {self()}, Span{}), true;
        for (const auto& [k, fn] : methods)
          if (k == attr)
            return out = Value::object(std::make_shared<BoundMethodObj>(self(), fn)), true;
        return false;
      };
    }
    Value cls = namedtuple_class(std::move(type));
    cls.as<BuiltinObj>()->attrs = std::move(class_attrs);
    return cls;
  });
}

std::shared_ptr<const NamedTupleType> namedtuple_parts(const Value& v, const ValueList** values) {
  auto* t = v.is_obj(ObjKind::Opaque) ? dynamic_cast<NamedTupleObj*>(v.as<OpaqueObj>()) : nullptr;
  if (!t) return nullptr;
  if (values) *values = t->type->num_aux ? &t->children : &t->values;
  return t->type;
}

ValueList namedtuple_aux(const Value& v) {
  const ValueList* children = nullptr;
  auto type = namedtuple_parts(v, &children);
  if (!type || !type->num_aux) return {};
  const ValueList& all = dynamic_cast<NamedTupleObj*>(v.as<OpaqueObj>())->values;
  return ValueList(all.end() - static_cast<std::ptrdiff_t>(type->num_aux), all.end());
}

Value make_namedtuple(std::shared_ptr<const NamedTupleType> type, ValueList values) {
  if (type->normalize) type->normalize(values);
  auto obj = std::make_shared<NamedTupleObj>();
  if (type->num_aux)
    obj->children.assign(values.begin(),
                         values.begin() + static_cast<std::ptrdiff_t>(type->num_children()));
  obj->type = std::move(type);
  obj->values = std::move(values);
  return Value::object(obj);
}

} // namespace pxl
