// Command-line parsing for `pxl`, kept apart from main() so it is unit-testable.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "runtime/exec_mode.hpp"
#include "runtime/platform_kind.hpp"

namespace pxl::cli {

// Stdin: `pxl -`; Batch: `pxl --batch` (repl/batch.hpp)
enum class Mode { Repl, File, Code, Stdin, Version, Help, Batch };

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
  PlatformKind platform = PlatformKind::Cpu; // --platform, else PXL_PLATFORM, else cpu
  bool cuda_devices_given = false;           // --devices / PXL_DEVICES named a count (or cuda:K)
  bool cuda_logical = false;                 // cuda:K: `devices` logical devices on one GPU
};

struct ParseResult {
  std::optional<Options> options; // set on success
  std::string error;              // set on failure: one line, no "pxl: " prefix
};

// `args` excludes argv[0]; `env_devices` is getenv("PXL_DEVICES") and
// `env_platform` getenv("PXL_PLATFORM") (either may be null).
ParseResult parse(const std::vector<std::string>& args, const char* env_devices,
                  const char* env_platform = nullptr);

std::string usage();
std::string version_text(); // "pxl X.Y.Z" + LLVM version, host triple and CPU

} // namespace pxl::cli
