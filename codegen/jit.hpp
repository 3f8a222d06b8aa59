// Compiles the fused kernels of a Function and its schedule (schedule.hpp)
// with ORC LLJIT for the host CPU (O3, host target machine) and caches the
// result by IR text. No LLVM headers,
// so the runtime and the tests can use it without LLVM's include paths.
#pragma once
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "codegen/buffer_plan.hpp"
#include "codegen/plan.hpp"
#include "codegen/schedule.hpp"

namespace pxl {

class KernelPool; // codegen/kernel_pool.hpp

// A kernel's entry point: args = output, inputs..., scratch (see emitter.hpp);
// it runs iterations [begin, end) of its outermost loop (KernelSplit).
using KernelFn = void (*)(void* const* args, int64_t begin, int64_t end);

struct CompiledProgram {
  KernelPlan plan;
  BufferPlan buffers;               // where the schedule keeps each value
  std::vector<KernelFn> kernels;    // kernels[i] runs plan.kernels[i]
  ScheduleFn schedule = nullptr;    // runs plan.steps (schedule.hpp); null without kernels
  std::shared_ptr<void> owner;      // keeps the JIT (and so the code) alive
  std::shared_ptr<KernelPool> pool; // the CodeCache's threads for big kernels
};

class PhaseTimes; // lang/phase_times.hpp

struct CodeCacheOptions {
  // Where compiled objects are kept across processes, content-addressed by the
  // emitted LLVM IR, the target and the flags; "" keeps them in memory only.
  std::string disk_dir;
  PhaseTimes* times = nullptr;     // --time-passes: plan, emit, O3, codegen, load, link
  std::ostream* explain = nullptr; // --explain-cache: one line per program compiled or loaded
  int workers = -1;                // the kernel pool's threads; -1: KernelPool::default_workers()
};

// The on-disk cache directory pxl uses by default: $PXL_CACHE_DIR when set
// ("" or "off" turn the cache off), else $XDG_CACHE_HOME/pxl, else
// $HOME/.cache/pxl, else none.
std::string default_disk_cache_dir();

// Refuses (E0105-style ValueError) a value that could never be allocated
// (more than 2^48 bytes) before plans multiply its size into byte counts.
void refuse_huge_values(const Function& f);

// One JIT and its compiled programs. Owned by the Platform (one per
// interpreter), so nothing compiled is global; thread-safe.
class CodeCache {
public:
  explicit CodeCache(CodeCacheOptions opts = {});
  ~CodeCache();
  CodeCache(const CodeCache&) = delete;
  CodeCache& operator=(const CodeCache&) = delete;
  // The compiled kernels of `f`; the same Function text compiles once per
  // process, and once per disk cache when there is one.
  std::shared_ptr<const CompiledProgram> compile(const Function& f);
  int compilations() const; // programs compiled by LLVM in this process
  int disk_loads() const;   // programs loaded from the disk cache instead

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The kernels and schedule of `f` as LLVM IR text (--dump=llvm): after the O3
// pipeline for the host when `optimized`, else as emitted.
std::string kernels_llvm_ir(const Function& f, bool optimized);
// The kernels of `f` as PTX for sm_90 (--dump=ptx; codegen/ptx.cpp). Their
// runtime math comes from libdevice; kernels that cannot run on the GPU are
// left out (listed in a comment).
std::string kernels_ptx(const Function& f);

} // namespace pxl
