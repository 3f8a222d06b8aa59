// Short texts of array types, as JAX's error messages spell them.
#pragma once
#include <string>

#include "ir/aval.hpp"

namespace pxl {

// JAX's short text of an array type: "float32[2,3]", "int32[]".
std::string array_type_str(DType dtype, const Shape& shape);

} // namespace pxl
