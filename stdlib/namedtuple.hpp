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
  // A stdlib class built as a named tuple so that pytrees take it apart
  // (checkify's Error): its further attributes (methods) and its str().
  // Unset for collections.namedtuple's classes.
  std::function<bool(InterpreterImpl&, const ValueList& values, const std::string& attr, Value& out)> attr;
  std::function<std::string(const ValueList& values)> str;
};

// The class and field values of `v` when it is a named tuple, else nullptr.
std::shared_ptr<const NamedTupleType> namedtuple_parts(const Value& v, const ValueList** values = nullptr);
// An instance of `type` holding `values` (one per field).
Value make_namedtuple(std::shared_ptr<const NamedTupleType> type, ValueList values);

} // namespace pxl
