// collections.namedtuple values as pytree nodes (JAX flattens a namedtuple
// into its fields and rebuilds the same type): what stdlib/pytree.cpp needs to
// know about the objects stdlib/mod_objects.cpp makes.
#pragma once
#include <string>

#include "lang/value.hpp"

namespace pxl {

bool is_named_tuple(const Value& v);
// The fields' values of a named tuple (is_named_tuple(v) must hold).
const ValueList& named_tuple_values(const Value& v);
// A value standing for v's type in a TreeDef: the same name and fields, every
// value None (so that two keys are equal exactly when the types are).
Value named_tuple_type_key(const Value& v);
// A named tuple of the type `key` stands for, holding `values`.
Value make_named_tuple_like(const Value& key, ValueList values);
std::string named_tuple_name(const Value& v);

} // namespace pxl
