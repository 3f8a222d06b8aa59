// The devices pxl runs on: the CPU mesh, or CUDA GPUs (runtime/cuda/). A
// Platform is owned by an Interpreter (no global state); the SPMD runtime
// (mesh execution, collectives, compiled code) hangs off it.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/jit.hpp"
#include "runtime/exec_mode.hpp"
#include "runtime/platform_kind.hpp"

namespace pxl {

class DeviceThreads;
class Executable; // runtime/executable.hpp
struct Function;
struct SpmdLayout;
class Array;
class PullLog;    // runtime/sharded.hpp
class PhaseTimes; // lang/phase_times.hpp
namespace cuda {
class CudaRuntime; // runtime/cuda/runtime.hpp
}
class SharedDevices; // below

// What the platforms of several interpreters made one after another can
// share (`pxl --batch`): the opened CUDA driver with its contexts, whose
// start-up is most of a short CUDA program's time. Made by the caller, kept
// as long as it wants the sharing; opened by the first platform that needs it.
std::shared_ptr<SharedDevices> make_shared_devices();

struct Device {
  int id = 0;
  std::string platform = "cpu";
  std::string repr() const; // JAX's: "CpuDevice(id=0)", "CudaDevice(id=0)"
};

struct PlatformOptions {
  PlatformKind kind = PlatformKind::Cpu;
  int cpu_devices = 8;
  int cuda_devices = 0;      // 0: one device per visible GPU
  bool cuda_logical = false; // cuda_devices logical devices on GPU 0 (PXL_DEVICES=cuda:K)
  // Files whose presence means an NVIDIA GPU is probably installed (JAX looks
  // at the same device nodes before warning that it falls back to the CPU).
  std::vector<std::string> gpu_device_files = {"/dev/nvidiactl", "/dev/nvidia0"};
  std::shared_ptr<SharedDevices> shared; // null: the platform opens its own driver
};

class Platform {
public:
  explicit Platform(int num_cpu_devices = 8);
  // Throws pxl::Error(E0400) when CUDA is asked for and cannot be used.
  explicit Platform(const PlatformOptions& options);
  ~Platform();
  // The devices. The first call fixes the CPU mesh's size (JAX's backend
  // initialization); the interpreter's thread makes it before any other use.
  const std::vector<Device>& devices() const {
    if (!fixed_) fix_devices();
    return devices_;
  }
  int device_count() const { return static_cast<int>(devices().size()); }
  // The device count devices() would give now, without fixing it (the REPL's banner).
  int planned_device_count() const;
  // jax.config.update('jax_num_cpu_devices', n): the CPU mesh's size, n < 1
  // for the default. False once the devices are fixed (JAX: "should be
  // updated before backends are initialized"); ignored on CUDA.
  bool set_cpu_device_count(int n);
  // Asked when the devices are fixed, unless set_cpu_device_count gave a
  // count: a CPU device count requested another way (a script's
  // os.environ["XLA_FLAGS"] with --xla_force_host_platform_device_count).
  void set_device_count_source(std::function<std::optional<int>()> source) {
    count_source_ = std::move(source);
  }
  const std::string& name() const { return name_; } // "cpu" | "cuda"
  // Device `id` as :sharding and :mesh name it: "cpu:3", "cuda:0".
  std::string device_label(int id) const { return name() + ":" + std::to_string(id); }
  // A device's platform in visualize_array_sharding's cells, as JAX: "CPU", "GPU".
  std::string picture_label() const { return name() == "cuda" ? "GPU" : "CPU"; }
  // The CUDA runtime (null on the CPU mesh).
  cuda::CudaRuntime* cuda() { return cuda_.get(); }
  // Why PlatformKind::Auto chose the CPU ("" otherwise).
  const std::string& cpu_fallback_reason() const { return fallback_; }
  // JAX's warning, when Auto chose the CPU although an NVIDIA GPU seems to be
  // present ("An NVIDIA GPU may be present on this machine, but ..."); "" when
  // there is no sign of a GPU, so machines without one stay quiet.
  const std::string& fallback_warning() const { return fallback_warning_; }
  // The device threads SPMD programs run on (one per device, started on first use).
  DeviceThreads& threads();
  // The LLVM JIT's compiled programs (created on first use), so a Function
  // compiles once per interpreter.
  CodeCache& code_cache();
  // How the code cache is created (disk directory, --time-passes,
  // --explain-cache); takes effect if set before its first use.
  void set_code_cache_options(CodeCacheOptions opts) { code_cache_options_ = std::move(opts); }
  // --time-passes for the CUDA runtime (its start-up, PTX, module loads); nothing on the CPU.
  void set_phase_times(PhaseTimes* times);
  // The executable for a traced SPMD Function on this platform: on CUDA, its
  // kernels run on the GPUs (`mode` does not apply); on the CPU, as `mode` says.
  std::unique_ptr<Executable> make_executable(ExecMode mode, std::shared_ptr<const Function> fn,
                                              SpmdLayout layout, std::vector<Array> consts);
  // --profile's lines for host<->device copies ("" on the CPU mesh).
  std::string transfer_report() const;
  // Where the interpreter is, for the lines of copies made when the host reads
  // a device array (the interpreter's eager context's log of pulls).
  void set_transfer_sites(std::shared_ptr<const PullLog> sites);

private:
  void fix_devices() const;
  std::string name_ = "cpu";
  mutable std::vector<Device> devices_;
  mutable bool fixed_ = false;
  int default_cpu_devices_ = 0;   // --devices / PXL_DEVICES (0 on CUDA)
  int requested_cpu_devices_ = 0; // jax_num_cpu_devices (0: none)
  std::function<std::optional<int>()> count_source_;
  std::unique_ptr<cuda::CudaRuntime> cuda_;
  std::string fallback_, fallback_warning_;
  std::unique_ptr<DeviceThreads> threads_;
  std::unique_ptr<CodeCache> code_cache_;
  CodeCacheOptions code_cache_options_;
};

// The most devices a mesh may have (--devices, PXL_DEVICES, jax_num_cpu_devices, the embedding
// API).
constexpr int kMaxDevices = 4096;

// Device count from --devices / PXL_DEVICES; `text` is the user's value.
// Throws pxl::Error(Value) for anything but an integer in [1, kMaxDevices].
int parse_device_count(const std::string& text);

// --devices / PXL_DEVICES: "N", or "cuda:K" (K logical CUDA devices on one GPU).
struct DeviceRequest {
  int count = 8;
  bool cuda_logical = false;
};
DeviceRequest parse_device_request(const std::string& text);

// "cpu" | "cuda" | "auto"; throws pxl::Error(Value) otherwise.
PlatformKind parse_platform(const std::string& text);

} // namespace pxl
