// Pytrees: nested tuples, lists and dicts (dict keys in sorted order, as JAX),
// with None as an empty subtree and everything else a leaf. Used by tree_map
// and, later, to pass structured arguments in and out of traced functions.
#pragma once
#include "lang/interp_impl.hpp"

namespace pxl {

struct TreeDef {
  enum class Kind : uint8_t { Leaf, None, Tuple, List, Dict } kind = Kind::Leaf;
  ValueList keys;                // Dict: sorted keys
  std::vector<TreeDef> children; // Tuple/List/Dict
  size_t num_leaves() const;
  bool operator==(const TreeDef& o) const;
  std::string repr() const; // JAX's: PyTreeDef((*, {'a': *}))
};

TreeDef tree_flatten(InterpreterImpl& in, const Value& tree, ValueList& leaves);
Value tree_unflatten(const TreeDef& def, const ValueList& leaves);
// Registers tree_map / tree_leaves / tree_structure / tree_flatten / tree_unflatten
// into jax.tree_util and jax.tree (and jax.tree_map).
void add_tree_functions(InterpreterImpl& in, Value& tree_util, Value& tree, Value& jax);

} // namespace pxl
