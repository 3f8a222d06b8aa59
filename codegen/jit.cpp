// ORC LLJIT for the host and the NVPTX code generator. This is the one file
// that includes LLJIT.h and PassBuilder.h (slow to compile): keep it stable.
#include "codegen/jit.hpp"

#include <map>
#include <mutex>

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/emitter.hpp"
#include "codegen/jit_runtime.hpp"
#include "lang/diag.hpp"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace pxl {

namespace {

std::once_flag native_once, nvptx_once;

void init_native() {
  std::call_once(native_once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

template <class T> T check(llvm::Expected<T> e, const char* what) {
  if (!e)
    internal_error(__FILE__, __LINE__, std::string(what) + ": " + llvm::toString(e.takeError()));
  return std::move(*e);
}
void check(llvm::Error e, const char* what) {
  if (e)
    internal_error(__FILE__, __LINE__, std::string(what) + ": " + llvm::toString(std::move(e)));
}

std::unique_ptr<llvm::TargetMachine> host_machine() {
  init_native();
  auto jtmb = check(llvm::orc::JITTargetMachineBuilder::detectHost(), "detectHost");
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return check(jtmb.createTargetMachine(), "host target machine");
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  m.setDataLayout(tm.createDataLayout());
  m.setTargetTriple(tm.getTargetTriple().str());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

std::string module_text(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

} // namespace

struct CodeCache::Impl {
  std::mutex mu;
  std::shared_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::map<std::string, std::shared_ptr<const CompiledProgram>> programs;
  int counter = 0;

  void start() {
    tm = host_machine();
    auto jtmb = check(llvm::orc::JITTargetMachineBuilder::detectHost(), "detectHost");
    jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    jit = check(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(),
                "LLJIT");
    llvm::orc::SymbolMap syms;
    for (const RuntimeSymbol& s : jit_runtime_symbols())
      syms[jit->mangleAndIntern(s.name)] = {llvm::orc::ExecutorAddr::fromPtr(s.address),
                                            llvm::JITSymbolFlags::Exported |
                                                llvm::JITSymbolFlags::Callable};
    check(jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(syms))),
          "runtime symbols");
  }
};

CodeCache::CodeCache() : impl_(std::make_unique<Impl>()) {}
CodeCache::~CodeCache() = default;

int CodeCache::compilations() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<int>(impl_->programs.size());
}

std::shared_ptr<const CompiledProgram> CodeCache::compile(const Function& f) {
  Impl& I = *impl_;
  std::lock_guard<std::mutex> lock(I.mu);
  if (!I.jit) I.start();
  // Keyed by the IR text (without locations) and the target it was built for.
  std::string key = print_function(f, false) + "\n" + I.tm->getTargetTriple().str() + " " +
                    I.tm->getTargetCPU().str() + " " + I.tm->getTargetFeatureString().str();
  if (auto it = I.programs.find(key); it != I.programs.end()) return it->second;
  auto prog = std::make_shared<CompiledProgram>();
  prog->plan = plan_kernels(f);
  if (!prog->plan.kernels.empty()) {
    std::string prefix = "pxl" + std::to_string(I.counter++) + ".";
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto m = codegen::emit_module(*ctx, f, prog->plan, prefix, codegen::Target::Host);
    optimize(*m, *I.tm);
    check(I.jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))),
          "addIRModule");
    for (size_t i = 0; i < prog->plan.kernels.size(); ++i) {
      auto addr = check(I.jit->lookup(prefix + "k" + std::to_string(i)), "kernel lookup");
      prog->kernels.push_back(addr.toPtr<KernelFn>());
    }
  }
  prog->owner = I.jit;
  I.programs.emplace(std::move(key), prog);
  return prog;
}

std::string kernels_llvm_ir(const Function& f, bool optimized) {
  KernelPlan plan = plan_kernels(f);
  llvm::LLVMContext ctx;
  auto m = codegen::emit_module(ctx, f, plan, "", codegen::Target::Host);
  if (optimized) optimize(*m, *host_machine());
  return module_text(*m);
}

std::string kernels_ptx(const Function& f) {
  std::call_once(nvptx_once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  const std::string triple = "nvptx64-nvidia-cuda";
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) internal_error(__FILE__, __LINE__, "NVPTX target: " + err);
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, "sm_90", "+ptx80", llvm::TargetOptions(), std::nullopt,
                                  std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  KernelPlan plan = plan_kernels(f);
  llvm::LLVMContext ctx;
  auto m = codegen::emit_module(ctx, f, plan, "", codegen::Target::Ptx);
  // Host runtime math has no device version yet: drop the kernels that call it.
  std::string note;
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    std::string name = "k" + std::to_string(i);
    llvm::Function* body = m->getFunction(name + ".body");
    bool host_calls = false;
    for (auto& bb : *body)
      for (auto& inst : bb)
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
          if (auto* callee = call->getCalledFunction())
            host_calls |= callee->isDeclaration() && !callee->isIntrinsic();
    if (!host_calls) continue;
    note += "// " + name + " left out: it calls host runtime math\n";
    m->getFunction(name)->eraseFromParent();
    body->eraseFromParent();
  }
  for (auto it = m->begin(); it != m->end();) {
    llvm::Function& fn = *it++;
    if (fn.isDeclaration() && fn.use_empty()) fn.eraseFromParent();
  }
  optimize(*m, *tm);
  llvm::SmallString<4096> out;
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    internal_error(__FILE__, __LINE__, "NVPTX cannot emit assembly");
  pm.run(*m);
  return note + std::string(out.str());
}

} // namespace pxl
