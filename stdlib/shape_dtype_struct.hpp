// jax.ShapeDtypeStruct (stdlib/mod_jax_misc.cpp) as other stdlib parts read it.
#pragma once
#include <string>
#include <vector>

#include "ir/aval.hpp"
#include "lang/value.hpp"

namespace pxl {

// The type a ShapeDtypeStruct describes, or null when `v` is none.
const AVal* shape_dtype_struct_aval(const Value& v);
// The manual axes it varies over (eval_shape inside shard_map), in mesh order.
std::vector<std::string> shape_dtype_struct_varying(const Value& v);

} // namespace pxl
