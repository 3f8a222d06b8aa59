// How traced programs run (--exec): compiled by the LLVM JIT, or interpreted
// with the reference kernels (the oracle). A header of its own so options
// structs can name it without pulling in the runtime.
#pragma once

namespace pxl {

enum class ExecMode { Interp, Jit };

} // namespace pxl
