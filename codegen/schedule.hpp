// The compiled schedule: one LLVM function per program, in the same module as
// its kernels (codegen/emit_schedule.cpp), that runs the plan's steps for the
// local participants of one device thread in lock step. It calls small kernels
// directly and everything else through runtime entry points that the JIT
// resolves by name when it links the object (so cached objects hold no
// addresses): a host step (reference kernels, BLAS dot, collectives, debug
// prints, SPMD calls), an allocation for a kernel output that leaves the
// program, and a big kernel split over the kernel pool. Outputs that do not
// leave it live at offsets of the participant's arena (codegen/buffer_plan.hpp).
// No LLVM headers.
#pragma once
#include <cstdint>
#include <span>

#include "codegen/jit_runtime.hpp"

namespace pxl {

// What the schedule calls back into. Errors never unwind through compiled
// code: an entry point that fails keeps the error (to be rethrown by whoever
// called the schedule) and returns nonzero or null, and the schedule returns
// at once with a nonzero status.
class ScheduleHost {
public:
  // Runs body instruction `instr` (a host step) for every local participant
  // and records its results' data pointers in the value table.
  virtual int host_step(int64_t instr) noexcept = 0;
  // A fresh buffer for kernel output `value` of local participant
  // `participant` (a result, or a value something keeps).
  virtual void* alloc(int64_t participant, int64_t value) noexcept = 0;
  // Runs kernel `kernel` on `args` over the kernel pool: iterations [0, extent)
  // of its outermost loop, then (when `finish`) the combining call.
  virtual int big_kernel(int64_t kernel, void* const* args, int64_t extent,
                         int64_t finish) noexcept = 0;

protected:
  ~ScheduleHost() = default;
};

// The schedule's entry point. `values` is the value table: participants rows
// of Function::values.size() data pointers, with the parameters and constants
// filled in; the schedule writes every kernel output's pointer there, the host
// writes host steps' results. `arenas[j]` is participant j's arena
// (BufferPlan::arena_bytes, 64-byte aligned). Returns 0, or nonzero after a
// failed entry point. Runs with the kernels' floating-point environment
// (flush-to-zero) set by the caller.
using ScheduleFn = int (*)(ScheduleHost* host, void** values, void* const* arenas,
                           int64_t participants);

// The runtime entry points the schedule calls ("pxl.sched.host", ...).
std::span<const RuntimeSymbol> schedule_runtime_symbols();

} // namespace pxl
