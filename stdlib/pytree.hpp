// Pytrees: nested tuples, lists, dicts (dict keys in sorted order, as JAX),
// named tuples (their fields) and typed PRNG key arrays (their key data), with
// None as an empty subtree and everything else a leaf. Used by tree_map
// and, later, to pass structured arguments in and out of traced functions.
#pragma once
#include "lang/args.hpp"
#include "lang/interp_impl.hpp"
#include "stdlib/namedtuple.hpp"
#include <optional>

namespace pxl {

struct TreeDef {
  // Key: a typed PRNG key array, a node over its one leaf, the key data
  // (stdlib/prng_key.hpp), so that transformations carry keys as arrays.
  // Partial: a jax.tree_util.Partial, over (args tuple, keywords dict); `fn` its function.
  enum class Kind : uint8_t {
    Leaf,
    None,
    Tuple,
    List,
    Dict,
    NamedTuple,
    Key,
    Partial
  } kind = Kind::Leaf;
  Value fn;
  // Dict: sorted keys (an OrderedDict's in order); Key: one str, the key
  // array's implementation tag (KeyArrayObj::tag).
  ValueList keys;
  // Dict: a collections.OrderedDict / defaultdict node (JAX's CustomNode), and
  // the defaultdict's factory.
  bool ordered = false, defaulted = false;
  Value default_factory;
  std::shared_ptr<const NamedTupleType> nt_type; // NamedTuple: its class
  std::vector<TreeDef> children;                 // Tuple/List/Dict/NamedTuple (one per field)
  // A tuple or a named tuple (a has_aux function's (out, aux) may be either).
  bool is_tuple_like() const { return kind == Kind::Tuple || kind == Kind::NamedTuple; }
  size_t num_leaves() const;
  bool operator==(const TreeDef& o) const;
  // JAX's: PyTreeDef((*, {'a': *})), PyTreeDef(CustomNode(namedtuple[Point], [*, *]))
  std::string repr() const;
};

// `is_leaf` (a callable, or None/nullptr for none) is asked about every node
// before it is taken apart: a true answer makes the whole node one leaf (JAX's).
TreeDef tree_flatten(InterpreterImpl& in, const Value& tree, ValueList& leaves,
                     const Value* is_leaf = nullptr);
// The subtrees of `tree` at the leaves of `def`, which must be a prefix of
// `tree`'s structure (JAX's treedef.flatten_up_to; what tree_map does with its
// second and later trees).
void flatten_up_to(InterpreterImpl& in, const TreeDef& def, const Value& tree, ValueList& out);
Value tree_unflatten(const TreeDef& def, const ValueList& leaves);
// f applied leaf by leaf to `leaves` (of `def`) and the leaves of the trees `rest`,
// which must have the same structure; `first`, if given, holds one more leading
// argument per leaf (tree_map_with_path's paths). Returns the tree of results.
Value map_leaves(InterpreterImpl& in, const char* fn, const Value& f, const TreeDef& def,
                 const ValueList& leaves, const ValueList& rest, const ValueList* first);
// A PyTreeDef object for `def` (what tree_structure returns).
Value tree_structure_value(TreeDef def);
// Installs each (name, fn) as tree_util.tree_<name> and tree.<name> (JAX's two spellings).
void add_tree_pair(Value& tree_util, Value& tree,
                   std::initializer_list<std::pair<const char*, NativeFn>> fns);
// tree_flatten_with_path & co., tree_reduce, tree_all, keystr, Partial (pytree_paths.cpp).
void add_tree_path_functions(Value& tree_util, Value& tree);
// JAX's "pytree structure error: ..." text for the first place where `full`
// does not have `prefix` as a prefix (stdlib/pytree_errors.cpp), or nothing.
std::optional<std::string> pytree_prefix_error(InterpreterImpl& in, const TreeDef& prefix,
                                               const Value& full, const std::string& name);
// All of them (JAX's tree_util.prefix_errors), one per disagreeing subtree.
std::vector<std::string> pytree_prefix_errors(InterpreterImpl& in, const TreeDef& prefix,
                                              const Value& full, const std::string& name);
// keystr of every leaf's key path of `d`, in flattening order ("['a'][0]").
std::vector<std::string> leaf_keystrs(const TreeDef& d);
// Matches a pytree of specs (or in_axes) against the argument tree: a leaf of
// the spec tree applies to a whole subtree. `is_leaf` says what counts as a spec.
template <class IsLeaf>
void broadcast_prefix(InterpreterImpl& in, const Value& prefix, const Value& tree, ValueList& out,
                      IsLeaf is_leaf, const std::string& what) {
  if (is_leaf(prefix)) {
    ValueList leaves;
    tree_flatten(in, tree, leaves);
    for (size_t i = 0; i < leaves.size(); ++i) out.push_back(prefix);
    return;
  }
  const ValueList* ps = sequence_items(prefix);
  const ValueList* ts = sequence_items(tree);
  auto pt = namedtuple_parts(prefix, &ps), tt = namedtuple_parts(tree, &ts);
  if (pt != tt) ps = ts = nullptr; // a named tuple matches only its own class
  if (ps && ts) {
    if (ps->size() != ts->size())
      throw Error(ErrCode::Value, what + " has " + std::to_string(ps->size()) +
                                      " entries but the value it describes has " +
                                      std::to_string(ts->size()));
    for (size_t i = 0; i < ps->size(); ++i)
      broadcast_prefix(in, (*ps)[i], (*ts)[i], out, is_leaf, what);
    return;
  }
  if (prefix.is_obj(ObjKind::Dict) && tree.is_obj(ObjKind::Dict)) {
    ValueList keys;
    TreeDef td = tree_flatten(in, tree, keys); // only for the sorted keys
    for (size_t i = 0; i < td.keys.size(); ++i) {
      const Value* p = prefix.as<DictObj>()->find(td.keys[i]);
      if (!p) throw Error(ErrCode::Value, what + " has no entry for key " + repr(td.keys[i]));
      broadcast_prefix(in, *p, *tree.as<DictObj>()->find(td.keys[i]), out, is_leaf, what);
    }
    return;
  }
  throw Error(ErrCode::Value, what + " does not match the structure of the value it describes (" +
                                  type_name(prefix) + " vs " + type_name(tree) + ")");
}

// Registers tree_map / tree_leaves / tree_structure / tree_flatten / tree_unflatten
// into jax.tree_util and jax.tree (and jax.tree_map).
void add_tree_functions(InterpreterImpl& in, Value& tree_util, Value& tree, Value& jax);

// Every leaf of `tree` replaced by fn(leaf).
template <class F> Value map_tree(InterpreterImpl& in, const Value& tree, F&& fn) {
  ValueList leaves;
  TreeDef def = tree_flatten(in, tree, leaves);
  for (Value& l : leaves) l = fn(l);
  return tree_unflatten(def, leaves);
}

// Every leaf of `tree` replaced by fn(leaf, target), where `target` is the leaf
// of the pytree prefix `prefix` that covers it (see broadcast_prefix).
template <class IsLeaf, class F>
Value map_tree_with_prefix(InterpreterImpl& in, const Value& tree, const Value& prefix,
                           IsLeaf is_leaf, const std::string& what, F&& fn) {
  ValueList leaves, targets;
  TreeDef def = tree_flatten(in, tree, leaves);
  broadcast_prefix(in, prefix, tree, targets, is_leaf, what);
  for (size_t i = 0; i < leaves.size(); ++i) leaves[i] = fn(leaves[i], targets[i]);
  return tree_unflatten(def, leaves);
}

} // namespace pxl
