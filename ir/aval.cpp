// Printing abstract values.
#include "ir/aval.hpp"
#include "ir/aval_text.hpp"

namespace pxl {

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  if (s.size() == 1) out += ",";
  return out + ")";
}

std::string array_type_str(DType dtype, const Shape& shape) {
  std::string out = std::string(dtype_name(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

} // namespace pxl
