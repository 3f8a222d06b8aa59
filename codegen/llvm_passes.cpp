#include "codegen/llvm_passes.hpp"

#include <chrono>
#include <string>
#include <vector>

#include <llvm/IR/PassInstrumentation.h>
#include <llvm/Passes/PassBuilder.h>

#include "lang/phase_times.hpp"

namespace pxl::codegen {

namespace {

// Times passes through LLVM's instrumentation callbacks; passes nest
// (adaptors run function passes), so the open ones form a stack.
class PassTimer {
public:
  explicit PassTimer(PhaseTimes& times) : times_(times) {}
  void attach(llvm::PassInstrumentationCallbacks& pic) {
    pic.registerBeforeNonSkippedPassCallback([this](llvm::StringRef name, llvm::Any) {
      open_.push_back({name.str(), now()});
    });
    pic.registerAfterPassCallback(
        [this](llvm::StringRef, llvm::Any, const llvm::PreservedAnalyses&) { close(); });
    pic.registerAfterPassInvalidatedCallback(
        [this](llvm::StringRef, const llvm::PreservedAnalyses&) { close(); });
  }

private:
  static std::chrono::steady_clock::time_point now() { return std::chrono::steady_clock::now(); }
  static bool container(const std::string& name) {
    for (const char* word : {"Adaptor", "PassManager", "Wrapper", "Repeated"})
      if (name.find(word) != std::string::npos) return true;
    return false;
  }
  void close() {
    if (open_.empty()) return;
    auto [name, start] = open_.back();
    open_.pop_back();
    // Template arguments (RequireAnalysisPass<llvm::GlobalsAA, ...>) make
    // unreadable rows: passes are reported by their template's name.
    if (size_t lt = name.find('<'); lt != std::string::npos) name.resize(lt);
    if (!container(name))
      times_.add("LLVM pass: " + name, std::chrono::duration<double>(now() - start).count());
  }

  PhaseTimes& times_;
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> open_;
};

} // namespace

void run_o3(llvm::Module& m, llvm::TargetMachine& tm, bool vectorize, PhaseTimes* times) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  if (vectorize) {
    pto.LoopVectorization = true;
    pto.SLPVectorization = true;
  }
  llvm::PassInstrumentationCallbacks pic;
  std::optional<PassTimer> timer;
  if (times) {
    timer.emplace(*times);
    timer->attach(pic);
  }
  llvm::PassBuilder pb(&tm, pto, std::nullopt, times ? &pic : nullptr);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

} // namespace pxl::codegen
