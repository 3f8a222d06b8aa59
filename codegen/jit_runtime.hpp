// The functions JIT-compiled kernels call (math that must give the reference
// kernels' bits, half-precision conversions, integer pow), exported to the JIT
// as absolute symbols: no -rdynamic and no dependence on the process's libm
// symbol names. No LLVM headers.
#pragma once
#include <span>

namespace pxl {

struct RuntimeSymbol {
  const char* name; // the symbol kernels call, e.g. "pxl.exp.f32"
  void* address;
};

std::span<const RuntimeSymbol> jit_runtime_symbols();

} // namespace pxl
