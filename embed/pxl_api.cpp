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

void Runtime::run_file(const std::string& path) { interp_->run_file(path); }

void Runtime::run_string(const std::string& code, const std::string& name) {
  interp_->run_string(code, name);
}

std::vector<Array> Runtime::call(const std::string& function, const std::vector<Array>& args) {
  return interp_->call(function, args);
}

int Runtime::num_devices() const { return interp_->num_devices(); }

void check_dtype(const Array& a, DType want) {
  if (!a.defined())
    throw Error(ErrCode::Value, "the array is empty (default-constructed pxl::Array)");
  if (a.dtype() != want)
    throw Error(ErrCode::DType, std::string("the array holds ") + dtype_name(a.dtype()) + ", not " +
                                    dtype_name(want));
}

} // namespace pxl
