// The pre-decoded form of a PTX module for the emulator (ptx_emulator.hpp):
// every instruction is a handler plus resolved operands, so executing it does
// no string work. A module is immutable once parsed; all execution state lives
// in the Lane / launch structures of one cuLaunchKernel.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ptxemu {

// Register-file slots every thread has ahead of the kernel's own registers.
// Special registers are ordinary slots written when a block starts, and the
// bases of the per-block/per-thread memories are slots too, so that every
// operand reads as regs[reg] + imm: an immediate is (kZero, value), a register
// (slot, 0), an address [%rd1+8] (slot, 8), a shared variable (kSharedBase, offset).
enum Slot : uint32_t {
  kZero,
  kOne,   // the guard of an unguarded instruction
  kSink,  // the `_` destination
  kCarry, // the carry flag of add.cc / addc / mad.cc
  kTidX,
  kTidY,
  kTidZ,
  kNtidX,
  kNtidY,
  kNtidZ,
  kCtaidX,
  kCtaidY,
  kCtaidZ,
  kNctaidX,
  kNctaidY,
  kNctaidZ,
  kLaneId,
  kWarpId,
  kNWarpId,
  kLanemaskEq,
  kLanemaskLt,
  kLanemaskLe,
  kLanemaskGt,
  kLanemaskGe,
  kSharedBase, // host address of this block's shared memory
  kLocalBase,  // host address of this thread's local memory
  kParamBase,  // host address of the launch's kernel parameters
  kFirstUser
};

struct Operand {
  uint32_t reg = kZero;
  uint64_t imm = 0;
};

struct Instr;
struct Lane;
using Handler = void (*)(const Instr&, Lane&);

// What the scheduler does with an instruction; only Op runs a handler.
enum class Kind : uint8_t {
  Op,
  Branch,   // pc = target
  Call,     // handler copies the arguments; pc = target, regs[aux32] = pc + 1
  Return,   // in a .func: pc = regs[aux32]; in the kernel: the thread exits
  Exit,     // the thread is done
  Barrier,  // bar.sync / barrier.sync: the whole block
  WarpSync, // bar.warp.sync: the lanes of op[0]'s mask
  Shfl,     // shfl.sync: d|p, a, b, c, mask
  Vote,     // vote.sync: d, a, mask
  Trap,     // trap: the launch fails
};

// Memory spaces of ld/st/atom, for the bounds checks.
enum class Space : uint8_t { Generic, Global, Shared, Local, Param, Const };

struct Instr {
  Handler fn = nullptr;
  Kind kind = Kind::Op;
  bool guard_neg = false;
  uint8_t n = 0;     // operands in op[]
  uint8_t mode = 0;  // family-specific (shfl mode, vote mode, boolean op, ...)
  uint8_t sub = 0;   // a second family-specific code (the comparison of setp)
  uint8_t width = 0; // bytes per element of a memory access
  uint8_t vec = 1;   // elements of a vector access
  Space space = Space::Generic;
  uint32_t guard = kOne;
  uint32_t target = 0; // branch / call target
  uint32_t aux32 = 0;  // return-address slot of Call / Return
  uint32_t index = 0;  // this instruction's index in the kernel's text[]
  Operand op[7];
};

struct Kernel {
  std::string name;
  std::vector<Instr> code;
  std::vector<std::string> text; // "line N: instruction", for messages
  uint32_t nregs = kFirstUser;
  uint64_t shared_bytes = 0;   // static .shared
  bool dynamic_shared = false; // an .extern .shared array exists
  uint64_t local_bytes = 0;    // .local depots and call parameters per thread
  std::vector<uint32_t> param_offset, param_size;
  uint64_t param_bytes = 0;
  const struct Module* module = nullptr;
};

struct Module {
  std::map<std::string, std::unique_ptr<Kernel>> kernels;
  // Module-scope .global/.const variables (read-only tables such as libdevice's
  // 2/pi bits); kernels see them at these host addresses.
  std::vector<uint64_t> globals; // 8-byte aligned storage
  uint64_t globals_bytes = 0;
  uint64_t globals_begin() const { return reinterpret_cast<uintptr_t>(globals.data()); }
};

// One thread's view while it runs: its registers and the launch it is in.
struct Launch;
struct Lane {
  uint64_t* regs;
  Launch* launch;
  const Instr* at = nullptr; // the instruction being executed, for messages
};

// Register reads and writes: slots hold values zero- or sign-extended to 64
// bits; a read truncates to its type.
template <class T> inline T get(const Lane& l, const Operand& o) {
  uint64_t v = l.regs[o.reg] + o.imm;
  if constexpr (sizeof(T) == 8) {
    T t;
    std::memcpy(&t, &v, 8);
    return t;
  } else {
    uint32_t w = static_cast<uint32_t>(v);
    T t;
    std::memcpy(&t, &w, sizeof(T)); // little-endian: the low bytes
    return t;
  }
}

template <class T> inline uint64_t widen(T v) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else if constexpr (std::is_integral_v<T>)
    return static_cast<uint64_t>(v);
  else if constexpr (sizeof(T) == 4) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
  } else {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    return u;
  }
}

template <class T> inline void put(Lane& l, const Operand& o, T v) { l.regs[o.reg] = widen(v); }

} // namespace ptxemu
