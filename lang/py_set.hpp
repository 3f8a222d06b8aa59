// Python's set and frozenset on the host, enough for JAX programs: literals
// `{'x', 'y'}`, set()/frozenset(), membership, len, iteration, comparison
// (subset order, equality regardless of order), the operators | & - ^, and
// the usual methods. Items are host values (strings, numbers, tuples);
// iteration and printing go in a canonical sorted order, so that output never
// depends on insertion order (CPython's order for strings is hash-seeded).
#pragma once
#include "lang/value.hpp"

namespace pxl {

class InterpreterImpl;

// A set of `items` (duplicates dropped); frozen: a frozenset.
Value make_py_set(ValueList items, bool frozen);
// The items of a set or frozenset, or nullptr for any other value.
const ValueList* py_set_items(const Value& v);
// set(iterable=()), frozenset(iterable=()).
Value set_builtin(InterpreterImpl& in, CallArgs& a, bool frozen);

} // namespace pxl
