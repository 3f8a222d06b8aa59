// Emits a program's compiled schedule (codegen/schedule.hpp) into the module
// that holds its kernels. Internal to codegen/; includes LLVM.
#pragma once
#include <string>

#include <llvm/IR/Module.h>

#include "codegen/buffer_plan.hpp"

namespace pxl::codegen {

// Adds `<prefix>schedule` (a ScheduleFn) to `m`, which must already hold the
// host kernels of `plan` named `<prefix>k<i>` (emit_module).
void emit_schedule(llvm::Module& m, const Function& f, const KernelPlan& plan,
                   const BufferPlan& buffers, const std::string& prefix);

} // namespace pxl::codegen
