// pmap and shard_map: trace the function once per signature into an SPMD IR
// Function, check it (specs, mapped sizes, the vma rule of out_specs) before any
// device runs, then run it on the device threads. One mechanism underneath:
// pmap is shard_map over a 1-d mesh of its devices with the mapped axis split.
#include <algorithm>
#include <map>
#include <sstream>

#include "codegen/jit.hpp"
#include "ir/comm_report.hpp"
#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "runtime/debug_print.hpp"
#include "runtime/eager.hpp"
#include "runtime/executable.hpp"
#include "runtime/format.hpp"
#include "runtime/spmd_call.hpp"
#include "stdlib/aot_stages.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/cache_explain.hpp"
#include "stdlib/checkify.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/debug_print.hpp"
#include "stdlib/float0.hpp"
#include "stdlib/jit_partition.hpp"
#include "stdlib/mutable_ref.hpp"
#include "stdlib/np.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/shape_dtype_struct.hpp"
#include "stdlib/shard_map_checks.hpp"
#include "stdlib/shard_map_nested.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/sharding_rules.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

std::optional<std::string> pytree_prefix_error(InterpreterImpl& in, const TreeDef& prefix,
                                               const Value& full,
                                               const std::string& name); // stdlib/pytree_errors.cpp

namespace {

// One argument leaf as the SPMD function sees it.
struct InLeaf {
  Tensor global; // the whole array
  AVal block;    // per-participant type
  AxisSet vma = 0;
  std::string origin;    // why it varies, for the vma diagnostic
  PartitionSpec spec;    // shard_map: its in_spec; pmap: unused
  int map_axis = -1;     // pmap: the mapped axis, -1 for in_axes=None
  bool typed = false;    // shard_map over Explicit axes: must already be laid out as spec
  AxisSet unreduced = 0; // shard_map: its in_spec's unreduced axes (the body's partial sums)
  AxisSet reduced = 0;   // shard_map: its in_spec's reduced axes
  // shard_map with axis_names= over a mesh with Explicit axes it leaves
  // alone: the argument's sharding over those, which its type keeps in the body.
  PartitionSpec body_type;
};

// A traced and compiled signature: the callee of the spmd_call (its operands
// are the argument leaves, then the captured constants).
struct Compiled {
  std::shared_ptr<SpmdCallee> callee;
  TreeDef out_tree;
  std::vector<Tensor> consts; // captured by the trace, passed as replicated operands
  bool reusable = true;       // false when a constant is a value of an enclosing trace
  // Per output leaf: the float0 value the function returned there (bool zeros
  // stood for it in the trace), else None; the call's results get it back.
  ValueList float0_outputs;
  // shard_map with Explicit axes left out of axis_names: per output leaf, its
  // out_specs axes followed by those its type in the body is sharded over
  // (JAX's result sharding); empty otherwise.
  std::vector<PartitionSpec> out_layouts;
};

// The unreduced and reduced axes of an argument (their sets in a spec): an
// array's (a shard_map result with unreduced/reduced out_specs, a device_put
// to such a spec), or what the enclosing jit's types say of a traced value.
PartitionSpec ur_of(const Tensor& t) {
  PartitionSpec out;
  const PartitionSpec* s = nullptr;
  Value typed;
  if (t->sharded) {
    s = &t->sharded->spec;
  } else if (t->trace && t->trace_id >= 0) {
    auto& tc = *const_cast<TraceContext*>(static_cast<const TraceContext*>(t->trace));
    if (tc.type_sharding) typed = tc.type_sharding(t->trace_id);
    if (!typed.is_none()) s = &static_cast<ShardingObj*>(typed.as<OpaqueObj>())->spec;
  }
  if (s) out.unreduced = s->unreduced, out.reduced = s->reduced;
  return out;
}
std::string loc_str(const Span& s) {
  if (!s.valid()) return "?";
  return s.file->path() + ":" + std::to_string(s.file->line_of(s.begin)) + ":" +
         std::to_string(s.file->column_of(s.begin));
}

// Explains where value `id` became varying over mesh axis `bit`: the input spec
// or the collective/axis_index line, found by walking producers back.
std::string varying_origin(const Function& f, int id, int bit) {
  std::vector<int> stack{id};
  std::vector<bool> seen(f.values.size(), false);
  AxisSet mask = AxisSet{1} << bit;
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    if (seen[v]) continue;
    seen[v] = true;
    const IRValue& val = f.values[v];
    if (!(val.vma & mask)) continue;
    if (val.producer < 0) return val.origin;
    const Instr& in = f.body[val.producer];
    bool from_operands = false;
    for (int o : in.operands)
      if (f.values[o].vma & mask) {
        from_operands = true;
        stack.push_back(o);
      }
    if (!from_operands) {
      // lax.pcast(to='varying') is bound as the identity ppermute.
      bool pcast =
          in.op == Op::Ppermute && std::all_of(in.attrs.pairs.begin(), in.attrs.pairs.end(),
                                               [](const auto& p) { return p.first == p.second; });
      return std::string("the ") + (pcast ? "pcast" : op_name(in.op)) + " at " + loc_str(val.loc);
    }
  }
  return "its inputs";
}

// jax.debug.print output: each device's line, unprefixed as JAX prints them,
// statement by statement in device order (JAX's order varies from run to run).
void print_debug(InterpreterImpl& in, const Function& f, std::vector<DebugRecord>& recs) {
  sort_debug_records(recs);
  for (const DebugRecord& r : recs)
    if (std::optional<std::string> line =
            format_debug(in, r.fmt ? *r.fmt : f.debug_formats[r.format], r.values))
      in.out() << *line << "\n";
  in.out().flush();
}

// Eager shard_map (JAX's ShardMapTrace): runs the function traced so far on the
// devices with value `id` as its one output and returns each device's block in
// mesh order. The value gets a leading axis of size 1 laid out over every mesh
// axis, so that each device's own block comes back even where it is invariant.
std::vector<Array> run_traced_prefix(InterpreterImpl& in, const std::string& what,
                                     const Function& f, int id, const Mesh& mesh,
                                     const std::vector<InLeaf>& leaves,
                                     const std::vector<Tensor>& consts) {
  auto prefix = std::make_shared<Function>(f);
  IRValue v = f.values[id];
  v.aval.shape.insert(v.aval.shape.begin(), 1);
  v.producer = static_cast<int>(prefix->body.size());
  Instr reshape;
  reshape.op = Op::Reshape;
  reshape.attrs.shape = v.aval.shape;
  reshape.operands = {id};
  reshape.result = prefix->add_value(std::move(v));
  prefix->body.push_back(reshape);
  prefix->results = {reshape.result};
  std::vector<SpmdMapping> ins;
  std::vector<Tensor> operands;
  for (const InLeaf& l : leaves) {
    ins.push_back(SpmdMapping{l.spec, -1});
    operands.push_back(l.global);
  }
  operands.insert(operands.end(), consts.begin(), consts.end());
  consts_to_replicated_params(*prefix, ins);
  PartitionSpec every_axis;
  every_axis.entries = {mesh.axis_names};
  auto callee = make_spmd_callee(what, prefix, SpmdLayout{mesh, static_cast<int>(mesh.size()), 1},
                                 std::move(ins), {SpmdMapping{every_axis, -1}},
                                 &in.platform().threads(), in.options().exec,
                                 &in.platform().code_cache(), in.phase_times(), &in.platform());
  callee->check_vma = false;
  Tensor out = run_spmd_call(*callee, operands, in.pull_log())[0];
  const Shape& block = f.values[id].aval.shape;
  std::vector<Array> blocks;
  if (!out->sharded) return {in.ops().concrete(out).reshaped(block)};
  for (const Array& a : out->sharded->shards) blocks.push_back(a.reshaped(block));
  return blocks;
}

bool is_spec_leaf(const Value& v) { return v.is_none() || v.is_obj(ObjKind::Opaque); }
bool is_axis_leaf(const Value& v) { return v.is_none() || v.is_intlike(); }

// What a traced signature depends on, in labelled parts (--explain-cache).
Signature signature(const std::vector<InLeaf>& leaves, const TreeDef& tree) {
  Signature sig;
  sig.add("argument structure", tree.repr());
  for (size_t i = 0; i < leaves.size(); ++i) {
    const InLeaf& l = leaves[i];
    std::string mapping = l.map_axis >= 0 ? " mapped over axis " + std::to_string(l.map_axis)
                                          : " as " + l.spec.repr();
    sig.add("array argument " + std::to_string(i), type_str(l.global->aval) + mapping);
  }
  return sig;
}

// ---------------------------------------------------------------------------
// The shared driver: builds the Function, checks, runs, assembles.

struct SpmdFunction : OpaqueObj, std::enable_shared_from_this<SpmdFunction> {
  // Lowering (":ir", ":comm") runs call() up to compilation and stops there.
  bool lower_only = false;
  std::shared_ptr<Compiled> last;
  int64_t last_participants = 0;
  Value fn;
  std::string what;
  bool check_vma = true;
  std::map<std::string, std::shared_ptr<Compiled>> cache;
  std::vector<Signature> traced_signatures; // for --explain-cache
  int traces = 0;                           // how many times the function was traced (tests use it)
  // With --explain-cache, says why `sig` is being traced.
  void explain_miss(InterpreterImpl& in, const Signature& sig, const Span& where) {
    if (!in.options().explain_cache) return;
    std::vector<const Signature*> seen;
    for (const Signature& s : traced_signatures) seen.push_back(&s);
    std::string name = fn.is_obj(ObjKind::Function) ? fn.as<FunctionObj>()->name : "f";
    explain_trace_miss(in, what + "(" + name + ")", where, sig, seen);
    traced_signatures.push_back(sig);
  }
  std::string type_name() const override { return what == "pmap" ? "PmapFunction" : "function"; }
  const Value* wrapped() const override { return &fn; }
  void report(InterpreterImpl& in, const Function& f, int64_t participants) {
    if (in.options().dump_ir) in.out() << print_function(f);
    if (in.options().comm_report) in.out() << comm_report(f, participants);
    if (in.options().dump_llvm) in.out() << kernels_llvm_ir(f, true);
    if (in.options().dump_ptx) in.out() << kernels_ptx(f);
  }
  std::string repr() const override { return "<" + what + " of " + pxl::repr(fn) + ">"; }

  // f.lower(*args): traces (and checks) the call without running it; the
  // Lowered's compile() gives a callable for arguments of the same types.
  Value lower(InterpreterImpl& in, CallArgs& a) {
    Span where; // errors take the span of the lower() call
    Value ignored;
    lower_only = true;
    struct Reset {
      bool& flag;
      ~Reset() { flag = false; }
    } reset{lower_only};
    // ShapeDtypeStruct arguments (JAX's testLowerShapedArray) stand for
    // arrays of their type: zeros, which only the trace sees.
    auto concrete = [&](const Value& tree) {
      return map_tree(in, tree, [&](const Value& leaf) {
        const AVal* av = shape_dtype_struct_aval(leaf);
        return av ? make_array(np::zeros(in.ops(), av->shape, av->dtype)) : leaf;
      });
    };
    for (Value& v : a.pos) v = concrete(v);
    for (auto& kv : a.kw) kv.second = concrete(kv.second);
    call(in, a, where, ignored);
    StagedCall s;
    s.fn = Value::object(shared_from_this());
    s.text = last ? print_function(*last->callee->fn) : "";
    stage_arguments(in, a, where, s);
    for (size_t i = 0; i < s.in_avals.size(); ++i)
      s.arg_names.push_back("flat_args[" + std::to_string(i) + "]");
    return make_lowered(std::move(s));
  }

  // Nested SPMD functions have no meaning yet: say so before tracing, with
  // JAX 0.10's ValueError (its pmap is a shard_map, which must match the
  // enclosing manual mesh). `inner` is the mesh this call would run over.
  void check_not_nested(InterpreterImpl& in, const Mesh& inner, const Span& where) const {
    if (spmd_mode(in.ops()) == SpmdMode::None) return;
    Mesh outer;
    for (OpContext* c = &in.ops(); auto* tc = dynamic_cast<TraceContext*>(c); c = &tc->outer())
      if (tc->what() == "pmap" || tc->what() == "shard_map") {
        outer.axis_names = tc->function().mesh_axes;
        outer.axis_sizes = tc->function().mesh_sizes;
        // (The axes an enclosing shard_map leaves automatic stay Auto.)
        for (const std::string& n : outer.axis_names)
          outer.axis_types.push_back(std::find(tc->auto_axes.begin(), tc->auto_axes.end(), n) ==
                                             tc->auto_axes.end()
                                         ? AxisType::Manual
                                         : AxisType::Auto);
        break;
      }
    Mesh auto_inner = inner;
    if (what == "pmap") auto_inner.axis_types.clear();
    throw Error(ErrCode::Unsupported,
                "The context mesh " +
                    pxl::repr(make_abstract_mesh_value(outer, in.platform().name())) +
                    " should match the mesh passed to shard_map " + auto_inner.jax_str(),
                where,
                "nested pmap/shard_map calls are not supported: call it outside, or use a mesh "
                "with one more axis");
  }

  // Turns the traced Function into the call's callee: the captured constants
  // become trailing replicated parameters.
  void finish(InterpreterImpl& in, Compiled& c, TraceContext& tc, std::shared_ptr<Function> f,
              SpmdLayout layout, std::vector<SpmdMapping> ins, std::vector<SpmdMapping> outs) {
    c.consts = tc.captured_tensors();
    std::vector<Array> values; // all of them, when all are known
    for (const Tensor& t : c.consts) {
      c.reusable = c.reusable && !t->trace;
      if (t->concrete) values.push_back(*t->concrete);
    }
    if (values.size() != c.consts.size()) values.clear();
    consts_to_replicated_params(*f, ins);
    c.callee =
        make_spmd_callee(what, std::move(f), std::move(layout), std::move(ins), std::move(outs),
                         &in.platform().threads(), in.options().exec, &in.platform().code_cache(),
                         in.phase_times(), &in.platform(), std::move(values));
    c.callee->check_vma = check_vma;
    c.callee->num_consts = c.consts.size();
    c.callee->jaxpr_record = tc.jaxpr_record;
  }
  // While make_jaxpr records the enclosing trace, the body's trace records
  // JAX's structure too (its jit, cond and scan equations).
  static bool recording(InterpreterImpl& in) {
    auto* outer = dynamic_cast<TraceContext*>(&in.ops());
    return outer && outer->jaxpr_record;
  }
  static void record_if_enclosing_records(InterpreterImpl& in, TraceContext& tc) {
    if (recording(in)) tc.jaxpr_record = std::make_shared<JaxprRecord>();
  }

  // Runs the call on the devices, or, while jit/grad/vmap trace the caller,
  // records it as an spmd_call instruction of their Function.
  Value invoke(InterpreterImpl& in, const Compiled& c, const std::vector<InLeaf>& leaves,
               const Span& where) {
    std::vector<Tensor> operands;
    for (const InLeaf& l : leaves) operands.push_back(l.global);
    operands.insert(operands.end(), c.consts.begin(), c.consts.end());
    std::vector<Tensor> outs;
    if (dynamic_cast<TraceContext*>(&in.ops())) {
      LocScope loc(in.ops(), where);
      OpAttrs attrs;
      attrs.callee = c.callee;
      outs = in.ops().bind_call(attrs, operands);
    } else {
      std::vector<DebugRecord> debug;
      {
        ScopedPhase timing(in.phase_times(), "run: pmap/shard_map");
        outs = run_spmd_call(*c.callee, operands, in.pull_log(), &debug);
      }
      if (!dynamic_cast<TraceContext*>(&in.ops())) zip_eager_blocks(c.callee->layout.mesh, debug);
      print_debug(in, *c.callee->fn, debug);
      if (auto* eager = dynamic_cast<EagerContext*>(&in.ops()))
        outs = eager->checked_results("Invalid value (%) encountered in sharded computation.",
                                      std::move(outs), where);
    }
    ValueList vals;
    for (size_t i = 0; i < outs.size(); ++i)
      vals.push_back(i < c.float0_outputs.size() && is_float0(c.float0_outputs[i])
                         ? float0_zeros(outs[i]->aval.shape)
                         : make_array(outs[i]));
    return tree_unflatten(c.out_tree, vals);
  }
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override {
    // functools.wraps(fun), as JAX's pmap and shard_map: the function and its name.
    if (name == "__wrapped__") return out = fn, true;
    if (name == "__name__") return out = in.get_attr(fn, name, Span{}), true;
    if (name == "lower" && what == "pmap") {
      auto self = shared_from_this();
      out = make_builtin("lower",
                         [self](InterpreterImpl& in, CallArgs& a) { return self->lower(in, a); });
      return true;
    }
    if (name == "_cache_size")
      return out = Value::integer(static_cast<int64_t>(cache.size())), true;
    if (name == "_trace_count") return out = Value::integer(traces), true;
    return false;
  }
};

// ---------------------------------------------------------------------------

struct ShardMapFn : SpmdFunction {
  Mesh mesh;
  bool mesh_from_context = false; // no mesh=: the current mesh at each call
  // mesh=an AbstractMesh (axis names and sizes only): at each call the
  // devices come from the current mesh or from the arguments' NamedShardings.
  std::optional<Mesh> abstract_mesh;

  // JAX's aval.str_short(): int32[8].
  static std::string short_aval(const AVal& a) {
    std::string s = std::string(dtype_name(a.dtype)) + "[";
    for (size_t d = 0; d < a.shape.size(); ++d) s += (d ? "," : "") + std::to_string(a.shape[d]);
    return s + "]";
  }
  // JAX's "(('x', 2),)": a mesh's shape as its messages print it.
  static std::string shape_tuple(const Mesh& m) {
    std::vector<std::string> items;
    for (size_t i = 0; i < m.axis_names.size(); ++i)
      items.push_back("('" + m.axis_names[i] + "', " + std::to_string(m.axis_sizes[i]) + ")");
    std::string s = "(";
    for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
    return s + (items.size() == 1 ? ",)" : ")");
  }
  Mesh concrete_mesh(InterpreterImpl& in, const ValueList& args, const Span& where) const {
    const Mesh& am = *abstract_mesh;
    auto same_shape = [&](const Mesh& m) {
      return m.axis_names == am.axis_names && m.axis_sizes == am.axis_sizes;
    };
    if (const Value* cur = in.context_mesh())
      if (const Mesh* m = value_to_mesh(*cur); m && same_shape(*m)) return *m;
    ValueList leaves;
    tree_flatten(in, make_tuple(args), leaves);
    std::optional<Mesh> found;
    bool traced = dynamic_cast<TraceContext*>(&in.ops()) != nullptr;
    for (const Value& leaf : leaves) {
      const Tensor* t = leaf.is_obj(ObjKind::Array) ? &leaf.as<ArrayObj>()->tensor : nullptr;
      if (t && (*t)->sharded && (*t)->sharded->spans_devices()) {
        if (!same_shape((*t)->sharded->mesh))
          throw Error(ErrCode::Value,
                      "Mesh shape of the input " + shape_tuple((*t)->sharded->mesh) +
                          " does not match the mesh shape passed to shard_map  " + shape_tuple(am) +
                          " for shape " + short_aval((*t)->aval),
                      where);
        if (!found) found = (*t)->sharded->mesh;
        continue;
      }
      if (!traced && !(t && (*t)->trace))
        throw Error(
            ErrCode::Value,
            "Please pass `jax.Array`s with a `NamedSharding` as input to `shard_map` when passing "
            "`AbstractMesh` to the mesh argument.",
            where,
            "lay the arguments out with jax.device_put(x, NamedSharding(mesh, spec)), or call "
            "it under jax.set_mesh(mesh)");
    }
    if (found) return *found;
    // Traced (jit): the first devices, in order, as jax.make_mesh lays them out.
    Mesh m = am;
    int64_t n = 1;
    for (int64_t s : am.axis_sizes) n *= s;
    m.device_ids.clear();
    for (int64_t i = 0; i < n; ++i) m.device_ids.push_back(static_cast<int>(i));
    return m;
  }
  // No in_specs= (JAX's default): over Explicit axes each argument's spec is
  // the sharding in its type.
  bool infer_in_specs = false;
  Value in_specs, out_specs;
  // axis_names=: the manual mesh axes (empty: all of them). The others are
  // left to the compiler: the specs may not name them and the body's
  // collectives may not use them; the values are the fully manual ones.
  std::vector<std::string> manual;
  bool smap = false; // made by jax.smap (its errors name in_axes)
  std::vector<std::string> auto_axes() const {
    std::vector<std::string> out;
    if (manual.empty()) return out;
    for (const std::string& n : mesh.axis_names)
      if (std::find(manual.begin(), manual.end(), n) == manual.end()) out.push_back(n);
    return out;
  }

  // The Explicit axes that axis_names= leaves out: the body's values stay
  // sharded over them as their types say (empty when every axis is manual).
  std::vector<std::string> free_explicit_axes() const {
    std::vector<std::string> out;
    for (const std::string& n : auto_axes())
      if (mesh.axis_type(mesh.axis_of(n)) == AxisType::Explicit) out.push_back(n);
    return out;
  }
  // `dims` with only the axes in `keep` (`all`: unchanged).
  static std::vector<std::vector<std::string>>
  only_axes(const std::vector<std::vector<std::string>>& dims, const std::vector<std::string>& keep,
            bool all) {
    if (all) return dims;
    std::vector<std::vector<std::string>> out(dims.size());
    for (size_t d = 0; d < dims.size(); ++d)
      for (const std::string& n : dims[d])
        if (std::find(keep.begin(), keep.end(), n) != keep.end()) out[d].push_back(n);
    return out;
  }

  // Without in_specs the manual axes (`axes`, empty: all) must all be Explicit
  // for the specs to be inferred: JAX's TypeError otherwise.
  void check_manual_explicit(const std::vector<std::string>& axes, const Span& where) const {
    std::string names, types;
    bool manual_explicit = true;
    for (size_t i = 0, k = 0; i < mesh.axis_names.size(); ++i) {
      if (!axes.empty() && std::find(axes.begin(), axes.end(), mesh.axis_names[i]) == axes.end())
        continue;
      AxisType t = mesh.axis_type(static_cast<int>(i));
      manual_explicit = manual_explicit && t == AxisType::Explicit;
      names += (k ? ", '" : "'") + mesh.axis_names[i] + "'";
      types += std::string(k++ ? ", " : "") + "AxisType." + axis_type_name(t);
    }
    if (manual_explicit) return;
    if (smap)
      throw Error(ErrCode::Type,
                  "in_axes was not specified when axis_name=frozenset({" + names +
                      "}) was of type " + types,
                  where, "pass in_axes=, or use a mesh whose axis is Explicit");
    throw Error(ErrCode::Type,
                "shard_map in_specs argument must be a pytree of `jax.sharding.PartitionSpec` "
                "instances, but it was `None` when axis_names=frozenset({" +
                    names + "}) are of type " + types,
                where, "in_specs may be left out only on a mesh whose axes are all Explicit");
  }

  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    if (!a.kw.empty())
      throw Error(ErrCode::Arguments, "a shard_map'd function takes positional arguments only",
                  where);
    if (mesh_from_context) {
      const Value* current = in.context_mesh();
      if (!current || !value_to_mesh(*current)) // (`with mesh:` alone sets none, as in JAX 0.10)
        throw Error(ErrCode::Arguments,
                    "The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter into a "
                    "mesh context",
                    where,
                    "call it after jax.set_mesh(mesh) (or inside `with jax.set_mesh(mesh):`), or "
                    "pass mesh=");
      mesh = *value_to_mesh(*current);
    }
    if (abstract_mesh) mesh = concrete_mesh(in, a.pos, where);
    // Inside another shard_map's body, over axes it leaves automatic.
    if (TraceContext* outer = enclosing_shard_map(in.ops()); outer && !outer->auto_axes.empty()) {
      // JAX takes the nested call's mesh from the context: a concrete mesh
      // passed to it does not match the partly manual one there.
      if (!mesh_from_context && !abstract_mesh) check_not_nested(in, mesh, where);
      const std::vector<std::string>& inner = manual.empty() ? outer->auto_axes : manual;
      Value args_tuple = make_tuple(a.pos);
      ValueList per_leaf;
      if (infer_in_specs) {
        // The body's values carry no sharding over the inner manual axes (pxl
        // types them only over manual ones), so, as JAX infers for an
        // argument without one, each is replicated over them: P().
        check_manual_explicit(inner, where);
        ValueList leaves;
        tree_flatten(in, args_tuple, leaves);
        for (size_t i = 0; i < leaves.size(); ++i) per_leaf.push_back(make_spec_value({}));
      } else {
        check_spec_tree(in, in_specs, true, mesh, where, inner);
        check_prefix_structure(in_specs, args_tuple, "shard_map in_specs", is_spec_leaf, where);
        broadcast_prefix(in, in_specs, args_tuple, per_leaf, is_spec_leaf, "shard_map in_specs");
      }
      check_spec_tree(in, out_specs, false, mesh, where, inner);
      out = call_nested_shard_map(in, *outer, fn, mesh, manual, per_leaf, out_specs, check_vma,
                                  a.pos, where);
      return true;
    }
    check_not_nested(in, mesh, where);
    const ValueList& args = a.pos;
    // Sharding is part of the arguments' types only when every mesh axis is
    // Explicit (JAX checks it when all the manual axes are Explicit).
    const bool explicit_types = explicit_mesh(mesh);
    // in_specs: a tuple with one entry per argument (or a single P for all).
    ValueList per_leaf;
    Value args_tuple = make_tuple(args);
    if (infer_in_specs) {
      check_manual_explicit(manual, where);
      ValueList leaves;
      tree_flatten(in, args_tuple, leaves);
      for (const Value& leaf : leaves) {
        PartitionSpec inferred;
        if (leaf.is_obj(ObjKind::Array)) {
          auto typed = explicit_type_spec(in.to_tensor(leaf, where));
          if (!typed)
            throw Error(
                ErrCode::Unsupported,
                "shard_map without in_specs of a value whose sharding is not known here (inside "
                "grad or vmap, or a jit of arrays not laid out over an Explicit mesh) is not "
                "supported",
                where, "pass in_specs=, the specs the arguments are laid out with");
          // Only the manual axes: the others stay in the value's type.
          inferred.entries = only_axes(*typed, manual, manual.empty());
          PartitionSpec ur = ur_of(in.to_tensor(leaf, where)); // (JAX's in_specs too)
          inferred.unreduced = ur.unreduced;
          inferred.reduced = ur.reduced;
        }
        per_leaf.push_back(make_spec_value(std::move(inferred)));
      }
    } else {
      check_spec_tree(in, in_specs, true, mesh, where, manual);
      check_prefix_structure(in_specs, args_tuple, "shard_map in_specs", is_spec_leaf, where);
      broadcast_prefix(in, in_specs, args_tuple, per_leaf, is_spec_leaf, "shard_map in_specs");
    }
    for (bool input : {true, false}) {
      if (input && infer_in_specs) continue;
      ValueList spec_leaves;
      tree_flatten(in, input ? in_specs : out_specs, spec_leaves);
      for (const Value& l : spec_leaves)
        if (is_spec_leaf(l) && !l.is_none())
          check_unreduced_spec(value_to_spec(l, "shard_map specs entry"), input, where);
    }
    check_spec_tree(in, out_specs, false, mesh, where, manual);
    ValueList arg_leaves;
    TreeDef in_tree = tree_flatten(in, args_tuple, arg_leaves);
    if (!infer_in_specs) {
      // JAX's _check_specs_vs_args: ranks, then divisibility, over all leaves.
      std::vector<std::string> arg_paths = leaf_key_paths(in_tree);
      std::vector<std::string> spec_paths = covering_spec_paths(in_specs, in_tree, is_spec_leaf);
      std::vector<SpecLeaf> checked;
      for (size_t i = 0; i < arg_leaves.size(); ++i) {
        if (per_leaf[i].is_none()) continue;
        checked.push_back(SpecLeaf{value_to_spec(per_leaf[i], "shard_map in_specs entry"),
                                   in.to_tensor(arg_leaves[i], where)->aval, spec_paths.at(i),
                                   arg_paths.at(i)});
      }
      check_in_specs_vs_args(fn, mesh, checked, where);
    }
    std::vector<InLeaf> leaves;
    Function proto;
    proto.mesh_axes = mesh.axis_names;
    proto.mesh_sizes = mesh.axis_sizes;
    // JAX: a leaf whose in_spec is None and that is not an array (a Python
    // number, a tuple of ints...) reaches the body as it is, as a static value.
    std::vector<std::pair<size_t, Value>> statics;
    for (size_t i = 0; i < arg_leaves.size(); ++i) {
      if (per_leaf[i].is_none() && !arg_leaves[i].is_obj(ObjKind::Array)) {
        statics.push_back({i, arg_leaves[i]});
        continue;
      }
      InLeaf l;
      l.global = in.to_tensor(arg_leaves[i], where);
      l.spec = value_to_spec(per_leaf[i], "shard_map in_specs entry");
      std::string problem = check_spec(mesh, l.spec, l.global->aval.shape);
      if (!problem.empty())
        throw Error(ErrCode::Spec, "shard_map: argument " + std::to_string(i) + ": " + problem,
                    where);
      // A traced argument whose type's sharding is not known yet is checked
      // when jit partitions the call (jit_partition.cpp).
      l.typed = explicit_types && !per_leaf[i].is_none();
      PartitionSpec arg_ur = ur_of(l.global);
      std::vector<std::string> arg_unreduced = arg_ur.unreduced;
      if (l.typed)
        if (auto typed = explicit_type_spec(l.global)) {
          explicit_in_spec_check(l.spec, only_axes(*typed, manual, manual.empty()), l.global->aval,
                                 where, arg_unreduced, arg_ur.reduced);
          l.body_type.entries = only_axes(*typed, free_explicit_axes(), false);
        }
      // The spec's unreduced (reduced) axes must be the argument's.
      auto same_as_arg = [&](bool same, const char* what) {
        if (!same)
          throw Error(ErrCode::Value,
                      std::string("in_specs containing ") + what + " " + l.spec.repr() +
                          " passed to shard_map should be equal to the " + what +
                          " present on the in_aval " + type_str(l.global->aval),
                      where);
      };
      same_as_arg(
          PartitionSpec{{}, {}, l.spec.unreduced}.same_ur(PartitionSpec{{}, {}, arg_unreduced}),
          "unreduced");
      same_as_arg(PartitionSpec{{}, {}, {}, l.spec.reduced}.same_ur(
                      PartitionSpec{{}, {}, {}, arg_ur.reduced}),
                  "reduced");
      if (check_vma) {
        for (const std::string& u : l.spec.unreduced)
          l.unreduced |= AxisSet{1} << proto.axis_bit(u);
        for (const std::string& u : l.spec.reduced) l.reduced |= AxisSet{1} << proto.axis_bit(u);
      }
      l.block = l.global->aval;
      l.block.shape = block_shape(mesh, l.spec, l.global->aval.shape);
      for (const auto& axis : l.spec.axes()) l.vma |= AxisSet{1} << proto.axis_bit(axis);
      l.origin = "the in_specs " + l.spec.repr() + " of argument " + std::to_string(i);
      leaves.push_back(std::move(l));
    }
    Signature sig = signature(leaves, in_tree);
    for (const auto& [i, v] : statics) {
      if (!is_hashable(v))
        throw Error(ErrCode::Type,
                    "shard_map: argument leaf " + std::to_string(i) +
                        " has in_specs None, so it is static and must be hashable, not " +
                        pxl::type_name(v),
                    where);
      sig.add("static leaf " + std::to_string(i), pxl::type_name(v) + " " + pxl::repr(v));
    }
    if (mesh_from_context) {
      std::string ids;
      for (int id : mesh.device_ids) ids += " " + std::to_string(id);
      sig.add("current mesh", mesh.repr() + ids);
    }
    // JAX traces a shard_map'd function's body at every call (jit caches the
    // trace that encloses it), so Python side effects in the body, such as
    // print, happen at each call; compiled kernels still come from the code cache.
    std::string key = sig.key();
    explain_miss(in, sig, where);
    std::shared_ptr<Compiled> c =
        compile(in, leaves, statics, arg_leaves.size(), in_tree, proto, where);
    if (c->reusable) cache[key] = c;
    report(in, *c->callee->fn, mesh.size());
    last = c;
    last_participants = mesh.size();
    if (lower_only) return true;
    out = invoke(in, *c, leaves, where);
    if (!c->out_layouts.empty()) {
      // Each result laid out as its type says (see out_layouts).
      ValueList results;
      TreeDef tree = tree_flatten(in, out, results);
      for (size_t r = 0; r < results.size() && r < c->out_layouts.size(); ++r) {
        Value target = Value::object(std::make_shared<ShardingObj>(mesh, c->out_layouts[r]));
        results[r] = dynamic_cast<TraceContext*>(&in.ops())
                         ? constrain_traced(in, results[r], target, "shard_map")
                         : device_put_leaf(in, results[r], target);
      }
      out = tree_unflatten(tree, results);
    }
    return true;
  }

  // JAX's _check_unreduced of an out_specs entry: unreduced/reduced need a
  // fully manual shard_map over Explicit axes.
  void check_unreduced_spec(const PartitionSpec& s, bool input, const Span& where) const {
    if (s.unreduced.empty() && s.reduced.empty()) return;
    std::string which = input ? "in" : "out";
    if (!manual.empty() && manual.size() != mesh.axis_names.size()) {
      std::string names;
      for (const std::string& n : manual) names += (names.empty() ? "'" : ", '") + n + "'";
      throw Error(ErrCode::Unsupported,
                  "unreduced/reduced can only be passed to " + which +
                      "_specs when shard_map is in full manual mode. Got mesh axis names " +
                      axes_tuple(mesh.axis_names) + ", manual_axes: frozenset({" + names +
                      "}), specs: " + s.repr() +
                      ". Please file a bug at https://github.com/jax-ml/jax/issues.",
                  where);
    }
    for (bool red : {false, true})
      for (const std::string& u : red ? s.reduced : s.unreduced)
        if (mesh.axis_of(u) < 0) // JAX looks the axis's type up: KeyError
          throw Error(ErrCode::Key, "'" + u + "'", where,
                      which + "_specs " + s.repr() + " names an axis the mesh lacks");
    for (bool red : {false, true})
      for (const std::string& u : red ? s.reduced : s.unreduced)
        if (int a = mesh.axis_of(u); a >= 0 && mesh.axis_type(a) != AxisType::Explicit)
          throw Error(ErrCode::Value,
                      std::string(red ? "reduced" : "unreduced") + " in " + which + "_specs " +
                          s.repr() +
                          " can only be used when the mesh passed to shard_map contains axis "
                          "names all of type `Explicit`. Got mesh " +
                          mesh.jax_str(),
                      where);
  }
  static std::string axes_tuple(const std::vector<std::string>& names) {
    std::string t = "(";
    for (size_t i = 0; i < names.size(); ++i) t += (i ? ", '" : "'") + names[i] + "'";
    return t + (names.size() == 1 ? ",)" : ")");
  }
  // What JAX's shard_map does to an output before checking it against its
  // out_specs (add_implicit_pvary_and_unreduced): a pvary over the axes the
  // spec's entries name (which an unreduced value refuses), then a
  // vary_unreduced_cast over the spec's unreduced axes the value is not yet
  // unreduced over (which must vary over them). Both are no-ops on the data.
  void implicit_unreduced_cast(const Function& f, const PartitionSpec& s, IRValue& v,
                               const Span& where) const {
    auto bit_of = [&](const std::string& n) {
      int b = f.axis_bit(n);
      return b < 0 ? AxisSet{0} : AxisSet{1} << b;
    };
    auto short_type = [&](const IRValue& x) { return type_str(x.aval) + mat_suffix(f, x); };
    AxisSet entry_axes = 0;
    for (const std::string& n : s.axes()) entry_axes |= bit_of(n);
    AxisSet pvaried = entry_axes & ~v.vma;
    for (bool red : {false, true})
      if (pvaried & (red ? v.reduced : v.unreduced)) {
        std::string axes;
        for (size_t i = 0; i < f.mesh_axes.size(); ++i)
          if (pvaried & (AxisSet{1} << i))
            axes += (axes.empty() ? "'" : ", '") + f.mesh_axes[i] + "'";
        throw Error(ErrCode::Value,
                    std::string("pvary cannot accept args which are ") +
                        (red ? "reduced" : "unreduced") + ". Got " + short_type(v) + " and axes={" +
                        axes + "}",
                    where);
      }
    v.vma |= entry_axes;
    AxisSet want = 0;
    for (const std::string& u : s.unreduced) want |= bit_of(u);
    want &= ~v.unreduced;
    if (!want) return;
    if (!v.vma)
      throw Error(ErrCode::Value,
                  "vary_unreduced_cast only accepts inputs that are varying. Got " + short_type(v),
                  where);
    if (!(v.vma & want)) {
      std::vector<std::string> axes, varying;
      for (size_t i = 0; i < f.mesh_axes.size(); ++i) {
        if (want & (AxisSet{1} << i)) axes.push_back(f.mesh_axes[i]);
        if (v.vma & (AxisSet{1} << i)) varying.push_back("'" + f.mesh_axes[i] + "'");
      }
      std::string vs;
      for (const std::string& x : varying) vs += (vs.empty() ? "" : ", ") + x;
      throw Error(ErrCode::Value,
                  "vary_unreduced_cast is a Varying->Unreduced collective. This means that the "
                  "axis names mentioned in `axes` passed to `vary_unreduced_cast` must be present "
                  "in `jax.typeof(x).mat.varying`. Got axes=" +
                      axes_tuple(axes) + " and jax.typeof(x).mat.varying=frozenset({" + vs + "})",
                  where);
    }
    v.vma &= ~want;
    v.unreduced |= want;
  }

  std::shared_ptr<Compiled> compile(InterpreterImpl& in, const std::vector<InLeaf>& leaves,
                                    const std::vector<std::pair<size_t, Value>>& statics,
                                    size_t n_leaves, const TreeDef& in_tree, const Function& proto,
                                    const Span& where) {
    auto c = std::make_shared<Compiled>();
    auto f = std::make_shared<Function>(proto);
    f->name = fn.is_obj(ObjKind::Function) ? fn.as<FunctionObj>()->name : "f";
    TraceContext tc(*f, in.ops(), "shard_map");
    record_if_enclosing_records(in, tc);
    // (Each device's value is its whole block, as XLA lays a manual computation's out.)
    tc.layout_sharding = [m = mesh](int) {
      return Value::object(std::make_shared<ShardingObj>(m, PartitionSpec{}));
    };
    tc.check_vma = check_vma;
    tc.auto_axes = auto_axes();
    if (!dynamic_cast<TraceContext*>(&in.ops()) && !lower_only) {
      // Called eagerly, as in JAX, the body may branch on a value that every
      // device holds alike (a psum over all axes): run what is traced so far to
      // learn it. The trace then depends on the data and is not cached.
      auto run_prefix = [&, c](int id) {
        c->reusable = false;
        return run_traced_prefix(in, what, *f, id, mesh, leaves, tc.captured_tensors());
      };
      tc.concretize = [&, run_prefix](int id) -> std::optional<Array> {
        if (f->values[id].vma || f->values[id].unreduced) return std::nullopt;
        return run_prefix(id)[0];
      };
      tc.describe = [&, run_prefix](int id) -> std::optional<std::string> {
        std::vector<Array> blocks = run_prefix(id);
        // JAX's ShardMapTracer.__str__: each device's block, in mesh order.
        std::string names;
        for (const std::string& n : mesh.axis_names) names += (names.empty() ? "" : ", ") + n;
        std::string text;
        for (int64_t pos = 0; pos < mesh.size(); ++pos) {
          std::string coords;
          for (int64_t x : mesh.coords(pos))
            coords += (coords.empty() ? "" : ", ") + std::to_string(x);
          if (mesh.ndim() == 1) coords += ",";
          text += std::string(pos ? "\n" : "") + "On " +
                  in.platform().device_label(mesh.device_ids[pos]) + " at mesh coordinates (" +
                  names + ",) = (" + coords + "):\n" + array_str(blocks[static_cast<size_t>(pos)]) +
                  "\n";
        }
        return text;
      };
    }
    // Over Explicit axes axis_names= leaves out, the body's values keep their
    // shardings in their types (jax.typeof shows them; the results are laid
    // out so): the partitioner's, from the arguments' shardings over those axes.
    const std::vector<std::string> free = free_explicit_axes();
    OperandSpecs body_types;
    for (const InLeaf& l : leaves) body_types.push_back(l.body_type);
    std::function<std::optional<PartitionSpec>(int)> body_type_of;
    if (!free.empty()) {
      Mesh typed_mesh = mesh;
      for (const std::string& n : manual)
        typed_mesh.axis_types[static_cast<size_t>(mesh.axis_of(n))] = AxisType::Manual;
      Value am = make_abstract_mesh_value(typed_mesh, in.platform().name());
      body_type_of = [&in, &tc, m = mesh, body_types, free](int id) {
        std::optional<PartitionSpec> s = traced_sharding(in, tc, m, body_types, id);
        if (s) s->entries = only_axes(s->entries, free, false);
        return s;
      };
      tc.type_sharding = [body_type_of, am](int id) -> Value {
        std::optional<PartitionSpec> s = body_type_of(id);
        return s ? make_abstract_sharding(am, *s) : Value();
      };
    }
    ValueList traced;
    for (const InLeaf& l : leaves)
      traced.push_back(make_array(tc.add_param(l.block, l.vma, where, l.origin)));
    for (size_t k = 0; k < leaves.size(); ++k) { // unreduced in_specs: typed as partial sums
      f->values[static_cast<size_t>(f->params[k])].unreduced = leaves[k].unreduced;
      f->values[static_cast<size_t>(f->params[k])].reduced = leaves[k].reduced;
    }
    ++traces;
    traced = with_static_args(statics, traced, n_leaves);
    ValueList out_leaves =
        trace_body(in, tc, fn, tree_unflatten(in_tree, traced), where, c->out_tree);
    check_closed_over(tc.captured_tensors(), mesh, manual, where);
    std::vector<SpmdMapping> outs;
    // out_specs: a single P (or a 1-tuple holding one) may stand for a lone output.
    Value out_tree_value = tree_unflatten(c->out_tree, out_leaves);
    Value specs = out_specs;
    if (const ValueList* items = sequence_items(specs))
      if (items->size() == 1 && is_spec_leaf((*items)[0]) && out_leaves.size() == 1 &&
          !sequence_items(out_tree_value))
        specs = (*items)[0];
    ValueList per_out;
    try {
      broadcast_prefix(in, specs, out_tree_value, per_out, is_spec_leaf, "shard_map out_specs");
    } catch (Error& e) {
      e.set_span_if_missing(where);
      throw;
    }
    std::vector<SpecLeaf> out_checked;
    {
      std::vector<std::string> out_paths = leaf_key_paths(c->out_tree);
      std::vector<std::string> spec_paths = covering_spec_paths(specs, c->out_tree, is_spec_leaf);
      for (size_t r = 0; r < out_leaves.size(); ++r)
        out_checked.push_back(SpecLeaf{value_to_spec(per_out[r], "shard_map out_specs entry"),
                                       f->values[f->results[r]].aval, spec_paths.at(r),
                                       out_paths.at(r), mat_suffix(*f, f->values[f->results[r]])});
    }
    check_out_specs_rank(fn, out_checked, where);
    for (size_t r = 0; r < out_leaves.size(); ++r) {
      check_unreduced_spec(out_checked[r].spec, false, where);
      // Typed as JAX types it after its implicit casts (unreduced out_specs):
      // `v` is a copy whose vma/unreduced the casts change.
      IRValue v = f->values[f->results[r]];
      if (check_vma) implicit_unreduced_cast(*f, out_checked[r].spec, v, where);
      PartitionSpec s = out_checked[r].spec;
      Shape global = v.aval.shape;
      for (size_t d = 0; d < s.entries.size(); ++d)
        for (const auto& axis : s.entries[d]) global[d] *= mesh.axis_size(axis);
      std::string problem = check_spec(mesh, s, global);
      if (!problem.empty())
        throw Error(ErrCode::Spec, "shard_map: output " + std::to_string(r) + ": " + problem,
                    where);
      if (check_vma) {
        std::vector<std::string> named = s.axes(), varying;
        int first_bad = -1;
        // A value unreduced over an axis its out_specs leave out is not
        // replicated there either (JAX's replication error).
        AxisSet unreduced_left = v.unreduced;
        for (const std::string& u : s.unreduced)
          if (int bit = f->axis_bit(u); bit >= 0) unreduced_left &= ~(AxisSet{1} << bit);
        // So is one reduced over an axis its out_specs do not list as reduced.
        AxisSet reduced_left = v.reduced;
        for (const std::string& u : s.reduced)
          if (int bit = f->axis_bit(u); bit >= 0) reduced_left &= ~(AxisSet{1} << bit);
        unreduced_left |= reduced_left;
        for (size_t b = 0; b < mesh.axis_names.size(); ++b) {
          if (!((v.vma | unreduced_left) & (AxisSet{1} << b))) continue;
          varying.push_back(mesh.axis_names[b]);
          if (first_bad < 0 &&
              std::find(named.begin(), named.end(), mesh.axis_names[b]) == named.end())
            first_bad = static_cast<int>(b);
        }
        if (first_bad >= 0) {
          const std::string& axis = mesh.axis_names[static_cast<size_t>(first_bad)];
          // JAX names the user's function under jit, and otherwise the
          // wrapper its eager shard_map traces.
          auto* outer = dynamic_cast<TraceContext*>(&in.ops());
          std::string fun =
              outer && outer->what() == "jit" ? shard_map_fun_name(fn) : "_rem_singleton";
          bool partial = (unreduced_left & (AxisSet{1} << first_bad)) != 0;
          std::string hint = (reduced_left & (AxisSet{1} << first_bad))
                                 ? "output " + std::to_string(r) + " is reduced over '" + axis +
                                       "'; add '" + axis + "' to its out_specs' reduced="
                             : partial
                                 ? "output " + std::to_string(r) + " holds partial sums over '" +
                                       axis + "' (unreduced); psum it over '" + axis +
                                       "', or add '" + axis + "' to its out_specs' unreduced="
                                 : "output " + std::to_string(r) + " varies over '" + axis +
                                       "' through " + varying_origin(*f, f->results[r], first_bad) +
                                       "; reduce it with psum (or pmean/all_gather) over '" + axis +
                                       "', or name '" + axis + "' in out_specs";
          throw Error(ErrCode::Vma, out_vma_message(fun, mesh, out_checked[r], varying), where,
                      hint);
        }
        // JAX's _unshard_shaped_array: the out_specs' reduced axes are the value's.
        AxisSet want_reduced = 0;
        for (const std::string& u : s.reduced)
          if (int bit = f->axis_bit(u); bit >= 0) want_reduced |= AxisSet{1} << bit;
        if (want_reduced != v.reduced)
          throw Error(ErrCode::Value,
                      "out_specs passed to shard_map should be equal to the reduced present on "
                      "the out_aval. Got out_specs=" +
                          s.repr() + " and out_aval=" + type_str(v.aval) + mat_suffix(*f, v),
                      where,
                      "cast output " + std::to_string(r) +
                          " to reduced over those axes (jax.lax.pcast(x, axes, to='reduced') or "
                          "all_gather(..., to='reduced'))");
      }
      if (body_type_of) {
        PartitionSpec layout = s;
        if (std::optional<PartitionSpec> typed = body_type_of(f->results[r])) {
          if (layout.entries.size() < typed->entries.size())
            layout.entries.resize(typed->entries.size());
          for (size_t d = 0; d < typed->entries.size(); ++d)
            for (const std::string& n : typed->entries[d]) layout.entries[d].push_back(n);
        }
        c->out_layouts.push_back(std::move(layout));
      }
      outs.push_back(SpmdMapping{std::move(s), -1});
    }
    std::vector<SpmdMapping> ins;
    for (const InLeaf& l : leaves) ins.push_back(SpmdMapping{l.spec, -1});
    finish(in, *c, tc, std::move(f), SpmdLayout{mesh, static_cast<int>(mesh.size()), 1},
           std::move(ins), std::move(outs));
    // (With axis_names= the check above compared the manual axes only.)
    for (const InLeaf& l : leaves)
      c->callee->explicit_in_types.push_back(l.typed && manual.empty());
    c->callee->manual_axes = manual;
    return c;
  }
};

// ---------------------------------------------------------------------------

struct PmapFn : SpmdFunction {
  std::string axis_name; // "" for axis_name=None
  Value in_axes = Value::integer(0), out_axes = Value::integer(0);
  std::vector<int> devices; // empty: all devices
  int64_t axis_size = -1;   // pmap(axis_size=): must equal the mapped size (-1: not given)
  // static_broadcasted_argnums: those arguments are Python values passed to
  // every device at trace time; one pmap per distinct tuple of their values.
  std::vector<int64_t> static_argnums;
  std::map<std::string, std::shared_ptr<PmapFn>> static_variants;

  // A PmapFn with this one's settings, for a variant whose function wraps fn.
  std::shared_ptr<PmapFn> variant() const {
    auto sub = std::make_shared<PmapFn>();
    sub->what = what;
    sub->axis_name = axis_name;
    sub->out_axes = out_axes;
    sub->devices = devices;
    sub->axis_size = axis_size;
    sub->in_axes = in_axes;
    return sub;
  }
  // Runs a variant for this call (":ir"/":comm" of the variant that runs) and
  // takes over what it recorded.
  bool call_variant(PmapFn& sub, InterpreterImpl& in, CallArgs& c, const Span& where, Value& out) {
    sub.lower_only = lower_only;
    bool done = sub.call(in, c, where, out);
    last = sub.last;
    last_participants = sub.last_participants;
    return done;
  }

  // JAX's ValueError when a static argument is not passed positionally.
  void check_statics_positional(size_t n, const Span& where) const {
    int64_t most = *std::max_element(static_argnums.begin(), static_argnums.end());
    if (most >= static_cast<int64_t>(n)) { // JAX's ValueError
      std::string nums;
      for (int64_t k : static_argnums) nums += (nums.empty() ? "" : ", ") + std::to_string(k);
      if (static_argnums.size() == 1) nums += ",";
      throw Error(ErrCode::Arguments,
                  "pmapped function has static_broadcasted_argnums=(" + nums +
                      ") but was called with only " + std::to_string(n) + " positional argument" +
                      (n > 1 ? "s" : "") +
                      ". All static broadcasted arguments must be passed positionally.",
                  where);
    }
  }

  bool call_with_statics(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) {
    size_t n = a.pos.size();
    auto is_static = [&](size_t i) { return is_static_position(static_argnums, i, n); };
    std::vector<std::pair<size_t, Value>> statics;
    ValueList dyn;
    std::string key;
    for (size_t i = 0; i < n; ++i) {
      if (!is_static(i)) {
        dyn.push_back(a.pos[i]);
        continue;
      }
      if (!is_hashable(a.pos[i])) { // JAX's ValueError
        std::string cls =
            a.pos[i].is_obj(ObjKind::Array) ? "jaxlib._jax.ArrayImpl" : pxl::type_name(a.pos[i]);
        std::string fname = fn.is_obj(ObjKind::Function) ? fn.as<FunctionObj>()->name : "f";
        throw Error(ErrCode::Value,
                    "Non-hashable static arguments are not supported, as this can lead to "
                    "unexpected cache-misses. "
                    "Static argument (index " +
                        std::to_string(i) + ") of type <class '" + cls + "'> for function " +
                        fname + " is non-hashable.",
                    where);
      }
      statics.push_back({i, a.pos[i]});
      key += std::to_string(i) + "=" + pxl::type_name(a.pos[i]) + " " + pxl::repr(a.pos[i]) + ";";
    }
    std::shared_ptr<PmapFn>& sub = static_variants[key];
    if (!sub) {
      sub = variant();
      // A tuple of in_axes covers every argument; the static ones drop out.
      if (const ValueList* items = sequence_items(in_axes); items && items->size() == n) {
        ValueList kept;
        for (size_t i = 0; i < n; ++i)
          if (!is_static(i)) kept.push_back((*items)[i]);
        sub->in_axes = make_tuple(std::move(kept));
      }
      Value target = fn;
      sub->fn = make_builtin("pmap", [target, statics, n, where](InterpreterImpl& in, CallArgs& c) {
        CallArgs full;
        full.pos = with_static_args(statics, c.pos, n);
        return in.call(target, full, where);
      });
    }
    CallArgs c;
    c.pos = std::move(dyn);
    bool done = call_variant(*sub, in, c, where, out);
    traces = 0;
    for (const auto& [k, v] : static_variants) traces += v->traces;
    return done;
  }

  // Keyword arguments are mapped over their leading axis (JAX): they become
  // trailing positional arguments of a variant whose function passes them
  // back by name; one variant per (positional count, keyword names).
  std::map<std::string, std::shared_ptr<PmapFn>> keyword_variants;

  bool call_with_keywords(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) {
    size_t npos = a.pos.size();
    std::vector<std::string> names;
    std::string key = std::to_string(npos);
    CallArgs flat;
    flat.pos = a.pos;
    for (auto& [k, v] : a.kw) {
      names.push_back(k);
      key += "," + k;
      flat.pos.push_back(v);
    }
    std::shared_ptr<PmapFn>& sub = keyword_variants[key];
    if (!sub) {
      sub = variant();
      sub->static_argnums = static_argnums;
      ValueList axes;
      const ValueList* items = sequence_items(in_axes);
      if (items && items->size() != npos)
        throw Error(ErrCode::MappedAxis,
                    "pmap: in_axes has " + std::to_string(items->size()) +
                        " entries but the function is called with " + std::to_string(npos) +
                        " positional argument" + (npos == 1 ? "" : "s"),
                    where);
      for (size_t i = 0; i < npos; ++i) axes.push_back(items ? (*items)[i] : in_axes);
      for (size_t i = 0; i < names.size(); ++i) axes.push_back(Value::integer(0));
      sub->in_axes = make_tuple(std::move(axes));
      Value target = fn;
      sub->fn =
          make_builtin("pmap", [target, names, npos, where](InterpreterImpl& in, CallArgs& c) {
            CallArgs full;
            full.pos.assign(c.pos.begin(), c.pos.begin() + static_cast<std::ptrdiff_t>(npos));
            for (size_t i = 0; i < names.size(); ++i)
              full.kw.push_back({names[i], c.pos[npos + i]});
            return in.call(target, full, where);
          });
    }
    return call_variant(*sub, in, flat, where, out);
  }

  // JAX's ValueError when in_axes is not a tree prefix of the positional
  // arguments: (in_axes, 0) is compared against (args, kwargs), None a leaf.
  void check_in_axes_prefix(InterpreterImpl& in, const CallArgs& a, const Span& where) const {
    if (is_axis_leaf(in_axes)) return;
    Value none_is_leaf = make_builtin("is_leaf", [](InterpreterImpl&, CallArgs& c) {
      return Value::boolean(c.pos.at(0).is_none());
    });
    ValueList leaves;
    TreeDef prefix =
        tree_flatten(in, make_tuple({in_axes, Value::integer(0)}), leaves, &none_is_leaf);
    auto kwargs = std::make_shared<DictObj>();
    for (const auto& [k, v] : a.kw) kwargs->set(make_str(k), v);
    std::optional<std::string> err = pytree_prefix_error(
        in, prefix, make_tuple({make_tuple(a.pos), Value::object(kwargs)}), "pmap in_axes");
    if (!err) return;
    std::string msg =
        *err +
        "\n\nThe 'full pytree' here is the tuple of arguments passed positionally to the pmapped "
        "function, "
        "and the value of `in_axes` must be a tree prefix of that tuple. But it was not a prefix.";
    if (!a.kw.empty())
      msg += "\n\nWhen some arguments are passed by keyword to the pmapped function, they are not "
             "included in the "
             "comparison to `in_axes`. Instead, each argument passed by keyword is mapped over its "
             "leading axis. See "
             "the description of `in_axes` in the `pmap` docstring: "
             "https://docs.jax.dev/en/latest/_autosummary/jax.pmap.html#jax.pmap";
    msg += "\n\nCheck that the value of the `in_axes` argument to `pmap` is a tree prefix of the "
           "tuple of arguments "
           "passed positionally to the pmapped function.";
    throw Error(ErrCode::Value, msg, where);
  }

  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    if (!static_argnums.empty()) check_statics_positional(a.pos.size(), where);
    if (static_argnums.empty()) check_in_axes_prefix(in, a, where);
    if (!a.kw.empty()) return call_with_keywords(in, a, where, out);
    if (!static_argnums.empty()) return call_with_statics(in, a, where, out);
    const ValueList& args = a.pos;
    Value args_tuple = make_tuple(args);
    ValueList per_leaf;
    broadcast_prefix(in, in_axes, args_tuple, per_leaf, is_axis_leaf, "pmap in_axes");
    ValueList arg_leaves;
    TreeDef in_tree = tree_flatten(in, args_tuple, arg_leaves);
    for (const Value& l : arg_leaves)
      if (auto r = as_ref(l))
        throw Error(ErrCode::Unsupported,
                    "pmap: a mutable array reference (" + ref_type_name(*r) +
                        ") cannot be an argument; pass its value (r[...])",
                    where);
    std::vector<int> devs = devices;
    if (devs.empty())
      for (int d = 0; d < in.platform().device_count(); ++d) devs.push_back(d);
    const int64_t D = static_cast<int64_t>(devs.size());
    const std::string name = axis_name.empty() ? kPmapAxisName : axis_name;
    // The mapped size n is the first mapped array's (JAX); the pmap runs over
    // a mesh of m = min(n, D) devices (pxl: n = k*D runs k elements on each).
    int64_t n = -1;
    for (size_t i = 0; i < arg_leaves.size() && n < 0; ++i) {
      if (per_leaf[i].is_none() || !arg_leaves[i].is_obj(ObjKind::Array))
        continue; // JAX: values with a shape
      const Shape& shape = in.to_tensor(arg_leaves[i], where)->aval.shape;
      int64_t ax = per_leaf[i].as_int(), nd = static_cast<int64_t>(shape.size());
      if (ax >= nd || ax < -nd)
        throw Error(ErrCode::MappedAxis, "tuple index out of range", where); // JAX's IndexError
      n = shape[static_cast<size_t>(ax < 0 ? ax + nd : ax)];
    }
    if (n < 0)
      throw Error(ErrCode::MappedAxis, "pmap requires at least one argument with a mapped axis.",
                  where, "map at least one argument over its leading axis");
    if (axis_size >= 0 && axis_size != n) // JAX's ValueError
      throw Error(ErrCode::MappedAxis,
                  "Specified axis_size " + std::to_string(axis_size) +
                      " doesn't match received axis_size " + std::to_string(n) + ".",
                  where);
    const int64_t m = std::min(n, D);
    // JAX's NamedSharding of a mapped argument over that mesh.
    auto sharding_str = [&](int axis, int64_t mesh_size) {
      PartitionSpec spec;
      spec.entries.assign(static_cast<size_t>(axis) + 1, {});
      spec.entries[static_cast<size_t>(axis)] = {name};
      return "NamedSharding(mesh=" +
             (mesh_size
                  ? "Mesh('" + name + "': " + std::to_string(mesh_size) + ", axis_types=(Auto,))"
                  : std::string("Mesh()")) +
             ", spec=" + spec.repr() + (mesh_size ? ", memory_kind=device)" : ")");
    };
    std::vector<InLeaf> leaves;
    for (size_t i = 0; i < arg_leaves.size(); ++i) {
      InLeaf l;
      l.global = in.to_tensor(arg_leaves[i], where);
      l.block = l.global->aval;
      if (!per_leaf[i].is_none()) {
        const Shape& shape = l.global->aval.shape;
        int nd = l.global->aval.ndim();
        int64_t ax = per_leaf[i].as_int();
        if (n == 0) // JAX's ValueError
          throw Error(ErrCode::MappedAxis,
                      "One of in_shardings leaf specifications got an empty NamedSharding: " +
                          sharding_str(static_cast<int>(std::max<int64_t>(ax, 0)), 0) +
                          " which is not allowed.",
                      where);
        if (ax < -nd || ax >= nd) { // JAX: the argument's rank is below the sharding's
          std::string sh = sharding_str(static_cast<int>(std::max<int64_t>(ax, 0)), m);
          throw Error(ErrCode::MappedAxis,
                      "One of pjit arguments with pytree key path flat_args[" + std::to_string(i) +
                          "] is incompatible with its sharding annotation " + sh + ": Sharding " +
                          sh + " is only valid for values of rank at least " +
                          std::to_string(std::max<int64_t>(ax, 0) + 1) +
                          ", but was applied to a value of rank " + std::to_string(nd) + "." +
                          (nd == 0 ? " For scalars the PartitionSpec should be P()" : ""),
                      where);
        }
        l.map_axis = static_cast<int>(ax < 0 ? ax + nd : ax);
        int64_t size = shape[l.map_axis];
        if (size % m != 0) { // JAX's IndivisibleError
          std::string factors = "[";
          for (int d = 0; d < nd; ++d)
            factors += (d ? ", " : "") + std::to_string(d == l.map_axis ? m : 1);
          throw Error(ErrCode::MappedAxis,
                      "Sharding " + sharding_str(l.map_axis, m) + " implies that array axis " +
                          std::to_string(l.map_axis) + " is partitioned " + std::to_string(m) +
                          " times, but the dimension size is " + std::to_string(size) +
                          " (full shape: " + shape_str(shape) + ", per-dimension tiling factors: " +
                          factors + "] should evenly divide the shape)",
                      where,
                      n > D ? "pmap maps over at most the " + std::to_string(D) +
                                  " devices (or a multiple of them)"
                            : "");
        }
        if (size != n) { // JAX squeezes each device's block of size/m
          Shape block = shape;
          block[l.map_axis] = size / m;
          throw Error(
              ErrCode::MappedAxis,
              "cannot select an axis to squeeze out which has size not equal to one, got shape=" +
                  shape_str(block) + " and dimensions=(" + std::to_string(l.map_axis) + ",)",
              where, "every mapped argument must have the same size along its mapped axis");
        }
        l.block.shape.erase(l.block.shape.begin() + l.map_axis);
        l.vma = 1;
        l.origin = "the mapped argument " + std::to_string(i);
      }
      leaves.push_back(std::move(l));
    }
    check_not_nested(in, Mesh{{name}, {m}, {}}, where);
    int threads, k;
    if (n <= D) {
      threads = static_cast<int>(n);
      k = 1;
    } else if (n % D == 0) {
      threads = static_cast<int>(D);
      k = static_cast<int>(n / D);
    } else {
      PXL_ASSERT(
          false,
          "pmap: a mapped size neither at most nor a multiple of the devices passed the checks");
    }
    // The participant mesh: n elements on the threads, k per thread.
    Mesh pmesh{{name}, {n}, {}};
    for (int64_t p = 0; p < n; ++p) pmesh.device_ids.push_back(devs[p / k]);
    Signature sig = signature(leaves, in_tree);
    sig.add("elements per device",
            std::to_string(n) + " over " + std::to_string(threads) + " devices");
    std::string key = sig.key();
    std::shared_ptr<Compiled> c;
    auto it = cache.find(key);
    // (make_jaxpr records the body's structure: a trace made without it is traced again.)
    if (it != cache.end() && (!recording(in) || it->second->callee->jaxpr_record)) {
      c = it->second;
    } else {
      explain_miss(in, sig, where);
      c = compile(in, leaves, in_tree, pmesh, threads, k, where);
      if (c->reusable) cache[key] = c;
      report(in, *c->callee->fn, n);
    }
    last = c;
    last_participants = n;
    if (lower_only) return true;
    out = invoke(in, *c, leaves, where);
    return true;
  }

  std::shared_ptr<Compiled> compile(InterpreterImpl& in, const std::vector<InLeaf>& leaves,
                                    const TreeDef& in_tree, const Mesh& pmesh, int threads, int k,
                                    const Span& where) {
    auto c = std::make_shared<Compiled>();
    auto f = std::make_shared<Function>();
    f->name = fn.is_obj(ObjKind::Function) ? fn.as<FunctionObj>()->name : "f";
    f->mesh_axes = pmesh.axis_names;
    f->mesh_sizes = pmesh.axis_sizes;
    // Inside vmap(axis_name=...), collectives may name the enclosing vmap axes
    // (JAX): they are carried as extra axes after the pmap's, which vmap's
    // batching of the call (batch_spmd_call) turns into local reductions. The
    // pmap's own axis shadows one of the same name.
    if (auto* outer = dynamic_cast<TraceContext*>(&in.ops()))
      for (size_t a = 0; a < outer->function().mesh_axes.size(); ++a)
        if (f->axis_bit(outer->function().mesh_axes[a]) < 0) {
          f->mesh_axes.push_back(outer->function().mesh_axes[a]);
          f->mesh_sizes.push_back(outer->function().mesh_sizes[a]);
        }
    TraceContext tc(*f, in.ops(), "pmap");
    record_if_enclosing_records(in, tc);
    tc.layout_sharding = [m = pmesh](int) mutable {
      m.axis_types.assign(1, AxisType::Auto);
      return Value::object(std::make_shared<ShardingObj>(m, PartitionSpec{}));
    };
    ValueList traced;
    for (const InLeaf& l : leaves)
      traced.push_back(make_array(tc.add_param(l.block, l.vma, where, l.origin)));
    ++traces;
    ValueList out_leaves =
        trace_body(in, tc, fn, tree_unflatten(in_tree, traced), where, c->out_tree);
    for (const Value& v : out_leaves) c->float0_outputs.push_back(is_float0(v) ? v : Value());
    Value out_tree_value = tree_unflatten(c->out_tree, out_leaves);
    ValueList per_out;
    try {
      check_prefix_structure(out_axes, out_tree_value, "broadcast_prefix prefix_tree", is_axis_leaf,
                             where);
      broadcast_prefix(in, out_axes, out_tree_value, per_out, is_axis_leaf, "pmap out_axes");
    } catch (Error& e) {
      e.set_span_if_missing(where);
      throw;
    }
    std::vector<SpmdMapping> outs;
    const std::string& name = pmesh.axis_names[0];
    auto mapped = [&](int axis) {
      SpmdMapping m;
      m.spec.entries.assign(axis + 1, {});
      m.spec.entries[axis] = {name};
      m.squeeze = axis;
      return m;
    };
    for (size_t r = 0; r < out_leaves.size(); ++r) {
      const IRValue& v = f->values[f->results[r]];
      if (per_out[r].is_none()) { // unchecked, as JAX's (a shard_map with check_vma=False)
        outs.push_back(SpmdMapping{});
        continue;
      }
      int nd = v.aval.ndim() + 1;
      int64_t oa = per_out[r].as_int();
      if (oa < -nd || oa >= nd) // JAX's ValueError (from expand_dims)
        throw Error(ErrCode::Axis,
                    "axis " + std::to_string(oa) + " is out of bounds for array of dimension " +
                        std::to_string(nd),
                    where);
      outs.push_back(mapped(static_cast<int>(oa < 0 ? oa + nd : oa)));
    }
    std::vector<SpmdMapping> ins;
    for (const InLeaf& l : leaves)
      ins.push_back(l.map_axis < 0 ? SpmdMapping{} : mapped(l.map_axis));
    finish(in, *c, tc, std::move(f), SpmdLayout{pmesh, threads, k}, std::move(ins),
           std::move(outs));
    return c;
  }
};

std::vector<int> devices_arg(const Value& v) {
  std::vector<int> out;
  if (v.is_none()) return out;
  const ValueList* items = sequence_items(v);
  if (!items) throw Error(ErrCode::Type, "pmap() devices must be a list of Device values");
  if (items->empty())
    throw Error(ErrCode::MappedAxis, "'devices' argument to pmap must be non-empty, or None.");
  for (const Value& d : *items) {
    if (!d.is_obj(ObjKind::Device))
      throw Error(ErrCode::Type, "pmap() devices must be Device values, not " + type_name(d));
    out.push_back(d.as<DeviceObj>()->id);
  }
  return out;
}

// JAX's TypeError: in_axes/out_axes leaves must be ints or None.
void check_axes_leaves(InterpreterImpl& in, const Value& axes, const char* what) {
  ValueList leaves;
  tree_flatten(in, axes, leaves);
  for (const Value& l : leaves)
    if (!l.is_int())
      throw Error(
          ErrCode::Type,
          std::string("pmap ") + what +
              " must be an int, None, or (nested) container with those types as leaves, but got " +
              pxl::str(axes) + ".");
}

Value make_pmap(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("pmap", a,
              {"fun", "axis_name", "in_axes", "out_axes", "static_broadcasted_argnums", "devices",
               "backend", "axis_size", "donate_argnums"},
              1);
  auto p = std::make_shared<PmapFn>();
  p->fn = r[0];
  p->what = "pmap";
  p->check_vma =
      false; // JAX 0.10's pmap is a shard_map with check_vma=False (out_axes=None unchecked)
  if (r.has(1) && !r[1].is_none()) p->axis_name = value_to_str(r[1], "pmap() axis_name");
  if (r.has(2)) p->in_axes = r[2];
  if (r.has(3)) p->out_axes = r[3];
  check_axes_leaves(in, p->in_axes, "in_axes");
  check_axes_leaves(in, p->out_axes, "out_axes");
  if (r.has(4) && !r[4].is_none())
    p->static_argnums = value_to_int_list(r[4], "pmap() static_broadcasted_argnums");
  if (r.has(5)) p->devices = devices_arg(r[5]);
  if (r.has(7) && !r[7].is_none()) p->axis_size = value_to_int(r[7], "pmap() axis_size");
  for (int d : p->devices)
    if (d >= in.platform().device_count())
      throw Error(ErrCode::Device, "pmap(): device " + std::to_string(d) + " does not exist");
  return Value::object(p);
}

Value make_shard_map(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("shard_map", a,
              {"f", "mesh", "in_specs", "out_specs", "check_vma", "check_rep", "auto", "axis_names",
               "_smap"},
              0);
  if (!r.has(0)) { // jax.shard_map(mesh=..., in_specs=..., out_specs=...) as a decorator
    auto held = std::make_shared<CallArgs>(a);
    return make_builtin("shard_map", [held](InterpreterImpl& in, CallArgs& c) {
      ArgReader fr("shard_map", c, {"f"}, 1);
      CallArgs full = *held;
      full.pos.insert(full.pos.begin(), fr[0]);
      return make_shard_map(in, full);
    });
  }
  auto s = std::make_shared<ShardMapFn>();
  s->fn = r[0];
  s->what = "shard_map";
  // Without mesh=, the mesh made current by `with mesh:` or jax.set_mesh when
  // the function is called.
  if (!r.has(3))
    throw Error(ErrCode::Arguments, "shard_map() missing required argument 'out_specs'");
  s->infer_in_specs = !r.has(2);
  if (r.has(2)) s->in_specs = r[2];
  s->out_specs = r[3];
  s->smap = r.get_bool(8, false);
  if (r.has(7) && !r[7].is_none()) {
    Value names = r[7];
    if (names.is_obj(ObjKind::Str)) names = make_tuple({names});
    for (const Value& n : in.iterate(names, Span{}))
      s->manual.push_back(value_to_str(n, "shard_map() axis_names"));
  }
  if (!r.has(1) || r[1].is_none()) {
    s->mesh_from_context = true;
    s->check_vma = r.get_bool(4, true) && r.get_bool(5, true);
    return Value::object(s);
  }
  const Mesh* m = value_to_mesh(r[1]);
  if (!m && r[1].is_obj(ObjKind::Opaque))
    if (auto* am = dynamic_cast<AbstractMeshObj*>(r[1].as<OpaqueObj>())) {
      s->abstract_mesh = am->mesh;
      s->mesh = am->mesh;
      s->check_vma = r.get_bool(4, true) && r.get_bool(5, true);
      return Value::object(s);
    }
  if (!m) throw Error(ErrCode::Type, "shard_map() mesh must be a Mesh, not " + type_name(r[1]));
  s->mesh = *m;
  s->check_vma = r.get_bool(4, true) && r.get_bool(5, true);
  return Value::object(s);
}

} // namespace

namespace {
std::string render_lowered(const Function& f, int64_t participants, Lowered what) {
  switch (what) {
  case Lowered::Comm:
    return comm_report(f, participants);
  case Lowered::Llvm:
    return kernels_llvm_ir(f, true);
  case Lowered::Ptx:
    return kernels_ptx(f);
  case Lowered::Ir:
    break;
  }
  return print_function(f);
}
} // namespace

std::string lower_call(InterpreterImpl& in, const Value& fn, CallArgs& args, const Span& where,
                       Lowered what) {
  if (fn.is_obj(ObjKind::Opaque))
    if (auto* s = dynamic_cast<SpmdFunction*>(fn.as<OpaqueObj>())) {
      s->lower_only = true;
      struct Reset {
        SpmdFunction* s;
        ~Reset() { s->lower_only = false; }
      } reset{s};
      Value ignored;
      s->call(in, args, where, ignored);
      return render_lowered(*s->last->callee->fn, s->last_participants, what);
    }
  // A plain function: traced on one device (what jit will compile).
  Function f;
  f.name = fn.is_obj(ObjKind::Function) ? fn.as<FunctionObj>()->name : "f";
  TraceContext tc(f, in.ops(), "tracing");
  ValueList leaves, traced;
  TreeDef tree = tree_flatten(in, make_tuple(args.pos), leaves);
  for (const Value& l : leaves)
    traced.push_back(
        make_array(tc.add_param(in.to_tensor(l, where)->aval, 0, where, "an argument")));
  TreeDef out_tree;
  trace_body(in, tc, fn, tree_unflatten(tree, traced), where, out_tree);
  return render_lowered(f, 1, what);
}

void add_spmd_functions(InterpreterImpl& in, Value& jax, Value& shard_map_module) {
  Value pmap = make_builtin("pmap", make_pmap);
  Value smap = make_builtin("shard_map", make_shard_map);
  jax.as<ModuleObj>()->env->vars["pmap"] = pmap;
  jax.as<ModuleObj>()->env->vars["shard_map"] = smap;
  shard_map_module.as<ModuleObj>()->env->vars["shard_map"] = smap;
  in.define_builtin("pmap", pmap);
  in.define_builtin("shard_map", smap);
}

} // namespace pxl
