// What pxl knows about the LLVM it was built with and the host it targets.
// Used by `pxl --version`; deliberately free of LLVM headers so clients (the CLI)
// need no LLVM include paths.
#pragma once
#include <string>

namespace pxl {

struct LlvmInfo {
  std::string version;  // "19.1.7"
  std::string triple;   // the process triple, e.g. "x86_64-pc-linux-gnu"
  std::string host_cpu; // e.g. "znver3"
};

// The LLVM version string; compile-time only, so cheap enough for a banner.
std::string llvm_version();

// Initialises the native target (idempotent) and queries the host. Costs a few
// milliseconds, so only `--version` and the code generator call it.
LlvmInfo llvm_info();

} // namespace pxl
