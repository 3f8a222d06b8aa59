// The fused kernels of a Function as PTX for the CUDA backend (and
// --dump=ptx). No LLVM headers here, so the runtime can use it.
#pragma once
#include <string>
#include <vector>

#include "codegen/plan.hpp"

namespace pxl {

struct PtxOptions {
  std::string arch = "sm_90"; // the GPU's compute capability, sm_75 and up
  // libdevice.10.bc, which gives device versions of exp, log, tanh, ...; empty:
  // find_libdevice(). Kernels needing it are left out when it is missing.
  std::string libdevice;
};

struct PtxProgram {
  KernelPlan plan;
  std::string ptx;   // one module; kernel i is the entry `k<i>`
  std::string notes; // "// k3 left out: ..." lines, one per kernel not in `ptx`
  // Per kernel: whether it is in `ptx`; the threads its grid-stride loop
  // wants (0: launch one thread, it does all the work); the threads per block
  // it was written for (at most; a multiple of the threads reducing one row,
  // which never span blocks); and whether an entry `k<i>_finish` must run
  // after it, with one warp (a split reduction combining partial results).
  std::vector<bool> on_device;
  std::vector<int64_t> grid_extent;
  std::vector<int> block_threads;
  std::vector<bool> finish;
};

// The launch of a kernel wanting `extent` threads (see PtxProgram) written for
// blocks of `block` threads, on a GPU with `multiprocessors` SMs: grid-stride
// loops cover the rest when the grid is capped at 32 blocks per SM.
struct PtxLaunch {
  unsigned blocks = 1, threads = 1;
};
PtxLaunch ptx_launch(int64_t extent, int block, int multiprocessors);

// Compiles every kernel of plan_kernels(f) that can run on the GPU.
PtxProgram compile_ptx(const Function& f, const PtxOptions& options = {});

// $CUDA_HOME/nvvm/libdevice/libdevice.10.bc or the default toolkit's; "" if none.
std::string find_libdevice();

} // namespace pxl
