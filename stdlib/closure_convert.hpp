// jax.closure_convert.
#pragma once
#include "lang/interp_impl.hpp"

namespace pxl {

void add_closure_convert(Value& jax);

} // namespace pxl
