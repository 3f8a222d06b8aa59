// jax.tree_util's key paths (tree_flatten_with_path, tree_map_with_path,
// keystr, ...) and the reductions over leaves (tree_reduce, tree_all). A path
// is a tuple of DictKey(key=...) / SequenceKey(idx=...) objects, printed and
// joined by keystr as JAX does: "['a'][0]".
#include <functional>
#include <set>

#include "lang/args.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/pytree.hpp"

namespace pxl {

Value make_functools_module(); // stdlib/mod_host.cpp

namespace {

// A key path entry: DictKey(key=...), SequenceKey(idx=...), GetAttrKey(name=...)
// or FlattenedIndexKey(key=...), as JAX's key classes print and compare.
struct KeyEntryObj : OpaqueObj {
  enum class Kind { Dict, Sequence, GetAttr, FlattenedIndex } kind;
  Value key; // the dict key, the sequence index, the attribute name or the flat index
  KeyEntryObj(Kind k, Value v) : kind(k), key(std::move(v)) {}
  std::string type_name() const override {
    switch (kind) {
    case Kind::Dict:
      return "DictKey";
    case Kind::Sequence:
      return "SequenceKey";
    case Kind::GetAttr:
      return "GetAttrKey";
    case Kind::FlattenedIndex:
      return "FlattenedIndexKey";
    }
    return "?";
  }
  const char* field() const {
    return kind == Kind::Sequence ? "idx" : kind == Kind::GetAttr ? "name" : "key";
  }
  std::string repr() const override {
    return type_name() + "(" + field() + "=" + pxl::repr(key) + ")";
  }
  std::string str() const override { return str(false); }
  // keystr's form: ['a'], [0], .name, [<flat index 3>]; with simple=True just a, 0, name, 3.
  std::string str(bool simple) const {
    if (simple) return pxl::str(key);
    switch (kind) {
    case Kind::GetAttr:
      return "." + pxl::str(key);
    case Kind::FlattenedIndex:
      return "[<flat index " + pxl::str(key) + ">]";
    default:
      return "[" + pxl::repr(key) + "]";
    }
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name != field()) return false;
    out = key;
    return true;
  }
  std::vector<std::string> attr_names() const override { return {field()}; }
  bool equals(const OpaqueObj& o) const override {
    auto* k = dynamic_cast<const KeyEntryObj*>(&o);
    return k && k->kind == kind && values_equal(k->key, key);
  }
};

// The key path of every leaf of `d`, in flattening order.
void paths_rec(const TreeDef& d, ValueList& cur, ValueList& out) {
  switch (d.kind) {
  case TreeDef::Kind::Leaf:
    out.push_back(make_tuple(cur));
    return;
  case TreeDef::Kind::None:
    return;
  case TreeDef::Kind::Key: // a key array is one leaf to JAX
    paths_rec(d.children[0], cur, out);
    return;
  default:
    for (size_t i = 0; i < d.children.size(); ++i) {
      // JAX's keys: a dict's DictKey, a named tuple's GetAttrKey (its field), a
      // registered node's FlattenedIndexKey (it has no key function), else SequenceKey.
      if (d.kind == TreeDef::Kind::Dict)
        cur.push_back(
            Value::object(std::make_shared<KeyEntryObj>(KeyEntryObj::Kind::Dict, d.keys[i])));
      else if ((d.kind == TreeDef::Kind::NamedTuple && d.nt_type->num_aux) ||
               d.kind == TreeDef::Kind::Partial)
        cur.push_back(Value::object(std::make_shared<KeyEntryObj>(
            KeyEntryObj::Kind::FlattenedIndex, Value::integer(static_cast<int64_t>(i)))));
      else if (d.kind == TreeDef::Kind::NamedTuple)
        cur.push_back(Value::object(std::make_shared<KeyEntryObj>(KeyEntryObj::Kind::GetAttr,
                                                                  make_str(d.nt_type->fields[i]))));
      else
        cur.push_back(Value::object(std::make_shared<KeyEntryObj>(
            KeyEntryObj::Kind::Sequence, Value::integer(static_cast<int64_t>(i)))));
      paths_rec(d.children[i], cur, out);
      cur.pop_back();
    }
  }
}

// Leaves and their paths; the treedef is returned too.
TreeDef flatten_with_paths(InterpreterImpl& in, const Value& tree, ValueList& leaves,
                           ValueList& paths, const Value* is_leaf) {
  TreeDef d = tree_flatten(in, tree, leaves, is_leaf);
  ValueList cur;
  paths_rec(d, cur, paths);
  return d;
}

// As flatten_with_paths with is_leaf_takes_path=True: `is_leaf(key path, node)`
// decides. The nodes are visited from the root, each taken apart one level (its
// children's keys are those paths_rec gives); the nodes chosen as leaves are
// then leaves of an ordinary flatten (they are told apart by identity).
TreeDef flatten_with_paths_taking(InterpreterImpl& in, const Value& tree, ValueList& leaves,
                                  ValueList& paths, const Value& is_leaf) {
  std::set<const Object*> chosen;
  std::function<void(const Value&, const ValueList&)> visit = [&](const Value& node,
                                                                  const ValueList& path) {
    if (in.truthy(in.call(is_leaf, ValueList{make_tuple(path), node}, Span{}), Span{})) {
      if (node.tag == Value::Tag::Obj) chosen.insert(node.obj.get());
      return;
    }
    const Object* self = node.tag == Value::Tag::Obj ? node.obj.get() : nullptr;
    Value one_level = make_builtin("is_leaf", [self](InterpreterImpl&, CallArgs& c) {
      return Value::boolean(!(c.pos[0].tag == Value::Tag::Obj && c.pos[0].obj.get() == self));
    });
    ValueList kids, kid_paths, cur;
    TreeDef d = tree_flatten(in, node, kids, self ? &one_level : nullptr);
    if (d.kind == TreeDef::Kind::Leaf || !self) return;
    paths_rec(d, cur, kid_paths);
    for (size_t i = 0; i < kids.size() && i < kid_paths.size(); ++i) {
      ValueList p = path;
      for (const Value& k : *sequence_items(kid_paths[i])) p.push_back(k);
      visit(kids[i], p);
    }
  };
  visit(tree, {});
  Value take = make_builtin("is_leaf", [chosen](InterpreterImpl&, CallArgs& c) {
    return Value::boolean(c.pos[0].tag == Value::Tag::Obj && chosen.count(c.pos[0].obj.get()) > 0);
  });
  return flatten_with_paths(in, tree, leaves, paths, &take);
}

// flatten_with_paths with the is_leaf and is_leaf_takes_path arguments at
// positions `is_leaf_at` and `is_leaf_at + 1` of `r`.
TreeDef flatten_with_paths_args(InterpreterImpl& in, const Value& tree, ValueList& leaves,
                                ValueList& paths, ArgReader& r, size_t is_leaf_at) {
  const Value* is_leaf = r.has(is_leaf_at) && !r[is_leaf_at].is_none() ? &r[is_leaf_at] : nullptr;
  if (is_leaf && r.get_bool(is_leaf_at + 1, false))
    return flatten_with_paths_taking(in, tree, leaves, paths, *is_leaf);
  return flatten_with_paths(in, tree, leaves, paths, is_leaf);
}

} // namespace

std::vector<std::string> leaf_keystrs(const TreeDef& d) {
  ValueList cur, paths;
  paths_rec(d, cur, paths);
  std::vector<std::string> out;
  for (const Value& p : paths) {
    std::string s;
    for (const Value& k : *sequence_items(p)) s += k.as<KeyEntryObj>()->str(false);
    out.push_back(s);
  }
  return out;
}

namespace {

ValueList path_leaf_pairs(const ValueList& leaves, const ValueList& paths) {
  ValueList pairs;
  for (size_t i = 0; i < leaves.size(); ++i) pairs.push_back(make_tuple({paths[i], leaves[i]}));
  return pairs;
}

Value keystr(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("keystr", a, {"keys", "simple", "separator"}, 1);
  bool simple = r.get_bool(1, false);
  std::string sep = r.has(2) && !r[2].is_none() ? r.get_str(2) : "";
  std::string s;
  bool first = true;
  for (const Value& k : in.iterate(r[0], Span{})) {
    auto* e = k.is_obj(ObjKind::Opaque) ? dynamic_cast<KeyEntryObj*>(k.as<OpaqueObj>()) : nullptr;
    if (!e)
      throw Error(ErrCode::Type, "keystr() expects a key path (a tuple of DictKey, SequenceKey, "
                                 "GetAttrKey or FlattenedIndexKey), got a " +
                                     type_name(k));
    s += (first ? "" : sep) + e->str(simple);
    first = false;
  }
  return make_str(s);
}

Value leaves_reduce(InterpreterImpl& in, CallArgs& a, bool all) {
  if (all) {
    ArgReader r("tree_all", a, {"tree", "is_leaf"}, 1);
    ValueList leaves;
    tree_flatten(in, r[0], leaves, r.has(1) ? &r[1] : nullptr);
    for (const Value& v : leaves)
      if (!in.truthy(v, Span{})) return Value::boolean(false);
    return Value::boolean(true);
  }
  ArgReader r("tree_reduce", a, {"function", "tree", "initializer", "is_leaf"}, 2);
  ValueList leaves;
  tree_flatten(in, r[1], leaves, r.has(3) ? &r[3] : nullptr);
  size_t i = 0;
  Value acc;
  if (r.has(2))
    acc = r[2];
  else if (leaves.empty())
    throw Error(ErrCode::Type, "reduce() of empty iterable with no initial value");
  else
    acc = leaves[i++];
  for (; i < leaves.size(); ++i) acc = in.call(r[0], {acc, leaves[i]}, Span{});
  return acc;
}

} // namespace

void add_tree_path_functions(Value& tree_util, Value& tree) {
  auto flatten_fn = [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("tree_flatten_with_path", a, {"tree", "is_leaf", "is_leaf_takes_path"}, 1);
    ValueList leaves, paths;
    TreeDef d = flatten_with_paths_args(in, r[0], leaves, paths, r, 1);
    return make_tuple({make_list(path_leaf_pairs(leaves, paths)), tree_structure_value(d)});
  };
  auto leaves_fn = [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("tree_leaves_with_path", a, {"tree", "is_leaf", "is_leaf_takes_path"}, 1);
    ValueList leaves, paths;
    flatten_with_paths_args(in, r[0], leaves, paths, r, 1);
    return make_list(path_leaf_pairs(leaves, paths));
  };
  auto map_fn = [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("tree_map_with_path", a, {"f", "tree", "*rest", "is_leaf", "is_leaf_takes_path"},
                2);
    ValueList leaves, paths;
    TreeDef def = flatten_with_paths_args(in, r[1], leaves, paths, r, 3);
    return map_leaves(in, "tree_map_with_path", r[0], def, leaves, r.rest(), &paths);
  };
  auto reduce_fn = [](InterpreterImpl& in, CallArgs& a) { return leaves_reduce(in, a, false); };
  auto all_fn = [](InterpreterImpl& in, CallArgs& a) { return leaves_reduce(in, a, true); };
  add_tree_pair(tree_util, tree,
                {{"flatten_with_path", flatten_fn},
                 {"leaves_with_path", leaves_fn},
                 {"map_with_path", map_fn},
                 {"reduce", reduce_fn},
                 {"all", all_fn}});
  tree_util.as<ModuleObj>()->env->vars["keystr"] = make_builtin("keystr", keystr);
  // The key classes, to build paths by hand: DictKey('a') == DictKey(key='a').
  static const std::pair<const char*, KeyEntryObj::Kind> key_classes[] = {
      {"DictKey", KeyEntryObj::Kind::Dict},
      {"SequenceKey", KeyEntryObj::Kind::Sequence},
      {"GetAttrKey", KeyEntryObj::Kind::GetAttr},
      {"FlattenedIndexKey", KeyEntryObj::Kind::FlattenedIndex}};
  for (auto [name, kind] : key_classes) {
    KeyEntryObj::Kind k = kind;
    std::string cls = name;
    tree_util.as<ModuleObj>()->env->vars[name] =
        make_builtin(cls, [k, cls](InterpreterImpl&, CallArgs& a) {
          KeyEntryObj probe(k, Value());
          ArgReader r(cls, a, {probe.field()}, 1);
          if (k == KeyEntryObj::Kind::Sequence || k == KeyEntryObj::Kind::FlattenedIndex)
            (void)value_to_int(r[0], cls + "() " + probe.field());
          if (k == KeyEntryObj::Kind::GetAttr) (void)value_to_str(r[0], cls + "() name");
          return Value::object(std::make_shared<KeyEntryObj>(k, r[0]));
        });
  }
  // tree_util.Partial: functools.partial as a pytree node over its arguments.
  tree_util.as<ModuleObj>()->env->vars["Partial"] =
      make_builtin("Partial", [](InterpreterImpl&, CallArgs& a) {
        if (a.pos.empty())
          throw Error(ErrCode::Arguments,
                      "Partial.__new__() missing 1 required positional argument: 'func'");
        if (is_plain_data(a.pos[0]))
          throw Error(ErrCode::Type, "the first argument must be callable");
        auto p = std::make_shared<PartialObj>();
        p->pytree = true;
        if (a.pos[0].is_obj(ObjKind::Partial) && a.pos[0].as<PartialObj>()->pytree) {
          *p = *a.pos[0].as<PartialObj>(); // JAX flattens a Partial of a Partial
        } else {
          p->fn = a.pos[0];
        }
        p->bound.pos.insert(p->bound.pos.end(), a.pos.begin() + 1, a.pos.end());
        for (const auto& kv : a.kw) p->bound.kw.push_back(kv);
        return Value::object(p);
      });
}

} // namespace pxl
