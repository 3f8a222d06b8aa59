// Conversions between interpreter values and array-namespace arguments, shared
// by the stdlib modules (np, jax.random, lax, ...).
#pragma once
#include <optional>

#include "lang/interp_impl.hpp"
#include "stdlib/np.hpp"

namespace pxl {

std::vector<np::IndexItem> to_index_items(InterpreterImpl& in, const Value& index,
                                          const Span& where);
// None -> nullopt; a dtype object, a name ("float32"), or Python's int/float/bool.
std::optional<DType> value_to_dtype(const Value& v);
// "int64" / "uint64": names JAX accepts with x64 off, meaning int32 / uint32.
bool is_x64_name(const std::string& name);
// The same for an argument that must name a dtype: None is a type error naming `what`.
DType required_dtype(const Value& v, const std::string& what);
// An int or a sequence of ints (np.zeros(3), np.zeros((2, 3))).
Shape value_to_shape(const Value& v, const std::string& what);
// jnp.zeros/ones/empty/full's shape: JAX's canonicalize_shape, with its
// TypeErrors for a non-integer or traced dimension and (when `nonnegative`)
// lax.full's for a negative one.
Shape canonical_shape(InterpreterImpl& in, const Value& v, bool nonnegative = true);
// A Python scalar from a Value that is a number or a size-1 concrete array.
Scalar value_to_scalar(InterpreterImpl& in, const Value& v, const std::string& what);
// Array attribute/method table (stdlib/array_methods.cpp).
Value array_to_list(const Array& a);

} // namespace pxl
