// Printing arrays the way JAX/numpy do.
#pragma once
#include <string>

#include "runtime/array.hpp"

namespace pxl {

// repr(x):  "Array([[1., 2.],\n       [3., 4.]], dtype=float32)" (weak_type=True when weak)
std::string array_repr(const Array& a);
// str(x) / print(x): numpy's str: "[[1. 2.]\n [3. 4.]]", 0-d: "1.0"
std::string array_str(const Array& a);
// Python's repr of a float: shortest round-trip ("0.25", "1e-05", "1e+16", "inf", "nan").
std::string python_float_repr(double v);

} // namespace pxl
