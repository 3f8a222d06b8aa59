#include "stdlib/xla_program.hpp"

#include <map>

#include "lang/args.hpp"
#include "lang/interp_impl.hpp"
#include "lang/tracer.hpp"
#include "runtime/eager.hpp"
#include "runtime/spmd_call.hpp"
#include "stdlib/cache_explain.hpp"
#include "stdlib/trace_util.hpp"
#include "stdlib/transforms.hpp"

namespace pxl {

namespace {

// The interpreter's eager programs (held by its jax module, as jit's caches).
struct ProgramCache : OpaqueObj {
  // As JAX's, bounded: a script that calls var on ever new shapes does not
  // keep every trace.
  static constexpr size_t capacity = 4096;
  std::map<std::string, std::shared_ptr<const TracedFunction>> programs;
  std::string type_name() const override { return "ProgramCache"; }
  std::string repr() const override { return "<eager program cache>"; }
};

ProgramCache& program_cache(InterpreterImpl& in) {
  auto& vars = in.import_module("jax", Span{}, "").as<ModuleObj>()->env->vars;
  auto it = vars.find("_xla_programs");
  if (it == vars.end())
    it = vars.emplace("_xla_programs", Value::object(std::make_shared<ProgramCache>())).first;
  return *static_cast<ProgramCache*>(it->second.as<OpaqueObj>());
}

} // namespace

bool compile_as_xla(TracedFunction& t) {
  std::vector<Array> values, added;
  for (const Tensor& c : t.consts) values.push_back(c->concrete ? *c->concrete : Array());
  std::shared_ptr<const Function> fn = contract_program(t.fn, values, &added);
  if (fn == t.fn) return false;
  t.fn = std::const_pointer_cast<Function>(fn);
  for (Array& a : added) t.consts.push_back(make_tensor(std::move(a)));
  return true;
}

std::string program_signature(InterpreterImpl& in, const std::string& key,
                              std::span<const Tensor> args) {
  // (A mesh in context or a sharded argument can change the trace: such
  // calls are traced each time.)
  if (key.empty() || in.context_mesh()) return "";
  Signature sig;
  sig.add("function", key);
  for (const Tensor& t : args) {
    if (t->sharded || !t->concrete) return "";
    sig.add("argument", type_str(t->aval) + (t->aval.weak ? " weak" : ""));
  }
  add_trace_config(in, sig);
  return sig.key();
}

std::shared_ptr<const TracedFunction> cached_program(InterpreterImpl& in,
                                                     const std::string& signature) {
  if (signature.empty()) return nullptr;
  auto& programs = program_cache(in).programs;
  auto it = programs.find(signature);
  return it == programs.end() ? nullptr : it->second;
}

void cache_program(InterpreterImpl& in, const std::string& signature,
                   std::shared_ptr<const TracedFunction> program) {
  if (signature.empty()) return;
  auto& programs = program_cache(in).programs;
  if (programs.size() >= ProgramCache::capacity) programs.clear();
  programs[signature] = std::move(program);
}

bool append_literal_key(const Value& v, std::string& key) {
  if (v.is_obj(ObjKind::Tuple) || v.is_obj(ObjKind::List)) {
    key += v.is_obj(ObjKind::Tuple) ? "(" : "[";
    for (const Value& item : *sequence_items(v)) {
      if (!append_literal_key(item, key)) return false;
      key += ",";
    }
    key += ")";
    return true;
  }
  if (!(v.is_none() || v.is_bool() || v.is_int() || v.is_float() || v.is_obj(ObjKind::Str) ||
        v.is_obj(ObjKind::DType) || v.is_obj(ObjKind::Complex) || v.is_obj(ObjKind::BigInt)))
    return false;
  key += pxl::type_name(v) + ":" + pxl::repr(v) + ";";
  return true;
}

Tensor as_xla_program(InterpreterImpl& in, const std::string& key, std::span<const Tensor> args,
                      const std::function<Tensor(OpContext&, std::span<const Tensor>)>& body) {
  OpContext& cx = in.ops();
  if (!dynamic_cast<EagerContext*>(&cx) || jit_disabled(in)) return body(cx, args);
  std::string signature = program_signature(in, key, args);
  std::shared_ptr<const TracedFunction> program = cached_program(in, signature);
  if (!program) {
    auto traced = std::make_shared<TracedFunction>();
    traced->fn = std::make_shared<Function>();
    traced->fn->name = "jnp";
    {
      TraceContext tc(*traced->fn, cx, "jit");
      std::vector<Tensor> params;
      for (const Tensor& a : args)
        params.push_back(tc.add_param(a->aval, 0, cx.loc, "an argument"));
      traced->fn->results.push_back(tc.value_of(body(tc, params)));
      traced->consts = tc.captured_tensors();
    }
    compile_as_xla(*traced);
    cache_program(in, signature, traced);
    program = traced;
  }
  return inline_function(cx, *program->fn, args, program->consts)[0];
}

} // namespace pxl
