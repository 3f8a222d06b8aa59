// make_jaxpr(f)(*args).eqns: pxl's IR of the call read as JAX's jaxpr
// equations (stdlib/jax_rest.pxl builds the JaxprEqn objects).
#pragma once
#include <functional>
#include <vector>

#include "ir/function.hpp"
#include "lang/value.hpp"

namespace pxl {

// A list of (primitive name, params dict, [input avals], [output avals]) per
// equation, avals as `aval_value` makes them. The IR's steps that JAX's
// jaxprs leave implicit are left out: the conversion of a scalar constant
// (a literal in a jaxpr) and the broadcast of a scalar that only feeds
// elementwise binary ops (JAX's binary primitives take rank-0 operands).
Value jaxpr_eqns(const Function& fn, const std::function<Value(const AVal&)>& aval_value);

} // namespace pxl
