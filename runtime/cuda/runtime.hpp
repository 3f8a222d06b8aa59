// The CUDA side of a Platform: the driver, its devices, the log of host<->device
// copies, and the PTX programs loaded on each GPU (compiled once per Function).
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/ptx.hpp"
#include "runtime/cuda/devices.hpp"

namespace pxl::cuda {

// A Function's kernels loaded on one GPU: functions[i] runs kernel i (null
// for a kernel left to the host; see PtxProgram::on_device).
struct LoadedProgram {
  std::shared_ptr<const PtxProgram> ptx;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;
  std::vector<CUfunction> finish; // k<i>_finish where PtxProgram::finish[i]
};

class CudaRuntime {
public:
  // `count` devices: one per GPU (0: every GPU), or, when `logical`, `count`
  // logical devices on GPU 0. Throws pxl::Error(E0400) naming what is missing.
  // `shared`: a driver opened before (and kept after) this runtime; null: its own.
  CudaRuntime(int count, bool logical, const LibraryNames& names = LibraryNames::defaults(),
              std::shared_ptr<Driver> shared = nullptr);
  ~CudaRuntime();
  CudaRuntime(const CudaRuntime&) = delete;
  CudaRuntime& operator=(const CudaRuntime&) = delete;

  int device_count() const { return static_cast<int>(devices_.size()); }
  GpuDevice& device(int i) { return *devices_[static_cast<size_t>(i)]; }
  bool logical() const { return logical_; }
  Driver& driver() { return *driver_; }
  TransferLog& transfers() { return transfers_; }
  // "NVIDIA H200 (sm_90), driver 13.0" per distinct GPU, for :mesh and errors.
  std::string describe() const;
  // The kernels of `f` loaded on `dev`'s GPU; compiled for its compute
  // capability once per Function text.
  std::shared_ptr<const LoadedProgram> program(const Function& f, GpuDevice& dev);
  // NCCL: rank `rank`'s communicator of the clique of GPUs `ordinals` (a
  // mesh-axis group, in rank order). The clique is created the first time it
  // is asked for (ncclCommInitAll, all ranks at once) and kept until the
  // runtime goes, so each mesh's groups pay for it once.
  ncclComm_t nccl_comm(const std::vector<int>& ordinals, int rank);
  // --time-passes: from now on, where the CUDA runtime's time goes (compiling
  // PTX, the driver's compilation of it when a module loads, cuBLAS's and
  // NCCL's start-up), and, at once, what opening the driver and creating the
  // devices took. Null: not timed.
  void set_phase_times(PhaseTimes* times);

private:
  // Before driver_: what opening the driver takes is measured from here.
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  double driver_seconds_ = 0, devices_seconds_ = 0;
  PhaseTimes* times_ = nullptr;
  std::shared_ptr<Driver> driver_;
  bool logical_ = false;
  TransferLog transfers_;
  std::vector<std::unique_ptr<GpuDevice>> devices_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const PtxProgram>> ptx_;       // by arch + IR text
  std::map<std::string, std::shared_ptr<const LoadedProgram>> loaded_; // by GPU + arch + IR
  std::mutex nccl_mu_;
  std::map<std::vector<int>, std::vector<ncclComm_t>> nccl_comms_; // by GPU ordinals
};

// Launches kernel `index` of `prog` on `dev`'s stream with buffer pointers
// `ptrs` (output, inputs, scratch), sized as the kernel was written for (see
// PtxProgram), then its `_finish` entry when it has one.
void launch_kernel(GpuDevice& dev, const LoadedProgram& prog, size_t index,
                   std::vector<CUdeviceptr> ptrs);

} // namespace pxl::cuda
