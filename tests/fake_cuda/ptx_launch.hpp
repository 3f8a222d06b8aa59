// The state of one kernel launch that handlers see through their Lane: the
// bounds of the memories an access may touch, and the failure report.
#pragma once
#include <string>

#include "ptx_program.hpp"

namespace ptxemu {

// A launch stops at its first fault; the message is cuLaunchKernel's error text.
struct Fault {
  std::string message;
};

struct Launch {
  const Kernel* kernel = nullptr;
  uint64_t shared_lo = 0, shared_hi = 0; // this block's shared memory
  uint64_t param_lo = 0, param_hi = 0;   // the kernel parameters
  uint64_t globals_lo = 0, globals_hi = 0;
  uint64_t alloc_lo = 1, alloc_hi = 0; // the last allocation an access hit
  unsigned block = 0;                  // linear index, for messages
  unsigned block_threads = 0;
  uint64_t* regs_base = nullptr; // of thread 0, to name the faulting thread
  uint32_t nregs = 0;

  // Throws the Fault for `l`'s current instruction: `what` at `addr`.
  [[noreturn]] void fault(const Lane& l, const std::string& what, uint64_t addr) const;
  // Whether [addr, addr+bytes) lies in one live cuMemAlloc allocation (and
  // remembers it for the next access).
  bool in_allocation(uint64_t addr, uint64_t bytes);
};

// The bounds check of a load (store = false) or store of `bytes` at `addr`
// in `space`; a fault stops the launch.
inline void check_access(Lane& l, Space space, uint64_t addr, uint64_t bytes, bool store) {
  Launch& L = *l.launch;
  uint64_t end = addr + bytes;
  auto within = [&](uint64_t lo, uint64_t hi) { return addr >= lo && end <= hi && end >= addr; };
  uint64_t local_lo = l.regs[kLocalBase], local_hi = local_lo + L.kernel->local_bytes;
  switch (space) {
  case Space::Global:
    if (within(L.alloc_lo, L.alloc_hi) || (!store && within(L.globals_lo, L.globals_hi)) ||
        L.in_allocation(addr, bytes))
      return;
    break;
  case Space::Shared:
    if (within(L.shared_lo, L.shared_hi)) return;
    break;
  case Space::Local:
    if (within(local_lo, local_hi)) return;
    break;
  case Space::Param: // kernel parameters (read-only) or a call's, in local memory
    if ((!store && within(L.param_lo, L.param_hi)) || within(local_lo, local_hi)) return;
    break;
  case Space::Const:
    if (!store && within(L.globals_lo, L.globals_hi)) return;
    break;
  case Space::Generic:
    if (within(L.alloc_lo, L.alloc_hi) || within(L.shared_lo, L.shared_hi) ||
        within(local_lo, local_hi) || (!store && within(L.globals_lo, L.globals_hi)) ||
        L.in_allocation(addr, bytes))
      return;
    break;
  }
  static const char* names[] = {"generic", "global", "shared", "local", "param", "const"};
  L.fault(l,
          std::string("invalid ") + names[static_cast<int>(space)] + (store ? " write" : " read") +
              " of " + std::to_string(bytes) + " bytes",
          addr);
}

} // namespace ptxemu
