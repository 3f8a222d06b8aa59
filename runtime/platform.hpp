// The devices pxl runs on. A Platform is owned by an Interpreter (no global
// state); the SPMD runtime (mesh execution, collectives) hangs off it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/jit.hpp"

namespace pxl {

class DeviceThreads;

struct Device {
  int id = 0;
  std::string platform = "cpu";
  std::string repr() const; // JAX's: "CpuDevice(id=0)"
};

class Platform {
public:
  explicit Platform(int num_cpu_devices = 8);
  ~Platform();
  const std::vector<Device>& devices() const { return devices_; }
  int device_count() const { return static_cast<int>(devices_.size()); }
  // The device threads SPMD programs run on (one per device, started on first use).
  DeviceThreads& threads();
  // The LLVM JIT's compiled programs (created on first use), so a Function
  // compiles once per interpreter.
  CodeCache& code_cache();
  // How the code cache is created (disk directory, --time-passes,
  // --explain-cache); takes effect if set before its first use.
  void set_code_cache_options(CodeCacheOptions opts) { code_cache_options_ = std::move(opts); }

private:
  std::vector<Device> devices_;
  std::unique_ptr<DeviceThreads> threads_;
  std::unique_ptr<CodeCache> code_cache_;
  CodeCacheOptions code_cache_options_;
};

// Device count from --devices / PXL_DEVICES; `text` is the user's value.
// Throws pxl::Error(Value) for anything but an integer in [1, 4096].
int parse_device_count(const std::string& text);

} // namespace pxl
