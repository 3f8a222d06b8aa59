// The LLVM optimisation pipeline every kernel module goes through (host JIT
// and NVPTX), in one place. Includes LLVM headers: internal to codegen/.
#pragma once
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

namespace pxl {
class PhaseTimes;
}

namespace pxl::codegen {

// Runs LLVM's O3 module pipeline for `tm`. `vectorize` turns on the loop and
// SLP vectorizers (host CPUs); GPU kernels get their parallelism from the grid.
// With `times` (--time-passes), each pass's time is added to the phase
// "LLVM pass: <name>" (pass managers and adaptors, which only contain others,
// are left out).
void run_o3(llvm::Module& m, llvm::TargetMachine& tm, bool vectorize, PhaseTimes* times = nullptr);

} // namespace pxl::codegen
