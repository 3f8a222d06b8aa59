// Attribute and method tables of the built-in types, and the hooks through
// which the interpreter treats Array values (implemented in stdlib/array_*.cpp).
#pragma once
#include "lang/interp_impl.hpp"

namespace pxl {

// Finds attribute `name` of a non-module value (a bound method or a property).
bool lookup_method(InterpreterImpl& in, const Value& obj, const std::string& name, Value& out);
std::vector<std::string> method_names(const Value& obj);

// collections.Counter's counting (its constructor, update and subtract): adds
// (or subtracts) the counts of `source` (a mapping, or an iterable counted
// element by element; None: nothing) and of the keywords to `d`.
void count_into(InterpreterImpl& in, DictObj& d, const Value& source,
                const std::vector<std::pair<std::string, Value>>& keywords, bool subtract);

// Arrays (stdlib/array_value.cpp).
Value array_get_item(InterpreterImpl& in, const Value& arr, const Value& index, const Span& where);
bool array_truthy(InterpreterImpl& in, const Value& arr, const Span& where);
ValueList array_iterate(InterpreterImpl& in, const Value& arr, const Span& where);
bool array_attr(InterpreterImpl& in, const Value& arr, const std::string& name, Value& out);
std::vector<std::string> array_attr_names();
Tensor np_astype_value(InterpreterImpl& in, const Value& v, DType dtype, const Span& where);
// Converts a size-1 concrete array to a Python scalar (.item()).
Value array_to_scalar(InterpreterImpl& in, const Value& arr, const Span& where);
// int(x), float(x), complex(x), format(x, spec), "%d" % x: JAX converts only 0-d arrays
// ("Only scalar arrays can be converted to Python scalars; got arr.ndim=1").
Value array_to_python_scalar(InterpreterImpl& in, const Value& arr, const Span& where);

} // namespace pxl
