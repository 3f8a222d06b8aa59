// The compiled schedule (see schedule.hpp): straight-line code over the plan's
// steps. A kernel step is a loop over the local participants (lock step: every
// participant finishes a step before any starts the next, as collectives
// need) that finds the output's bytes (an arena offset, or a runtime
// allocation), fills the kernel's argument array from the value table and
// calls the kernel, or the pool entry point for big ones; a host step is one
// call for all participants. A failed entry point returns 1 at once.
#include <llvm/IR/IRBuilder.h>

#include "codegen/schedule_emitter.hpp"

namespace pxl::codegen {

using llvm::Value;

void emit_schedule(llvm::Module& m, const Function& f, const KernelPlan& plan,
                   const BufferPlan& buffers, const std::string& prefix) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto* i64 = b.getInt64Ty();
  auto* i32 = b.getInt32Ty();
  auto c64 = [&](int64_t v) { return b.getInt64(static_cast<uint64_t>(v)); };

  auto* fn = llvm::Function::Create(llvm::FunctionType::get(i32, {ptr, ptr, ptr, i64}, false),
                                    llvm::Function::ExternalLinkage, prefix + "schedule", m);
  fn->setDoesNotThrow(); // the entry points never throw (errors are returned)
  Value* host = fn->getArg(0);
  Value* values = fn->getArg(1);
  Value* arenas = fn->getArg(2);
  Value* participants = fn->getArg(3);
  host->setName("host");
  values->setName("values");
  arenas->setName("arenas");
  participants->setName("participants");

  auto entry_point = [&](const char* name, llvm::Type* ret, std::vector<llvm::Type*> params) {
    llvm::FunctionCallee c =
        m.getOrInsertFunction(name, llvm::FunctionType::get(ret, params, false));
    llvm::cast<llvm::Function>(c.getCallee())->setDoesNotThrow();
    return c;
  };
  llvm::FunctionCallee host_step = entry_point("pxl.sched.host", i32, {ptr, i64});
  llvm::FunctionCallee alloc = entry_point("pxl.sched.alloc", ptr, {ptr, i64, i64});
  llvm::FunctionCallee big_kernel = entry_point("pxl.sched.kernel", i32, {ptr, i64, ptr, i64, i64});

  auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  auto* fail = llvm::BasicBlock::Create(ctx, "fail", fn);
  b.SetInsertPoint(fail);
  b.CreateRet(b.getInt32(1));
  b.SetInsertPoint(entry);
  // One argument array for every kernel call: output, inputs..., scratch.
  size_t max_args = 2;
  for (const Kernel& kn : plan.kernels) max_args = std::max(max_args, kn.inputs.size() + 2);
  Value* args = b.CreateAlloca(ptr, c64(static_cast<int64_t>(max_args)), "args");
  const int64_t nvalues = static_cast<int64_t>(f.values.size());

  // Continues in a new block when `ok` holds, else leaves through `fail`.
  auto or_fail = [&](Value* ok, const char* name) {
    auto* next = llvm::BasicBlock::Create(ctx, name, fn);
    b.CreateCondBr(ok, next, fail);
    b.SetInsertPoint(next);
  };

  for (size_t si = 0; si < plan.steps.size(); ++si) {
    const Step& st = plan.steps[si];
    if (st.kind == Step::Kind::Instr) {
      Value* rc = b.CreateCall(host_step, {host, c64(st.index)});
      or_fail(b.CreateICmpEQ(rc, b.getInt32(0)), "step");
      continue;
    }
    const Kernel& kn = plan.kernels[st.index];
    llvm::Function* kfn = m.getFunction(prefix + "k" + std::to_string(st.index));
    KernelSplit split = kernel_split(f, kn);
    const BufferPlan::Slot& out = buffers.values[kn.root];
    int64_t scratch = buffers.scratch[st.index];
    // for (j = 0; j < participants; ++j), participants >= 1.
    llvm::BasicBlock* pre = b.GetInsertBlock();
    auto* body = llvm::BasicBlock::Create(ctx, "kernel" + std::to_string(st.index), fn);
    b.CreateBr(body);
    b.SetInsertPoint(body);
    llvm::PHINode* j = b.CreatePHI(i64, 2, "j");
    j->addIncoming(c64(0), pre);
    Value* row = b.CreateInBoundsGEP(ptr, values, b.CreateMul(j, c64(nvalues)), "row");
    Value* arena = nullptr;
    if (out.kind == BufferPlan::Kind::Arena || scratch >= 0)
      arena = b.CreateLoad(ptr, b.CreateInBoundsGEP(ptr, arenas, j), "arena");
    Value* o;
    if (out.kind == BufferPlan::Kind::Arena) {
      o = b.CreateInBoundsGEP(b.getInt8Ty(), arena, c64(out.offset));
    } else {
      o = b.CreateCall(alloc, {host, j, c64(kn.root)});
      or_fail(b.CreateIsNotNull(o), "allocated");
    }
    b.CreateStore(o, b.CreateInBoundsGEP(ptr, row, c64(kn.root)));
    b.CreateStore(o, args);
    for (size_t q = 0; q < kn.inputs.size(); ++q) {
      Value* in = b.CreateLoad(ptr, b.CreateInBoundsGEP(ptr, row, c64(kn.inputs[q])));
      b.CreateStore(in, b.CreateConstInBoundsGEP1_64(ptr, args, q + 1));
    }
    Value* sp = scratch >= 0 ? b.CreateInBoundsGEP(b.getInt8Ty(), arena, c64(scratch))
                             : llvm::ConstantPointerNull::get(ptr);
    b.CreateStore(sp, b.CreateConstInBoundsGEP1_64(ptr, args, kn.inputs.size() + 1));
    if (split.work >= kParallelWork) {
      Value* rc = b.CreateCall(
          big_kernel, {host, c64(st.index), args, c64(split.extent), c64(split.finish ? 1 : 0)});
      or_fail(b.CreateICmpEQ(rc, b.getInt32(0)), "ran");
    } else {
      // Not inlined: the schedule stays small however big its kernels are.
      b.CreateCall(kfn, {args, c64(0), c64(split.extent)})->addFnAttr(llvm::Attribute::NoInline);
      if (split.finish)
        b.CreateCall(kfn, {args, c64(split.extent), c64(split.extent + 1)})
            ->addFnAttr(llvm::Attribute::NoInline);
    }
    Value* next = b.CreateAdd(j, c64(1), "", true, true);
    j->addIncoming(next, b.GetInsertBlock());
    auto* after = llvm::BasicBlock::Create(ctx, "next", fn);
    b.CreateCondBr(b.CreateICmpSLT(next, participants), body, after);
    b.SetInsertPoint(after);
  }
  b.CreateRet(b.getInt32(0));
}

} // namespace pxl::codegen
