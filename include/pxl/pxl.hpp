// pxl's embedding API: run pxl source from a C++ program and call its functions
// with arrays made from host memory.
//
//   pxl::Runtime rt;                              // 8 CPU devices, print() to std::cout
//   rt.run_string("def scale(x, a): return x * a + 1");
//   std::vector<float> v = {1, 2, 3};
//   pxl::Array x = pxl::from_host(v.data(), {3});
//   pxl::Array a = pxl::scalar(2.0f);
//   std::vector<float> y = pxl::to_vector<float>(rt.call("scale", {x, a})[0]);
//
// Every pxl failure throws pxl::Error; e.render() is the located diagnostic
// ("file:line:col: error[E....]: ..." with the source line and a caret). A
// script that calls exit() or sys.exit() throws pxl::SystemExit (not an
// error: its status and message, lang/system_exit.hpp).
#pragma once
#include <cstring>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "lang/diag.hpp"
#include "lang/system_exit.hpp"
#include "runtime/array.hpp"

namespace pxl {

class Interpreter;

std::string version(); // "0.1.0"

struct RuntimeOptions {
  int num_devices = 8; // CPU devices in the mesh
  // "cpu", "cuda" (NVIDIA GPUs; Runtime's constructor throws E0400 naming what
  // is missing when there is no usable GPU) or "auto" (cuda when usable).
  std::string platform = "cpu";
  int cuda_devices = 0;        // CUDA devices: 0 = one per GPU
  bool cuda_logical = false;   // cuda_devices logical devices on GPU 0
  std::ostream* out = nullptr; // where print() writes; nullptr = std::cout
  std::ostream* err = nullptr; // nullptr = std::cerr
};

class Runtime {
public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  Runtime(Runtime&&) noexcept;
  Runtime& operator=(Runtime&&) noexcept;

  // Run a script file, or source text (`name` appears in diagnostics). Both
  // define into the runtime's one global namespace, which call() sees.
  void run_file(const std::string& path);
  void run_string(const std::string& code, const std::string& name = "<embed>");
  // Calls a global pxl function; a tuple or list result is flattened.
  std::vector<Array> call(const std::string& function, const std::vector<Array>& args);
  int num_devices() const;
  // The full interpreter, for what this API does not wrap (REPL-style input).
  // Every member throws pxl::Error on a moved-from Runtime.
  Interpreter& interpreter() const;

private:
  std::unique_ptr<Interpreter> interp_;
};

// The pxl dtype of a C++ element type.
template <class T> constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::Float32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::Float64;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::Int8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::UInt8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::Int16;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DType::UInt16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::Int32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DType::UInt32;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::Bool;
  else
    static_assert(!sizeof(T), "pxl arrays hold float, double, (u)int8/16/32_t or bool");
}

// Throws pxl::Error(DType) unless `a` holds elements of type `want`.
void check_dtype(const Array& a, DType want);

// A new array holding a copy of shape_size(shape) elements read from `data`.
template <class T> Array from_host(const T* data, Shape shape) {
  Array a(dtype_of<T>(), std::move(shape));
  if (a.size() > 0) std::memcpy(a.data(), data, static_cast<size_t>(a.size()) * sizeof(T));
  return a;
}
template <class T> Array from_host(const std::vector<T>& v, Shape shape) {
  static_assert(!std::is_same_v<T, bool>, "std::vector<bool> is packed: pass a bool* instead");
  if (shape_size(shape) != static_cast<int64_t>(v.size()))
    throw Error(ErrCode::Shape, "from_host: " + std::to_string(v.size()) +
                                    " elements do not fill shape " + shape_str(shape));
  return from_host(v.data(), std::move(shape));
}
// A 0-d array (a strongly typed scalar; pxl's own Python scalars are weak).
template <class T> Array scalar(T value) { return from_host(&value, Shape{}); }

// A read-only view of an array's elements, without copying. Valid while any
// Array sharing the buffer lives.
template <class T> std::span<const T> host_view(const Array& a) {
  check_dtype(a, dtype_of<T>());
  return {a.as<T>(), static_cast<size_t>(a.size())};
}
// A copy of an array's elements, row-major.
template <class T> std::vector<T> to_vector(const Array& a) {
  std::span<const T> v = host_view<T>(a);
  return std::vector<T>(v.begin(), v.end());
}

} // namespace pxl
