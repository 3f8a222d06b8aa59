// JAX's float0: the dtype of the tangents and cotangents of integer and bool
// values (grad with allow_int=True, vjp, jvp). pxl has no float0 arrays on
// devices; a float0 value is a host object carrying its shape, printed as
// JAX 0.10 prints its TypedNdArray ([(b'',) (b'',)]; repr
// TypedNdArray([(b'',), (b'',)], dtype=void)), whose dtype is
// jax.dtypes.float0 (dtype([('float0', 'V')])).
#pragma once
#include <vector>

#include "lang/value.hpp"

namespace pxl {

struct ModuleBuilder;

Value float0_dtype();
Value float0_zeros(std::vector<int64_t> shape);
bool is_float0(const Value& v);                    // a float0 value
std::vector<int64_t> float0_shape(const Value& v); // of a float0 value
bool is_float0_dtype(const Value& v);              // jax.dtypes.float0

// types._float0_zeros(shape), types._is_float0(x), types._is_float0_dtype(d)
// for the stdlib's .pxl code.
void add_float0_builtins(ModuleBuilder& types);

} // namespace pxl
