// The embedding API (include/pxl/pxl.hpp): a thin wrapper over the Interpreter.
#include "pxl/pxl.hpp"

#include "lang/interp.hpp"
#include "runtime/platform.hpp"

#ifndef PXL_VERSION
#define PXL_VERSION "unknown"
#endif

namespace pxl {

std::string version() { return PXL_VERSION; }

Runtime::Runtime(RuntimeOptions options) {
  // The same bounds as the command line's --devices.
  if (options.num_devices < 1 || options.num_devices > kMaxDevices)
    throw Error(ErrCode::Value,
                "RuntimeOptions::num_devices is " + std::to_string(options.num_devices) +
                    ": expected an integer from 1 to " + std::to_string(kMaxDevices));
  InterpOptions io;
  io.num_devices = options.num_devices;
  io.platform = parse_platform(options.platform);
  io.cuda_devices = options.cuda_devices;
  io.cuda_logical = options.cuda_logical;
  io.out = options.out;
  io.err = options.err;
  interp_ = std::make_unique<Interpreter>(io);
}

Runtime::~Runtime() = default;
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;

// A moved-from Runtime has no interpreter; using it is a clear error, not a null dereference.
Interpreter& Runtime::interpreter() const {
  if (!interp_)
    throw Error(ErrCode::Value, "this pxl::Runtime was moved from and has no interpreter");
  return *interp_;
}

void Runtime::run_file(const std::string& path) { interpreter().run_file(path); }

void Runtime::run_string(const std::string& code, const std::string& name) {
  interpreter().run_string(code, name);
}

std::vector<Array> Runtime::call(const std::string& function, const std::vector<Array>& args) {
  return interpreter().call(function, args);
}

int Runtime::num_devices() const { return interpreter().num_devices(); }

void check_dtype(const Array& a, DType want) {
  if (!a.defined())
    throw Error(ErrCode::Value, "the array is empty (default-constructed pxl::Array)");
  if (a.dtype() != want)
    throw Error(ErrCode::DType, std::string("the array holds ") + dtype_name(a.dtype()) + ", not " +
                                    dtype_name(want));
}

} // namespace pxl
