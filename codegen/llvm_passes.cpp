#include "codegen/llvm_passes.hpp"

#include <llvm/Passes/PassBuilder.h>

namespace pxl::codegen {

void run_o3(llvm::Module& m, llvm::TargetMachine& tm, bool vectorize) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  if (vectorize) {
    pto.LoopVectorization = true;
    pto.SLPVectorization = true;
  }
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

} // namespace pxl::codegen
