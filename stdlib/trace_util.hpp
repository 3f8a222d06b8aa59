// Tracing a Python function into an IR Function, for the transformations that
// rewrite IR (jit, grad, vmap): every array leaf of the arguments becomes a
// parameter; values captured from outside become constants. Works eagerly and
// nested inside another trace (e.g. grad inside pmap), where the inner Function
// shares the enclosing mesh axes and its parameters keep their vma.
#pragma once
#include <functional>

#include "ir/function.hpp"
#include "lang/interp_impl.hpp"
#include "stdlib/pytree.hpp"

namespace pxl {

struct JaxprRecord; // lang/jaxpr_record.hpp
struct RefObj;      // stdlib/mutable_ref.hpp
class TraceContext;
struct SpmdCallee;
struct SpmdMapping;
} // namespace pxl

namespace pxl {

struct TracedFunction {
  std::shared_ptr<Function> fn;
  TreeDef in_tree;            // of the argument tuple
  TreeDef out_tree;           // of the result
  std::vector<Tensor> consts; // tensors of the calling context for fn->consts
  // Per output leaf: the Python value the function returned there when it is
  // not an array (a number; under grad, vjp and jvp also any other object,
  // such as a string in aux), else None. JAX hands such values back as they
  // are (value_and_grad's value, aux).
  ValueList number_outputs;
  // Traced inside make_jaxpr: JAX's structure of what fn does (jit's traces;
  // lang/jaxpr_record.hpp), carried into the enclosing record when inlined.
  std::shared_ptr<JaxprRecord> jaxpr_record;
  // Mutable array references (RefMode::Effects): those the function wrote
  // that were made outside it, whose final values are its last results
  // (out_tree is then (result, (final values...))), and whether it used any
  // reference at all (such a trace reads their current values: not cached).
  std::vector<std::shared_ptr<RefObj>> ref_outputs;
  bool touches_refs = false;
};

// How trace_function treats mutable array references made outside the
// function: writes to them are refused (vmap, grad, ...), or become results
// (jit, a loop's trace, a cond branch) that apply_ref_outputs writes back;
// a reference argument is then passed as itself, its value a parameter;
// or are allowed and forgotten after the trace (eval_shape, make_jaxpr).
enum class RefMode { Refuse, Effects, Discard };

// Traces fn(*args). `param_avals`, when given, overrides the type of each
// argument leaf (vmap traces with the per-example type); otherwise the leaf's own.
// `extra_axis` (name, size) binds one more axis name for collectives inside fn
// (vmap's axis_name); the transformation must rewrite those collectives.
// `prepare`, when given, sees the trace before fn runs (jit sets its hooks).
// `concrete_primals` (grad, vjp, jvp): Python code in fn may read the value of
// a traced array (`if x > 0:`, float(x)) when the calling context can supply
// it, as JAX's JVPTracer carries its primal; see trace_function.
TracedFunction trace_function(InterpreterImpl& in, const Value& fn, const ValueList& args,
                              const Span& where, const std::string& what,
                              const std::vector<AVal>* param_avals = nullptr,
                              const std::pair<std::string, int64_t>* extra_axis = nullptr,
                              const std::function<void(TraceContext&)>& prepare = {},
                              bool concrete_primals = false, RefMode refs = RefMode::Refuse);

// Calls fn on `arg_tuple` (a tuple of traced arguments) with `tc` as the
// current context, records the flattened outputs as the function's results, and
// returns them (for matching out_specs / out_axes against the output tree).
// With `any_outputs` (grad, vjp, jvp), a leaf that is neither an array nor a
// number (a string in aux) is recorded as a placeholder result instead of
// being refused; the caller hands the value back as it is.
ValueList trace_body(InterpreterImpl& in, TraceContext& tc, const Value& fn, const Value& arg_tuple,
                     const Span& where, TreeDef& out_tree, bool any_outputs = false);

// The argument leaves of `args` as tensors (numbers become weak scalars). A
// float0 leaf (jax.dtypes.float0 zeros, a host object) travels as bool zeros
// of its shape, flagged in `float0` when given: trace_function hands the
// function float0 zeros of the traced (per-example) shape in its place.
std::vector<Tensor> leaf_tensors(InterpreterImpl& in, const ValueList& args, const Span& where,
                                 TreeDef* tree = nullptr, std::vector<bool>* float0 = nullptr);

// `out` with each leaf that the traced function returned as float0 (its
// number_outputs entry, a bool placeholder result) made float0 zeros of the
// leaf's shape again (jit, vmap: the shape the call gave it, batched or not).
Value restore_float0_outputs(InterpreterImpl& in, const TracedFunction& t, const Value& out);

// Binds in `cx` an SPMD call derived from `c` (its transpose, its batched
// form): `body` records the new per-participant Function in `tc` from its
// parameters, one per `ins` entry (typed by the blocks of `operands`), and
// returns its results, laid out by `outs`. Constants the body captures become
// replicated operands. Returns the call's results.
std::vector<Tensor> bind_derived_spmd_call(
    OpContext& cx, const SpmdCallee& c, const std::string& name, std::vector<SpmdMapping> ins,
    std::vector<Tensor> operands, std::vector<SpmdMapping> outs,
    const std::function<std::vector<Tensor>(TraceContext& tc, std::span<const Tensor> params)>&
        body);

// Static arguments (jit's static_argnums, pmap's static_broadcasted_argnums):
// whether position i of n positional arguments is one of `argnums` (negative
// ones count from the end), and the whole positional list again from the
// static (position, value) pairs, in order, and the other arguments `dyn`
// (only its first total - statics.size() entries are used).
bool is_static_position(const std::vector<int64_t>& argnums, size_t i, size_t n);
ValueList with_static_args(const std::vector<std::pair<size_t, Value>>& statics,
                           const ValueList& dyn, size_t total);

// Runs a traced function on `params` in the current context and rebuilds the
// result pytree.
Value apply_traced(InterpreterImpl& in, const TracedFunction& t, std::span<const Tensor> params);

// JAX's TypeError for a transformation of something that is not callable (a
// number, a string, an array, a container): "Expected a callable value, got 3".
void check_callable(const Value& f);

// The trace owning traced value `t` if it is still running (in the
// interpreter's stack of contexts), else null (a value leaked from a finished
// trace, or a concrete one).
TraceContext* live_trace_of(InterpreterImpl& in, const Tensor& t);

} // namespace pxl
