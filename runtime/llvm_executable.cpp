// The LLVM executable: the host-level schedule of codegen/plan.hpp, run per
// device thread for its local participants in lock step. Kernel steps call the
// JIT-compiled fused loops; the other steps (BLAS dot, structural and index
// ops, collectives, debug prints) run exactly as in the reference executable.
#include "codegen/jit.hpp"
#include "codegen/kernel_pool.hpp"
#include "ir/ref_math.hpp"
#include "lang/diag.hpp"
#include "lang/phase_times.hpp"
#include "runtime/executable.hpp"
#include "runtime/spmd_steps.hpp"

namespace pxl {

namespace {

class LlvmExecutable : public Executable {
public:
  LlvmExecutable(std::shared_ptr<const Function> fn, SpmdLayout layout, std::vector<Array> consts,
                 std::shared_ptr<const CompiledProgram> prog)
      : fn_(std::move(fn)), layout_(std::move(layout)), consts_(std::move(consts)),
        prog_(std::move(prog)), groups_(collective_groups(*fn_, layout_)),
        independent_(participants_independent(*fn_)) {}

  bool independent() const override { return independent_; }

  std::vector<std::vector<Array>> run(int thread, const std::vector<std::vector<Array>>& inputs,
                                      CommWorld& world, std::vector<DebugRecord>& debug) override {
    const Function& f = *fn_;
    int k = layout_.per_thread;
    std::vector<std::vector<Array>> env = initial_values(f, inputs, consts_, k);
    for (const Step& s : prog_->plan.steps) {
      if (s.kind == Step::Kind::Kernel) {
        for (int j = 0; j < k; ++j)
          run_compiled_kernel(f, *prog_, static_cast<size_t>(s.index), env[j]);
        continue;
      }
      run_host_instr(f, layout_, groups_, thread, static_cast<size_t>(s.index), env, world,
                     debug, phase_times);
    }
    return result_values(f, env);
  }

private:
  std::shared_ptr<const Function> fn_;
  SpmdLayout layout_;
  std::vector<Array> consts_;
  std::shared_ptr<const CompiledProgram> prog_;
  CollectiveGroups groups_;
  bool independent_ = false;
};

} // namespace

void run_compiled_kernel(const Function& f, const CompiledProgram& prog, size_t index,
                         std::vector<Array>& env) {
  const Kernel& kn = prog.plan.kernels[index];
  const AVal& oa = f.values[kn.root].aval;
  // Results stay on their operands' device, as eval_ref's do.
  int device = kn.inputs.empty() ? 0 : env[kn.inputs[0]].device();
  // Every kernel writes each element of its output (reductions over
  // non-trailing axes initialise it first), so it is not zero-filled.
  Array out = Array::uninitialized(oa.dtype, oa.shape, oa.weak, device);
  std::vector<void*> args;
  args.push_back(out.data());
  for (int v : kn.inputs) args.push_back(const_cast<void*>(env[v].data()));
  int64_t scratch_bytes = kernel_scratch_bytes(f, kn);
  std::vector<float> scratch(static_cast<size_t>(scratch_bytes / 4));
  args.push_back(scratch.empty() ? nullptr : scratch.data());
  // Big kernels run on the CodeCache's threads (each piece with the
  // reference's floating-point environment); small ones on this thread.
  constexpr int64_t kParallelWork = int64_t{1} << 20;
  KernelSplit split = kernel_split(f, kn);
  KernelFn fn = prog.kernels[index];
  auto range = [&](int64_t begin, int64_t end) { fn(args.data(), begin, end); };
  if (prog.pool && split.work >= kParallelWork) {
    prog.pool->parallel_for(split.extent, range);
  } else {
    ref::xla::ScopedFlushDenormal ftz; // same floating-point environment as the reference
    range(0, split.extent);
  }
  if (split.finish) {
    ref::xla::ScopedFlushDenormal ftz;
    range(split.extent, split.extent + 1);
  }
  env[kn.root] = std::move(out);
}

std::unique_ptr<Executable> make_llvm_executable(std::shared_ptr<const Function> fn,
                                                 SpmdLayout layout, std::vector<Array> consts,
                                                 CodeCache* cache) {
  std::shared_ptr<const CompiledProgram> prog;
  if (cache) {
    prog = cache->compile(*fn);
  } else {
    CodeCache own; // the program keeps the JIT alive after `own` is gone
    prog = own.compile(*fn);
  }
  return std::make_unique<LlvmExecutable>(std::move(fn), std::move(layout), std::move(consts),
                                          std::move(prog));
}

std::unique_ptr<Executable> make_executable(ExecMode mode, CodeCache* cache,
                                            std::shared_ptr<const Function> fn, SpmdLayout layout,
                                            std::vector<Array> consts) {
  switch (mode) {
  case ExecMode::Jit:
    return make_llvm_executable(std::move(fn), std::move(layout), std::move(consts), cache);
  case ExecMode::Interp:
    break;
  }
  return make_reference_executable(std::move(fn), std::move(layout), std::move(consts));
}

} // namespace pxl
