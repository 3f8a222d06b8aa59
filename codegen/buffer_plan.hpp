// Static buffer planning for the compiled schedule (codegen/schedule.hpp): where
// each value of a Function lives while one participant runs it. Sizes are
// static, so kernel outputs that never leave the program get fixed offsets in
// one arena per participant, reusing the bytes of values that are dead by then;
// everything that can be seen from outside keeps an allocation of its own.
// No LLVM here (the planner is unit-tested on its own).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/plan.hpp"

namespace pxl {

struct BufferPlan {
  enum class Kind : uint8_t {
    None,  // not defined by the program's steps (dead pure code)
    Input, // a parameter or constant: the caller's array
    Host,  // made by a host step (reference kernel, BLAS, collective, ...)
    Arena, // a kernel output at `offset` in the participant's arena
    Owned, // a kernel output in its own allocation: a result, or seen from outside
    Alias, // a host reshape of an arena value: the same bytes (`root`'s)
  };
  struct Slot {
    Kind kind = Kind::None;
    int64_t offset = -1; // Arena: bytes into the arena; Alias: its root's
    int64_t bytes = 0;   // the value's size
    int root = -1;       // Alias: the arena value whose bytes it shares
    // Liveness over KernelPlan::steps of the bytes it uses (its alias group's
    // for Arena and Alias values): defined at step `def`, last read at `last`.
    int def = -1, last = -1;
  };
  std::vector<Slot> values;             // by value id
  std::vector<int64_t> scratch;         // by kernel: arena offset of its scratch, or -1
  int64_t arena_bytes = 0;              // per participant
  static constexpr int64_t kAlign = 64; // arena offsets are multiples of this
};

// Plans the buffers of `f` run as `plan`: liveness of every kernel output over
// the steps (a host reshape's result extends its operand's), first-fit
// placement of the arena values and kernel scratch buffers in decreasing size,
// never overlapping two whose live ranges meet (so a kernel's output never
// shares bytes with its inputs). A kernel output goes to the arena unless it
// (or a reshape of it) is a result or is handed to a step that keeps it
// beyond the step (jax.debug.print's records, an SPMD call's callee).
BufferPlan plan_buffers(const Function& f, const KernelPlan& plan);

// "arena 1280 bytes: %3 @0 [0,2], %5 @0 [3,4] ...; owned: %7" for --dump and tests.
std::string describe_buffers(const BufferPlan& b);

} // namespace pxl
