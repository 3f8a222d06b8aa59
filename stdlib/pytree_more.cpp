// jax.tree_util's functions on tree structures (treedef_children,
// treedef_tuple, tree_transpose, tree_broadcast, flatten_one_level, ...) and
// the PyTreeDef methods (num_nodes, children(), unflatten(), flatten_up_to()).
#include "lang/args.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/namedtuple.hpp"
#include "stdlib/pytree.hpp"

namespace pxl {

const TreeDef* treedef_of(const Value& v); // stdlib/pytree.cpp

namespace {

const TreeDef& need_treedef(const Value& v, const char* fn) {
  const TreeDef* d = treedef_of(v);
  if (!d)
    throw Error(ErrCode::Type, std::string(fn) + "() expects a PyTreeDef, got a " + type_name(v));
  return *d;
}

size_t num_nodes(const TreeDef& d) {
  size_t n = 1;
  for (const auto& c : d.children) n += num_nodes(c);
  return n;
}

// A treedef's children; a leaf or None has none.
ValueList children(const TreeDef& d) {
  ValueList out;
  for (const auto& c : d.children) out.push_back(tree_structure_value(c));
  return out;
}

Value unflatten_checked(const TreeDef& d, const ValueList& leaves) {
  return tree_unflatten(d, leaves);
}

Value treedef_children_fn(InterpreterImpl&, CallArgs& a) {
  ArgReader r("treedef_children", a, {"treedef"}, 1);
  return make_list(children(need_treedef(r[0], "treedef_children")));
}

Value treedef_is_leaf_fn(InterpreterImpl&, CallArgs& a) {
  ArgReader r("treedef_is_leaf", a, {"treedef"}, 1);
  return Value::boolean(num_nodes(need_treedef(r[0], "treedef_is_leaf")) == 1);
}

Value treedef_tuple_fn(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("treedef_tuple", a, {"treedefs"}, 1);
  TreeDef d;
  d.kind = TreeDef::Kind::Tuple;
  for (const Value& t : in.iterate(r[0], Span{}))
    d.children.push_back(need_treedef(t, "treedef_tuple"));
  return tree_structure_value(std::move(d));
}

bool is_leaf_value(InterpreterImpl& in, const Value& v, const Value* is_leaf) {
  ValueList leaves;
  return tree_flatten(in, v, leaves, is_leaf).kind == TreeDef::Kind::Leaf;
}

Value all_leaves_fn(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("all_leaves", a, {"iterable", "is_leaf"}, 1);
  const Value* is_leaf = r.has(1) && !r[1].is_none() ? &r[1] : nullptr;
  for (const Value& x : in.iterate(r[0], Span{}))
    if (!is_leaf_value(in, x, is_leaf)) return Value::boolean(false);
  return Value::boolean(true);
}

// (children, node data): a dict's values and sorted keys; a tuple's or list's
// items and None; None's () and None; a Partial's (args, keywords) and function.
Value flatten_one_level_fn(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("flatten_one_level", a, {"tree"}, 1);
  const Value& t = r[0];
  if (t.is_none()) return make_tuple({make_tuple({}), Value()});
  const ValueList* fields = nullptr;
  if (auto nt = namedtuple_parts(t, &fields))
    return make_tuple({make_list(*fields), make_type(nt->name)});
  if (sequence_items(t)) return make_tuple({t, Value()});
  if (t.is_obj(ObjKind::Partial) && t.as<PartialObj>()->pytree) { // (args, keywords) and fn
    ValueList leaves, kids;
    TreeDef d = tree_flatten(in, t, leaves, nullptr);
    auto at = leaves.begin();
    for (const TreeDef& c : d.children) {
      auto end = at + static_cast<std::ptrdiff_t>(c.num_leaves());
      kids.push_back(tree_unflatten(c, ValueList(at, end)));
      at = end;
    }
    return make_tuple({make_tuple(std::move(kids)), d.fn});
  }
  if (t.is_obj(ObjKind::Dict)) {
    ValueList leaves;
    TreeDef d = tree_flatten(in, t, leaves, nullptr);
    ValueList vals;
    for (const Value& k : d.keys) vals.push_back(*t.as<DictObj>()->find(k));
    return make_tuple({make_tuple(std::move(vals)), make_tuple(d.keys)});
  }
  throw Error(ErrCode::Value, "can't tree-flatten type: <class '" + type_name(t) + "'>");
}

// Every leaf of the prefix tree repeated over the subtree of full_tree it faces.
Value tree_broadcast_fn(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("tree_broadcast", a, {"prefix_tree", "full_tree", "is_leaf"}, 2);
  const Value* is_leaf = r.has(2) && !r[2].is_none() ? &r[2] : nullptr;
  ValueList prefix_leaves, subtrees;
  TreeDef def = tree_flatten(in, r[0], prefix_leaves, is_leaf);
  flatten_up_to(in, def, r[1], subtrees);
  ValueList out;
  for (size_t i = 0; i < subtrees.size(); ++i) {
    ValueList sub_leaves;
    TreeDef sub = tree_flatten(in, subtrees[i], sub_leaves, is_leaf);
    out.push_back(tree_unflatten(sub, ValueList(sub_leaves.size(), prefix_leaves[i])));
  }
  return tree_unflatten(def, out);
}

// `outer` with every leaf replaced by `inner` (JAX's treedef.compose).
TreeDef compose(const TreeDef& outer, const TreeDef& inner) {
  if (outer.kind == TreeDef::Kind::Leaf) return inner;
  TreeDef d = outer;
  for (auto& c : d.children) c = compose(c, inner);
  return d;
}

// An outer tree of inner trees becomes an inner tree of outer trees.
Value tree_transpose_fn(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("tree_transpose", a, {"outer_treedef", "inner_treedef", "pytree_to_transpose"}, 3);
  const TreeDef& outer = need_treedef(r[0], "tree_transpose");
  ValueList inners;
  flatten_up_to(in, outer, r[2], inners);
  TreeDef inner;
  if (r[1].is_none()) {
    if (inners.empty())
      throw Error(ErrCode::Value, "tree_transpose: inner_treedef=None needs a nonempty outer tree");
    ValueList ignored;
    inner = tree_flatten(in, inners[0], ignored);
  } else {
    inner = need_treedef(r[1], "tree_transpose");
  }
  ValueList leaves;
  TreeDef whole = tree_flatten(in, r[2], leaves);
  TreeDef expected = compose(outer, inner);
  if (!(whole == expected))
    throw Error(ErrCode::Type, "Mismatch\n" + whole.repr() + "\n != \n" + expected.repr());
  size_t n_in = inner.num_leaves(), n_out = outer.num_leaves();
  std::vector<ValueList> rows;
  for (const Value& t : inners) {
    ValueList row;
    flatten_up_to(in, inner, t, row);
    rows.push_back(std::move(row));
  }
  ValueList out;
  for (size_t j = 0; j < n_in; ++j) {
    ValueList col;
    for (size_t i = 0; i < n_out; ++i) col.push_back(rows[i][j]);
    out.push_back(tree_unflatten(outer, col));
  }
  return tree_unflatten(inner, out);
}

// JAX's _parallel_reduce: halves reduced recursively, then combined.
Value parallel_reduce(InterpreterImpl& in, const Value& op, const ValueList& xs, size_t lo,
                      size_t hi) {
  if (hi - lo == 1) return xs[lo];
  size_t mid = lo + (hi - lo) / 2;
  Value x = parallel_reduce(in, op, xs, lo, mid);
  Value y = parallel_reduce(in, op, xs, mid, hi);
  return in.call(op, {x, y}, Span{});
}

Value tree_reduce_associative_fn(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("tree_reduce_associative", a, {"operation", "tree", "identity", "is_leaf"}, 2);
  ValueList leaves;
  tree_flatten(in, r[1], leaves, r.has(3) ? &r[3] : nullptr);
  if (leaves.empty()) {
    if (!r.has(2))
      throw Error(ErrCode::Type, "Must specify identity for parallel reduction of empty sequence.");
    return r[2];
  }
  return parallel_reduce(in, r[0], leaves, 0, leaves.size());
}

} // namespace

namespace {

// PyTreeDef.walk: f_leaf on each leaf, f_node(tuple of the children's results,
// node data) on each node after its children; returns the root's result. The
// node data is JAX's: None for tuples, lists and None, a dict's sorted keys (a
// list), an OrderedDict's keys (a tuple), (factory, keys) for a defaultdict, a
// named tuple's class.
Value walk_rec(InterpreterImpl& in, const TreeDef& d, const Value& f_node, const Value& f_leaf,
               const ValueList& leaves, size_t& pos) {
  if (d.kind == TreeDef::Kind::Leaf) {
    if (pos >= leaves.size()) throw Error(ErrCode::Value, "Too few leaves for PyTreeDef");
    return f_leaf.is_none() ? leaves[pos++] : in.call(f_leaf, ValueList{leaves[pos++]}, Span{});
  }
  ValueList kids;
  for (const TreeDef& c : d.children) kids.push_back(walk_rec(in, c, f_node, f_leaf, leaves, pos));
  Value data;
  if (d.kind == TreeDef::Kind::Dict) {
    if (d.defaulted)
      data = make_tuple({d.default_factory, make_tuple(d.keys)});
    else
      data = d.ordered ? make_tuple(d.keys) : make_list(d.keys);
  } else if (d.kind == TreeDef::Kind::NamedTuple && d.nt_type) {
    data = namedtuple_class(std::const_pointer_cast<NamedTupleType>(d.nt_type));
  }
  Value children = make_tuple(std::move(kids));
  return f_node.is_none() ? children : in.call(f_node, ValueList{children, data}, Span{});
}

} // namespace

bool treedef_attr(const TreeDef& def, const std::string& name, Value& out) {
  if (name == "walk") {
    out = make_builtin("walk", [def](InterpreterImpl& in, CallArgs& a) {
      ArgReader r("walk", a, {"f_node", "f_leaf", "leaves"}, 3);
      ValueList leaves = in.iterate(r[2], Span{});
      size_t pos = 0;
      return walk_rec(in, def, r[0], r[1], leaves, pos);
    });
    return true;
  }
  if (name == "num_nodes") return out = Value::integer(static_cast<int64_t>(num_nodes(def))), true;
  if (name == "children") {
    out = make_builtin("children", [def](InterpreterImpl&, CallArgs& a) {
      ArgReader r("children", a, {});
      return make_list(children(def));
    });
    return true;
  }
  if (name == "unflatten") {
    out = make_builtin("unflatten", [def](InterpreterImpl& in, CallArgs& a) {
      ArgReader r("unflatten", a, {"leaves"}, 1);
      return unflatten_checked(def, in.iterate(r[0], Span{}));
    });
    return true;
  }
  if (name == "compose") {
    out = make_builtin("compose", [def](InterpreterImpl&, CallArgs& a) {
      ArgReader r("compose", a, {"inner_treedef"}, 1);
      return tree_structure_value(compose(def, need_treedef(r[0], "compose")));
    });
    return true;
  }
  if (name == "flatten_up_to") {
    out = make_builtin("flatten_up_to", [def](InterpreterImpl& in, CallArgs& a) {
      ArgReader r("flatten_up_to", a, {"xs"}, 1);
      ValueList subtrees;
      flatten_up_to(in, def, r[0], subtrees);
      return make_list(std::move(subtrees));
    });
    return true;
  }
  return false;
}

void add_tree_more_functions(Value& tree_util, Value& tree) {
  auto& tu = tree_util.as<ModuleObj>()->env->vars;
  tu["treedef_children"] = make_builtin("treedef_children", treedef_children_fn);
  tu["treedef_is_leaf"] = make_builtin("treedef_is_leaf", treedef_is_leaf_fn);
  tu["treedef_tuple"] = make_builtin("treedef_tuple", treedef_tuple_fn);
  tu["all_leaves"] = make_builtin("all_leaves", all_leaves_fn);
  tu["flatten_one_level"] = make_builtin("flatten_one_level", flatten_one_level_fn);
  add_tree_pair(tree_util, tree,
                {{"broadcast", tree_broadcast_fn},
                 {"transpose", tree_transpose_fn},
                 {"reduce_associative", tree_reduce_associative_fn}});
}

} // namespace pxl
