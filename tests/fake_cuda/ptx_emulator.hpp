// A PTX emulator for the stand-in CUDA driver (libpxl_emu_cuda.so): a module
// is parsed once into pre-decoded instructions (ptx_program.hpp) and kernels
// run on the host, every block and thread, threads as explicit-state
// coroutines that switch at bar.sync / bar.warp.sync / shfl.sync / vote.sync.
// Device memory is host memory; global accesses are checked against the
// allocations noted here, shared and local ones against their declared sizes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ptx_program.hpp"

namespace ptxemu {

// The module of PTX `text`, or null with `error` naming the unsupported or
// malformed line.
std::unique_ptr<Module> parse_module(const char* text, std::string& error);

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// Runs `k` over `grid` x `block` with the cuLaunchKernel parameters `params`
// and `dynamic_shared` bytes of extern shared memory. "" on success, else what
// went wrong (the kernel, instruction, thread and address of the fault).
std::string launch(const Kernel& k, Dim3 grid, Dim3 block, unsigned dynamic_shared, void** params);

// The live device allocations (cuMemAlloc / cuMemFree), for the bounds checks.
void note_allocation(uint64_t base, size_t bytes);
void note_free(uint64_t base);

} // namespace ptxemu
