// jax.ShapeDtypeStruct (stdlib/mod_jax_misc.cpp) as other stdlib parts read it.
#pragma once
#include "ir/aval.hpp"
#include "lang/value.hpp"

namespace pxl {

// The type a ShapeDtypeStruct describes, or null when `v` is none.
const AVal* shape_dtype_struct_aval(const Value& v);

} // namespace pxl
