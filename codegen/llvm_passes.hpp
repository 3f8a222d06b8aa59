// The LLVM optimisation pipeline every kernel module goes through (host JIT
// and NVPTX), in one place. Includes LLVM headers: internal to codegen/.
#pragma once
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

namespace pxl::codegen {

// Runs LLVM's O3 module pipeline for `tm`. `vectorize` turns on the loop and
// SLP vectorizers (host CPUs); GPU kernels get their parallelism from the grid.
void run_o3(llvm::Module& m, llvm::TargetMachine& tm, bool vectorize);

} // namespace pxl::codegen
