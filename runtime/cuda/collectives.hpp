// The CUDA executable's collectives on device buffers. Participants on
// distinct GPUs (one per device thread) use NCCL: one communicator clique per
// mesh-axis group, created once and cached on the CudaRuntime, consecutive
// collectives (a pytree's leaves) in one ncclGroupStart/End. Participants
// sharing one GPU (logical devices; NCCL refuses two ranks on one GPU)
// exchange their buffer addresses through the CommWorld and copy or reduce
// on the device, in rank order like the CPU mesh. Collectives without a
// device version here go through the host (runtime/spmd_steps).
#pragma once
#include <memory>
#include <vector>

#include "runtime/cuda/runtime.hpp"
#include "runtime/executable.hpp"

namespace pxl::cuda {

enum class CollectivePath {
  Host,      // copied to the host, run by the CommWorld (mixed layouts)
  Nccl,      // one participant per device thread, each on its own GPU
  SharedGpu, // every participant on one GPU
};
CollectivePath collective_path(CudaRuntime& rt, const SpmdLayout& layout);
const char* collective_path_name(CollectivePath p); // "host", "nccl", "shared-gpu"

// Whether collective `in` has a device version: psum/pmax/pmin, ppermute, and
// all_gather/psum_scatter along axis 0 (no relayout around the exchange).
bool gpu_collective(const Function& f, const Instr& in);

// f(p0, ..., pG-1) = p0 op p1 op ... in rank order, elementwise over n
// elements: the CPU mesh's reduction (halves accumulate in f32 and round
// once; bool sum/max is or, min is and), one fused kernel for the GPUs that
// share one GPU.
std::shared_ptr<Function> rank_order_reduction(ReduceKind kind, DType d, int group, int64_t n);

// One collective instruction of one device thread.
struct GpuCollective {
  const Instr* instr = nullptr;
  const GroupLayout* groups = nullptr;
  CollectiveSite site;
  DType dtype = DType::Float32;
  int64_t count = 0;                                  // elements of each participant's operand
  size_t out_bytes = 0;                               // bytes of each participant's result
  std::vector<CUdeviceptr> inputs;                    // per local participant
  std::vector<std::shared_ptr<DeviceBuffer>> outputs; // filled by the run
};

// Runs `calls` (in program order; none reads another's result) for device
// thread `thread` on `dev`. Throws pxl::Error(E0400) naming the failing call.
void run_gpu_collectives(CudaRuntime& rt, GpuDevice& dev, CollectivePath path,
                         const SpmdLayout& layout, int thread, std::vector<GpuCollective>& calls,
                         CommWorld& world);

} // namespace pxl::cuda
