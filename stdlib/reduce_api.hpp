// jnp's reductions as Python-facing functions (jnp.sum(a, ...)) and array methods
// (a.sum(...)): one argument binding for both, with JAX's signatures and errors.
#pragma once
#include <optional>
#include <string>

#include "lang/interp_impl.hpp"

namespace pxl {

// jnp.<name>(...) for name in sum prod max amax min amin mean any all var std; with
// `self`, the method self.<name>(...) (self is the first argument).
Value call_reduction(InterpreterImpl& in, const std::string& name, CallArgs& a,
                     const std::optional<Tensor>& self = {});

} // namespace pxl
