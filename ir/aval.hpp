// The abstract value of an array: what tracing and shape rules know about it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.hpp"

namespace pxl {

using Shape = std::vector<int64_t>;

inline int64_t shape_size(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
std::string shape_str(const Shape& s); // Python tuple form: "(8, 3)", "(4,)", "()"

struct AVal {
  DType dtype = DType::Float32;
  Shape shape;
  bool weak = false; // a Python scalar promoted to an array keeps JAX's weak_type
  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t size() const { return shape_size(shape); }
};

} // namespace pxl
