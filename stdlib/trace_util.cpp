#include "stdlib/trace_util.hpp"

#include <optional>

#include "stdlib/transforms.hpp"

#include "stdlib/jaxpr_record.hpp"

#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "runtime/spmd_call.hpp"
#include "stdlib/float0.hpp"
#include "stdlib/inspect_sharding.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/jit_partition.hpp"
#include "stdlib/mutable_ref.hpp"
#include "stdlib/np.hpp"
#include "stdlib/trace_origin.hpp"

namespace pxl {

std::vector<Tensor> leaf_tensors(InterpreterImpl& in, const ValueList& args, const Span& where,
                                 TreeDef* tree, std::vector<bool>* float0) {
  ValueList leaves;
  TreeDef def = tree_flatten(in, make_tuple(args), leaves);
  if (tree) *tree = def;
  std::vector<Tensor> out;
  for (const Value& l : leaves) {
    if (float0) float0->push_back(is_float0(l));
    if (auto r = as_ref(l)) { // (a reference argument: its value)
      out.push_back(r->value.as<ArrayObj>()->tensor);
      continue;
    }
    if (is_float0(l)) {
      out.push_back(np::full(in.ops(), float0_shape(l), Scalar::of_bool(false), DType::Bool));
      continue;
    }
    if (!l.is_obj(ObjKind::Array) && !l.is_number() && !l.is_obj(ObjKind::Complex) &&
        !sequence_items(l))
      throw Error(
          ErrCode::Type,
          "arguments of a transformed function must be arrays, numbers or pytrees of them, not " +
              type_name(l),
          where, "mark non-array arguments static (static_argnums)");
    out.push_back(in.to_tensor(l, where));
  }
  return out;
}

// The writes `frame` logged to references from outside the trace become
// results of its function (RefMode::Effects); `passed` are the reference
// arguments with the parameter values they were given.
void add_ref_outputs(InterpreterImpl& in, TraceContext& tc, const RefFrame& frame,
                     const std::vector<std::pair<std::shared_ptr<RefObj>, Value>>& passed,
                     TracedFunction& t) {
  t.touches_refs = frame.touched;
  for (const RefWrite& w : frame.writes) {
    if (!ref_from_outside(*w.ref, tc)) continue;
    bool unchanged = false; // (an argument still holding its parameter)
    for (const auto& [r, given] : passed)
      unchanged = unchanged || (r == w.ref && given.obj == w.ref->value.obj);
    if (unchanged) continue;
    t.ref_outputs.push_back(w.ref);
    tc.function().results.push_back(tc.value_of(w.ref->value.as<ArrayObj>()->tensor));
    t.number_outputs.push_back(Value());
  }
  if (t.ref_outputs.empty()) return;
  // The result is (what the function returned, (final values...)).
  ValueList dummies(t.out_tree.num_leaves(), Value::integer(0));
  ValueList finals(t.ref_outputs.size(), Value::integer(0));
  ValueList leaves;
  t.out_tree = tree_flatten(
      in, make_tuple({tree_unflatten(t.out_tree, dummies), make_tuple(std::move(finals))}), leaves);
}

TracedFunction trace_function(InterpreterImpl& in, const Value& fn, const ValueList& args,
                              const Span& where, const std::string& what,
                              const std::vector<AVal>* param_avals,
                              const std::pair<std::string, int64_t>* extra_axis,
                              const std::function<void(TraceContext&)>& prepare,
                              bool concrete_primals, RefMode refs) {
  TracedFunction t;
  ValueList arg_leaves; // (where references may be arguments: RefMode::Effects/Discard)
  if (refs != RefMode::Refuse) tree_flatten(in, make_tuple(args), arg_leaves);
  std::vector<bool> float0;
  std::vector<Tensor> leaves = leaf_tensors(in, args, where, &t.in_tree, &float0);
  t.fn = std::make_shared<Function>();
  t.fn->name = fn.is_obj(ObjKind::Function) ? fn.as<FunctionObj>()->name : what;
  auto* enclosing = dynamic_cast<TraceContext*>(&in.ops());
  if (enclosing) {
    t.fn->mesh_axes = enclosing->function().mesh_axes;
    t.fn->mesh_sizes = enclosing->function().mesh_sizes;
  }
  if (extra_axis) {
    // An enclosing axis of the same name is shadowed (Function::axis_bit
    // finds the innermost), as in JAX.
    t.fn->mesh_axes.push_back(extra_axis->first);
    t.fn->mesh_sizes.push_back(extra_axis->second);
  }
  TraceContext tc(*t.fn, in.ops(), what);
  if (prepare) prepare(tc);
  // Writes to references from outside: logged here, restored when the
  // frame closes, and (RefMode::Effects) results of the function.
  std::optional<RefFrameScope> ref_frame;
  if (refs != RefMode::Refuse) {
    ref_frame.emplace(in);
    tc.ref_writes_ok = true;
  }
  // typeof sees shardings (make_jaxpr's trace too, whose `prepare` only records)
  if (!tc.type_sharding && !extra_axis)
    if (auto hook = explicit_type_hook(in, leaves)) hook(tc);
  // The value of `id`: the function traced so far (its effects left out), run
  // in the calling context on the arguments.
  auto in_caller = [&](int id) -> Tensor {
    Function prefix = *t.fn;
    std::vector<bool> used(prefix.values.size(), false);
    for (const Instr& i : prefix.body)
      for (int o : i.operands) used[static_cast<size_t>(o)] = true;
    std::erase_if(prefix.body, [&](const Instr& i) {
      return op_family(i.op) == OpFamily::Effect &&
             (i.result < 0 || !used[static_cast<size_t>(i.result)]);
    });
    prefix.results = {id};
    remove_dead_code(prefix);
    return inline_function(tc.outer(), prefix, leaves, tc.captured_tensors())[0];
  };
  if (concrete_primals && !param_avals) {
    // Eagerly that is the array; inside an enclosing trace the enclosing
    // context is asked in turn (grad of grad concretizes, jit refuses as JAX does).
    tc.concretize = [&](int id) -> std::optional<Array> {
      return tc.outer().concrete(in_caller(id));
    };
    // JAX's repr of a value under reverse mode: GradTracer(primal=2.0,
    // typeof(tangent)=f32[]), the primal as the calling context shows it.
    if (what == "grad" || what == "value_and_grad" || what == "vjp")
      tc.describe = [&](int id) -> std::optional<std::string> {
        const AVal& a = tc.function().values[static_cast<size_t>(id)].aval;
        AVal tangent = a;
        tangent.weak = false;
        std::string ty = is_inexact(a.dtype) ? type_str(tangent)
                                             : "float0" + type_str(a).substr(type_str(a).find('['));
        return "GradTracer(primal=" + str(make_array(in_caller(id)), in.print_options()) +
               ", typeof(tangent)=" + ty + ")";
      };
  }
  ValueList traced;
  std::vector<std::pair<std::shared_ptr<RefObj>, Value>> passed_refs;
  for (size_t i = 0; i < leaves.size(); ++i) {
    AVal aval = param_avals ? (*param_avals)[i] : leaves[i]->aval;
    AxisSet vma = 0;
    std::string origin = "argument " + std::to_string(i);
    if (enclosing && enclosing->owns(leaves[i])) {
      const IRValue& ov = enclosing->function().values[leaves[i]->trace_id];
      vma = ov.vma;
      if (!ov.origin.empty()) origin = ov.origin;
    }
    Tensor param = tc.add_param(aval, vma, where, origin);
    traced.push_back(float0[i] ? float0_zeros(aval.shape) : make_array(param));
    if (auto r = ref_frame ? as_ref(arg_leaves[i]) : nullptr) {
      // The function gets the reference itself, holding the parameter.
      store_ref(in, r, traced.back());
      passed_refs.push_back({r, traced.back()});
      traced.back() = arg_leaves[i];
    }
  }
  for (const Value& v : trace_body(in, tc, fn, tree_unflatten(t.in_tree, traced), where, t.out_tree,
                                   concrete_primals))
    t.number_outputs.push_back(v.is_obj(ObjKind::Array) || v.is_obj(ObjKind::Complex) ? Value()
                                                                                      : v);
  if (refs == RefMode::Effects) add_ref_outputs(in, tc, ref_frame->frame, passed_refs, t);
  t.consts = tc.captured_tensors();
  return t;
}

Value restore_float0_outputs(InterpreterImpl& in, const TracedFunction& t, const Value& out) {
  bool any = false;
  for (const Value& v : t.number_outputs) any = any || is_float0(v);
  if (!any) return out;
  ValueList leaves;
  TreeDef def = tree_flatten(in, out, leaves);
  for (size_t i = 0; i < leaves.size() && i < t.number_outputs.size(); ++i)
    if (is_float0(t.number_outputs[i]) && leaves[i].is_obj(ObjKind::Array))
      leaves[i] = float0_zeros(leaves[i].as<ArrayObj>()->tensor->aval.shape);
  return tree_unflatten(def, leaves);
}

TraceContext* live_trace_of(InterpreterImpl& in, const Tensor& t) {
  if (!t->trace || t->trace_id < 0) return nullptr;
  for (OpContext* c = &in.ops(); auto* tc = dynamic_cast<TraceContext*>(c); c = &tc->outer())
    if (t->trace == tc) return tc;
  return nullptr;
}

void check_callable(const Value& f) {
  if (f.is_number() || f.is_none() || f.is_obj(ObjKind::Str) || f.is_obj(ObjKind::Array) ||
      f.is_obj(ObjKind::Tuple) || f.is_obj(ObjKind::List) || f.is_obj(ObjKind::Dict))
    throw Error(ErrCode::Type, "Expected a callable value, got " + repr(f));
}

namespace {

ValueList trace_body_in(InterpreterImpl& in, TraceContext& tc, const Value& fn,
                        const Value& arg_tuple, const Span& where, TreeDef& out_tree,
                        bool any_outputs) {
  ScopedPhase timing(in.phase_times(), "trace + check");
  in.push_ops(&tc);
  struct Pop {
    InterpreterImpl& in;
    ~Pop() { in.pop_ops(); }
  } pop{in};
  LocScope loc(tc, where);
  Value r = in.call(fn, *sequence_items(arg_tuple), where);
  ValueList outs;
  out_tree = tree_flatten(in, r, outs);
  for (Value& v : outs) {
    if (is_float0(v)) { // bool zeros stand for it; restore_float0_outputs puts it back
      tc.function().results.push_back(
          tc.value_of(np::full(tc, float0_shape(v), Scalar::of_bool(false), DType::Bool)));
      continue;
    }
    if (any_outputs && !v.is_obj(ObjKind::Array) && !v.is_number() && !v.is_obj(ObjKind::Complex)) {
      tc.function().results.push_back(tc.value_of(in.to_tensor(Value::integer(0), where)));
      continue;
    }
    if (as_ref(v)) refuse_ref_results(in, r, fn, tc.what(), where);
    // (JAX makes a returned value a constant of the jaxpr, which a
    // ShapeDtypeStruct cannot be.)
    if (tc.what() == "jit" && type_name(v) == "ShapeDtypeStruct")
      throw Error(ErrCode::Type,
                  "A ShapeDtypeStruct does not have a value and cannot be used as a constant in a "
                  "JAX function.",
                  where);
    if (!v.is_obj(ObjKind::Array) && !v.is_number() && tc.what() == "vmap")
      throw Error(ErrCode::Type,
                  "Output from batched function " + repr(v) + " with type <class '" + type_name(v) +
                      "'> is not a valid JAX type",
                  where);
    if (!v.is_obj(ObjKind::Array) && !v.is_number())
      throw Error(ErrCode::Type,
                  tc.what() + ": the function returned a " + type_name(v) +
                      "; outputs must be arrays or pytrees of arrays",
                  where);
    tc.function().results.push_back(tc.value_of(in.to_tensor(v, where)));
  }
  return outs;
}

} // namespace

ValueList trace_body(InterpreterImpl& in, TraceContext& tc, const Value& fn, const Value& arg_tuple,
                     const Span& where, TreeDef& out_tree, bool any_outputs) {
  PendingCompileCallbacks pending(in);
  ValueList outs = trace_body_in(in, tc, fn, arg_tuple, where, out_tree, any_outputs);
  pending.finish(tc.what());
  return outs;
}

std::vector<Tensor> bind_derived_spmd_call(
    OpContext& cx, const SpmdCallee& c, const std::string& name, std::vector<SpmdMapping> ins,
    std::vector<Tensor> operands, std::vector<SpmdMapping> outs,
    const std::function<std::vector<Tensor>(TraceContext& tc, std::span<const Tensor> params)>&
        body) {
  auto f = std::make_shared<Function>();
  f->name = name;
  f->mesh_axes = c.fn->mesh_axes;
  f->mesh_sizes = c.fn->mesh_sizes;
  std::vector<Tensor> results, consts;
  {
    TraceContext tc(*f, cx, c.kind);
    tc.check_vma = c.check_vma; // the derived body follows the call's rules
    std::vector<Tensor> params;
    for (size_t i = 0; i < ins.size(); ++i) {
      AxisSet vma = 0;
      for (const auto& axis : ins[i].spec.axes()) vma |= AxisSet{1} << f->axis_bit(axis);
      params.push_back(tc.add_param(block_aval(c.layout, ins[i], operands[i]->aval), vma, cx.loc,
                                    "operand " + std::to_string(i) + " of the " + c.kind));
    }
    LocScope loc(tc, cx.loc);
    for (const Tensor& r : body(tc, params)) f->results.push_back(tc.value_of(r));
    consts = tc.captured_tensors();
  }
  operands.insert(operands.end(), consts.begin(), consts.end());
  consts_to_replicated_params(*f, ins);
  // The transpose recomputes the forward pass: what the backward pass does not
  // read (the loss, its final psum) is dropped.
  remove_dead_code(*f);
  auto callee = make_spmd_callee(c.kind, std::move(f), c.layout, std::move(ins), std::move(outs),
                                 c.pool, c.mode, c.cache, c.times, c.platform);
  callee->check_vma = c.check_vma;
  callee->num_consts = consts.size();
  callee->manual_axes = c.manual_axes;
  OpAttrs attrs;
  attrs.callee = std::move(callee);
  return cx.bind_call(attrs, operands);
}

bool is_static_position(const std::vector<int64_t>& argnums, size_t i, size_t n) {
  for (int64_t s : argnums)
    if ((s < 0 ? s + static_cast<int64_t>(n) : s) == static_cast<int64_t>(i)) return true;
  return false;
}

ValueList with_static_args(const std::vector<std::pair<size_t, Value>>& statics,
                           const ValueList& dyn, size_t total) {
  ValueList out;
  size_t next = 0, sp = 0;
  for (size_t i = 0; i < total; ++i)
    out.push_back(sp < statics.size() && statics[sp].first == i ? statics[sp++].second
                                                                : dyn[next++]);
  return out;
}

Value apply_traced(InterpreterImpl& in, const TracedFunction& t, std::span<const Tensor> params) {
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  std::vector<Tensor> outs = tc && tc->jaxpr_record && t.jaxpr_record
                                 ? inline_recorded(*tc, *t.fn, *t.jaxpr_record, params, t.consts)
                                 : inline_function(in.ops(), *t.fn, params, t.consts);
  inherit_constraint_mesh(in.ops(), *t.fn);
  ValueList leaves;
  for (auto& o : outs) leaves.push_back(make_array(o));
  return tree_unflatten(t.out_tree, leaves);
}

} // namespace pxl
