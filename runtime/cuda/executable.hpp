// The CUDA executable: a traced SPMD Function run on the GPUs.
#pragma once
#include <memory>
#include <vector>

#include "runtime/executable.hpp"

namespace pxl {
class CodeCache;
}

namespace pxl::cuda {

class CudaRuntime;

// Participant p runs on CUDA device p / layout.per_thread. Fused kernels run
// as PTX on the device, f32/f64 matmuls through cuBLAS; the remaining steps
// (structural and index ops, collectives, debug prints) run on the host as
// the LLVM executable runs them, their operands copied down and results
// copied up only when needed, each copy logged for --profile. Kernels with no
// device version run as host code from `host`.
std::unique_ptr<Executable> make_cuda_executable(std::shared_ptr<const Function> fn,
                                                 SpmdLayout layout, std::vector<Array> consts,
                                                 CudaRuntime& runtime, CodeCache& host);

} // namespace pxl::cuda
