// ORC LLJIT for the host: compiles kernel modules to objects, caches them in
// memory and on disk, links them. The one file that includes LLJIT.h (slow to
// compile): keep it stable.
#include "codegen/jit.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include <llvm/ADT/StringExtras.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/emitter.hpp"
#include "codegen/jit_runtime.hpp"
#include "codegen/kernel_pool.hpp"
#include "codegen/llvm_passes.hpp"
#include "codegen/schedule_emitter.hpp"
#include "lang/diag.hpp"
#include "lang/phase_times.hpp"

namespace pxl {

namespace {

std::once_flag native_once;

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

void optimize(llvm::Module& m, llvm::TargetMachine& tm, PhaseTimes* times = nullptr) {
  m.setDataLayout(tm.createDataLayout());
  m.setTargetTriple(tm.getTargetTriple().str());
  codegen::run_o3(m, tm, /*vectorize=*/true, times);
}

std::string module_text(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

std::string hex_sha256(const std::string& text) {
  auto digest = llvm::SHA256::hash(llvm::arrayRefFromStringRef(text));
  return llvm::toHex(digest, /*LowerCase=*/true);
}

// Gives every function defined in `m` the prefix, so programs share one
// JITDylib without clashes; the kernel entry points become <prefix>k<i>.
void add_prefix(llvm::Module& m, const std::string& prefix) {
  // Internal functions keep their names: they cannot clash across objects,
  // and call sites name some of them (vector-function-abi-variant).
  for (llvm::Function& fn : m.functions())
    if (!fn.isDeclaration() && !fn.hasLocalLinkage()) fn.setName(prefix + fn.getName().str());
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream is(path, std::ios::binary);
  if (!is) return std::nullopt;
  std::ostringstream ss;
  ss << is.rdbuf();
  return ss.str();
}

// Writes atomically (a temporary, then rename) so that processes sharing the
// cache never read half a file. Failures only cost the cache entry.
// Whether `bytes` is an object file defining the entry points <prefix>k0 ..
// <prefix>k<n-1> and <prefix>schedule (what a cache file written by compile()
// holds).
bool defines_kernels(const std::string& bytes, const std::string& prefix, size_t n) {
  auto obj =
      llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(bytes, "pxl-cache-entry"));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return false;
  }
  std::vector<bool> found(n + 1, false); // the kernels, then the schedule
  for (const llvm::object::SymbolRef& sym : (*obj)->symbols()) {
    auto name = sym.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      return false;
    }
    llvm::StringRef rest = *name;
    size_t i = 0;
    if (!rest.consume_front(prefix)) continue;
    if (rest == "schedule")
      found[n] = true;
    else if (rest.consume_front("k") && !rest.getAsInteger(10, i) && i < n)
      found[i] = true;
  }
  return std::all_of(found.begin(), found.end(), [](bool b) { return b; });
}

void write_file_atomic(const std::string& dir, const std::string& name,
                       const llvm::StringRef data) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return;
  std::string tmp = dir + "/." + name + "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream os(tmp, std::ios::binary);
    if (!os) return;
    os.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!os) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, dir + "/" + name, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

} // namespace

// A value that could never be allocated fails when the program runs; it is
// refused before the plans below multiply its size into byte counts, which
// would overflow (an (2**31, 2**31) float32 array has 2**64 bytes).
void refuse_huge_values(const Function& f) {
  constexpr int64_t kMaxBytes = int64_t{1} << 48;
  for (const IRValue& v : f.values) {
    const AVal& a = v.aval; // (its size fits in int64: infer refuses larger)
    if (a.size() > kMaxBytes / static_cast<int64_t>(dtype_size(a.dtype)))
      throw Error(ErrCode::Value, "array of shape " + shape_str(a.shape) + " and dtype " +
                                      dtype_name(a.dtype) + " is too large");
  }
}

std::string default_disk_cache_dir() {
  if (const char* d = std::getenv("PXL_CACHE_DIR")) {
    std::string v = d;
    return v == "off" ? "" : v;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/pxl";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/pxl";
  return "";
}

struct CodeCache::Impl {
  CodeCacheOptions opts;
  std::mutex mu;
  std::shared_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm; // optimises and emits objects for `jit`
  std::string target_id;                   // triple, CPU, features, LLVM version
  std::map<std::string, std::shared_ptr<const CompiledProgram>> programs;
  // Entry points by module digest: Functions whose text differs only in ways
  // that emit the same module share one linked object.
  struct Linked {
    std::vector<KernelFn> kernels;
    ScheduleFn schedule = nullptr;
  };
  std::map<std::string, Linked> linked;
  int compiled = 0, loaded = 0;
  // Threads for big kernels (started on their first use).
  std::shared_ptr<KernelPool> pool = std::make_shared<KernelPool>(KernelPool::default_workers());

  void start() {
    init_native();
    auto jtmb = check(llvm::orc::JITTargetMachineBuilder::detectHost(), "detectHost");
    jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    // What LLJIT uses for JITLink on ELF/Mach-O; our objects must match it.
    jtmb.setRelocationModel(llvm::Reloc::PIC_);
    jtmb.setCodeModel(llvm::CodeModel::Small);
    tm = check(jtmb.createTargetMachine(), "host target machine");
    jit = check(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(), "LLJIT");
    llvm::orc::SymbolMap syms;
    for (auto table : {jit_runtime_symbols(), schedule_runtime_symbols()})
      for (const RuntimeSymbol& s : table)
        syms[jit->mangleAndIntern(s.name)] = {llvm::orc::ExecutorAddr::fromPtr(s.address),
                                              llvm::JITSymbolFlags::Exported |
                                                  llvm::JITSymbolFlags::Callable};
    check(jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(syms))),
          "runtime symbols");
    target_id = tm->getTargetTriple().str() + " " + tm->getTargetCPU().str() + " " +
                tm->getTargetFeatureString().str() + " llvm-" LLVM_VERSION_STRING " O3 pic";
  }

  void explain(const std::string& line) {
    if (opts.explain) *opts.explain << "pxl: compile cache: " << line << "\n";
  }

  // Adds the object to the JIT and resolves the kernel and schedule entry points.
  void link(CompiledProgram& prog, const std::string& object, const std::string& prefix) {
    ScopedPhase t(opts.times, "codegen: JIT link");
    check(jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, prefix + "o")),
          "addObjectFile");
    for (size_t i = 0; i < prog.plan.kernels.size(); ++i)
      prog.kernels.push_back(
          check(jit->lookup(prefix + "k" + std::to_string(i)), "kernel lookup").toPtr<KernelFn>());
    prog.schedule = check(jit->lookup(prefix + "schedule"), "schedule lookup").toPtr<ScheduleFn>();
  }

  // Optimises `m` and emits it as a relocatable object.
  std::string compile_object(llvm::Module& m) {
    {
      ScopedPhase t(opts.times, "codegen: LLVM O3");
      optimize(m, *tm, opts.times);
    }
    ScopedPhase t(opts.times, "codegen: machine code");
    llvm::SmallVector<char, 0> obj;
    llvm::raw_svector_ostream os(obj);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      internal_error(__FILE__, __LINE__, "the host target cannot emit objects");
    pm.run(m);
    return std::string(obj.data(), obj.size());
  }
};

CodeCache::CodeCache(CodeCacheOptions opts) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(opts);
  if (impl_->opts.workers >= 0) impl_->pool = std::make_shared<KernelPool>(impl_->opts.workers);
}
CodeCache::~CodeCache() = default;

int CodeCache::compilations() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->compiled;
}

int CodeCache::disk_loads() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->loaded;
}

std::shared_ptr<const CompiledProgram> CodeCache::compile(const Function& f) {
  Impl& I = *impl_;
  std::lock_guard<std::mutex> lock(I.mu);
  if (!I.jit) {
    ScopedPhase t(I.opts.times, "codegen: start LLVM JIT");
    I.start();
  }
  // In memory: keyed by the IR text (without locations).
  std::string key = print_function(f, false);
  if (auto it = I.programs.find(key); it != I.programs.end()) return it->second;
  auto prog = std::make_shared<CompiledProgram>();
  {
    ScopedPhase t(I.opts.times, "codegen: fusion plan");
    refuse_huge_values(f);
    prog->plan = plan_kernels(f);
    prog->buffers = plan_buffers(f, prog->plan);
  }
  prog->owner = I.jit;
  prog->pool = I.pool;
  // Only host steps: nothing for LLVM to do (the executable runs them in order).
  if (prog->plan.kernels.empty()) return I.programs.emplace(std::move(key), prog).first->second;
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> m;
  std::string digest;
  {
    ScopedPhase t(I.opts.times, "codegen: emit LLVM IR");
    m = codegen::emit_module(*ctx, f, prog->plan, "", codegen::Target::Host);
    codegen::emit_schedule(*m, f, prog->plan, prog->buffers, "");
    // On disk: addressed by what LLVM is asked to compile, so a changed
    // emitter or target never reuses a stale object.
    digest = hex_sha256(module_text(*m) + "\n" + I.target_id);
  }
  if (auto it = I.linked.find(digest); it != I.linked.end()) {
    prog->kernels = it->second.kernels;
    prog->schedule = it->second.schedule;
    return I.programs.emplace(std::move(key), prog).first->second;
  }
  std::string prefix = "pxl" + digest.substr(0, 24) + ".";
  std::string name = f.name.empty() ? std::string("f") : f.name;
  std::string file = digest + ".o";
  const size_t nkernels = prog->plan.kernels.size();
  std::optional<std::string> object;
  if (!I.opts.disk_dir.empty()) {
    ScopedPhase t(I.opts.times, "codegen: disk cache read");
    object = read_file(I.opts.disk_dir + "/" + file);
    // A damaged entry is never linked (it could claim the program's names):
    // it counts as a miss, and the fresh object replaces it.
    if (object && !defines_kernels(*object, prefix, nkernels)) {
      I.explain(name + ": the disk cache entry " + digest.substr(0, 16) +
                " is unusable; recompiled");
      object.reset();
    }
  }
  if (object) {
    ++I.loaded;
    I.explain(name + ": " + std::to_string(nkernels) + " kernel(s) loaded from the disk cache (" +
              digest.substr(0, 16) + ")");
  } else {
    add_prefix(*m, prefix);
    object = I.compile_object(*m);
    ++I.compiled;
    if (!I.opts.disk_dir.empty()) {
      ScopedPhase t(I.opts.times, "codegen: disk cache write");
      write_file_atomic(I.opts.disk_dir, file, *object);
    }
    I.explain(name + ": " + std::to_string(nkernels) + " kernel(s) compiled (" +
              (I.opts.disk_dir.empty() ? std::string("no disk cache")
                                       : "not in the disk cache: " + digest.substr(0, 16)) +
              ")");
  }
  I.link(*prog, *object, prefix);
  I.linked[digest] = {prog->kernels, prog->schedule};
  return I.programs.emplace(std::move(key), prog).first->second;
}

std::string kernels_llvm_ir(const Function& f, bool optimized) {
  KernelPlan plan = plan_kernels(f);
  llvm::LLVMContext ctx;
  auto m = codegen::emit_module(ctx, f, plan, "", codegen::Target::Host);
  if (!plan.kernels.empty()) codegen::emit_schedule(*m, f, plan, plan_buffers(f, plan), "");
  if (optimized) optimize(*m, *host_machine());
  return module_text(*m);
}

} // namespace pxl
