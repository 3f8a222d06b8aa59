#include "stdlib/inspect_sharding.hpp"

#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

PendingCompileCallbacks::~PendingCompileCallbacks() {
  if (!finished_ && in_.compile_callbacks.size() > mark_) in_.compile_callbacks.resize(mark_);
}

void PendingCompileCallbacks::finish(const std::string& what) {
  finished_ = true;
  // Inside an enclosing trace the program is compiled when that one ends.
  if (&in_.ops() != &in_.root_ops() || in_.compile_callbacks.size() <= mark_) return;
  std::vector<std::function<void()>> queued(in_.compile_callbacks.begin() +
                                                static_cast<std::ptrdiff_t>(mark_),
                                            in_.compile_callbacks.end());
  in_.compile_callbacks.resize(mark_);
  if (what == "make_jaxpr" || what == "eval_shape") return;
  for (const auto& f : queued) f();
}

void at_compile(InterpreterImpl& in, std::function<void()> f) {
  if (&in.ops() == &in.root_ops())
    f();
  else
    in.compile_callbacks.push_back(std::move(f));
}

namespace {

// Whether a trace enclosing the current context compiles its program (jit,
// an eager loop or cond, pmap, shard_map) rather than running op by op as
// eager grad and vmap do.
bool compiled(InterpreterImpl& in) {
  for (OpContext* c = &in.ops(); auto* tc = dynamic_cast<TraceContext*>(c); c = &tc->outer()) {
    const std::string& w = tc->what();
    if (w == "jit" || w == "while_loop" || w == "cond" || w == "pmap" || w == "shard_map")
      return true;
  }
  return false;
}

} // namespace

Value compiled_sharding(InterpreterImpl& in, const Value& leaf) {
  if (&in.ops() == &in.root_ops()) return in.get_attr(leaf, "sharding", Span{});
  // A value of a trace laid out over a mesh: what its partitioner gives it.
  if (leaf.is_obj(ObjKind::Array)) {
    const Tensor& t = leaf.as<ArrayObj>()->tensor;
    TraceContext* owner = live_trace_of(in, t);
    Value s = owner && owner->layout_sharding ? owner->layout_sharding(t->trace_id) : Value();
    if (!s.is_none()) return s;
  }
  // A constant, or a value of a trace inside one laid out over a mesh:
  // replicated over that mesh.
  for (OpContext* c = &in.ops(); auto* tc = dynamic_cast<TraceContext*>(c); c = &tc->outer()) {
    Value s = tc->layout_sharding ? tc->layout_sharding(-1) : Value();
    if (!s.is_none()) return s;
  }
  Value s = make_single_device_sharding(in.platform().name(), 0);
  if (compiled(in)) static_cast<ShardingObj*>(s.as<OpaqueObj>())->gspmd_replicated = true;
  return s;
}

void add_inspect_array_sharding(ModuleBuilder& debug) {
  debug.fn("inspect_array_sharding", [](InterpreterImpl& in, CallArgs& a) {
    const char* name = "inspect_array_sharding";
    if (a.pos.size() > 1)
      throw Error(ErrCode::Type, std::string(name) + "() takes 1 positional argument but " +
                                     std::to_string(a.pos.size()) + " were given");
    ArgReader r(name, a, {"value", "callback"}, 1);
    if (!r.has(1))
      throw Error(ErrCode::Type,
                  std::string(name) + "() missing 1 required keyword-only argument: 'callback'");
    ValueList leaves;
    tree_flatten(in, r[0], leaves);
    for (size_t i = 0; i < leaves.size(); ++i) {
      const Value& leaf = leaves[i];
      const bool complex = leaf.is_obj(ObjKind::Complex);
      if (!leaf.is_obj(ObjKind::Array) && !leaf.is_number() && !complex)
        throw Error(ErrCode::Type, "Error interpreting argument to inspect_sharding as a JAX "
                                   "value. The problematic value is of type <class '" +
                                       type_name(leaf) +
                                       "'> and was passed to inspect_sharding "
                                       "at position " +
                                       std::to_string(i) + ".");
      // (Eagerly JAX asks a Python scalar, as its typed wrapper, for its sharding.)
      if (&in.ops() == &in.root_ops() && !leaf.is_obj(ObjKind::Array))
        throw Error(ErrCode::Attribute, "'" +
                                            std::string(leaf.is_bool()  ? "bool"
                                                        : leaf.is_int() ? "TypedInt"
                                                        : complex       ? "TypedComplex"
                                                                        : "TypedFloat") +
                                            "' object has no attribute 'sharding'");
      Value sharding = compiled_sharding(in, leaf);
      at_compile(in, [&in, callback = r[1], sharding] {
        CallArgs c;
        c.pos.push_back(sharding);
        in.call(callback, c, Span{});
      });
    }
    return Value();
  });
}

} // namespace pxl
