#include "runtime/platform.hpp"

#include <charconv>

#include "codegen/jit.hpp"
#include "lang/diag.hpp"
#include "runtime/collectives.hpp"

namespace pxl {

std::string Device::repr() const {
  return (platform == "cpu" ? "CpuDevice" : "CudaDevice") + std::string("(id=") +
         std::to_string(id) + ")";
}

Platform::Platform(int num_cpu_devices) {
  for (int i = 0; i < num_cpu_devices; ++i) devices_.push_back(Device{i, "cpu"});
}

Platform::~Platform() = default;

DeviceThreads& Platform::threads() {
  if (!threads_) threads_ = std::make_unique<DeviceThreads>(device_count());
  return *threads_;
}

CodeCache& Platform::code_cache() {
  if (!code_cache_) code_cache_ = std::make_unique<CodeCache>(code_cache_options_);
  return *code_cache_;
}

int parse_device_count(const std::string& text) {
  int n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size() || n < 1 || n > 4096)
    throw Error(ErrCode::Value,
                "invalid device count '" + text + "': expected an integer from 1 to 4096");
  return n;
}

} // namespace pxl
