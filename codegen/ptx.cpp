// NVPTX code generation: the kernels of emit_module(Target::Ptx), their calls
// to pxl's runtime math (pxl.exp.f32, ...) given device bodies over libdevice,
// optimized at O3 and printed as PTX.
#include "codegen/ptx.hpp"

#include <cstdlib>
#include <fstream>
#include <mutex>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include "codegen/emitter.hpp"
#include "codegen/jit.hpp"
#include "codegen/llvm_passes.hpp"
#include "ir/dot_to_reduce.hpp"
#include "lang/diag.hpp"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace pxl {

namespace {

const char* kTriple = "nvptx64-nvidia-cuda";

std::unique_ptr<llvm::TargetMachine> nvptx_machine(const std::string& arch) {
  static std::once_flag once; // LLVM's target registry is process-wide
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!target) internal_error(__FILE__, __LINE__, "NVPTX target: " + err);
  return std::unique_ptr<llvm::TargetMachine>(
      target->createTargetMachine(kTriple, arch, "+ptx80", llvm::TargetOptions(), std::nullopt,
                                  std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

// Whether `fn` calls a function that has no body (intrinsics aside).
bool calls_undefined(const llvm::Function& fn) {
  for (auto& bb : fn)
    for (auto& inst : bb)
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
        if (auto* callee = call->getCalledFunction())
          if (callee->isDeclaration() && !callee->isIntrinsic()) return true;
  return false;
}

// Gives `fn` (pxl.<op>.<width>, declared by the emitter) a device body, or
// returns false when there is none. Math goes to libdevice's __nv_* of the
// same precision; half types compute in f32 (their results are rounded by the
// store). Results may differ from the host's in the last ulps.
bool define_device_math(llvm::Function& fn) {
  llvm::StringRef name = fn.getName();
  if (!name.starts_with("pxl.")) return false;
  llvm::LLVMContext& ctx = fn.getContext();
  llvm::Module& m = *fn.getParent();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", &fn));
  std::vector<llvm::Value*> args;
  for (auto& a : fn.args()) args.push_back(&a);
  auto finish = [&](llvm::Value* v) {
    b.CreateRet(v);
    fn.setLinkage(llvm::Function::InternalLinkage);
    return true;
  };
  if (name == "pxl.f16_to_f32")
    return finish(b.CreateFPExt(
        b.CreateBitCast(b.CreateTrunc(args[0], b.getInt16Ty()), b.getHalfTy()), b.getFloatTy()));
  if (name == "pxl.f32_to_f16")
    return finish(b.CreateBitCast(b.CreateFPTrunc(args[0], b.getHalfTy()), b.getInt16Ty()));
  auto [op, width] = name.drop_front(4).split('.');
  llvm::Type* t = fn.getReturnType();
  if (!t->isFloatTy() && !t->isDoubleTy()) {
    fn.deleteBody();
    return false; // integer pow: runs on the host
  }
  auto nv = [&](llvm::StringRef base, std::vector<llvm::Value*> xs) {
    std::string n = ("__nv_" + base + (t->isDoubleTy() ? "" : "f")).str();
    std::vector<llvm::Type*> params(xs.size(), t);
    llvm::FunctionCallee c = m.getOrInsertFunction(n, llvm::FunctionType::get(t, params, false));
    return b.CreateCall(c, xs);
  };
  (void)width;
  if (op == "logistic") {
    llvm::Value* one = llvm::ConstantFP::get(t, 1.0);
    return finish(b.CreateFDiv(one, b.CreateFAdd(one, nv("exp", {b.CreateFNeg(args[0])}))));
  }
  static const char* const kLibdevice[] = {"exp", "log", "log1p", "expm1", "tanh", "erf",  "rsqrt",
                                           "sin", "cos", "tan",   "atan2", "pow",  "fmod", "cbrt"};
  for (const char* known : kLibdevice)
    if (op == known) return finish(nv(op, args));
  fn.deleteBody();
  return false;
}

// Links the __nv_* functions the module calls from libdevice; false if the
// file cannot be read.
bool link_libdevice(llvm::Module& m, const std::string& path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf) return false;
  auto lib = llvm::parseBitcodeFile((*buf)->getMemBufferRef(), m.getContext());
  if (!lib) {
    llvm::consumeError(lib.takeError());
    return false;
  }
  (*lib)->setTargetTriple(m.getTargetTriple());
  (*lib)->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded))
    return false;
  // libdevice picks flush-to-zero variants by this flag (the kernels run FTZ).
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", 1);
  return true;
}

} // namespace

std::string find_libdevice() {
  std::vector<std::string> roots;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) roots.push_back(home);
  roots.push_back("/usr/local/cuda");
  for (const std::string& r : roots) {
    std::string p = r + "/nvvm/libdevice/libdevice.10.bc";
    if (std::ifstream(p).good()) return p;
  }
  return "";
}

PtxProgram compile_ptx(const Function& f, const PtxOptions& options) {
  PtxProgram out;
  out.plan = plan_kernels(f, PlanTarget::Cuda);
  size_t n = out.plan.kernels.size();
  out.on_device.assign(n, true);
  out.grid_extent.assign(n, 0);
  out.block_threads.assign(n, 1);
  out.finish.assign(n, false);
  auto tm = nvptx_machine(options.arch);
  llvm::LLVMContext ctx;
  auto m = codegen::emit_module(ctx, f, out.plan, "", codegen::Target::Ptx);
  m->setTargetTriple(kTriple);
  m->setDataLayout(tm->createDataLayout());

  bool needs_libdevice = false;
  std::vector<llvm::Function*> declared; // defining them declares more (__nv_*)
  for (llvm::Function& fn : *m)
    if (fn.isDeclaration() && !fn.isIntrinsic() && !fn.use_empty()) declared.push_back(&fn);
  for (llvm::Function* fn : declared)
    if (define_device_math(*fn) && fn->getName() != "pxl.f16_to_f32" &&
        fn->getName() != "pxl.f32_to_f16")
      needs_libdevice = true;
  std::string libdevice = options.libdevice.empty() ? find_libdevice() : options.libdevice;
  bool linked = needs_libdevice && !libdevice.empty() && link_libdevice(*m, libdevice);

  // Kernels still calling something undefined run on the host instead.
  for (size_t i = 0; i < n; ++i) {
    std::string name = "k" + std::to_string(i);
    llvm::Function* body = m->getFunction(name + ".body");
    llvm::Function* finish = m->getFunction(name + "_finish.body");
    out.finish[i] = finish != nullptr;
    llvm::Attribute extent = body->getFnAttribute(codegen::kGridExtentAttr);
    if (extent.isValid()) out.grid_extent[i] = std::stoll(extent.getValueAsString().str());
    llvm::Attribute block = body->getFnAttribute(codegen::kBlockThreadsAttr);
    if (block.isValid()) out.block_threads[i] = std::stoi(block.getValueAsString().str());
    bool math = false, keep = true;
    for (llvm::Function* fn : {body, finish}) {
      if (!fn) continue;
      for (auto& bb : *fn)
        for (auto& inst : bb)
          if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
            if (auto* callee = call->getCalledFunction())
              math |= callee->getName().starts_with("pxl.");
      keep &= !calls_undefined(*fn);
    }
    if (keep && math && needs_libdevice && !linked) keep = false;
    if (keep) continue;
    out.on_device[i] = false;
    out.notes += "// " + name + " left out: it calls host runtime math" +
                 (needs_libdevice && !linked ? " (libdevice.10.bc not found)" : "") + "\n";
    for (std::string entry : {name, name + "_finish"}) {
      if (llvm::Function* e = m->getFunction(entry)) e->eraseFromParent();
      if (llvm::Function* b = m->getFunction(entry + ".body")) b->eraseFromParent();
    }
  }
  // .maxntid of each entry: ptxas may then give a thread more registers, and
  // a launch with a larger block fails instead of splitting a row's group.
  llvm::NamedMDNode* notes = m->getOrInsertNamedMetadata("nvvm.annotations");
  for (size_t i = 0; i < n; ++i)
    for (std::string entry : {"k" + std::to_string(i), "k" + std::to_string(i) + "_finish"})
      if (llvm::Function* e = m->getFunction(entry)) {
        llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
        notes->addOperand(llvm::MDNode::get(
            ctx, {llvm::ValueAsMetadata::get(e), llvm::MDString::get(ctx, "maxntidx"),
                  llvm::ConstantAsMetadata::get(
                      llvm::ConstantInt::get(i32, static_cast<uint64_t>(out.block_threads[i])))}));
      }
  llvm::internalizeModule(*m, [&](const llvm::GlobalValue& g) {
    return g.getName().size() > 1 && g.getName()[0] == 'k' &&
           !g.getName().contains('.'); // the kernel entries
  });
  for (auto it = m->begin(); it != m->end();) {
    llvm::Function& fn = *it++;
    if (fn.use_empty() && fn.hasLocalLinkage()) fn.eraseFromParent();
  }
  codegen::run_o3(*m, *tm, /*vectorize=*/false);
  llvm::SmallString<4096> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    internal_error(__FILE__, __LINE__, "NVPTX cannot emit assembly");
  pm.run(*m);
  out.ptx = std::string(text.str());
  return out;
}

PtxLaunch ptx_launch(int64_t extent, int block, int multiprocessors) {
  PtxLaunch l;
  if (extent <= 0) return l;
  // A block never exceeds what the kernel wants: both are whole groups.
  int64_t threads = std::min<int64_t>(std::max(block, 1), extent);
  int64_t blocks = (extent + threads - 1) / threads;
  blocks = std::min<int64_t>(blocks, int64_t{32} * std::max(1, multiprocessors));
  l.threads = static_cast<unsigned>(threads);
  l.blocks = static_cast<unsigned>(blocks);
  return l;
}

std::string kernels_ptx(const Function& f) {
  // As the CUDA platform compiles it (runtime/cuda/executable.cpp).
  PtxProgram p = compile_ptx(*dots_of_vectors_to_reduce(std::make_shared<const Function>(f)));
  return p.notes + p.ptx;
}

} // namespace pxl
