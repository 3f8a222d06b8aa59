// jax.jit: a callable that traces its function once per signature (argument
// types and weak flags, static argument values, the enclosing mesh axes) into
// an IR Function and then only runs that Function. Python side effects in the
// function (print) therefore happen once per trace, as in JAX.
#include <algorithm>
#include <map>
#include <sstream>

#include "lang/args.hpp"
#include "lang/bigint.hpp"
#include "lang/phase_times.hpp"
#include "lang/tracer.hpp"
#include "runtime/debug_print.hpp"
#include "runtime/eager.hpp"
#include "runtime/executable.hpp"
#include "runtime/sharded.hpp"
#include "stdlib/cache_explain.hpp"
#include "stdlib/float0.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/jit_devices.hpp"
#include "stdlib/jit_partition.hpp"
#include "stdlib/mutable_ref.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/sharding_rules.hpp"
#include "stdlib/trace_origin.hpp"
#include "stdlib/trace_util.hpp"
#include "stdlib/transforms.hpp"
#include "stdlib/xla_program.hpp"

namespace pxl {

// Runs a jitted Function in the current context: inlined into an enclosing
// trace (pmap, shard_map, vmap, grad), or op by op eagerly.
Value run_jitted(InterpreterImpl& in, const TracedFunction& t, std::span<const Tensor> params) {
  return apply_traced(in, t, params);
}

void inherit_constraint_mesh(OpContext& cx, const Function& inner) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  if (tc && inner.constraint_mesh && !tc->function().constraint_mesh &&
      tc->function().mesh_axes.empty())
    tc->function().constraint_mesh = inner.constraint_mesh;
}

// jax.disable_jit() / jax.config.update("jax_disable_jit", True): jitted
// functions run as plain Python functions.
bool jit_disabled(InterpreterImpl& in) {
  Value config = in.get_attr(in.import_module("jax", Span{}, ""), "config", Span{});
  return in.truthy(in.get_attr(config, "jax_disable_jit", Span{}), Span{});
}

namespace {

// One traced signature of a jitted function and, once it has been run eagerly
// under --exec jit, its compiled executable (on one device, on the calling
// thread: no device threads, no rendezvous).
struct JitEntry {
  Signature sig; // what it was traced for (--explain-cache)
  std::shared_ptr<TracedFunction> traced;
  std::unique_ptr<Executable> exe;
  std::unique_ptr<CommWorld> world;
  bool compilable = true;
  // What an eager call runs: `traced` as XLA compiles it (ir/contract.hpp);
  // make_jaxpr, autodiff and enclosing traces keep `traced`. Made on first use.
  std::shared_ptr<TracedFunction> lowered;
  // Partitioned over a mesh, per (mesh, operand shardings).
  std::map<std::string, std::shared_ptr<PartitionedJit>> partitioned;
  // Traced with the arguments' types as passed, which in_shardings then laid
  // out otherwise: the layouts are not the types (partition_jit's `typed`).
  bool placed_untyped = false;
};

using JitCache = std::map<std::string, std::shared_ptr<JitEntry>>; // by signature key

// JAX keys jit's trace cache by the function and jit's parameters, not by the
// jit object: jax.jit(f) made twice traces f once. One registry per
// interpreter (the jax module holds it); it holds each function weakly and
// its caches as long as the function lives.
struct JitCacheRegistry : OpaqueObj {
  struct Slot {
    std::weak_ptr<Object> fn;
    std::shared_ptr<JitCache> cache;
  };
  std::map<std::pair<const Object*, std::string>, Slot> slots;
  size_t inserts = 0;

  std::string type_name() const override { return "JitCacheRegistry"; }
  std::string repr() const override { return "<jit caches>"; }

  std::shared_ptr<JitCache> cache_for(const Value& fn, const std::string& params) {
    Slot& s = slots[{fn.obj.get(), params}];
    if (s.cache && s.fn.lock() == fn.obj) return s.cache;
    s = Slot{fn.obj, std::make_shared<JitCache>()};
    std::shared_ptr<JitCache> cache = s.cache;
    if (++inserts % 256 == 0) // drop the slots of functions gone
      std::erase_if(slots, [](const auto& kv) { return kv.second.fn.expired(); });
    return cache;
  }
};

// Effects (jax.debug.print) keep their per-op eager path, which prints.
bool has_effects(const Function& f) {
  for (const Instr& i : f.body)
    if (op_family(i.op) == OpFamily::Effect) return true;
  return false;
}

const TracedFunction& lowered(JitEntry& e) {
  if (!e.lowered) {
    auto t = std::make_shared<TracedFunction>(*e.traced);
    e.lowered = compile_as_xla(*t) ? t : e.traced;
  }
  return *e.lowered;
}

// Runs `e` compiled when the call is eager, --exec jit is on and every argument
// is a plain array on one device; returns false to fall back to run_jitted.
bool run_compiled(InterpreterImpl& in, JitEntry& e, std::span<const Tensor> params, Value& out) {
  if (in.options().exec != ExecMode::Jit || !e.compilable) return false;
  auto* eager = dynamic_cast<EagerContext*>(&in.ops());
  if (!eager) return false;
  std::vector<std::vector<Array>> inputs(1);
  inputs[0].reserve(params.size());
  for (const Tensor& t : params) {
    if (t->concrete)
      inputs[0].push_back(*t->concrete);
    else if (t->sharded) // gathered to one device, as the op-by-op path does (--profile counts it)
      inputs[0].push_back(t->sharded->assemble());
    else
      return false;
  }
  if (!e.exe) {
    if (has_effects(*e.traced->fn)) {
      e.compilable = false;
      return false;
    }
    const TracedFunction& program = lowered(e); // (its rewrites may add constants)
    std::vector<Array> consts;
    for (const Tensor& c : program.consts) {
      if (!c->concrete) {
        e.compilable = false;
        return false;
      }
      consts.push_back(*c->concrete);
    }
    SpmdLayout layout;
    layout.mesh.device_ids = {eager->device()};
    // The platform's: on CUDA the program runs on the GPU and its results stay there.
    e.exe = in.platform().make_executable(ExecMode::Jit, program.fn, std::move(layout),
                                          std::move(consts));
    e.world = std::make_unique<CommWorld>(1, 1);
  }
  std::vector<DebugRecord> debug;
  std::vector<std::vector<Array>> results;
  {
    ScopedPhase timing(in.phase_times(), "run: jit");
    results = e.exe->run(0, inputs, *e.world, debug);
  }
  print_debug_records(debug); // jax.debug.print inside a loop of the program
  ValueList leaves;
  leaves.reserve(results[0].size());
  for (Array& a : results[0]) leaves.push_back(make_array(make_tensor(std::move(a))));
  out = tree_unflatten(e.traced->out_tree, leaves);
  return true;
}

// JAX's "computation follows data": a call whose arguments were put on a
// device other than the default runs there, so every result is on that
// device (outputs that are constants or other arguments included).
Value follow_data(InterpreterImpl& in, std::span<const Tensor> params, const Value& out) {
  auto* eager = dynamic_cast<EagerContext*>(&in.ops());
  if (!eager) return out;
  int device = eager->device();
  for (const Tensor& t : params) {
    if (t->sharded && t->sharded->spans_devices()) return out;
    if (t->concrete && t->concrete->device() != eager->device()) device = t->concrete->device();
  }
  if (device == eager->device()) return out;
  return map_tree(in, out, [device](const Value& leaf) {
    if (!leaf.is_obj(ObjKind::Array)) return leaf;
    const Tensor& t = leaf.as<ArrayObj>()->tensor;
    if (!t->concrete || t->concrete->device() == device) return leaf;
    return make_array(make_tensor(t->concrete->on_device(device)));
  });
}

bool is_sharding_leaf(const Value& v) { return v.is_none() || v.is_obj(ObjKind::Opaque); }

// Runs `e` partitioned over the mesh its sharded operands live on, when the
// call is eager and some operand is spread over more than one device: the
// results come back sharded as the propagation gives them. False when there is
// no such operand, the operands live on different meshes, or the program has
// effects (those keep the single-device path).
// `named_by`: the arguments as passed, before in_shardings placed them (JAX
// names results only after arguments that came with their sharding).
bool run_partitioned(InterpreterImpl& in, JitEntry& e, std::span<const Tensor> params,
                     std::span<const Tensor> named_by, const Value& out_shardings,
                     const Span& where, Value& out) {
  if (!dynamic_cast<EagerContext*>(&in.ops())) return false;
  std::vector<Tensor> operands(params.begin(), params.end());
  operands.insert(operands.end(), e.traced->consts.begin(), e.traced->consts.end());
  bool mixed = false;
  const Mesh* mesh = operands_mesh(operands, mixed);
  if (mixed) return false;
  // A jitted shard_map with unsharded arguments runs over the shard_map's mesh.
  if (!mesh) mesh = shard_map_mesh(*e.traced->fn);
  // ... and one with sharding constraints over a mesh, over that mesh.
  if (!mesh) mesh = e.traced->fn->constraint_mesh.get();
  if (!mesh || !partitionable(*e.traced->fn, *mesh)) {
    check_shard_map_inputs(*e.traced->fn, operands);
    return false;
  }
  std::string key;
  OperandSpecs specs = operand_specs(*mesh, operands, key);
  // out_shardings on this mesh become part of the partitioned program.
  std::vector<std::optional<PartitionSpec>> out_specs;
  if (!out_shardings.is_none()) {
    ValueList slots, targets;
    for (size_t i = 0; i < e.traced->out_tree.num_leaves(); ++i) slots.push_back(Value::integer(0));
    broadcast_prefix(in, out_shardings, tree_unflatten(e.traced->out_tree, slots), targets,
                     is_sharding_leaf, "jit() out_shardings");
    for (const Value& t : targets) {
      auto* s = t.is_obj(ObjKind::Opaque) ? dynamic_cast<ShardingObj*>(t.as<OpaqueObj>()) : nullptr;
      out_specs.push_back(s && s->mesh == *mesh ? std::optional(s->spec) : std::nullopt);
      key += " -> " + (out_specs.back() ? out_specs.back()->repr() : "?");
    }
  }
  std::shared_ptr<PartitionedJit>& p = e.partitioned[key];
  if (!p) {
    p = std::make_shared<PartitionedJit>(
        partition_jit(in, *e.traced, *mesh, specs, out_specs, where, false, !e.placed_untyped));
    if (in.options().dump_ir) in.out() << print_function(*p->callee->fn);
  }
  operands.insert(operands.end(), p->extra.begin(), p->extra.end());
  std::vector<Tensor> results;
  std::vector<DebugRecord> prints;
  {
    ScopedPhase timing(in.phase_times(), "run: jit");
    results = run_spmd_call(*p->callee, operands, in.pull_log(), &prints);
  }
  sort_debug_records(prints);
  print_debug_records(prints);
  if (!any_explicit_axis(*mesh)) name_like_first_argument(results, named_by);
  ValueList leaves;
  for (Tensor& t : results) leaves.push_back(make_array(std::move(t)));
  out = tree_unflatten(e.traced->out_tree, leaves);
  return true;
}

// jit's in_shardings/out_shardings: each array leaf of `tree` placed as the
// matching leaf of the prefix `shardings` says (None leaves it where it is).
// A result whose leaf is None while others name a mesh is computed on that
// mesh's devices too, as JAX's: an unsplit one comes back replicated over it.
Value place(InterpreterImpl& in, const Value& shardings, const Value& tree, const char* what) {
  Value replicated;
  map_tree_with_prefix(
      in, shardings, shardings, is_sharding_leaf, what, [&](const Value& leaf, const Value&) {
        Value s = leaf.is_none() ? leaf : spec_over_current_mesh(in, leaf, "device_put");
        auto* named =
            s.is_obj(ObjKind::Opaque) ? dynamic_cast<ShardingObj*>(s.as<OpaqueObj>()) : nullptr;
        if (replicated.is_none() && named && !named->single_device && !named->is_abstract() &&
            named->mesh.size() > 1)
          replicated = Value::object(std::make_shared<ShardingObj>(named->mesh, PartitionSpec{}));
        return leaf;
      });
  return map_tree_with_prefix(
      in, tree, shardings, is_sharding_leaf, what, [&](const Value& leaf, const Value& target) {
        // (A float0 cotangent is a host value with no layout.)
        if (is_float0(leaf)) return leaf;
        if (target.is_none()) {
          bool spread = leaf.is_obj(ObjKind::Array) && leaf.as<ArrayObj>()->tensor->sharded;
          if (replicated.is_none() || !leaf.is_obj(ObjKind::Array) || spread) return leaf;
          return named_as(device_put_leaf(in, leaf, replicated), replicated);
        }
        Value s = spec_over_current_mesh(in, target, "device_put");
        return named_as(device_put_leaf(in, leaf, s), s);
      });
}

// Inside a trace (vmap, grad, an enclosing jit), jit's in_shardings and
// out_shardings constrain its arguments and results, as JAX's jit primitive
// keeps them: vmap's batching rule leaves the mapped axis unsplit before them.
Value constrain(InterpreterImpl& in, const Value& shardings, const Value& tree, const char* what) {
  return map_tree_with_prefix(
      in, tree, shardings, is_sharding_leaf, what, [&](const Value& leaf, const Value& target) {
        auto* s = target.is_obj(ObjKind::Opaque)
                      ? dynamic_cast<ShardingObj*>(target.as<OpaqueObj>())
                      : nullptr;
        if (target.is_none() || !leaf.is_obj(ObjKind::Array) || (s && s->single_device))
          return leaf;
        return constrain_traced(in, leaf, target, "jit");
      });
}

// JAX's ValueError for a static argument that cannot be a cache key.
Error unhashable_static(const Value& v, const Span& where) {
  // An array is shown as JAX shows its ArrayImpl: the class path and str(x).
  bool array = v.is_obj(ObjKind::Array);
  std::string type = array ? "jaxlib._jax.ArrayImpl" : pxl::type_name(v);
  return Error(ErrCode::Value,
               "Non-hashable static arguments are not supported. An error occurred while trying "
               "to hash an object of type <class '" +
                   type + "'>, " + (array ? pxl::str(v) : pxl::repr(v)) +
                   ". The error was:\nTypeError: unhashable type: '" + type + "'",
               where, "pass it as a tuple, or make it a regular (traced) argument");
}

// JAX's advice after an error tracing a checkpointed function.
Error remat_hint(const Error& e) {
  Error out(
      e.code(),
      e.message() +
          "\n\nConsider using the `static_argnums` parameter for `jax.remat` or `jax.checkpoint`. "
          "See the `jax.checkpoint` docstring and its example involving `static_argnums`:\n"
          "https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html",
      e.span(), e.hint());
  for (const TraceEntry& t : e.trace()) out.add_trace(t);
  return out;
}

struct JitFunction : OpaqueObj {
  Value fn;
  Value in_shardings, out_shardings; // None: as the arguments / as propagated
  std::vector<int64_t> static_argnums;
  std::vector<std::string> static_argnames;
  std::vector<int64_t> donate_argnums;
  std::vector<std::string> donate_argnames;
  std::shared_ptr<JitCache> cache = std::make_shared<JitCache>(); // shared: JitCacheRegistry
  int traces = 0;
  // Traces that captured values of the enclosing trace are kept too: set for
  // a function jitted to run several times inside one trace (a scan body,
  // stdlib/lax_loops.pxl), whose jit object does not outlive that trace.
  bool keep_captured = false;
  // jit(device=...) / jit(backend=...) (deprecated in JAX): the call runs on
  // that device (the default one for a backend), its arguments moved there and
  // its results committed there. -1: neither was given.
  int device = -1;
  // jax.checkpoint / jax.remat (jax._remat): JAX traces the function once per
  // signature as jit does (and caches the trace), so it is a JitFunction, but
  // disable_jit leaves it traced, an unhashable static argument is allowed (that
  // call's trace is not kept), and a value Python needs names "checkpoint /
  // remat" with JAX's hint about static_argnums.
  bool remat = false;

  std::string type_name() const override { return remat ? "function" : "PjitFunction"; }
  std::string repr() const override {
    return remat ? pxl::repr(fn) : "<jitted " + pxl::repr(fn) + ">";
  }
  const Value* wrapped() const override { return &fn; } // (functools.wraps)
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override {
    if (name == "_cache_size") { // a method, as JAX's
      int64_t n = static_cast<int64_t>(cache->size());
      out = make_builtin("_cache_size",
                         [n](InterpreterImpl&, CallArgs&) { return Value::integer(n); });
      return true;
    }
    if (name == "_trace_count") return out = Value::integer(traces), true;
    if (name == "__wrapped__") return out = fn, true;
    if (name == "__name__") { // functools.wraps keeps it
      if (!fn.is_obj(ObjKind::Function) && in.has_attr(fn, name))
        return out = in.get_attr(fn, name, Span{}), true;
      return out = make_str(fn_name()), true;
    }
    if (name == "lower" || name == "trace" || name == "eval_shape") {
      // Ahead-of-time use (jax_rest.pxl _jit_stage): this function, staged for
      // the given arguments.
      auto self = std::make_shared<JitFunction>(*this);
      std::string stage = name;
      ValueList nums, names;
      for (int64_t s : static_argnums) nums.push_back(Value::integer(s));
      for (const std::string& s : static_argnames) names.push_back(make_str(s));
      Value statics = make_tuple({make_tuple(nums), make_tuple(names)});
      out = make_builtin(name, [self, stage, statics](InterpreterImpl& in, CallArgs& a) {
        Value rest = in.import_module("jax_rest", Span{}, "");
        const Value* helper = rest.as<ModuleObj>()->env->lookup("_jit_stage");
        if (!helper) throw Error(ErrCode::Internal, "jax._jit_stage is missing");
        // Each argument's debug-info label and whether it is donated, for
        // the stages' args_info and the Compiled's argument checks.
        auto kw = std::make_shared<DictObj>(), kw_labels = std::make_shared<DictObj>();
        ValueList pos_labels;
        for (size_t i = 0; i < a.pos.size(); ++i)
          pos_labels.push_back(
              make_tuple({make_str(self->positional_label(i)),
                          Value::boolean(self->donated_position(i, a.pos.size()))}));
        for (auto& [k, v] : a.kw) {
          kw->set(make_str(k), v);
          kw_labels->set(make_str(k),
                         make_tuple({make_str(self->keyword_label(k)),
                                     Value::boolean(self->donated_keyword(k, a.pos.size()))}));
        }
        // JAX's Lowered.donate_argnums: the donated parameters' positions in
        // the signature (a name given to donate_argnames counts however the
        // argument is passed), numbered among the non-static ones.
        ValueList donated_nums;
        for (size_t i = 0, dyn = 0; i < a.pos.size() || !self->param_name(i).empty(); ++i) {
          if (self->is_static_pos(i, a.pos.size()) ||
              (!self->param_name(i).empty() && self->is_static_name(self->param_name(i))))
            continue;
          if (self->donated_position(i, a.pos.size()))
            donated_nums.push_back(Value::integer(static_cast<int64_t>(dyn)));
          ++dyn;
        }
        CallArgs c;
        c.pos = {make_str(stage),
                 Value::object(self),
                 make_tuple(a.pos),
                 Value::object(kw),
                 statics,
                 make_tuple(
                     {make_tuple(pos_labels), Value::object(kw_labels), make_tuple(donated_nums)})};
        return in.call(*helper, c, in.ops().loc);
      });
      return true;
    }
    return false;
  }

  std::string fn_name() const {
    return fn.is_obj(ObjKind::Function) ? fn.as<FunctionObj>()->name : pxl::type_name(fn);
  }
  // The name a jaxpr's jit equation shows: the wrapped function's (jit(grad(f)) is f's).
  std::string jaxpr_name() const {
    Value f = unwrapped_function(fn);
    return f.is_obj(ObjKind::Function) ? f.as<FunctionObj>()->name : fn_name();
  }

  // JAX's name of each array leaf of the dynamic arguments `dyn` (the first
  // n_dyn_pos positional, then a dict of keywords): x, args[1], params['w'].
  std::vector<std::string> leaf_names(InterpreterImpl& in, const CallArgs& a, const ValueList& dyn,
                                      size_t n_dyn_pos) const {
    std::vector<size_t> dyn_pos; // the original position of each dynamic positional argument
    for (size_t i = 0; i < a.pos.size(); ++i)
      if (!is_static_pos(i, a.pos.size())) dyn_pos.push_back(i);
    ValueList leaves;
    std::vector<std::string> names;
    for (const std::string& k : leaf_keystrs(tree_flatten(in, make_tuple(dyn), leaves))) {
      size_t close = k.find(']');
      size_t idx = static_cast<size_t>(std::stoll(k.substr(1, close - 1)));
      std::string rest = k.substr(close + 1);
      if (idx < n_dyn_pos) {
        names.push_back(arg_name(dyn_pos[idx]) + rest);
      } else { // a keyword: ['name']...
        size_t q = rest.find("']");
        names.push_back(rest.size() > 2 && q != std::string::npos
                            ? rest.substr(2, q - 2) + rest.substr(q + 2)
                            : "");
      }
    }
    return names;
  }

  // The mutable array references among the dynamic arguments' leaves
  // (check_array_leaves') with their names; JAX's ValueError for one passed twice.
  std::vector<std::pair<std::shared_ptr<RefObj>, std::string>>
  ref_arguments(InterpreterImpl& in, const CallArgs& a, const ValueList& dyn,
                const ValueList& leaves, size_t n_dyn_pos, const Span& where) const {
    std::vector<std::pair<std::shared_ptr<RefObj>, std::string>> refs;
    std::vector<std::string> names;
    for (const Value& l : leaves) {
      auto r = as_ref(l);
      if (!r) continue;
      if (names.empty()) names = leaf_names(in, a, dyn, n_dyn_pos);
      std::string name = names[static_cast<size_t>(&l - leaves.data())];
      for (const auto& [seen, seen_name] : refs)
        if (seen == r)
          throw Error(ErrCode::Value,
                      "only one reference to a mutable array may be passed as an argument to a "
                      "function, but when tracing " +
                          function_source_info(fn) +
                          " for jit the mutable array reference of type " + ref_type_name(*r) +
                          " appeared at both " + seen_name + " and " + name + ".",
                      where);
      refs.push_back({r, name});
    }
    return refs;
  }

  // JAX's name for the argument at position i in its messages: the parameter's,
  // "args[k]" for one gathered by *args ("" for a builtin).
  std::string arg_name(size_t i) const {
    Value f = unwrapped_function(fn); // (inspect.signature follows __wrapped__)
    if (!f.is_obj(ObjKind::Function)) return "";
    const auto* ps = f.as<FunctionObj>()->params;
    if (!ps) return "";
    size_t normal = 0;
    for (const Param& p : *ps) {
      if (p.kind == Param::Kind::VarArgs) return p.name + "[" + std::to_string(i - normal) + "]";
      if (p.kind != Param::Kind::Normal || p.keyword_only) break;
      if (normal == i) return p.name;
      ++normal;
    }
    return "";
  }

  // The parameter name at position i of a pxl function (to link static_argnums
  // with keyword calls, as JAX does through the signature), or "".
  std::string param_name(size_t i) const {
    const std::vector<Param>* ps = params();
    if (!ps || i >= ps->size() || (*ps)[i].kind != Param::Kind::Normal || (*ps)[i].keyword_only)
      return "";
    return (*ps)[i].name;
  }
  const std::vector<Param>* params() const {
    return fn.is_obj(ObjKind::Function) ? fn.as<FunctionObj>()->params : nullptr;
  }

  // JAX's debug-info label of positional argument i (its parameter, or an
  // entry of the *args parameter) and of keyword argument `name` (its
  // parameter, or an entry of **kwargs): what a Compiled's errors quote.
  std::string positional_label(size_t i) const {
    std::string p = param_name(i);
    if (!p.empty() || !params()) return p.empty() ? "args[" + std::to_string(i) + "]" : p;
    size_t before = 0;
    for (const Param& q : *params()) {
      if (q.kind == Param::Kind::VarArgs) return q.name + "[" + std::to_string(i - before) + "]";
      if (q.kind == Param::Kind::Normal && !q.keyword_only) ++before;
    }
    return "args[" + std::to_string(i) + "]";
  }
  std::string keyword_label(const std::string& name) const {
    if (params())
      for (const Param& q : *params()) {
        if (q.kind == Param::Kind::Normal && q.name == name) return name;
        if (q.kind == Param::Kind::KwArgs) return q.name + "['" + name + "']";
      }
    return name;
  }

  bool donated_position(size_t i, size_t npos) const {
    return is_static_position(donate_argnums, i, npos) || is_donated_name(param_name(i));
  }
  bool donated_keyword(const std::string& name, size_t npos) const {
    for (size_t i = 0; !param_name(i).empty(); ++i)
      if (param_name(i) == name && is_static_position(donate_argnums, i, npos)) return true;
    return is_donated_name(name);
  }
  bool is_donated_name(const std::string& n) const {
    return std::find(donate_argnames.begin(), donate_argnames.end(), n) != donate_argnames.end();
  }

  // JAX's checks at jit() time (api_util.py validate_argnums/validate_argnames):
  // through the signature of a pxl function, static_argnums must name
  // positional parameters (unless it takes *args) and static_argnames
  // parameters (unless it takes **kwargs). A static_argnames entry naming a
  // positional parameter also makes its position static, as JAX infers.
  void validate_static_args() {
    if (!fn.is_obj(ObjKind::Function)) return;
    const auto* ps = fn.as<FunctionObj>()->params;
    if (!ps) return;
    int64_t n_pos = 0;
    bool var_args = false, var_kw = false;
    for (const Param& p : *ps) {
      if (p.kind == Param::Kind::VarArgs) var_args = true;
      if (p.kind == Param::Kind::KwArgs) var_kw = true;
      if (p.kind == Param::Kind::Normal && !p.keyword_only && !var_args) ++n_pos;
    }
    if (!var_args)
      for (int64_t s : static_argnums)
        if (s >= n_pos || s < -n_pos) {
          std::string t = "(";
          for (size_t i = 0; i < static_argnums.size(); ++i)
            t += (i ? ", " : "") + std::to_string(static_argnums[i]);
          t += static_argnums.size() == 1 ? ",)" : ")";
          throw Error(ErrCode::Value, "Jitted function has static_argnums=" + t +
                                          ", but only accepts " + std::to_string(n_pos) +
                                          " positional arguments.");
        }
    std::vector<std::string> invalid;
    for (const std::string& name : static_argnames) {
      bool found = false;
      for (size_t i = 0; i < ps->size(); ++i) {
        const Param& p = (*ps)[i];
        if (p.kind != Param::Kind::Normal || p.name != name) continue;
        found = true;
        bool positional = !p.keyword_only && static_cast<int64_t>(i) < n_pos;
        if (positional && std::find(static_argnums.begin(), static_argnums.end(),
                                    static_cast<int64_t>(i)) == static_argnums.end())
          static_argnums.push_back(static_cast<int64_t>(i));
      }
      if (!found && !var_kw) invalid.push_back(name);
    }
    if (!invalid.empty()) {
      std::string t = "{";
      for (size_t i = 0; i < invalid.size(); ++i) t += (i ? ", '" : "'") + invalid[i] + "'";
      throw Error(ErrCode::Value, "Jitted function has invalid argnames " + t +
                                      "} in static_argnames. Function does not take these args.");
    }
  }

  // A literal (a Python number, a host array) the enclosing trace captured:
  // a jit traced inside that trace may keep it, as JAX keeps tracing a nested
  // jit once per signature, for as long as the enclosing trace lives.
  static bool is_enclosing_literal(TraceContext* enclosing, const Tensor& c) {
    // (Only inside another jit: under grad the trace so far is also run to
    // learn primal values, and it must not meet the cached trace there.)
    if (!enclosing || (enclosing->what() != "jit" && enclosing->what() != "make_jaxpr") ||
        !enclosing->owns(c))
      return false;
    const Function& ef = enclosing->function();
    int id = static_cast<int>(c->trace_id);
    return std::find(ef.consts.begin(), ef.consts.end(), id) != ef.consts.end() &&
           ef.values[static_cast<size_t>(id)].origin == "a constant captured from the host";
  }
  // Whether a cached trace's captured values can be used here: each belongs to
  // the host or to this trace (not to an enclosing trace that has ended).
  static bool consts_reachable(InterpreterImpl& in, const JitEntry& e) {
    auto* tc = dynamic_cast<TraceContext*>(&in.ops());
    for (const Tensor& c : e.traced->consts)
      if (c->trace && !(tc && tc->owns(c))) return false;
    return true;
  }

  bool is_static_pos(size_t i, size_t npos) const {
    return is_static_position(static_argnums, i, npos);
  }
  bool is_static_name(const std::string& name) const {
    for (const auto& s : static_argnames)
      if (s == name) return true;
    for (int64_t s : static_argnums)
      if (s >= 0 && param_name(static_cast<size_t>(s)) == name) return true;
    return false;
  }

  // JAX's TypeError for an argument leaf that is no array, number or float0
  // (a string, a type): jit names the leaf's path, remat its value.
  // Returns the leaves.
  ValueList check_array_leaves(InterpreterImpl& in, const ValueList& dyn, size_t n_dyn_pos,
                               size_t n_pos, const Span& where) const {
    ValueList leaves;
    TreeDef def = tree_flatten(in, make_tuple(dyn), leaves);
    std::vector<std::string> keys = leaf_keystrs(def);
    for (size_t i = 0; i < leaves.size(); ++i) {
      const Value& l = leaves[i];
      // A Python int beyond int32 (x64 is off): JAX's OverflowError as it
      // parses the argument (remat traces it as the function's own value).
      bool overflow =
          !remat && (is_bigint(l) || (l.is_int() && (l.i > INT32_MAX || l.i < INT32_MIN)));
      if (!overflow && (is_float0(l) || l.is_obj(ObjKind::Array) || l.is_number() || as_ref(l) ||
                        l.is_obj(ObjKind::Complex) || sequence_items(l)))
        continue;
      std::string type = "<class '" + pxl::type_name(l) + "'>";
      if (remat)
        throw Error(ErrCode::Type,
                    "Argument '" + pxl::str(l) + "' of type " + type + " is not a valid JAX type",
                    where);
      std::vector<size_t> dyn_pos; // the original position of each dynamic positional argument
      for (size_t j = 0; j < n_pos; ++j)
        if (!is_static_pos(j, n_pos)) dyn_pos.push_back(j);
      const std::string& k = keys[i];
      size_t close = k.find(']');
      size_t idx = static_cast<size_t>(std::stoll(k.substr(1, close - 1)));
      std::string rest = k.substr(close + 1), path;
      if (idx < n_dyn_pos) {
        path = arg_name(dyn_pos[idx]) + rest;
      } else { // a keyword: ['name']...
        size_t q = rest.find("']");
        path = q != std::string::npos && rest.size() > 2
                   ? rest.substr(2, q - 2) + rest.substr(q + 2)
                   : rest;
      }
      if (overflow)
        throw Error(ErrCode::Value,
                    "An overflow was encountered while parsing an argument to a jitted "
                    "computation, whose argument path is " +
                        path + ". Got <class 'int'> with value " + pxl::repr(l),
                    where);
      throw Error(ErrCode::Type,
                  "Error interpreting argument to " + pxl::repr(fn) +
                      " as an abstract array. The problematic value is of type " + type +
                      " and was passed to the function at path " + path +
                      ".\nThis typically means that a jit-wrapped function was called with a "
                      "non-array argument, "
                      "and this argument was not marked as static using the static_argnums or "
                      "static_argnames "
                      "parameters of jax.jit.",
                  where);
    }
    return leaves;
  }

  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    if (device < 0 || dynamic_cast<TraceContext*>(&in.ops())) return call_placed(in, a, where, out);
    Value dev = device_value(in.platform().name(), device);
    auto put = [&](const Value& tree) {
      return map_tree(in, tree, [&](const Value& leaf) {
        return leaf.is_obj(ObjKind::Array) ? device_put_leaf(in, leaf, dev) : leaf;
      });
    };
    CallArgs moved = a;
    for (Value& v : moved.pos) v = put(v);
    for (auto& kw : moved.kw) kw.second = put(kw.second);
    call_placed(in, moved, where, out);
    out = put(out);
    return true;
  }

  bool call_placed(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) {
    if (!remat && jit_disabled(in)) return out = in.call(fn, a, where), true;
    bool keep_trace = true; // false: an unhashable static argument (remat only)
    Signature sig;
    // (JAX's trace cache is keyed on the config too: a checkpointed function
    // traced under disable_jit is traced again outside it.)
    if (remat && jit_disabled(in)) sig.add("jax_disable_jit", "True");
    for (int64_t s : static_argnums)
      if (s >= static_cast<int64_t>(a.pos.size()) || s < -static_cast<int64_t>(a.pos.size())) {
        bool by_name = s >= 0 && !param_name(static_cast<size_t>(s)).empty();
        if (by_name) continue; // may come as a keyword
        throw Error(ErrCode::Arguments,
                    "jit: static_argnums=" + std::to_string(s) +
                        " but the function was called with " + std::to_string(a.pos.size()) +
                        " positional arguments",
                    where);
      }
    // Split the call into static values (part of the cache key) and dynamic ones
    // (traced): positional ones first, then the dynamic keywords as one dict.
    ValueList dyn;
    std::vector<std::pair<size_t, Value>> static_pos;
    std::vector<std::pair<std::string, Value>> static_kw, dyn_kw;
    for (size_t i = 0; i < a.pos.size(); ++i) {
      if (!is_static_pos(i, a.pos.size())) {
        dyn.push_back(a.pos[i]);
        continue;
      }
      if (!is_hashable(a.pos[i])) {
        if (!remat) throw unhashable_static(a.pos[i], where);
        keep_trace = false;
      }
      static_pos.push_back({i, a.pos[i]});
      sig.add("static argument " + std::to_string(i),
              pxl::type_name(a.pos[i]) + " " + pxl::repr(a.pos[i]));
    }
    for (auto& [name, v] : a.kw) {
      if (is_static_name(name)) {
        if (!is_hashable(v)) {
          if (!remat) throw unhashable_static(v, where);
          keep_trace = false;
        }
        static_kw.push_back({name, v});
        // Keyed by position when it names a positional parameter, so that
        // passing it either way hits the same trace (as in JAX).
        std::string label = "static argument '" + name + "'";
        for (size_t i = 0; !param_name(i).empty(); ++i)
          if (param_name(i) == name) label = "static argument " + std::to_string(i);
        sig.add(label, pxl::type_name(v) + " " + pxl::repr(v));
      } else {
        dyn_kw.push_back({name, v});
      }
    }
    size_t n_dyn_pos = dyn.size();
    // in_shardings: the positional arguments are first placed as it says.
    auto* enclosing = dynamic_cast<TraceContext*>(&in.ops());
    if (!enclosing) {
      check_specs_have_mesh(in, in_shardings, "in_shardings", "jit");
      check_specs_have_mesh(in, out_shardings, "out_shardings", "jit");
      JitCallPlacement pc;
      pc.fun_name = fn_name();
      pc.args = dyn;
      pc.n_positional = n_dyn_pos;
      for (size_t i = 0; i < a.pos.size(); ++i)
        if (!is_static_pos(i, a.pos.size())) pc.arg_names.push_back(arg_name(i));
      for (auto& [k, v] : dyn_kw) {
        pc.args.push_back(v);
        pc.arg_names.push_back(k);
      }
      pc.in_shardings = in_shardings;
      pc.out_shardings = out_shardings;
      try {
        check_jit_placement(in, pc);
      } catch (Error& e) {
        e.set_span_if_missing(where);
        throw;
      }
    }
    std::vector<Tensor> as_passed; // (for naming results: run_partitioned)
    if (!enclosing)
      for (const Value& v : dyn) {
        ValueList vals;
        tree_flatten(in, v, vals);
        for (const Value& l : vals)
          as_passed.push_back(l.is_obj(ObjKind::Array) ? l.as<ArrayObj>()->tensor : nullptr);
      }
    if (!in_shardings.is_none()) {
      Value tuple = make_tuple(ValueList(dyn.begin(), dyn.begin() + static_cast<long>(n_dyn_pos)));
      Value placed = enclosing ? constrain(in, in_shardings, tuple, "jit() in_shardings")
                               : place(in, in_shardings, tuple, "jit() in_shardings");
      ValueList rest(dyn.begin() + static_cast<long>(n_dyn_pos), dyn.end());
      dyn = *sequence_items(placed);
      dyn.insert(dyn.end(), rest.begin(), rest.end());
    }
    if (!dyn_kw.empty()) {
      auto d = std::make_shared<DictObj>();
      for (auto& [k, v] : dyn_kw) d->set(make_str(k), v);
      dyn.push_back(Value::object(d));
    }
    const std::vector<std::pair<std::shared_ptr<RefObj>, std::string>> passed_refs = ref_arguments(
        in, a, dyn, check_array_leaves(in, dyn, n_dyn_pos, a.pos.size(), where), n_dyn_pos, where);
    TreeDef tree;
    std::vector<bool> float0;
    std::vector<Tensor> leaves = leaf_tensors(in, dyn, where, &tree, &float0);
    if (enclosing && enclosing->jaxpr_record) { // (make_jaxpr prints them as passed)
      ValueList passed;
      for (const Value& v : dyn) tree_flatten(in, v, passed);
      if (passed.size() == leaves.size())
        for (size_t i = 0; i < passed.size(); ++i)
          jaxpr_note_passed(*enclosing, passed[i], leaves[i]);
    }
    sig.add("argument structure",
            tree.repr() + " with " + std::to_string(n_dyn_pos) + " positional");
    for (size_t i = 0; i < leaves.size(); ++i) {
      const Tensor& t = leaves[i];
      std::string type = float0[i] ? "float0" + type_str(t->aval) : type_str(t->aval);
      // (Only a value that varies over mesh axes differs from an eager one.)
      if (enclosing && enclosing->owns(t) && enclosing->function().values[t->trace_id].vma)
        type += " varying over " + std::to_string(enclosing->function().values[t->trace_id].vma);
      sig.add("array argument " + std::to_string(i), type);
    }
    for (const auto& [r, name] : passed_refs) sig.add("mutable array argument", name);
    if (enclosing) {
      const Function& ef = enclosing->function();
      for (size_t i = 0; i < ef.mesh_axes.size(); ++i)
        sig.add("enclosing axis", ef.mesh_axes[i] + "=" + std::to_string(ef.mesh_sizes[i]));
    }
    // Over a mesh with Explicit axes the sharding is part of the arguments' types:
    // it keys the trace, and jax.typeof inside shows each value's.
    // An argument in_shardings placed keeps the type it came with (JAX traces
    // an uncommitted array as unsharded; the placement only lays it out).
    std::vector<Tensor> typed_by = leaves;
    const Mesh* placed_on = nullptr;
    bool placed_untyped = false;
    if (!in_shardings.is_none() && as_passed.size() <= typed_by.size()) {
      bool mixed = false;
      placed_on = operands_mesh(leaves, mixed);
      if (mixed) placed_on = nullptr;
      // (Only an argument that came unsharded: one already laid out keeps its type.)
      for (size_t i = 0; i < as_passed.size(); ++i)
        if (as_passed[i] && !as_passed[i]->sharded && typed_by[i]->sharded) {
          typed_by[i] = as_passed[i];
          placed_untyped = true;
        }
    }
    std::string layout;
    std::function<void(TraceContext&)> prepare =
        explicit_type_hook(in, typed_by, &layout, nullptr, placed_on, leaves);
    if (prepare && !layout.empty()) sig.add("argument shardings", layout);
    // A trace resolves bare PartitionSpecs against the mesh in context: one per mesh.
    if (const Value* current = in.context_mesh(); current && value_to_mesh(*current)) {
      std::string ids;
      for (int id : value_to_mesh(*current)->device_ids) ids += " " + std::to_string(id);
      sig.add("context mesh", value_to_mesh(*current)->repr() + ids);
    }
    add_trace_config(in, sig);
    const std::string key = sig.key();
    std::shared_ptr<JitEntry> entry;
    auto it = cache->find(key);
    // make_jaxpr records JAX's structure inside a jit too: a trace made
    // without that record is not used while it records.
    const bool recording = enclosing && enclosing->jaxpr_record;
    if (it != cache->end() && (keep_captured || consts_reachable(in, *it->second)) &&
        (!recording || it->second->traced->jaxpr_record)) {
      entry = it->second;
    } else {
      if (in.options().explain_cache) {
        std::vector<const Signature*> seen;
        for (const auto& [k, e] : *cache) seen.push_back(&e->sig);
        explain_trace_miss(in, "jit(" + fn_name() + ")", where, sig, seen);
      }
      // The traced callable puts the static arguments back in their places.
      Value target = fn;
      Value wrapper = make_builtin("jit", [target, static_pos, static_kw, n_dyn_pos, where,
                                           passed_refs](InterpreterImpl& in, CallArgs& c) {
        CallArgs full;
        full.pos = with_static_args(static_pos, c.pos, n_dyn_pos + static_pos.size());
        if (n_dyn_pos < c.pos.size()) { // the dynamic keywords, as one dict
          const DictObj* d = c.pos[n_dyn_pos].as<DictObj>();
          d->for_each([&](const Value& k, const Value& v) {
            full.kw.push_back({value_to_str(k, "keyword"), v});
          });
        }
        for (const auto& kv : static_kw) full.kw.push_back(kv);
        Value out = in.call(target, full, where);
        refuse_ref_results(in, out, target, "jit", where, passed_refs);
        return out;
      });
      ++traces;
      entry = std::make_shared<JitEntry>();
      entry->sig = sig;
      entry->placed_untyped = placed_untyped;
      // A value Python needs but cannot have is JAX's error with its origin:
      // the function and the arguments (leaf paths) the value depends on.
      auto unknown = std::make_shared<UnknownValueLog>();
      std::shared_ptr<JaxprRecord> record;
      if (recording) {
        record = std::make_shared<JaxprRecord>();
        prepare = [prepare, record](TraceContext& tc) {
          if (prepare) prepare(tc);
          tc.jaxpr_record = record;
        };
      }
      try {
        entry->traced = std::make_shared<TracedFunction>(
            trace_function(in, wrapper, dyn, where, "jit", nullptr, nullptr,
                           log_unknown_values(prepare, unknown), false, RefMode::Effects));
        entry->traced->jaxpr_record = record;
      } catch (Error& e) {
        if (!quotes_unknown_value(e)) throw;
        std::vector<std::string> names = leaf_names(in, a, dyn, n_dyn_pos);
        if (!remat) throw with_trace_origin(e, "jit", function_source_info(fn), names, *unknown);
        throw remat_hint(with_trace_origin(e, "jit", function_source_info(fn), names, *unknown,
                                           "checkpoint / remat"));
      }
      TracedFunction* traced = entry->traced.get();
      if (fn.is_obj(ObjKind::Function)) traced->fn->name = fn.as<FunctionObj>()->name;
      // A pure_callback whose results are unused is never called (JAX's DCE).
      if (std::any_of(traced->fn->body.begin(), traced->fn->body.end(), [](const Instr& i) {
            return i.op == Op::HostCallback && i.attrs.host->pure;
          }))
        remove_dead_code(*traced->fn);
      if (in.options().dump_ir) in.out() << print_function(*traced->fn);
      // A Function that captured values of an enclosing trace is valid only in
      // that trace; it is not kept (the enclosing transformation caches itself).
      bool reusable = true;
      for (const Tensor& c : traced->consts)
        if (c->trace && !keep_captured && !is_enclosing_literal(enclosing, c)) reusable = false;
      // (A trace that used a reference read its value then: traced again.)
      if (traced->touches_refs) reusable = false;
      if (reusable && keep_trace) (*cache)[key] = entry;
    }
    // (Keyword arguments are not named after; numbers and lists are no arrays.)
    std::erase(as_passed, nullptr);
    {
      // With jax_debug_nans/infs only the program's outputs are checked
      // (check_outputs); its ops run unchecked.
      FloatChecksOff unchecked(enclosing ? nullptr : dynamic_cast<EagerContext*>(&in.ops()));
      // make_jaxpr shows a jit called inside the traced function as JAX's
      // jit equation (a scan body's internal jit is not one).
      int region = -1;
      if (enclosing && enclosing->jaxpr_record && !keep_captured)
        region =
            remat ? jaxpr_begin_body(
                        *enclosing, "checkpoint",
                        {{"differentiated", "False"}, {"policy", "None"}, {"prevent_cse", "True"}},
                        leaves)
                  : jaxpr_begin_body(*enclosing, "jit", {{"name", jaxpr_name()}}, leaves);
      // (Only a cached entry: it lives as long as the function, so its
      // address names one trace.)
      if (auto c = cache->find(key);
          region >= 0 && !remat && c != cache->end() && c->second == entry)
        enclosing->jaxpr_record->regions[static_cast<size_t>(region)].identity =
            std::to_string(reinterpret_cast<uintptr_t>(entry.get()));
      if (!run_partitioned(in, *entry, leaves, as_passed, out_shardings, where, out)) {
        if (!run_compiled(in, *entry, leaves, out))
          out = run_jitted(in, enclosing ? *entry->traced : lowered(*entry), leaves);
        if (out_shardings.is_none() && !enclosing) out = follow_data(in, leaves, out);
        if (!enclosing) out = keep_one_device_mesh(in, as_passed, out);
        if (!enclosing && out_shardings.is_none()) out = results_on_current_mesh(in, out);
      }
      if (region >= 0) {
        std::vector<int> ids;
        for (const Tensor& t : leaf_tensors(in, {out}, Span{}))
          ids.push_back(enclosing->value_of(t));
        jaxpr_end_region(*enclosing, region, std::move(ids));
      }
    }
    out = apply_ref_outputs(in, *entry->traced, restore_float0_outputs(in, *entry->traced, out),
                            keep_captured);
    check_outputs(in, a, out, where);
    if (!out_shardings.is_none()) {
      try {
        if (!enclosing) check_out_sharding_ranks(in, out_shardings, out);
        out = enclosing ? constrain(in, out_shardings, out, "jit() out_shardings")
                        : place(in, out_shardings, out, "jit() out_shardings");
      } catch (Error& e) {
        e.set_span_if_missing(where);
        throw;
      }
    }
    if (!enclosing) {
      commit_results(in, dyn, out);
      donate(in, a, out);
    }
    return true;
  }

  // jax_debug_nans/infs: an output holding such a value makes JAX call the
  // function again without jit, op by op, so that the op producing it fails
  // (EagerContext::checked); when none does, JAX's own message.
  void check_outputs(InterpreterImpl& in, CallArgs& a, const Value& out, const Span& where) const {
    auto* eager = dynamic_cast<EagerContext*>(&in.ops());
    if (!eager || !eager->float_checks().any()) return;
    ValueList leaves;
    tree_flatten(in, out, leaves);
    std::string bad;
    for (const Value& l : leaves)
      if (l.is_obj(ObjKind::Array) && bad.empty())
        bad = invalid_float(l.as<ArrayObj>()->tensor, eager->float_checks());
    if (bad.empty()) return;
    in.err() << "Invalid " << bad
             << " value encountered in the output of a jax.jit function. Calling the de-optimized "
                "version."
             << std::endl;
    in.call(fn, a, where);
    throw Error(
        ErrCode::Value,
        "('jit(" + fn_name() + ")', '" + bad +
            "'). Because jax_config.debug_nans.value and/or config.jax_debug_infs is set, the "
            "de-optimized function (i.e., the function as if the `jit` decorator were removed) was "
            "called in an attempt to get a more precise error message. However, the de-optimized "
            "function did not produce invalid values during its execution. This behavior can "
            "result "
            "from `jit` optimizations causing the invalid value to be produced. It may also arise "
            "from "
            "having nan/inf literals as inputs or outputs, like `jax.jit(lambda ...: "
            "jax.numpy.nan)(...)`. \n\nIt may be possible to avoid the invalid value by removing "
            "the "
            "`jit` decorator, at the cost of losing optimizations. \n\nIf you see this error, "
            "consider "
            "opening a bug report at https://github.com/jax-ml/jax.",
        where);
  }

  // As JAX's: the results of a call with arguments committed to a device
  // (or with out_shardings) are committed, on that device. (Results of a call
  // over a mesh are laid out over it, committed as such; one pxl leaves on a
  // single device stays uncommitted, as it would not be there in JAX.)
  void commit_results(InterpreterImpl& in, const ValueList& args, Value& out) const {
    bool commit = !out_shardings.is_none(), over_mesh = false;
    int device = -1;
    ValueList leaves;
    for (const Value& arg : args) tree_flatten(in, arg, leaves);
    for (const Value& l : leaves) {
      if (!l.is_obj(ObjKind::Array) || !array_committed(l)) continue;
      const Tensor& t = l.as<ArrayObj>()->tensor;
      if (t->sharded)
        over_mesh = true;
      else if (t->concrete && device < 0)
        device = t->concrete->device();
    }
    commit = commit || (device >= 0 && !over_mesh);
    if (!commit) return;
    ValueList outs;
    TreeDef def = tree_flatten(in, out, outs);
    for (Value& o : outs) {
      if (!o.is_obj(ObjKind::Array)) continue;
      const Tensor& t = o.as<ArrayObj>()->tensor;
      if (out_shardings.is_none() && device >= 0 && t->concrete && t->concrete->device() != device)
        o = make_array(make_tensor(t->concrete->on_device(device)));
      o.as<ArrayObj>()->committed = true;
    }
    out = tree_unflatten(def, outs);
  }

  // Donated arguments: as XLA, each array whose buffer an output of the same
  // shape and dtype can take over is deleted (the others are kept; JAX warns).
  void donate(InterpreterImpl& in, const CallArgs& a, const Value& out) const {
    if (donate_argnums.empty() && donate_argnames.empty()) return;
    ValueList donated, outs;
    for (size_t i = 0; i < a.pos.size(); ++i)
      if (donated_position(i, a.pos.size())) tree_flatten(in, a.pos[i], donated);
    for (const auto& [name, v] : a.kw)
      if (donated_keyword(name, a.pos.size())) tree_flatten(in, v, donated);
    tree_flatten(in, out, outs);
    std::vector<bool> taken(outs.size(), false);
    for (const Value& d : donated) {
      if (!d.is_obj(ObjKind::Array)) continue;
      const AVal& av = d.as<ArrayObj>()->tensor->aval;
      for (size_t k = 0; k < outs.size(); ++k) {
        if (taken[k] || !outs[k].is_obj(ObjKind::Array)) continue;
        const AVal& o = outs[k].as<ArrayObj>()->tensor->aval;
        if (o.shape != av.shape || o.dtype != av.dtype) continue;
        taken[k] = true;
        d.as<ArrayObj>()->deleted = true;
        break;
      }
    }
  }
};

std::vector<int64_t> int_list(const Value& v, const char* what) {
  if (v.is_none()) return {};
  return value_to_int_list(v, std::string("jit() ") + what);
}

// jit's parameters that change what a trace is (the key of a shared cache).
std::string trace_params(const JitFunction& j) {
  std::string key = "static";
  for (int64_t s : j.static_argnums) key += " " + std::to_string(s);
  for (const auto& s : j.static_argnames) key += " " + s;
  return key + " in " + pxl::repr(j.in_shardings) + " out " + pxl::repr(j.out_shardings);
}

JitCacheRegistry& jit_caches(InterpreterImpl& in) {
  Value jax = in.import_module("jax", Span{}, "");
  return *static_cast<JitCacheRegistry*>(
      jax.as<ModuleObj>()->env->vars.at("_jit_caches").as<OpaqueObj>());
}

Value build_jit(InterpreterImpl& in, const Value& f, const ArgReader& r) {
  check_callable(f);
  auto j = std::make_shared<JitFunction>();
  j->fn = f;
  if (r.has(1)) j->static_argnums = int_list(r[1], "static_argnums");
  if (r.has(2) && !r[2].is_none()) {
    if (r[2].is_obj(ObjKind::Str))
      j->static_argnames.push_back(r[2].as<StrObj>()->value);
    else if (const ValueList* names = sequence_items(r[2]))
      for (const Value& n : *names)
        j->static_argnames.push_back(value_to_str(n, "jit() static_argnames"));
    else
      throw Error(ErrCode::Type, "jit() static_argnames must be a string or a tuple of strings");
  }
  // Donated arrays are deleted after a call (JitFunction::donate).
  if (r.has(3)) j->donate_argnums = int_list(r[3], "donate_argnums");
  if (r.has(4) && !r[4].is_none()) {
    if (r[4].is_obj(ObjKind::Str))
      j->donate_argnames.push_back(r[4].as<StrObj>()->value);
    else if (const ValueList* names = sequence_items(r[4]))
      for (const Value& n : *names)
        j->donate_argnames.push_back(value_to_str(n, "jit() donate_argnames"));
  }
  if (r.has(5)) j->in_shardings = r[5];
  if (r.has(6)) j->out_shardings = r[6];
  bool device = r.has(7) && !r[7].is_none(), backend = r.has(8) && !r[8].is_none();
  if (device || backend) {
    if (!j->in_shardings.is_none())
      throw Error(
          ErrCode::Value,
          "If backend or device is specified on jit, then in_shardings should not be specified.");
    if (!j->out_shardings.is_none())
      throw Error(
          ErrCode::Value,
          "If backend or device is specified on jit, then out_shardings should not be specified.");
    if (device && backend)
      throw Error(ErrCode::Value, "can't specify both a device and a backend for jit, got device=" +
                                      pxl::repr(r[7]) + " and backend=" + pxl::repr(r[8]));
    if (device && !r[7].is_obj(ObjKind::Device))
      throw Error(ErrCode::Type, "jit() device must be a Device, not " + pxl::type_name(r[7]));
    j->device = device ? r[7].as<DeviceObj>()->id : 0;
  }
  check_sharding_leaves(in, j->in_shardings, "in_shardings");
  check_sharding_leaves(in, j->out_shardings, "out_shardings");
  j->validate_static_args();
  j->cache = jit_caches(in).cache_for(f, trace_params(*j));
  return Value::object(j);
}

Value make_jit(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("jit", a,
              {"fun", "static_argnums", "static_argnames", "donate_argnums", "donate_argnames",
               "in_shardings", "out_shardings", "device", "backend", "inline", "keep_unused",
               "compiler_options"},
              0);
  if (r.has(0)) return build_jit(in, r[0], r);
  // jax.jit(static_argnums=...) used as a decorator factory.
  auto held = std::make_shared<CallArgs>(a);
  return make_builtin("jit", [held](InterpreterImpl& in, CallArgs& c) {
    ArgReader fr("jit", c, {"fun"}, 1);
    CallArgs copy = *held;
    ArgReader r("jit", copy,
                {"fun", "static_argnums", "static_argnames", "donate_argnums", "donate_argnames",
                 "in_shardings", "out_shardings", "device", "backend", "inline", "keep_unused",
                 "compiler_options"},
                0);
    return build_jit(in, fr[0], r);
  });
}

} // namespace

void add_jit(InterpreterImpl& in, Value& jax) {
  Value jit = make_builtin("jit", make_jit);
  jax.as<ModuleObj>()->env->vars["_jit_caches"] =
      Value::object(std::make_shared<JitCacheRegistry>());
  jax.as<ModuleObj>()->env->vars["jit"] = jit;
  in.define_builtin("jit", jit);
  // jax._jit_within_trace(f): jit(f) for repeated calls inside one trace
  // (JitFunction::keep_captured), so that f is traced once there.
  jax.as<ModuleObj>()->env->vars["_jit_within_trace"] =
      make_builtin("_jit_within_trace", [](InterpreterImpl&, CallArgs& a) {
        ArgReader r("_jit_within_trace", a, {"fun"}, 1);
        auto j = std::make_shared<JitFunction>();
        j->fn = r[0];
        j->keep_captured = true;
        return Value::object(j);
      });
  // jax._remat(f, static_argnums): jax.checkpoint's function (JitFunction::remat).
  jax.as<ModuleObj>()->env->vars["_remat"] =
      make_builtin("_remat", [](InterpreterImpl& in, CallArgs& a) {
        ArgReader r("_remat", a, {"fun", "static_argnums"}, 1);
        check_callable(r[0]);
        auto j = std::make_shared<JitFunction>();
        j->fn = r[0];
        j->remat = true;
        if (r.has(1)) j->static_argnums = int_list(r[1], "static_argnums");
        j->cache = jit_caches(in).cache_for(r[0], "remat " + trace_params(*j));
        return Value::object(j);
      });
}

} // namespace pxl
