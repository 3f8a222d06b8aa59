// The host interpreter: the library entry point that the CLI, the REPL and the
// embedding API (include/pxl/pxl.hpp) are thin clients of.
#pragma once
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "lang/diag.hpp"
#include "runtime/array.hpp"
#include "runtime/exec_mode.hpp"
#include "runtime/platform_kind.hpp"

namespace pxl {

class SharedDevices; // runtime/platform.hpp

struct InterpOptions {
  int num_devices = 8;
  std::ostream* out = nullptr; // print() goes here; nullptr = std::cout
  std::ostream* err = nullptr; // nullptr = std::cerr
  int recursion_limit = 1000;
  // sys.argv: the script (or "-c", "-", "" for the REPL) and its arguments.
  std::vector<std::string> argv;
  bool dump_ir = false;          // print the IR of every traced function (--dump=ir)
  bool comm_report = false;      // print the communication report of every SPMD function (--comm)
  bool profile = false;          // report host pulls of sharded arrays when destroyed (--profile)
  ExecMode exec = ExecMode::Jit; // how traced programs run (--exec jit|interp)
  bool dump_llvm = false;        // print the optimized LLVM IR of every SPMD program (--dump=llvm)
  bool dump_ptx = false;         // print the PTX of every SPMD program's kernels (--dump=ptx)
  bool time_passes = false;      // report the time of each phase when destroyed (--time-passes)
  bool explain_cache = false;    // say why traced functions are retraced and kernels compiled
  // Compiled kernels kept across processes: "auto" = default_disk_cache_dir()
  // ($PXL_CACHE_DIR, else the user's cache dir), "" = none.
  std::string cache_dir = "auto";
  // The devices (--platform cpu|cuda|auto, PXL_PLATFORM). On CUDA, cuda_devices
  // devices, one per GPU (0: every GPU), or, with cuda_logical, cuda_devices
  // logical devices on GPU 0 (PXL_DEVICES=cuda:K). num_devices is the CPU count.
  PlatformKind platform = PlatformKind::Cpu;
  int cuda_devices = 0;
  bool cuda_logical = false;
  // Interpreters made one after another with the same one share the CUDA
  // driver and contexts (runtime/platform.hpp); null: their own.
  std::shared_ptr<SharedDevices> shared_devices;
};

enum class Completeness { Complete, Incomplete, Invalid };

class InterpreterImpl;

class Interpreter {
public:
  explicit Interpreter(InterpOptions opts = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Scripts. Throw pxl::Error (render() gives the located diagnostic).
  void run_file(const std::string& path);
  void run_string(const std::string& code, const std::string& name = "<string>");

  // REPL: runs one complete input in the persistent session; a lone expression
  // statement whose value is not None has its repr printed (Python's echo).
  void run_repl_input(const std::string& code);
  // Whether `code` is complete, needs more lines (open bracket, block header,
  // a block not yet ended by a blank line), or can never parse.
  Completeness check_complete(const std::string& code);
  // Tab completion: candidates for the identifier (or dotted attribute path,
  // e.g. "np.ara") ending the text; each candidate is the full replacement.
  std::vector<std::string> complete(const std::string& prefix);
  // ":type EXPR": "float32[3,4]" for arrays, the Python type name otherwise.
  std::string type_of(const std::string& expr);
  // ":ir f(args)": the IR of the traced call (a pmap/shard_map'd function, or a
  // plain function traced on one device); ":comm f(args)": its communication report.
  std::string ir_of(const std::string& call_expr);
  std::string comm_of(const std::string& call_expr);
  // ":llvm f(args)" / ":ptx f(args)": the fused kernels of that IR as optimized
  // LLVM IR for the host, or as PTX for sm_90.
  std::string llvm_of(const std::string& call_expr);
  std::string ptx_of(const std::string& call_expr);
  // ":sharding EXPR": which device holds which block of an array.
  std::string sharding_of(const std::string& expr);
  // ":mesh [EXPR]": the devices, or a Mesh's axes and device grid.
  std::string mesh_of(const std::string& expr);
  // ":time EXPR": evaluates EXPR (waiting for its arrays) and reports the time.
  std::string time_of(const std::string& expr);
  // Forget every user definition (":reset").
  void reset();

  // Embedding: call a global function with array arguments; returns the array
  // results (a tuple/list result is flattened).
  std::vector<Array> call(const std::string& function, const std::vector<Array>& args);

  int num_devices() const;
  // The device count num_devices() would give now, without fixing it (a
  // script may still size the CPU mesh: jax_num_cpu_devices, XLA_FLAGS).
  int planned_num_devices() const;
  // The warning to show once when --platform auto fell back to the CPU
  // although a GPU seems present (Platform::fallback_warning); "" otherwise.
  std::string platform_warning() const;
  // Asks running host code to stop with an E0112 error at the next loop
  // iteration or call. Async-signal-safe (a SIGINT handler may call it).
  void interrupt();

private:
  std::unique_ptr<InterpreterImpl> impl_;
};

} // namespace pxl
