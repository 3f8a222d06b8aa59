// The Interpreter facade and the session-level operations (run, REPL helpers).
#include "lang/interp.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ir/function.hpp"
#include "lang/args.hpp"
#include "lang/docstring.hpp"
#include "lang/interp_impl.hpp"
#include "lang/methods.hpp"
#include "lang/parser.hpp"
#include "lang/tracer.hpp"
#include "runtime/eager.hpp"
#include "stdlib/sharding.hpp"

namespace pxl {

namespace {
PlatformOptions platform_options(const InterpOptions& o) {
  PlatformOptions p;
  p.kind = o.platform;
  p.cpu_devices = o.num_devices;
  p.cuda_devices = o.cuda_devices;
  p.cuda_logical = o.cuda_logical;
  p.shared = o.shared_devices;
  return p;
}
} // namespace

InterpreterImpl::InterpreterImpl(InterpOptions opts)
    : opts_(opts), out_(opts.out ? opts.out : &std::cout), err_(opts.err ? opts.err : &std::cerr),
      platform_(platform_options(opts)) {
  CodeCacheOptions cache;
  cache.disk_dir = opts_.cache_dir == "auto" ? default_disk_cache_dir() : opts_.cache_dir;
  cache.times = phase_times();
  if (opts_.explain_cache) cache.explain = err_;
  platform_.set_code_cache_options(std::move(cache));
  platform_.set_phase_times(phase_times());
  auto eager = std::make_unique<EagerContext>();
  // On CUDA always: the device runs eager ops whatever --exec says (as it runs SPMD programs).
  if (opts_.exec == ExecMode::Jit || platform_.cuda()) {
    eager_jit_ = std::make_unique<EagerJit>(platform_);
    eager->set_jit(eager_jit_.get());
  }
  platform_.set_transfer_sites(eager->pull_log());
  ops_ = std::move(eager);
  ops_stack_.push_back(ops_.get());
  // A traced value of vmap or grad prints as JAX's VmapTracer / GradTracer
  // (their traces describe it; stdlib/vmap.cpp, stdlib/trace_util.cpp).
  print_options_.tracer_repr = [this](const TensorImpl& t) -> std::optional<std::string> {
    for (auto* tc = dynamic_cast<TraceContext*>(&ops()); tc;
         tc = dynamic_cast<TraceContext*>(&tc->outer()))
      if (t.trace == tc) {
        const std::string& w = tc->what();
        if (tc->describe && (w == "vmap" || w == "grad" || w == "value_and_grad" || w == "vjp"))
          return tc->describe(static_cast<int>(t.trace_id));
        return std::nullopt;
      }
    return std::nullopt;
  };
  ellipsis_ = Value::object(std::make_shared<EllipsisObj>());
  builtins_ = std::make_shared<Env>();
  install_builtins();
  install_stdlib(*this);
  reset_globals();
}

std::shared_ptr<PullLog> InterpreterImpl::pull_log() {
  return static_cast<EagerContext&>(*ops_).pull_log();
}

InterpreterImpl::~InterpreterImpl() {
  if (opts_.time_passes) *err_ << phase_times_.report();
  if (opts_.profile) {
    const auto pulls = pull_log()->pulls();
    int64_t total = 0;
    for (const auto& p : pulls) total += p.bytes;
    *err_ << "profile: " << pulls.size() << " host pull" << (pulls.size() == 1 ? "" : "s")
          << " of sharded arrays, " << total << " bytes\n";
    for (const auto& p : pulls) {
      std::string where = "?";
      if (p.loc.valid())
        where = p.loc.file->path() + ":" + std::to_string(p.loc.file->line_of(p.loc.begin)) + ":" +
                std::to_string(p.loc.file->column_of(p.loc.begin));
      *err_ << "  " << where << ": " << p.bytes << " bytes\n";
    }
    *err_ << platform_.transfer_report();
  }
  // Break the cycles between closures and the scopes they captured, and
  // between modules and the functions they define.
  for (auto& w : closure_scopes_)
    if (auto env = w.lock()) env->vars.clear();
  for (auto& [name, m] : file_modules_) m.as<ModuleObj>()->env->vars.clear();
  if (globals_) globals_->vars.clear();
  for (auto& [name, m] : modules_) m.as<ModuleObj>()->env->vars.clear();
  if (builtins_) builtins_->vars.clear();
}

void InterpreterImpl::note_closure_scope(const EnvPtr& env) {
  if (!closure_scopes_.empty() && closure_scopes_.back().lock() == env) return;
  closure_scopes_.push_back(env);
  if (closure_scopes_.size() >= 2 * closure_scopes_compacted_) {
    std::erase_if(closure_scopes_, [](const std::weak_ptr<Env>& w) { return w.expired(); });
    closure_scopes_compacted_ = std::max<size_t>(64, closure_scopes_.size());
  }
}

void InterpreterImpl::reset_globals() {
  if (globals_) globals_->vars.clear(); // break closure cycles of the old session
  globals_ = std::make_shared<Env>(builtins_);
  globals_->vars["__name__"] = make_str("__main__");
  file_modules_.clear();
}

Value InterpreterImpl::run_source(const SourceRef& src, const EnvPtr& env, bool echo) {
  std::shared_ptr<Module> module;
  {
    ScopedPhase t(phase_times(), "parse");
    // The stdlib's def bodies wait for their first call (parse_module).
    bool stdlib = src->path().rfind("<stdlib>/", 0) == 0;
    module = std::make_shared<Module>(parse_module(src, stdlib));
  }
  // Function objects point into the AST: keep it alive as long as the session.
  asts_.push_back(module);
  Value ret;
  // A script's or module's docstring is its __doc__ (None without one).
  if (Value doc = docstring(&module->body); !doc.is_none() || !env->vars.count("__doc__"))
    env->vars["__doc__"] = doc;
  for (const auto& s : module->body) {
    if (echo && s->kind == StmtKind::Expr) {
      Value v = eval(*s->value, env);
      if (!v.is_none()) {
        out() << repr(v, print_options_) << "\n";
        out().flush();
      }
      continue;
    }
    Flow f = exec(*s, env, ret);
    if (f == Flow::Return) throw Error(ErrCode::Syntax, "'return' outside function", s->span);
    if (f == Flow::Break || f == Flow::Continue)
      throw Error(ErrCode::Syntax, "'break' or 'continue' outside loop", s->span);
  }
  return ret;
}

// ---- facade ------------------------------------------------------------------------

Interpreter::Interpreter(InterpOptions opts) : impl_(std::make_unique<InterpreterImpl>(opts)) {}
Interpreter::~Interpreter() = default;

void Interpreter::interrupt() { impl_->interrupt_requested.store(true, std::memory_order_relaxed); }

int Interpreter::num_devices() const { return impl_->platform().device_count(); }
int Interpreter::planned_num_devices() const { return impl_->platform().planned_device_count(); }

std::string Interpreter::platform_warning() const { return impl_->platform().fallback_warning(); }

void Interpreter::run_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrCode::IO, "cannot open file '" + path + "'");
  // A directory opens as a stream on Linux but reads as nothing: without this check
  // `pxl somedir` ran an empty script and succeeded.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrCode::IO, "cannot run '" + path + "': it is a directory, not a .pxl file");
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error(ErrCode::IO, "cannot read file '" + path + "'");
  impl_->set_stack_base();
  // __file__: the script's absolute path, as Python (3.9 on) gives __main__'s.
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  impl_->globals()->vars["__file__"] = make_str(ec ? path : absolute.lexically_normal().string());
  impl_->run_source(std::make_shared<SourceFile>(path, ss.str()), impl_->globals(), false);
}

void Interpreter::run_string(const std::string& code, const std::string& name) {
  impl_->set_stack_base();
  impl_->run_source(std::make_shared<SourceFile>(name, code), impl_->globals(), false);
}

void Interpreter::run_repl_input(const std::string& code) {
  impl_->set_stack_base();
  impl_->call_depth = 0;
  impl_->run_source(std::make_shared<SourceFile>("<stdin>", code), impl_->globals(), true);
}

Completeness Interpreter::check_complete(const std::string& code) {
  auto src = std::make_shared<SourceFile>("<stdin>", code);
  try {
    parse_module(src);
  } catch (const IncompleteInput&) {
    return Completeness::Incomplete;
  } catch (const Error&) {
    return Completeness::Invalid;
  }
  // A compound statement (a line ending in ':' opened a block) continues until a
  // blank line, as in Python's interactive mode.
  std::string trimmed = code;
  while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t')) trimmed.pop_back();
  bool ends_blank = trimmed.size() >= 2 && trimmed.substr(trimmed.size() - 2) == "\n\n";
  bool multi_line =
      trimmed.find('\n') != trimmed.size() - 1 && trimmed.find('\n') != std::string::npos;
  size_t first_nl = code.find('\n');
  std::string first = code.substr(0, first_nl);
  size_t hash = first.find('#');
  if (hash != std::string::npos) first = first.substr(0, hash);
  while (!first.empty() && std::isspace(static_cast<unsigned char>(first.back()))) first.pop_back();
  bool opens_block = (!first.empty() && first.back() == ':') || first.rfind("@", 0) == 0;
  if ((opens_block || multi_line) && !ends_blank) {
    // Block headers and decorated definitions need the terminating blank line.
    if (opens_block) return Completeness::Incomplete;
  }
  return Completeness::Complete;
}

std::vector<std::string> Interpreter::complete(const std::string& prefix) {
  std::vector<std::string> out;
  size_t dot = prefix.rfind('.');
  std::vector<std::string> names;
  std::string head, stem = prefix;
  if (dot == std::string::npos) {
    for (const Env* e = impl_->globals().get(); e; e = e->parent.get())
      for (const auto& [k, _] : e->vars) names.push_back(k);
    static const char* kws[] = {"def",   "return", "if",       "elif",  "else",   "for",
                                "while", "break",  "continue", "pass",  "lambda", "import",
                                "from",  "assert", "True",     "False", "None",   "and",
                                "or",    "not",    "in",       "is"};
    for (const char* k : kws) names.push_back(k);
  } else {
    head = prefix.substr(0, dot + 1);
    stem = prefix.substr(dot + 1);
    // Only complete through plain dotted names: evaluating arbitrary code on TAB would be a
    // surprise.
    std::string path = prefix.substr(0, dot);
    for (char c : path)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return out;
    try {
      auto src = std::make_shared<SourceFile>("<completion>", path);
      ExprPtr e = parse_expression(src);
      Value v = impl_->eval(*e, impl_->globals());
      names = impl_->attr_names(v);
    } catch (const Error&) {
      return out;
    }
  }
  for (const auto& n : names)
    if (n.compare(0, stem.size(), stem) == 0 && (n.rfind("__", 0) != 0 || stem.rfind("__", 0) == 0))
      out.push_back(head + n);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string Interpreter::type_of(const std::string& expr) {
  impl_->set_stack_base();
  auto src = std::make_shared<SourceFile>("<stdin>", expr);
  ExprPtr e = parse_expression(src);
  Value v = impl_->eval(*e, impl_->globals());
  if (v.is_obj(ObjKind::Array)) {
    const AVal& a = v.as<ArrayObj>()->tensor->aval;
    std::string dims;
    for (size_t i = 0; i < a.shape.size(); ++i) dims += (i ? "," : "") + std::to_string(a.shape[i]);
    return std::string(dtype_name(a.dtype)) + "[" + dims + "]" + (a.weak ? " (weak)" : "");
  }
  return type_name(v);
}

// Evaluates the callee and arguments of "f(args)" and lowers the call.
static std::string lower_expr(InterpreterImpl& in, const std::string& text, Lowered what) {
  in.set_stack_base();
  auto src = std::make_shared<SourceFile>("<stdin>", text);
  ExprPtr e = parse_expression(src);
  if (e->kind != ExprKind::Call)
    throw Error(ErrCode::Syntax, "expected a call such as f(x)", e->span);
  Value fn = in.eval(*e->func, in.globals());
  CallArgs args;
  for (const auto& a : e->elts) args.pos.push_back(in.eval(*a, in.globals()));
  for (const auto& k : e->keywords) args.kw.emplace_back(k.name, in.eval(*k.value, in.globals()));
  return lower_call(in, fn, args, e->span, what);
}

std::string Interpreter::ir_of(const std::string& call_expr) {
  return lower_expr(*impl_, call_expr, Lowered::Ir);
}
std::string Interpreter::comm_of(const std::string& call_expr) {
  return lower_expr(*impl_, call_expr, Lowered::Comm);
}
std::string Interpreter::llvm_of(const std::string& call_expr) {
  return lower_expr(*impl_, call_expr, Lowered::Llvm);
}
std::string Interpreter::ptx_of(const std::string& call_expr) {
  return lower_expr(*impl_, call_expr, Lowered::Ptx);
}

static Value eval_text(InterpreterImpl& in, const std::string& text) {
  in.set_stack_base();
  auto src = std::make_shared<SourceFile>("<stdin>", text);
  ExprPtr e = parse_expression(src);
  return in.eval(*e, in.globals());
}

std::string Interpreter::sharding_of(const std::string& expr) {
  Value v = eval_text(*impl_, expr);
  if (!v.is_obj(ObjKind::Array))
    throw Error(ErrCode::Type, ":sharding needs an array, got a " + type_name(v));
  const Tensor& t = v.as<ArrayObj>()->tensor;
  std::string head = type_str(t->aval) + " ";
  if (!t->sharded)
    return head + "on one device (" +
           impl_->platform().device_label(t->concrete ? t->concrete->device() : 0) + ")\n";
  head += "sharded as " + t->sharded->spec.repr() + " over " + t->sharded->mesh.repr() + "\n";
  // JAX draws only 1-d and 2-d arrays.
  size_t nd = t->aval.ndim();
  return nd >= 1 && nd <= 2
             ? head + sharding_picture(*t->sharded, impl_->platform().picture_label())
             : head;
}

std::string Interpreter::mesh_of(const std::string& expr) {
  std::string out;
  if (expr.find_first_not_of(" \t") == std::string::npos) {
    out = std::to_string(num_devices()) +
          (impl_->platform().name() == "cuda" ? " CUDA devices:" : " CPU devices:");
    for (const Device& d : impl_->platform().devices()) out += " " + d.repr();
    out += "\n";
    if (const std::string& why = impl_->platform().cpu_fallback_reason(); !why.empty())
      out += "(--platform auto chose the CPU: " + why + ")\n";
    return out;
  }
  Value v = eval_text(*impl_, expr);
  const Mesh* m = value_to_mesh(v);
  if (!m) throw Error(ErrCode::Type, ":mesh needs a Mesh, got a " + type_name(v));
  out = m->repr() + ", " + std::to_string(m->size()) + " devices\n";
  for (int64_t pos = 0; pos < m->size(); ++pos) {
    std::vector<int64_t> c = m->coords(pos);
    out += "  ";
    for (int d = 0; d < m->ndim(); ++d)
      out += (d ? ", " : "") + m->axis_names[d] + "=" + std::to_string(c[d]);
    out += " -> " + impl_->platform().device_label(m->device_ids[pos]) + "\n";
  }
  return out;
}

std::string Interpreter::time_of(const std::string& expr) {
  auto start = std::chrono::steady_clock::now();
  Value v = eval_text(*impl_, expr);
  if (v.is_obj(ObjKind::Array)) impl_->ops().concrete(v.as<ArrayObj>()->tensor); // wait for it
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char buf[64];
  if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else if (s < 1)
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  return (v.is_none() ? std::string() : repr(v) + "\n") + "time: " + buf + "\n";
}

void Interpreter::reset() { impl_->reset_globals(); }

std::vector<Array> Interpreter::call(const std::string& function, const std::vector<Array>& args) {
  impl_->set_stack_base();
  const Value* f = impl_->globals()->lookup(function);
  if (!f) throw Error(ErrCode::Name, "name '" + function + "' is not defined");
  ValueList pos;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined()) // it has no buffer: using it would dereference null
      throw Error(ErrCode::Value, "argument " + std::to_string(i) + " of " + function +
                                      "() is an empty (default-constructed) pxl::Array");
    pos.push_back(make_array(make_tensor(args[i])));
  }
  Value r = impl_->call(*f, std::move(pos), Span{});
  std::vector<Array> out;
  std::function<void(const Value&)> flatten = [&](const Value& v) {
    if (const ValueList* items = sequence_items(v)) {
      for (const auto& x : *items) flatten(x);
    } else if (v.is_obj(ObjKind::Array)) {
      out.push_back(impl_->ops().concrete(v.as<ArrayObj>()->tensor));
    } else if (v.is_number()) {
      out.push_back(impl_->ops().concrete(impl_->to_tensor(v, Span{})));
    } else if (!v.is_none()) {
      throw Error(ErrCode::Type, function + "() returned a " + type_name(v) + ", not arrays");
    }
  };
  flatten(r);
  return out;
}

} // namespace pxl
