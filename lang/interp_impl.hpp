// The interpreter's internals, shared by lang/ (evaluation, builtins) and
// stdlib/ (host modules: np, jax, ...). Not part of the embedding API.
#pragma once
#include <atomic>
#include <iostream>
#include <map>

#include "lang/interp.hpp"
#include "lang/phase_times.hpp"
#include "lang/value.hpp"
#include "runtime/eager_jit.hpp"
#include "runtime/format.hpp"
#include "runtime/platform.hpp"

namespace pxl {

class PullLog;
struct RefFrame; // stdlib/mutable_ref.hpp

// Control flow out of a statement.
enum class Flow : uint8_t { Normal, Break, Continue, Return };

class InterpreterImpl {
public:
  explicit InterpreterImpl(InterpOptions opts);
  ~InterpreterImpl();

  // ---- running code ----
  Value run_source(const SourceRef& src, const EnvPtr& env, bool echo);
  EnvPtr globals() const { return globals_; }
  void reset_globals();

  // ---- evaluation (lang/eval.cpp) ----
  Value eval(const Expr& e, const EnvPtr& env);
  // make_jaxpr shows every equation the user's code binds, used or not (JAX's
  // tracing keeps dead code): a traced array an expression of the user's
  // produced is kept in the record, so that the printer's pruning of unused
  // steps (meant for pxl's own plumbing) leaves it (lang/eval.cpp).
  void keep_for_jaxpr(const Value& v, const Span& where);
  Flow exec_block(const Block& b, const EnvPtr& env, Value& ret);
  Flow exec(const Stmt& s, const EnvPtr& env, Value& ret);

  // ---- the object protocol (lang/objects.cpp) ----
  Value call(const Value& fn, CallArgs& args, const Span& where);
  Value call(const Value& fn, ValueList pos, const Span& where);
  Value get_attr(const Value& obj, const std::string& name, const Span& where);
  bool has_attr(const Value& obj, const std::string& name);
  std::vector<std::string> attr_names(const Value& obj);
  Value get_item(const Value& obj, const Value& index, const Span& where);
  void set_item(const Value& obj, const Value& index, const Value& v, const Span& where);
  bool truthy(const Value& v, const Span& where);
  ValueList iterate(const Value& v, const Span& where); // materialises any iterable
  int64_t length(const Value& v, const Span& where);
  bool contains(const Value& container, const Value& item, const Span& where);

  // ---- operators (lang/operators.cpp) ----
  Value binary_op(BinOpKind op, const Value& a, const Value& b, const Span& where);
  Value unary_op(UnaryOpKind op, const Value& a, const Span& where);
  Value compare(CmpOpKind op, const Value& a, const Value& b, const Span& where);
  // Python's ordering for sort/min/max (numbers, strings, sequences).
  bool less_than(const Value& a, const Value& b, const Span& where);

  // ---- formatting (lang/format_spec.cpp) ----
  std::string format_value(const Value& v, const std::string& spec, const Span& where);
  // printf-style `fmt % args` (lang/percent_format.cpp).
  std::string percent_format(const std::string& fmt, const Value& args, const Span& where);
  // numpy's print options (np.set_printoptions), which print/str/repr follow.
  PrintOptions& print_options() { return print_options_; }

  // ---- modules (lang/modules.cpp) ----
  // Registers a host module (stdlib) under a dotted name, e.g. "jax.numpy".
  void register_module(const std::string& name, Value module);
  Value import_module(const std::string& dotted, const Span& where, const std::string& from_dir);
  // A stdlib module written in pxl (compiled into the binary): `import name`
  // runs `text` once, as if it were the file `path`.
  void register_source_module(const std::string& name, std::string path, std::string text) {
    source_modules_[name] = {std::move(path), std::move(text)};
  }

  // ---- arrays ----
  // The context array operations go to: eager, or the innermost active trace.
  OpContext& ops() { return *ops_stack_.back(); }
  // The outermost context: the interpreter's eager one.
  OpContext& root_ops() { return *ops_stack_.front(); }
  // The log of host pulls of sharded arrays (--profile); attach it to every ShardedData.
  std::shared_ptr<PullLog> pull_log();
  void push_ops(OpContext* c) { ops_stack_.push_back(c); }
  // The meshes made current by `with mesh:` / jax.set_mesh, innermost last
  // (shard_map without mesh= uses the innermost).
  void push_context_mesh(Value mesh) { context_meshes_.push_back(std::move(mesh)); }
  void pop_context_mesh() {
    if (!context_meshes_.empty()) context_meshes_.pop_back();
  }
  const Value* context_mesh() const {
    return context_meshes_.empty() ? nullptr : &context_meshes_.back();
  }
  void pop_ops() { ops_stack_.pop_back(); }
  Platform& platform() { return platform_; }
  // --time-passes: null unless asked for, so ScopedPhase costs nothing then.
  PhaseTimes* phase_times() { return opts_.time_passes ? &phase_times_ : nullptr; }
  // Value -> Tensor: arrays as is, Python scalars weakly typed, nested lists/tuples.
  Tensor to_tensor(const Value& v, const Span& where, std::optional<DType> dtype = {});
  bool is_array_like(const Value& v) const;

  std::ostream& out() { return *out_; }
  std::ostream& err() { return *err_; }
  const InterpOptions& options() const { return opts_; }
  Value builtin(const std::string& name) const;
  void define_builtin(const std::string& name, Value v) { builtins_->vars[name] = std::move(v); }
  Value ellipsis() const { return ellipsis_; }

  int call_depth = 0;
  // Open logs of writes to mutable array references, innermost last
  // (stdlib/mutable_ref.hpp): a write is logged in the innermost.
  std::vector<RefFrame*> ref_frames;
  // What traces queued to run when their program is compiled (JAX calls
  // jax.debug.inspect_array_sharding's callback then), innermost last
  // (stdlib/inspect_sharding.hpp).
  std::vector<std::function<void()>> compile_callbacks;
  // Whether the pxl function now running is an eager_ops one (FunctionObj).
  bool in_eager_ops_function = false;
  std::atomic<bool> interrupt_requested{false};
  // Throws E0112 if interrupt() was called; checked at loop iterations and calls.
  void poll_interrupt(const Span& where) {
    if (interrupt_requested.load(std::memory_order_relaxed)) {
      interrupt_requested.store(false, std::memory_order_relaxed);
      throw Error(ErrCode::Interrupted, "interrupted (Ctrl-C)", where);
    }
  }
  // Scopes captured by closures. Closures and their scopes form reference
  // cycles (f's scope holds f); the interpreter breaks them when it is destroyed.
  void note_closure_scope(const EnvPtr& env);

private:
  void install_builtins(); // lang/builtins.cpp
  InterpOptions opts_;
  std::ostream* out_;
  std::ostream* err_;
  PhaseTimes phase_times_;
  Platform platform_;
  std::unique_ptr<EagerJit> eager_jit_; // big eager ops, compiled (--exec jit)
  std::unique_ptr<OpContext> ops_;      // the eager context
  std::vector<OpContext*> ops_stack_;
  std::vector<Value> context_meshes_;
  PrintOptions print_options_;
  EnvPtr builtins_;
  EnvPtr globals_;
  std::map<std::string, Value> modules_;      // host (stdlib) modules by dotted name
  std::map<std::string, Value> file_modules_; // sibling .pxl files by absolute path
  std::vector<std::string> importing_;        // cycle detection
  std::map<std::string, std::pair<std::string, std::string>>
      source_modules_; // name -> (path, text)
  Value load_source_module(const std::string& dotted, const std::string& key,
                           const std::string& path, std::string text, const Span& where);
  Value ellipsis_;
  std::vector<std::weak_ptr<Env>> closure_scopes_;
  size_t closure_scopes_compacted_ = 64;
  std::vector<std::shared_ptr<Module>> asts_; // every parsed input of the session
  const char* stack_base_ = nullptr;
  size_t stack_limit_ = 0;
  friend class Interpreter;
  friend struct StackGuard;

public:
  void check_stack(const Span& where);
  void set_stack_base();
};

// Every stdlib module registers itself through one of these (stdlib/*.cpp).
void install_stdlib(InterpreterImpl& in);

} // namespace pxl
