// JAX's argument checks for its array functions. jax.numpy, jax.lax, jax.nn,
// jax.scipy and jax.random refuse a list, a tuple, a dict or None where an
// array belongs (`jnp.sum([1, 2])` is JAX's TypeError "sum requires ndarray or
// scalar arguments, got <class 'list'> at position 0."); only numpy converts
// such values. One table, generated from JAX (stdlib/arraylike_table.inc, by
// tools/gen_arraylike_table.py), says which parameters each function checks
// and what its error names; the functions are wrapped with those checks here.
#pragma once
#include "lang/interp_impl.hpp"

namespace pxl {

// Wraps every function the table names, in the registered modules it names.
void add_arraylike_checks(InterpreterImpl& in);

} // namespace pxl
