#include "stdlib/pytree.hpp"

#include <algorithm>

#include "lang/args.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/prng_key.hpp"

namespace pxl {

size_t TreeDef::num_leaves() const {
  if (kind == Kind::Leaf) return 1;
  size_t n = 0;
  for (const auto& c : children) n += c.num_leaves();
  return n;
}

bool TreeDef::operator==(const TreeDef& o) const {
  if (kind != o.kind || children.size() != o.children.size() || keys.size() != o.keys.size() ||
      nt_type != o.nt_type || ordered != o.ordered || defaulted != o.defaulted ||
      (kind == Kind::Partial && !values_equal(fn, o.fn)) ||
      (defaulted && !values_equal(default_factory, o.default_factory)))
    return false;
  for (size_t i = 0; i < keys.size(); ++i)
    if (!values_equal(keys[i], o.keys[i])) return false;
  for (size_t i = 0; i < children.size(); ++i)
    if (!(children[i] == o.children[i])) return false;
  return true;
}

std::string TreeDef::repr() const {
  std::function<std::string(const TreeDef&)> rec = [&](const TreeDef& d) -> std::string {
    switch (d.kind) {
    case Kind::Leaf:
    case Kind::Key:
      return "*";
    case Kind::None:
      return "None";
    case Kind::Tuple:
    case Kind::List: {
      std::string s = d.kind == Kind::Tuple ? "(" : "[";
      for (size_t i = 0; i < d.children.size(); ++i) s += (i ? ", " : "") + rec(d.children[i]);
      if (d.kind == Kind::Tuple && d.children.size() == 1) s += ",";
      return s + (d.kind == Kind::Tuple ? ")" : "]");
    }
    case Kind::Dict: {
      if (d.ordered || d.defaulted) { // JAX's CustomNode(OrderedDict[keys], [...])
        std::string keys;
        for (size_t i = 0; i < d.keys.size(); ++i) keys += (i ? ", " : "") + pxl::repr(d.keys[i]);
        keys = "(" + keys + (d.keys.size() == 1 ? ",)" : ")");
        std::string s = d.ordered ? "CustomNode(OrderedDict[" + keys + "], ["
                                  : "CustomNode(defaultdict[(" + factory_repr(d.default_factory) +
                                        ", " + keys + ")], [";
        for (size_t i = 0; i < d.children.size(); ++i) s += (i ? ", " : "") + rec(d.children[i]);
        return s + "])";
      }
      std::string s = "{";
      for (size_t i = 0; i < d.children.size(); ++i)
        s += (i ? ", " : "") + pxl::repr(d.keys[i]) + ": " + rec(d.children[i]);
      return s + "}";
    }
    case Kind::Partial:
      return "CustomNode(Partial[" + pxl::repr(d.fn) + "], [" + rec(d.children[0]) + ", " +
             rec(d.children[1]) + "])";
    case Kind::NamedTuple: {
      // A registered node shows its aux data (JAX's repr of what flatten returned).
      std::string s = d.nt_type->num_aux
                          ? "CustomNode(" + d.nt_type->name + "[" +
                                pxl::repr(d.keys.size() == 1 ? d.keys[0] : make_tuple(d.keys)) +
                                "], ["
                          : "CustomNode(namedtuple[" + d.nt_type->name + "], [";
      for (size_t i = 0; i < d.children.size(); ++i) s += (i ? ", " : "") + rec(d.children[i]);
      return s + "])";
    }
    }
    return "?";
  };
  return "PyTreeDef(" + rec(*this) + ")";
}

// A jax.tree_util.Partial's children: its positional arguments as a tuple and
// its keywords as a dict (JAX's flatten of Partial).
static ValueList partial_children(const PartialObj& p) {
  auto kw = std::make_shared<DictObj>();
  for (const auto& [k, x] : p.bound.kw) kw->set(make_str(k), x);
  return {make_tuple(p.bound.pos), Value::object(kw)};
}

static TreeDef flatten_rec(InterpreterImpl& in, const Value& v, ValueList& leaves,
                           const Value* is_leaf, int depth) {
  if (depth > 500) throw Error(ErrCode::Value, "pytree nested too deeply");
  TreeDef d;
  if (is_leaf && in.truthy(in.call(*is_leaf, {v}, Span{}), Span{})) {
    leaves.push_back(v);
  } else if (v.is_none()) {
    d.kind = TreeDef::Kind::None;
  } else if (const KeyArrayObj* k = as_key_array(v)) {
    d.kind = TreeDef::Kind::Key;
    d.keys.push_back(make_str(k->tag)); // the implementation, to rebuild the keys
    d.children.emplace_back();
    leaves.push_back(k->data);
  } else if (v.is_obj(ObjKind::Partial) && v.as<PartialObj>()->pytree) {
    d.kind = TreeDef::Kind::Partial;
    d.fn = v.as<PartialObj>()->fn;
    for (const Value& part : partial_children(*v.as<PartialObj>()))
      d.children.push_back(flatten_rec(in, part, leaves, is_leaf, depth + 1));
  } else if (v.is_obj(ObjKind::Tuple) || v.is_obj(ObjKind::List)) {
    d.kind = v.is_obj(ObjKind::Tuple) ? TreeDef::Kind::Tuple : TreeDef::Kind::List;
    for (const Value& x : *sequence_items(v))
      d.children.push_back(flatten_rec(in, x, leaves, is_leaf, depth + 1));
  } else if (const ValueList* fields = nullptr; (d.nt_type = namedtuple_parts(v, &fields))) {
    d.kind = TreeDef::Kind::NamedTuple;
    d.keys = namedtuple_aux(v); // a registered node's static data
    for (const Value& x : *fields)
      d.children.push_back(flatten_rec(in, x, leaves, is_leaf, depth + 1));
  } else if (v.is_obj(ObjKind::Dict) &&
             !v.as<DictObj>()->counter) { // (a Counter: a leaf, as in JAX)
    d.kind = TreeDef::Kind::Dict;
    d.ordered = v.as<DictObj>()->ordered;
    d.defaulted = v.as<DictObj>()->defaulted;
    d.default_factory = v.as<DictObj>()->default_factory;
    v.as<DictObj>()->for_each([&](const Value& k, const Value&) { d.keys.push_back(k); });
    if (!d.ordered) { // an OrderedDict's keep their order
      try {
        std::stable_sort(d.keys.begin(), d.keys.end(), [&](const Value& a, const Value& b) {
          return in.less_than(a, b, Span{});
        });
      } catch (const Error&) { // keys that do not compare (JAX's message)
        throw Error(ErrCode::Value,
                    "Comparator raised exception while sorting pytree dictionary keys.");
      }
    }
    for (const Value& k : d.keys)
      d.children.push_back(flatten_rec(in, *v.as<DictObj>()->find(k), leaves, is_leaf, depth + 1));
  } else {
    leaves.push_back(v);
  }
  return d;
}

TreeDef tree_flatten(InterpreterImpl& in, const Value& tree, ValueList& leaves,
                     const Value* is_leaf) {
  if (is_leaf && is_leaf->is_none()) is_leaf = nullptr;
  return flatten_rec(in, tree, leaves, is_leaf, 0);
}

// JAX's PyTreeDef.flatten_up_to errors (ValueError), naming the offending subtree.
static void flatten_up_to_rec(InterpreterImpl& in, const TreeDef& d, const Value& v,
                              ValueList& out) {
  auto fail = [](const std::string& msg) { return Error(ErrCode::Value, msg); };
  switch (d.kind) {
  case TreeDef::Kind::Leaf:
    out.push_back(v);
    return;
  case TreeDef::Kind::Key:
    if (!as_key_array(v)) throw fail("Expected a key array, got " + repr(v) + ".");
    out.push_back(as_key_array(v)->data);
    return;
  case TreeDef::Kind::None:
    if (!v.is_none())
      throw fail("Expected None, got " + repr(v) +
                 ".\n\nIn previous releases of JAX, flatten-up-to used to consider None to be a "
                 "tree-prefix of "
                 "non-None values. To obtain the previous behavior, you can usually write:\n  "
                 "jax.tree.map(lambda "
                 "x, y: None if x is None else f(x, y), a, b, is_leaf=lambda x: x is None)");
    return;
  case TreeDef::Kind::Tuple:
  case TreeDef::Kind::List: {
    bool tuple = d.kind == TreeDef::Kind::Tuple;
    bool ok = (tuple ? v.is_obj(ObjKind::Tuple) : v.is_obj(ObjKind::List)) && !namedtuple_parts(v);
    if (!ok)
      throw fail(std::string("Expected ") + (tuple ? "tuple" : "list") + ", got " + repr(v) + ".");
    const ValueList* items = sequence_items(v);
    if (items->size() != d.children.size())
      throw fail(std::string(tuple ? "Tuple" : "List") + " arity mismatch: " +
                 std::to_string(items->size()) + " != " + std::to_string(d.children.size()) + "; " +
                 (tuple ? "tuple: " : "list: ") + repr(v) + ".");
    for (size_t i = 0; i < items->size(); ++i)
      flatten_up_to_rec(in, d.children[i], (*items)[i], out);
    return;
  }
  case TreeDef::Kind::Partial: {
    if (!v.is_obj(ObjKind::Partial) || !v.as<PartialObj>()->pytree)
      throw fail("Expected Partial, got " + repr(v) + ".");
    const PartialObj& p = *v.as<PartialObj>();
    if (!values_equal(p.fn, d.fn))
      throw fail("Mismatch custom node data: " + repr(d.fn) + " != " + repr(p.fn) +
                 "; value: " + repr(v) + ".");
    ValueList parts = partial_children(p);
    flatten_up_to_rec(in, d.children[0], parts[0], out);
    flatten_up_to_rec(in, d.children[1], parts[1], out);
    return;
  }
  case TreeDef::Kind::NamedTuple: {
    const ValueList* items = nullptr;
    auto type = namedtuple_parts(v, &items);
    if (!type) throw fail("Expected named tuple, got " + repr(v) + ".");
    if (type != d.nt_type)
      throw fail("Named tuple type mismatch: expected type: <class '__main__." + d.nt_type->name +
                 "'>, tuple: " + repr(v) + ".");
    if (!d.keys.empty()) { // a registered node: its data must agree too
      ValueList aux = namedtuple_aux(v);
      Value want = d.keys.size() == 1 ? d.keys[0] : make_tuple(d.keys);
      Value got = aux.size() == 1 ? aux[0] : make_tuple(aux);
      if (!values_equal(want, got))
        throw fail("Mismatch custom node data: " + repr(want) + " != " + repr(got) +
                   "; value: " + repr(v) + ".");
    }
    for (size_t i = 0; i < items->size(); ++i)
      flatten_up_to_rec(in, d.children[i], (*items)[i], out);
    return;
  }
  case TreeDef::Kind::Dict: {
    if (!v.is_obj(ObjKind::Dict)) throw fail("Expected dict, got " + repr(v) + ".");
    ValueList keys;
    v.as<DictObj>()->for_each([&](const Value& k, const Value&) { keys.push_back(k); });
    if (!d.ordered)
      std::stable_sort(keys.begin(), keys.end(),
                       [&](const Value& a, const Value& b) { return in.less_than(a, b, Span{}); });
    bool same = keys.size() == d.keys.size();
    for (size_t i = 0; same && i < keys.size(); ++i) same = values_equal(keys[i], d.keys[i]);
    if (!same)
      throw fail("Dict key mismatch; expected keys: " + repr(make_list(d.keys)) +
                 "; present keys: " + repr(make_list(keys)) + ".");
    for (size_t i = 0; i < d.keys.size(); ++i)
      flatten_up_to_rec(in, d.children[i], *v.as<DictObj>()->find(d.keys[i]), out);
    return;
  }
  }
}

void flatten_up_to(InterpreterImpl& in, const TreeDef& def, const Value& tree, ValueList& out) {
  flatten_up_to_rec(in, def, tree, out);
}

static Value unflatten_rec(const TreeDef& d, const ValueList& leaves, size_t& pos) {
  switch (d.kind) {
  case TreeDef::Kind::Leaf:
    if (pos >= leaves.size()) throw Error(ErrCode::Value, "too few leaves for the tree structure");
    return leaves[pos++];
  case TreeDef::Kind::Key: { // the key data back as keys (other leaves, e.g. tree_map's, as they
                             // are)
    const Value& leaf = leaves.at(pos++);
    std::string tag = d.keys.empty() ? std::string("fry") : pxl::str(d.keys[0]);
    return is_key_data(leaf) ? make_key_array(leaf, tag) : leaf;
  }
  case TreeDef::Kind::None:
    return Value();
  case TreeDef::Kind::Tuple:
  case TreeDef::Kind::List: {
    ValueList items;
    for (const auto& c : d.children) items.push_back(unflatten_rec(c, leaves, pos));
    return d.kind == TreeDef::Kind::Tuple ? make_tuple(std::move(items))
                                          : make_list(std::move(items));
  }
  case TreeDef::Kind::Partial: {
    auto p = std::make_shared<PartialObj>();
    p->pytree = true;
    p->fn = d.fn;
    Value args = unflatten_rec(d.children[0], leaves, pos);
    Value kw = unflatten_rec(d.children[1], leaves, pos);
    p->bound.pos = *sequence_items(args);
    kw.as<DictObj>()->for_each(
        [&](const Value& k, const Value& x) { p->bound.kw.emplace_back(str(k), x); });
    return Value::object(p);
  }
  case TreeDef::Kind::NamedTuple: {
    ValueList items;
    for (const auto& c : d.children) items.push_back(unflatten_rec(c, leaves, pos));
    items.insert(items.end(), d.keys.begin(), d.keys.end()); // a registered node's aux fields
    return make_namedtuple(d.nt_type, std::move(items));
  }
  case TreeDef::Kind::Dict: {
    auto out = std::make_shared<DictObj>();
    out->ordered = d.ordered;
    out->defaulted = d.defaulted;
    out->default_factory = d.default_factory;
    for (size_t i = 0; i < d.children.size(); ++i)
      out->set(d.keys[i], unflatten_rec(d.children[i], leaves, pos));
    return Value::object(out);
  }
  }
  return Value();
}

Value tree_unflatten(const TreeDef& def, const ValueList& leaves) {
  size_t n = def.num_leaves();
  if (leaves.size() < n)
    throw Error(ErrCode::Value, "Too few leaves for PyTreeDef; expected " + std::to_string(n) +
                                    ", got " + std::to_string(leaves.size()));
  if (leaves.size() > n)
    throw Error(ErrCode::Value,
                "Too many leaves for PyTreeDef; expected " + std::to_string(n) + ".");
  size_t pos = 0;
  Value v = unflatten_rec(def, leaves, pos);
  return v;
}

bool treedef_attr(const TreeDef& def, const std::string& name,
                  Value& out); // stdlib/pytree_more.cpp
std::optional<std::string> pytree_prefix_error(InterpreterImpl& in, const TreeDef& prefix,
                                               const Value& full,
                                               const std::string& name); // stdlib/pytree_errors.cpp
void add_tree_more_functions(Value& tree_util, Value& tree);             // stdlib/pytree_more.cpp

namespace {

struct TreeDefObj : OpaqueObj {
  explicit TreeDefObj(TreeDef d) : def(std::move(d)) {}
  TreeDef def;
  std::string type_name() const override { return "PyTreeDef"; }
  std::string repr() const override { return def.repr(); }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "num_leaves")
      return out = Value::integer(static_cast<int64_t>(def.num_leaves())), true;
    return treedef_attr(def, name, out); // num_nodes, children(), unflatten(), ...
  }
  bool equals(const OpaqueObj& o) const override {
    auto* t = dynamic_cast<const TreeDefObj*>(&o);
    return t && t->def == def;
  }
};

Value tree_map(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("tree_map", a, {"f", "tree", "*rest", "is_leaf"}, 2);
  ValueList leaves;
  TreeDef def = tree_flatten(in, r[1], leaves, r.has(3) ? &r[3] : nullptr);
  return map_leaves(in, "tree_map", r[0], def, leaves, r.rest(), nullptr);
}

} // namespace

Value map_leaves(InterpreterImpl& in, const char* fn, const Value& f, const TreeDef& def,
                 const ValueList& leaves, const ValueList& rest, const ValueList* first) {
  std::vector<ValueList> others;
  for (const Value& t : rest) {
    ValueList ls;
    try {
      flatten_up_to(in, def, t, ls);
    } catch (Error& e) { // JAX's tree_map reports where the structures part
      if (auto msg = pytree_prefix_error(in, def, t, std::string(fn) + " tree"))
        throw Error(ErrCode::Value, *msg);
      throw;
    }
    others.push_back(std::move(ls));
  }
  ValueList out;
  for (size_t i = 0; i < leaves.size(); ++i) {
    ValueList args;
    if (first) args.push_back((*first)[i]);
    args.push_back(leaves[i]);
    for (auto& o : others) args.push_back(o[i]);
    out.push_back(in.call(f, std::move(args), Span{}));
  }
  return tree_unflatten(def, out);
}

Value tree_structure_value(TreeDef def) {
  return Value::object(std::make_shared<TreeDefObj>(std::move(def)));
}

const TreeDef* treedef_of(const Value& v) {
  auto* d = v.is_obj(ObjKind::Opaque) ? dynamic_cast<TreeDefObj*>(v.as<OpaqueObj>()) : nullptr;
  return d ? &d->def : nullptr;
}

void add_tree_pair(Value& tree_util, Value& tree,
                   std::initializer_list<std::pair<const char*, NativeFn>> fns) {
  for (const auto& [name, fn] : fns) {
    std::string long_name = std::string("tree_") + name;
    tree_util.as<ModuleObj>()->env->vars[long_name] = make_builtin(long_name, fn);
    tree.as<ModuleObj>()->env->vars[name] = make_builtin(name, fn);
  }
}

void add_tree_functions(InterpreterImpl& in, Value& tree_util, Value& tree, Value& jax) {
  (void)in;
  auto leaves_fn = [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("tree_leaves", a, {"tree", "is_leaf"}, 1);
    ValueList leaves;
    tree_flatten(in, r[0], leaves, r.has(1) ? &r[1] : nullptr);
    return make_list(std::move(leaves));
  };
  auto structure_fn = [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("tree_structure", a, {"tree", "is_leaf"}, 1);
    ValueList leaves;
    return Value::object(
        std::make_shared<TreeDefObj>(tree_flatten(in, r[0], leaves, r.has(1) ? &r[1] : nullptr)));
  };
  auto flatten_fn = [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("tree_flatten", a, {"tree", "is_leaf"}, 1);
    ValueList leaves;
    TreeDef d = tree_flatten(in, r[0], leaves, r.has(1) ? &r[1] : nullptr);
    return make_tuple(
        {make_list(std::move(leaves)), Value::object(std::make_shared<TreeDefObj>(d))});
  };
  auto unflatten_fn = [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("tree_unflatten", a, {"treedef", "leaves"}, 2);
    auto* d =
        r[0].is_obj(ObjKind::Opaque) ? dynamic_cast<TreeDefObj*>(r[0].as<OpaqueObj>()) : nullptr;
    if (!d) throw Error(ErrCode::Type, "tree_unflatten() expects a PyTreeDef");
    return tree_unflatten(d->def, in.iterate(r[1], Span{}));
  };
  add_tree_pair(tree_util, tree,
                {{"map", tree_map},
                 {"leaves", leaves_fn},
                 {"structure", structure_fn},
                 {"flatten", flatten_fn},
                 {"unflatten", unflatten_fn}});
  add_tree_path_functions(tree_util, tree);
  add_tree_more_functions(tree_util, tree);
  jax.as<ModuleObj>()->env->vars["tree_map"] = make_builtin("tree_map", tree_map);
}

} // namespace pxl
