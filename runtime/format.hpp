// Printing arrays the way JAX/numpy do.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "runtime/array.hpp"

namespace pxl {

// numpy's print options (np.set_printoptions), which JAX's array printing
// follows: one set per interpreter.
struct TensorImpl; // ir/tensor.hpp

struct PrintOptions {
  int precision = 8;        // fraction digits; ignored by floatmode "unique"
  int64_t threshold = 1000; // more elements than this are summarised
  int64_t edgeitems = 3;    // items kept at each end of a summarised axis
  int linewidth = 75;
  bool suppress = false;             // never scientific for small values
  std::string floatmode = "maxprec"; // fixed unique maxprec maxprec_equal
  char sign = '-';                   // '-', '+' or ' '
  std::string nanstr = "nan", infstr = "inf";
  // Set by the interpreter: JAX's repr of a traced value where the trace that
  // owns it says more than its type (VmapTracer(...), GradTracer(...)); nullopt
  // keeps the default, JitTracer(float32[2]).
  std::function<std::optional<std::string>(const TensorImpl&)> tracer_repr;
};

// repr(x):  "Array([[1., 2.],\n       [3., 4.]], dtype=float32)" (weak_type=True when weak)
std::string array_repr(const Array& a, const PrintOptions& o = {});
// numpy's np.array_repr(x) of an array whose class is `class_name` ("ArrayImpl(...)"):
// numpy's line breaking for that prefix, the dtype unless numpy's default for its
// kind, on a new line when the last line is full.
std::string numpy_array_repr(const Array& a, const std::string& class_name,
                             const PrintOptions& o = {});
// str(x) / print(x): numpy's str: "[[1. 2.]\n [3. 4.]]", 0-d: "1.0"
std::string array_str(const Array& a, const PrintOptions& o = {});
// numpy's str / repr of an object array (of devices) of `shape` whose elements'
// reprs are `items` (row-major): "[[CpuDevice(id=0) CpuDevice(id=1)]\n [...]]" and
// "array([[CpuDevice(id=0), ...]], dtype=object)".
std::string object_array_str(const Shape& shape, const std::vector<std::string>& items);
std::string object_array_repr(const Shape& shape, const std::vector<std::string>& items);
// Python's repr of a float: shortest round-trip ("0.25", "1e-05", "1e+16", "inf", "nan").
std::string python_float_repr(double v);
// Python's repr of a complex: "(1+2j)", "2j", "(-0-1.5j)", "(nan+infj)".
std::string python_complex_repr(double re, double im);
// str() of a numpy complex64 scalar: as Python's, with float32 digits ("(1e+07+0.1j)").
std::string complex64_scalar_str(float re, float im);

} // namespace pxl
