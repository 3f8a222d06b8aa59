// Named tuples (collections.namedtuple, and the result types of jnp.unique_*
// and jnp.linalg): their class and instances, which pytree code takes apart
// and rebuilds as JAX does (a node whose children are the fields).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lang/value.hpp"

namespace pxl {

// One collections.namedtuple(...) call: its class. Instances of two calls are
// of different classes even when the names and fields agree, as in Python.
struct NamedTupleType {
  std::string name;
  std::vector<std::string> fields;
  // The last `num_aux` fields are the node's static data, not children: a
  // class JAX code registers with register_pytree_node to flatten as
  // ((children...), aux) (jax.example_libraries.optimizers.OptimizerState).
  // Its PyTreeDef shows CustomNode(Name[aux], [...]) and compares the aux values.
  size_t num_aux = 0;
  size_t num_children() const { return fields.size() - num_aux; }
  // When set, instances are callable: obj(*args) is call(obj, *args) (a class
  // with __call__, as jax.scipy.interpolate.RegularGridInterpolator).
  Value call;
  // A stdlib class built as a named tuple so that pytrees take it apart
  // (checkify's Error): its further attributes (methods) and its str().
  // Unset for collections.namedtuple's classes.
  std::function<bool(InterpreterImpl&, const ValueList& values, const std::string& attr,
                     Value& out)>
      attr;
  std::function<std::string(const ValueList& values)> str;
  // A stdlib class built as a named tuple that is no tuple (a sparse array,
  // stdlib/sparse_class.cpp): not a sequence; its further attributes computed
  // by pxl code (attrs: a dict name -> fn(self)); its operators (ops: a dict
  // from the dunder name without underscores to fn(self, other, self_first),
  // "getitem" to fn(self, index), "len" to fn(self)); and its repr.
  bool tuple_like = true;
  Value attrs, ops;
  std::function<std::string(const ValueList& values)> repr;
  // Run on the field values of every instance made (by the class or by pytree
  // unflattening): a sparse array's shape follows its leaves when vmap adds or
  // removes a leading batch axis (JAX's vmappable BCOO).
  std::function<void(ValueList& values)> normalize;
};

// The class and pytree children of `v` when it is a named tuple, else nullptr:
// all its field values, but those of the aux fields.
std::shared_ptr<const NamedTupleType> namedtuple_parts(const Value& v,
                                                       const ValueList** values = nullptr);
// The values of `v`'s aux fields (empty for a plain named tuple).
ValueList namedtuple_aux(const Value& v);
// The class of `type`: calling it makes an instance (fields by position or keyword).
Value namedtuple_class(std::shared_ptr<NamedTupleType> type);
// An instance of `type` holding `values` (one per field).
Value make_namedtuple(std::shared_ptr<const NamedTupleType> type, ValueList values);

} // namespace pxl
