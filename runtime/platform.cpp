#include "runtime/platform.hpp"

#include <charconv>
#include <mutex>

#include <unistd.h>

#include "codegen/jit.hpp"
#include "ir/custom_call.hpp"
#include "lang/diag.hpp"
#include "runtime/collectives.hpp"
#include "runtime/cuda/executable.hpp"
#include "runtime/cuda/runtime.hpp"
#include "runtime/executable.hpp"

namespace pxl {

std::string Device::repr() const {
  return (platform == "cpu" ? "CpuDevice" : "CudaDevice") + std::string("(id=") +
         std::to_string(id) + ")";
}

Platform::Platform(int num_cpu_devices) : default_cpu_devices_(num_cpu_devices) {}

int Platform::planned_device_count() const {
  if (fixed_ || cuda_) return device_count();
  if (requested_cpu_devices_ > 0) return requested_cpu_devices_;
  if (count_source_)
    if (std::optional<int> n = count_source_(); n && *n > 0) return *n;
  return default_cpu_devices_;
}

void Platform::fix_devices() const {
  if (!cuda_) {
    int n = planned_device_count();
    for (int i = 0; i < n; ++i) devices_.push_back(Device{i, "cpu"});
  }
  fixed_ = true;
}

bool Platform::set_cpu_device_count(int n) {
  if (cuda_) return true; // (JAX's CPU backend beside the GPUs: pxl has none)
  if (fixed_) return false;
  requested_cpu_devices_ = n > 0 ? n : 0;
  return true;
}

class SharedDevices {
public:
  // The shared driver, opened on first use; a failure is not kept (each
  // platform then reports it).
  std::shared_ptr<cuda::Driver> driver() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!driver_) driver_ = cuda::Driver::open();
    return driver_;
  }

private:
  std::mutex mu_;
  std::shared_ptr<cuda::Driver> driver_;
};

std::shared_ptr<SharedDevices> make_shared_devices() { return std::make_shared<SharedDevices>(); }

Platform::Platform(const PlatformOptions& o) {
  if (o.kind != PlatformKind::Cpu) {
    try {
      cuda_ = std::make_unique<cuda::CudaRuntime>(o.cuda_devices, o.cuda_logical,
                                                  cuda::LibraryNames::defaults(),
                                                  o.shared ? o.shared->driver() : nullptr);
    } catch (Error& e) {
      if (o.kind == PlatformKind::Cuda) {
        if (e.hint().empty())
          e.set_hint("pxl runs on the CPU mesh without --platform cuda (or with --platform auto)");
        throw Error(e.code(), "the CUDA platform is not available: " + e.message(), {}, e.hint());
      }
      fallback_ = e.message();
      for (const std::string& file : o.gpu_device_files)
        if (::access(file.c_str(), F_OK) == 0) {
          fallback_warning_ = "An NVIDIA GPU may be present on this machine, but the CUDA "
                              "platform could not be used: " +
                              fallback_ + ". Falling back to cpu.";
          break;
        }
    }
  }
  if (cuda_) {
    name_ = "cuda";
    for (int i = 0; i < cuda_->device_count(); ++i) devices_.push_back(Device{i, "cuda"});
    fixed_ = true;
  } else {
    default_cpu_devices_ = o.cpu_devices;
  }
}

Platform::~Platform() {
  threads_.reset(); // nothing runs on the GPUs once the device threads are gone
}

void Platform::set_phase_times(PhaseTimes* times) {
  if (cuda_) cuda_->set_phase_times(times);
}

DeviceThreads& Platform::threads() {
  if (!threads_) threads_ = std::make_unique<DeviceThreads>(device_count());
  return *threads_;
}

CodeCache& Platform::code_cache() {
  if (!code_cache_) code_cache_ = std::make_unique<CodeCache>(code_cache_options_);
  return *code_cache_;
}

std::unique_ptr<Executable> Platform::make_executable(ExecMode mode,
                                                      std::shared_ptr<const Function> fn,
                                                      SpmdLayout layout,
                                                      std::vector<Array> consts) {
  fn = lower_custom_calls(std::move(fn));
  if (cuda_)
    return cuda::make_cuda_executable(std::move(fn), std::move(layout), std::move(consts), *cuda_,
                                      code_cache());
  return pxl::make_executable(mode, &code_cache(), std::move(fn), std::move(layout),
                              std::move(consts));
}

std::string Platform::transfer_report() const {
  if (!cuda_) return "";
  auto log = cuda_->transfers().transfers();
  int64_t up = 0, down = 0, nup = 0;
  for (const auto& t : log) (t.to_device ? (++nup, up) : down) += t.bytes;
  std::string out = "profile: " + std::to_string(log.size()) +
                    " host<->device copies: " + std::to_string(nup) + " to the GPU (" +
                    std::to_string(up) + " bytes), " +
                    std::to_string(log.size() - static_cast<size_t>(nup)) + " to the host (" +
                    std::to_string(down) + " bytes)\n";
  auto where = [](const Span& s) {
    if (!s.valid()) return std::string("?");
    return s.file->path() + ":" + std::to_string(s.file->line_of(s.begin)) + ":" +
           std::to_string(s.file->column_of(s.begin));
  };
  for (const auto& t : log)
    out += "  " + where(t.loc) + ": " + (t.to_device ? "to GPU " : "to host ") +
           std::to_string(t.bytes) + " bytes" +
           (t.value.valid() ? " (computed at " + where(t.value) + ")" : "") + "\n";
  return out;
}

void Platform::set_transfer_sites(std::shared_ptr<const PullLog> sites) {
  if (cuda_) cuda_->transfers().set_sites(std::move(sites));
}

int parse_device_count(const std::string& text) {
  int n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size() || n < 1 || n > kMaxDevices)
    throw Error(ErrCode::Value, "invalid device count '" + text +
                                    "': expected an integer from 1 to " +
                                    std::to_string(kMaxDevices));
  return n;
}

DeviceRequest parse_device_request(const std::string& text) {
  if (text.rfind("cuda:", 0) == 0) {
    std::string k = text.substr(5);
    int n = 0;
    auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), n);
    if (ec != std::errc() || ptr != k.data() + k.size() || n < 1 || n > 64)
      throw Error(ErrCode::Value, "invalid device count '" + text +
                                      "': cuda:K needs K logical devices from 1 to 64");
    return {n, true};
  }
  return {parse_device_count(text), false};
}

PlatformKind parse_platform(const std::string& text) {
  if (text == "cpu") return PlatformKind::Cpu;
  if (text == "cuda") return PlatformKind::Cuda;
  if (text == "auto") return PlatformKind::Auto;
  throw Error(ErrCode::Value, "unknown platform '" + text + "' (known: cpu, cuda, auto)");
}

} // namespace pxl
