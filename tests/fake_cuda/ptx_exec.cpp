// Running a kernel: blocks one after another, each block's threads as
// explicit-state coroutines (a pc and a register file each). A thread runs
// until it exits or reaches a synchronizing instruction; when every thread is
// waiting, the warp operations whose lanes have all arrived are performed
// (shfl.sync exchanges values, vote.sync combines predicates, bar.warp.sync
// just releases), and else a bar.sync that the whole block reached. Exited
// threads count as arrived. Nothing else possible is a deadlock, reported.
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <shared_mutex>

#include "ptx_emulator.hpp"
#include "ptx_launch.hpp"

namespace ptxemu {

namespace {

std::shared_mutex alloc_mu;
std::map<uint64_t, uint64_t>& allocations() { // base -> end
  static std::map<uint64_t, uint64_t> m;
  return m;
}

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

enum class State : uint8_t { Ready, Waiting, Done };

struct Block {
  const Kernel& k;
  Launch& L;
  unsigned threads;
  std::vector<uint64_t>& regs;
  std::vector<uint32_t> pc;
  std::vector<State> state;

  uint64_t* r(unsigned t) { return regs.data() + static_cast<size_t>(t) * k.nregs; }
  const Instr& at(unsigned t) { return k.code[pc[t]]; }

  // Runs thread t until it waits or is done.
  State run(unsigned t) {
    Lane lane{r(t), &L};
    uint64_t* regs = lane.regs;
    const Instr* code = k.code.data();
    uint32_t p = pc[t];
    for (;;) {
      const Instr& in = code[p];
      if ((regs[in.guard] != 0) == in.guard_neg) {
        ++p;
        continue;
      }
      switch (in.kind) {
      case Kind::Op:
        lane.at = &in;
        in.fn(in, lane);
        ++p;
        break;
      case Kind::Branch:
        p = in.target;
        break;
      case Kind::Call:
        regs[in.aux32] = p + 1;
        p = in.target;
        break;
      case Kind::Return:
        p = static_cast<uint32_t>(regs[in.aux32]);
        break;
      case Kind::Exit:
        pc[t] = p;
        return State::Done;
      case Kind::Trap:
        lane.at = &in;
        L.fault(lane, "trap", 0);
      default: // a synchronizing instruction: wait there
        pc[t] = p;
        return State::Waiting;
      }
    }
  }

  uint32_t mask_of(unsigned t, const Operand& o) {
    return static_cast<uint32_t>(r(t)[o.reg] + o.imm);
  }

  // Performs the warp operation that lane `first` waits at if all lanes of its
  // member mask have arrived at a warp operation (or exited).
  bool try_warp(unsigned first) {
    const Instr& in = at(first);
    unsigned warp = first / 32, base = warp * 32, n = std::min(32u, threads - base);
    const Operand& mo = in.kind == Kind::Shfl   ? in.op[5]
                        : in.kind == Kind::Vote ? in.op[2]
                                                : in.op[0];
    uint32_t mask = mask_of(first, mo);
    if (!(mask >> (first - base) & 1)) {
      Lane lane{r(first), &L, &in};
      L.fault(lane, "the executing lane is not in the member mask " + hex(mask), 0);
    }
    uint32_t members = 0;
    for (unsigned i = 0; i < n; ++i) {
      if (!(mask >> i & 1)) continue;
      unsigned t = base + i;
      if (state[t] == State::Done) continue;
      if (state[t] != State::Waiting) return false;
      Kind kd = at(t).kind;
      if (kd == Kind::Barrier) return false;
      if (kd != in.kind) {
        Lane lane{r(first), &L, &in};
        L.fault(lane, "lanes of one member mask wait at different kinds of warp operations", 0);
      }
      members |= 1u << i;
    }
    if (in.kind == Kind::Shfl) shfl(base, n, members);
    if (in.kind == Kind::Vote) vote(base, n, members);
    for (unsigned i = 0; i < n; ++i)
      if (members >> i & 1) {
        ++pc[base + i];
        state[base + i] = State::Ready;
      }
    return true;
  }

  void shfl(unsigned base, unsigned n, uint32_t members) {
    uint32_t value[32], out[32];
    bool ok[32];
    for (unsigned i = 0; i < n; ++i)
      if (members >> i & 1) value[i] = mask_of(base + i, at(base + i).op[2]);
    for (unsigned i = 0; i < n; ++i) {
      if (!(members >> i & 1)) continue;
      const Instr& in = at(base + i);
      uint32_t b = mask_of(base + i, in.op[3]), c = mask_of(base + i, in.op[4]);
      uint32_t seg = (c >> 8) & 0x1f, clamp = c & 0x1f;
      uint32_t min_lane = i & seg, max_lane = min_lane | (clamp & ~seg);
      int j;
      bool p;
      switch (in.mode) {
      case 0: // up
        j = static_cast<int>(i) - static_cast<int>(b);
        p = j >= static_cast<int>(max_lane);
        break;
      case 1: // down
        j = static_cast<int>(i + b);
        p = j <= static_cast<int>(max_lane);
        break;
      case 2: // bfly
        j = static_cast<int>(i ^ b);
        p = j <= static_cast<int>(max_lane);
        break;
      default: // idx
        j = static_cast<int>(min_lane | (b & 0x1f & ~seg));
        p = j <= static_cast<int>(max_lane);
      }
      if (!p) j = static_cast<int>(i);
      // A source lane outside the mask (or the block) is undefined on a GPU: the own value here.
      bool from = j >= 0 && j < static_cast<int>(n) && (members >> j & 1);
      out[i] = from ? value[j] : value[i];
      ok[i] = p;
    }
    for (unsigned i = 0; i < n; ++i) {
      if (!(members >> i & 1)) continue;
      const Instr& in = at(base + i);
      uint64_t* rr = r(base + i);
      rr[in.op[0].reg] = out[i];
      rr[in.op[1].reg] = ok[i];
    }
  }

  void vote(unsigned base, unsigned n, uint32_t members) {
    uint32_t ballot = 0;
    for (unsigned i = 0; i < n; ++i)
      if (members >> i & 1) {
        const Instr& in = at(base + i);
        if ((r(base + i)[in.op[1].reg] + in.op[1].imm) != 0) ballot |= 1u << i;
      }
    for (unsigned i = 0; i < n; ++i) {
      if (!(members >> i & 1)) continue;
      const Instr& in = at(base + i);
      uint64_t v = in.mode == 0   ? ballot == members
                   : in.mode == 1 ? ballot != 0
                   : in.mode == 2 ? (ballot == 0 || ballot == members)
                                  : ballot;
      r(base + i)[in.op[0].reg] = v;
    }
  }

  void execute() {
    std::fill(state.begin(), state.end(), State::Ready);
    std::fill(pc.begin(), pc.end(), 0);
    for (;;) {
      for (unsigned t = 0; t < threads; ++t)
        if (state[t] == State::Ready) state[t] = run(t);
      bool progress = false, waiting = false, all_at_barrier = true;
      for (unsigned t = 0; t < threads; ++t) {
        if (state[t] != State::Waiting) continue;
        waiting = true;
        if (at(t).kind == Kind::Barrier) continue;
        all_at_barrier = false;
        progress |= try_warp(t);
      }
      if (!waiting) return;
      if (progress) continue;
      if (!all_at_barrier) {
        unsigned t = 0;
        while (state[t] != State::Waiting || at(t).kind == Kind::Barrier) ++t;
        Lane lane{r(t), &L, &at(t)};
        L.fault(lane, "deadlock: the warp operation's lanes never all arrive", 0);
      }
      for (unsigned t = 0; t < threads; ++t)
        if (state[t] == State::Waiting) ++pc[t], state[t] = State::Ready;
    }
  }
};

} // namespace

void note_allocation(uint64_t base, size_t bytes) {
  std::unique_lock lock(alloc_mu);
  allocations()[base] = base + bytes;
}

void note_free(uint64_t base) {
  std::unique_lock lock(alloc_mu);
  allocations().erase(base);
}

bool Launch::in_allocation(uint64_t addr, uint64_t bytes) {
  std::shared_lock lock(alloc_mu);
  auto& m = allocations();
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return false;
  --it;
  if (addr + bytes > it->second || addr + bytes < addr) return false;
  alloc_lo = it->first, alloc_hi = it->second;
  return true;
}

void Launch::fault(const Lane& l, const std::string& what, uint64_t addr) const {
  std::string m = "kernel " + kernel->name + ": " + what;
  if (addr) m += " at " + hex(addr);
  size_t t = static_cast<size_t>(l.regs - regs_base) / nregs;
  m += " (block " + std::to_string(block) + ", thread " + std::to_string(t) + ")";
  if (l.at) m += "\n  at PTX " + kernel->text[l.at->index];
  throw Fault{m};
}

std::string launch(const Kernel& k, Dim3 grid, Dim3 block, unsigned dynamic_shared, void** params) {
  if (dynamic_shared) return "kernel " + k.name + ": dynamic shared memory is not emulated";
  unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads > 1024 || grid.x * grid.y * grid.z == 0)
    return "kernel " + k.name + ": invalid launch geometry";
  Launch L;
  L.kernel = &k;
  std::vector<uint64_t> param((k.param_bytes + 7) / 8 + 1, 0);
  auto* pbytes = reinterpret_cast<uint8_t*>(param.data());
  for (size_t i = 0; i < k.param_size.size(); ++i)
    std::memcpy(pbytes + k.param_offset[i], params[i], k.param_size[i]);
  L.param_lo = reinterpret_cast<uintptr_t>(pbytes);
  L.param_hi = L.param_lo + k.param_bytes;
  L.globals_lo = k.module->globals_begin();
  L.globals_hi = L.globals_lo + k.module->globals_bytes;
  std::vector<uint64_t> shared((k.shared_bytes + 7) / 8 + 1);
  std::vector<uint64_t> local((k.local_bytes * threads + 7) / 8 + 1);
  std::vector<uint64_t> regs(static_cast<size_t>(k.nregs) * threads);
  L.regs_base = regs.data();
  L.nregs = k.nregs;
  L.block_threads = threads;
  Block b{k, L, threads, regs, std::vector<uint32_t>(threads), std::vector<State>(threads)};
  unsigned warps = (threads + 31) / 32;
  try {
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          L.block = (z * grid.y + y) * grid.x + x;
          std::fill(shared.begin(), shared.end(), 0);
          L.shared_lo = reinterpret_cast<uintptr_t>(shared.data());
          L.shared_hi = L.shared_lo + k.shared_bytes;
          std::fill(regs.begin(), regs.end(), 0);
          for (unsigned t = 0; t < threads; ++t) {
            uint64_t* r = b.r(t);
            unsigned lane = t % 32;
            r[kOne] = 1;
            r[kTidX] = t % block.x;
            r[kTidY] = t / block.x % block.y;
            r[kTidZ] = t / (block.x * block.y);
            r[kNtidX] = block.x, r[kNtidY] = block.y, r[kNtidZ] = block.z;
            r[kCtaidX] = x, r[kCtaidY] = y, r[kCtaidZ] = z;
            r[kNctaidX] = grid.x, r[kNctaidY] = grid.y, r[kNctaidZ] = grid.z;
            r[kLaneId] = lane;
            r[kWarpId] = t / 32;
            r[kNWarpId] = warps;
            r[kLanemaskEq] = 1u << lane;
            r[kLanemaskLt] = (1u << lane) - 1;
            r[kLanemaskLe] = (2ull << lane) - 1;
            r[kLanemaskGt] = ~static_cast<uint32_t>((2ull << lane) - 1);
            r[kLanemaskGe] = ~static_cast<uint32_t>((1u << lane) - 1);
            r[kSharedBase] = L.shared_lo;
            r[kLocalBase] = reinterpret_cast<uintptr_t>(local.data()) + k.local_bytes * t;
            r[kParamBase] = L.param_lo;
          }
          std::fill(local.begin(), local.end(), 0);
          b.execute();
        }
  } catch (const Fault& f) {
    return f.message;
  }
  return "";
}

} // namespace ptxemu
