// Command-line parsing for `pxl`, kept apart from main() so it is unit-testable.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "runtime/exec_mode.hpp"

namespace pxl::cli {

enum class Mode { Repl, File, Code, Version, Help };

struct Options {
  Mode mode = Mode::Repl;
  int devices = 8;                      // --devices N, else PXL_DEVICES, else 8
  std::string file;                     // Mode::File
  std::string code;                     // Mode::Code (-c)
  std::vector<std::string> script_args; // everything after the script or -c code
  bool dump_ir = false;                 // --dump=ir: print the IR of every traced function
  bool comm_report = false;             // --comm: print every SPMD function's communication
  bool profile = false;                 // --profile: report host pulls of sharded arrays at exit
  bool dump_llvm = false;               // --dump=llvm: the optimized LLVM IR of the kernels
  bool dump_ptx = false;                // --dump=ptx: the kernels as sm_90 PTX
  ExecMode exec = ExecMode::Jit;        // --exec jit|interp
  bool time_passes = false;             // --time-passes: time of each phase at exit
  bool explain_cache = false;           // --explain-cache: retraces and compilations
};

struct ParseResult {
  std::optional<Options> options; // set on success
  std::string error;              // set on failure: one line, no "pxl: " prefix
};

// `args` excludes argv[0]; `env_devices` is getenv("PXL_DEVICES") (may be null).
ParseResult parse(const std::vector<std::string>& args, const char* env_devices);

std::string usage();
std::string version_text(); // "pxl X.Y.Z" + LLVM version, host triple and CPU

} // namespace pxl::cli
