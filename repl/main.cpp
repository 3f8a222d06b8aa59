// pxl: the command-line driver. A thin client of libpxl: parses options, then
// runs a script (a file, or stdin for `-`), a -c string, the interactive REPL,
// or stdin in REPL mode.
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>

#include <malloc.h>
#include <unistd.h>

#include "lang/interp.hpp"
#include "lang/system_exit.hpp"
#include "repl/batch.hpp"
#include "repl/big_stack.hpp"
#include "repl/cli.hpp"
#include "repl/repl.hpp"
#include "repl/session.hpp"

// OpenBLAS's own entry points (not in cblas.h): re-read its environment, and
// stop its worker threads (the next BLAS call starts them again). Weak: a
// BLAS without them (a serial or OpenMP build) leaves them null.
extern "C" {
__attribute__((weak)) void openblas_read_env();
__attribute__((weak)) void blas_thread_shutdown_();
// A DYNAMIC_ARCH OpenBLAS's kernel choice (see pin_kernels_of_unknown_cpu).
__attribute__((weak)) char* openblas_get_corename();
__attribute__((weak)) void gotoblas_dynamic_init();
__attribute__((weak)) void gotoblas_dynamic_quit();
}

namespace {

// OpenBLAS starts its worker threads before main; each then spins on
// sched_yield for 2^28 cycles (about 0.1 s) before it sleeps, after start-up
// and after every BLAS call: a core's worth of CPU for every pxl process,
// BLAS or not, taken from the other processes of a parallel run (`pxl -c
// 'print(1)'` cost 136 ms of CPU instead of 80 on 2 cores). Its thread
// timeout makes them sleep at once (a BLAS call wakes them); it is read when
// the threads start, so the threads are restarted with it. A user's
// OPENBLAS_THREAD_TIMEOUT wins.
void openblas_threads_sleep_at_once() {
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") || !openblas_read_env || !blas_thread_shutdown_)
    return;
  setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
  openblas_read_env();
  blas_thread_shutdown_();
}

// OpenBLAS picks its kernels by the CPU model it recognises. Debian 12's
// (0.3.21) does not know CPUs newer than it (Sapphire and Emerald Rapids) and
// falls back to its generic Prescott (SSE3) kernels: several times slower, and
// summing in another order than the kernels for the CPU's instruction set,
// which JAX's results on such a machine match. Such a CPU gets the kernels for
// its instruction set; a user's OPENBLAS_CORETYPE wins.
void pin_kernels_of_unknown_cpu() {
  if (std::getenv("OPENBLAS_CORETYPE") || !openblas_get_corename || !gotoblas_dynamic_init ||
      !gotoblas_dynamic_quit)
    return;
  const char* name = openblas_get_corename();
  if (!name || std::string(name) != "Prescott") return;
  const char* core = nullptr;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
#endif
  if (!core) return;
  // (Read by its initialisation only; the script's environment stays the user's.)
  setenv("OPENBLAS_CORETYPE", core, 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
}

// Never throws: every error becomes a diagnostic on stderr and exit status 1.
// `shared`: the CUDA driver of a --batch run (null: the interpreter's own).
int run(const pxl::cli::Options& opts, std::shared_ptr<pxl::SharedDevices> shared = nullptr) {
  using pxl::cli::Mode;
  int status = 0;
  try {
    pxl::InterpOptions io;
    io.num_devices = opts.devices;
    io.dump_ir = opts.dump_ir;
    io.comm_report = opts.comm_report;
    io.profile = opts.profile;
    io.dump_llvm = opts.dump_llvm;
    io.dump_ptx = opts.dump_ptx;
    io.exec = opts.exec;
    io.time_passes = opts.time_passes;
    io.explain_cache = opts.explain_cache;
    io.platform = opts.platform;
    io.cuda_devices = opts.cuda_devices_given ? opts.devices : 0;
    io.cuda_logical = opts.cuda_logical;
    io.shared_devices = std::move(shared);
    io.argv = {opts.mode == Mode::File    ? opts.file
               : opts.mode == Mode::Code  ? std::string("-c")
               : opts.mode == Mode::Stdin ? std::string("-")
                                          : std::string()};
    io.argv.insert(io.argv.end(), opts.script_args.begin(), opts.script_args.end());
    pxl::Interpreter interp(io);
    if (std::string w = interp.platform_warning(); !w.empty())
      std::cerr << "pxl: warning: " << w << "\n";
    switch (opts.mode) {
    case Mode::File:
      interp.run_file(opts.file);
      break;
    case Mode::Code:
      interp.run_string(opts.code, "<string>");
      break;
    case Mode::Stdin: { // read to the end first: a script, not REPL lines
      std::string code((std::istreambuf_iterator<char>(std::cin)),
                       std::istreambuf_iterator<char>());
      interp.run_string(code, "<stdin>");
      break;
    }
    case Mode::Repl:
      status =
          isatty(STDIN_FILENO) ? pxl::run_interactive(interp) : pxl::run_lines(interp, std::cin);
      break;
    case Mode::Version:
    case Mode::Help:
    case Mode::Batch:
      break; // handled before the interpreter starts
    }
  } catch (const pxl::SystemExit& e) { // sys.exit(): the program's status, not an error
    std::cout.flush();
    if (!e.message.empty()) std::cerr << e.message << "\n";
    status = e.status;
  } catch (...) {
    pxl::report_current_exception(std::cerr);
    status = 1;
  }
  std::cout.flush();
  return status;
}

} // namespace

int main(int argc, char** argv) {
  // The pxl program's allocator policy (the library leaves the process's
  // allocator alone): big arrays come from the heap and freed ones are kept
  // for reuse, instead of an mmap per array whose pages the kernel must fault
  // in and zero on every call (a third of a 64 MB elementwise op's time).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_ARENA_MAX, 1);
  pin_kernels_of_unknown_cpu();
  openblas_threads_sleep_at_once();
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    pxl::cli::ParseResult parsed =
        pxl::cli::parse(args, std::getenv("PXL_DEVICES"), std::getenv("PXL_PLATFORM"));
    if (!parsed.options) {
      std::cerr << "pxl: error: " << parsed.error << "\nTry 'pxl --help' for more information.\n";
      return 2;
    }
    const pxl::cli::Options& opts = *parsed.options;
    if (opts.mode == pxl::cli::Mode::Help) {
      std::cout << pxl::cli::usage();
      return 0;
    }
    if (opts.mode == pxl::cli::Mode::Version) {
      std::cout << pxl::cli::version_text();
      return 0;
    }
    // The interpreter recurses natively for pxl calls; a big stack lets its
    // recursion limit, not the OS, end runaway recursion.
    if (opts.mode == pxl::cli::Mode::Batch)
      return pxl::run_on_big_stack([&] { return pxl::cli::run_batch(run); });
    return pxl::run_on_big_stack([&] { return run(opts); });
  } catch (...) {
    pxl::report_current_exception(std::cerr);
    return 1;
  }
}
