#include "codegen/llvm_info.hpp"

#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

namespace pxl {

std::string llvm_version() { return LLVM_VERSION_STRING; }

LlvmInfo llvm_info() {
  // The JIT needs the native target registered anyway; doing it here proves at
  // start-up time that the LLVM we link against can generate code for this host.
  llvm::InitializeNativeTarget();
  LlvmInfo info;
  info.version = LLVM_VERSION_STRING;
  info.triple = llvm::sys::getProcessTriple();
  info.host_cpu = llvm::sys::getHostCPUName().str();
  return info;
}

} // namespace pxl
