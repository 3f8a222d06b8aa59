// jax.grad, jax.value_and_grad and jax.vjp: trace the function (only the
// differentiated arguments become parameters; the others are passed as they
// are, as JAX closes over them), then run stdlib/autodiff.cpp's forward and
// backward passes in the calling context. Errors follow JAX's wording.
#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/float0.hpp"
#include "stdlib/jit_devices.hpp"
#include "stdlib/mutable_ref.hpp"
#include "stdlib/np.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

namespace {

struct GradSpec {
  Value fn;
  std::vector<int64_t> argnums;
  bool argnums_tuple = false;
  bool has_aux = false;
  bool with_value = false; // value_and_grad
  bool holomorphic = false;
  bool allow_int = false; // integer and bool inputs get float0 gradients
};

GradSpec read_spec(const char* name, CallArgs& a, bool with_value) {
  ArgReader r(name, a, {"fun", "argnums", "has_aux", "holomorphic", "allow_int", "reduce_axes"}, 1);
  GradSpec g;
  g.fn = r[0];
  check_callable(g.fn);
  g.with_value = with_value;
  if (r.has(1) && !r[1].is_intlike()) {
    const ValueList* items = sequence_items(r[1]);
    if (!items)
      throw Error(ErrCode::Type, std::string(name) +
                                     "() argnums must be an int or a tuple of ints, not " +
                                     type_name(r[1]));
    g.argnums_tuple = true;
    for (const Value& v : *items)
      g.argnums.push_back(value_to_int(v, std::string(name) + "() argnums"));
  } else {
    g.argnums.push_back(r.get_int(1, 0));
  }
  g.has_aux = r.get_bool(2, false);
  g.holomorphic = r.get_bool(3, false);
  g.allow_int = r.get_bool(4, false);
  // JAX removed reduce_axes: any value passed is its NotImplementedError.
  if (r.has(5))
    throw Error(ErrCode::Unsupported,
                std::string("reduce_axes argument to ") + name + " is deprecated");
  return g;
}

// Traces f(*args) with the leaves of args[argnums] as parameters.
TracedFunction trace_diff(InterpreterImpl& in, const Value& fn, const CallArgs& call,
                          const std::vector<int64_t>& argnums, ValueList& diff_args,
                          std::vector<Tensor>& params, const Span& where, const char* what,
                          bool float_inputs = true, RefMode refs = RefMode::Refuse) {
  size_t n = call.pos.size();
  for (int64_t k : argnums) {
    if (k < -static_cast<int64_t>(n))
      throw Error(ErrCode::Value,
                  "Positional argument indices, e.g. for `static_argnums`, must have value greater "
                  "than or equal to -len(args) and less than len(args), but got value " +
                      std::to_string(k) + " for len(args) == " + std::to_string(n) + ".");
    if (k >= static_cast<int64_t>(n))
      throw Error(ErrCode::Arguments,
                  "differentiating with respect to argnums=" + std::to_string(k) +
                      " requires at least " + std::to_string(k + 1) +
                      " positional arguments to be passed by the caller, but got only " +
                      std::to_string(n) + " positional arguments.");
    diff_args.push_back(call.pos[static_cast<size_t>(k < 0 ? k + static_cast<int64_t>(n) : k)]);
  }
  {
    ValueList leaves;
    tree_flatten(in, make_tuple(diff_args), leaves);
    for (const Value& l : leaves)
      if (!l.is_obj(ObjKind::Array) && !l.is_number() && !l.is_obj(ObjKind::Complex))
        throw Error(ErrCode::Type,
                    "Argument " + repr(l) + " of type <class '" + type_name(l) +
                        "'> is not a valid JAX type.", // JAX's TypeError
                    where);
  }
  params = leaf_tensors(in, diff_args, where);
  for (const Tensor& t : params)
    if (float_inputs && !is_inexact(t->aval.dtype))
      throw Error(
          ErrCode::Type,
          std::string(what) +
              " requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
              "np.inexact), but got " +
              dtype_name(t->aval.dtype) +
              ". If you want to use Boolean- or integer-valued inputs, use vjp or set allow_int to "
              "True.");
  // The function as seen by the trace: only the differentiated arguments vary.
  Value wrapper = make_builtin(what, [fn, call, argnums, where](InterpreterImpl& in, CallArgs& a) {
    CallArgs full = call;
    size_t n = full.pos.size();
    for (size_t i = 0; i < argnums.size(); ++i) {
      int64_t k = argnums[i];
      full.pos[static_cast<size_t>(k < 0 ? k + static_cast<int64_t>(n) : k)] = a.pos[i];
    }
    return in.call(fn, full, where);
  });
  return trace_function(in, wrapper, diff_args, where, what, nullptr, nullptr, {}, true, refs);
}

// The function's outputs from the forward pass; leaves the function returned
// as Python numbers stay numbers (JAX's value_and_grad, vjp and jvp return
// them as they are).
Value output_tree(const TracedFunction& t, const std::vector<Tensor>& env) {
  ValueList outs;
  for (size_t i = 0; i < t.fn->results.size(); ++i)
    outs.push_back(i < t.number_outputs.size() && !t.number_outputs[i].is_none()
                       ? t.number_outputs[i]
                       : make_array(env[t.fn->results[i]]));
  return tree_unflatten(t.out_tree, outs);
}

// An abstract value as JAX prints it in its errors: float32[3,2].
std::string aval_str(const AVal& a) {
  std::string s = std::string(dtype_name(a.dtype)) + "[";
  for (size_t i = 0; i < a.shape.size(); ++i) s += (i ? "," : "") + std::to_string(a.shape[i]);
  return s + "]";
}

// JAX's TypeError for a differentiated output (not aux) that is no JAX type.
void check_main_outputs(const TracedFunction& t, size_t n) {
  for (size_t i = 0; i < n && i < t.number_outputs.size(); ++i) {
    const Value& v = t.number_outputs[i];
    if (!v.is_none() && !v.is_number())
      throw Error(ErrCode::Type, "Argument " + repr(v) + " of type <class '" + type_name(v) +
                                     "'> is not a valid JAX type");
  }
}

// The (out, aux) pair a has_aux function returned (a tuple or a 2-field namedtuple).
const ValueList& pair_items(const Value& v) { return *sequence_items(v); }

// What a function with aux output must return: a tuple or a list of two.
bool is_pair(const TreeDef& t) {
  return (t.is_tuple_like() || t.kind == TreeDef::Kind::List) && t.children.size() == 2;
}

// JAX's error for a write of a value that depends on the differentiated
// arguments (the function's parameters) to a reference from outside.
void refuse_differentiated_writes(const TracedFunction& t, const Span& where) {
  if (t.ref_outputs.empty()) return;
  const Function& f = *t.fn;
  std::vector<bool> varies = parameter_dependent(f);
  size_t first = f.results.size() - t.ref_outputs.size();
  for (size_t k = 0; k < t.ref_outputs.size(); ++k)
    if (varies[static_cast<size_t>(f.results[first + k])])
      throw Error(ErrCode::Unsupported, differentiated_write_message(*t.ref_outputs[k]), where);
}

Value run_grad(InterpreterImpl& in, const GradSpec& g, CallArgs& call) {
  const char* what = g.with_value ? "value_and_grad" : "grad";
  Span where = in.ops().loc;
  ValueList diff_args;
  std::vector<Tensor> params;
  // (References from outside the function may be written with values that
  // are not differentiated: the writes are results of the forward pass.)
  TracedFunction t = trace_diff(in, g.fn, call, g.argnums, diff_args, params, where, what,
                                !g.allow_int, RefMode::Effects);
  refuse_differentiated_writes(t, where);
  if (g.holomorphic)
    for (const Tensor& p : params)
      if (!is_complex(p->aval.dtype))
        throw Error(ErrCode::Type,
                    std::string(what) +
                        " with holomorphic=True requires inputs with complex dtype, but got " +
                        dtype_name(p->aval.dtype) + ".");
  const Function& f = *t.fn;
  const TreeDef& fn_tree = t.ref_outputs.empty() ? t.out_tree : t.out_tree.children[0];
  const TreeDef* value_tree = &fn_tree;
  if (g.has_aux) {
    if (!is_pair(fn_tree)) // (a tuple or a list, as JAX's flatten_fun_nokwargs2 checks)
      throw Error(ErrCode::Type,
                  "expected function with aux output to return a two-element tuple, but got " +
                      fn_tree.repr());
    value_tree = &fn_tree.children[0];
  }
  check_main_outputs(t, value_tree->num_leaves());
  if (value_tree->kind != TreeDef::Kind::Leaf) {
    // JAX's message shows the output's value (its primal is known there).
    std::vector<Tensor> env = forward_pass(in.ops(), f, params, t.consts);
    Value result = output_tree(t, env);
    if (!t.ref_outputs.empty()) result = pair_items(result)[0];
    if (g.has_aux) result = pair_items(result)[0];
    throw Error(ErrCode::Type, "Gradient only defined for scalar-output functions. Output was " +
                                   repr(result) + ".");
  }
  const AVal& out = f.values[f.results[0]].aval;
  if (!out.shape.empty())
    throw Error(ErrCode::Type,
                "Gradient only defined for scalar-output functions. Output had shape: " +
                    shape_str(out.shape) + ".");
  if (g.holomorphic && !is_complex(out.dtype))
    throw Error(ErrCode::Type,
                std::string(what) +
                    " with holomorphic=True requires outputs with complex dtype, but got " +
                    dtype_name(out.dtype) + ".");
  if (!g.holomorphic && !is_floating(out.dtype))
    throw Error(
        ErrCode::Type,
        std::string("grad requires real-valued outputs (output dtype that is a sub-dtype of "
                    "np.floating), but got ") +
            dtype_name(out.dtype) +
            (is_complex(out.dtype)
                 ? ". For holomorphic differentiation, pass holomorphic=True. For differentiation "
                   "of non-holomorphic functions involving complex outputs, use jax.vjp directly."
                 : ". For differentiation of functions with integer outputs, use jax.vjp "
                   "directly."));
  check_grad_mesh(in, params, out);
  OpContext& cx = in.ops();
  std::vector<Tensor> env = forward_pass(cx, f, params, t.consts);
  jaxpr_show_primal_results(cx, f, env);
  std::vector<Tensor> seeds(f.results.size());
  seeds[0] = np::full_like(cx, env[f.results[0]], Scalar::of_float(1.0));
  std::vector<Tensor> cts = backward_pass(cx, f, env, seeds);
  ValueList grads;
  for (size_t i = 0; i < cts.size(); ++i)
    grads.push_back(
        !is_inexact(params[i]->aval.dtype)
            ? float0_zeros(params[i]->aval.shape) // allow_int: JAX's float0 zeros
            : make_array(typed_like_primal(
                  in, cts[i] ? cts[i] : np::full_like(cx, params[i], Scalar::of_float(0.0)),
                  params[i])));
  Value gtree = tree_unflatten(t.in_tree, grads);
  if (!g.argnums_tuple) gtree = (*sequence_items(gtree))[0];
  Value result = apply_ref_outputs(in, t, output_tree(t, env), true);
  // (A list (value, aux) comes back as a tuple, as JAX's.)
  if (g.with_value && g.has_aux) result = make_tuple(pair_items(result));
  if (g.with_value) return make_tuple({result, gtree});
  if (g.has_aux) return make_tuple({gtree, pair_items(result)[1]});
  return gtree;
}

// jax.vjp(f, *primals, has_aux=False) -> (out, vjp_fn[, aux]). `what` names
// the trace: "jvp" when forward mode (jax_extra.pxl) transposes this vjp, so
// that a custom_vjp function inside can refuse it, as JAX does.
// `shown`: make_jaxpr shows the primal computation even where its results go
// unused (the user's vjp, not the stdlib's uses of one).
Value run_vjp(InterpreterImpl& in, CallArgs& a, const char* what, bool float0 = true,
              bool shown = true) {
  if (a.pos.empty()) throw Error(ErrCode::Arguments, "vjp() missing required argument 'fun'");
  bool has_aux = false;
  for (auto& [k, v] : a.kw) {
    if (k != "has_aux")
      throw Error(ErrCode::Arguments, "vjp() got an unexpected keyword argument '" + k + "'");
    has_aux = in.truthy(v, Span{});
  }
  Value fn = a.pos[0];
  CallArgs call;
  call.pos.assign(a.pos.begin() + 1, a.pos.end());
  std::vector<int64_t> argnums;
  for (size_t i = 0; i < call.pos.size(); ++i) argnums.push_back(static_cast<int64_t>(i));
  Span where = in.ops().loc;
  ValueList diff_args;
  std::vector<Tensor> params;
  auto t = std::make_shared<TracedFunction>(
      trace_diff(in, fn, call, argnums, diff_args, params, where, what, false));
  TreeDef out_tree = t->out_tree;
  if (has_aux) {
    if (!is_pair(out_tree))
      throw Error(ErrCode::Type,
                  "expected function with aux output to return a two-element tuple, but got " +
                      out_tree.repr());
    out_tree = t->out_tree.children[0];
  }
  check_main_outputs(*t, out_tree.num_leaves());
  auto env =
      std::make_shared<std::vector<Tensor>>(forward_pass(in.ops(), *t->fn, params, t->consts));
  if (shown) jaxpr_show_primal_results(in.ops(), *t->fn, *env);
  Value result = output_tree(*t, *env);
  Value vjp_fn = make_builtin("vjp_fn", [t, env, out_tree, params, float0](InterpreterImpl& in,
                                                                           CallArgs& c) {
    ArgReader r("vjp_fn", c, {"ct"}, 1);
    ValueList leaves;
    TreeDef ct_tree = tree_flatten(in, r[0], leaves);
    if (!(ct_tree == out_tree))
      throw Error(ErrCode::Type, "vjp_fn: the cotangent has structure " + ct_tree.repr() +
                                     " but the primal output has structure " + out_tree.repr());
    std::vector<Tensor> seeds(t->fn->results.size());
    for (size_t i = 0; i < leaves.size(); ++i) {
      const AVal& want = t->fn->values[t->fn->results[i]].aval;
      if (is_float0(leaves[i])) { // an integer output's float0 cotangent: zeros
        seeds[i] = np::zeros(in.ops(), want.shape, want.dtype);
        continue;
      }
      seeds[i] = in.to_tensor(leaves[i], Span{});
      // JAX's ValueError for a cotangent of another shape or dtype (a
      // Python number counts as its default dtype; the cotangents of
      // integer outputs, float0 in JAX, are taken as they come).
      bool bad_dtype = seeds[i]->aval.dtype != want.dtype && is_inexact(want.dtype) &&
                       !(leaves[i].is_number() && is_inexact(seeds[i]->aval.dtype) &&
                         !is_complex(seeds[i]->aval.dtype) && !is_complex(want.dtype));
      if (seeds[i]->aval.shape != want.shape || bad_dtype)
        throw Error(ErrCode::Value,
                    "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got " +
                        aval_str(seeds[i]->aval) + ", but expected " + aval_str(want) +
                        " because the corresponding output of the differentiated function had "
                        "JAX type " +
                        aval_str(want));
      if (seeds[i]->aval.dtype != want.dtype) seeds[i] = np::astype(in.ops(), seeds[i], want.dtype);
    }
    std::vector<Tensor> cts = backward_pass(in.ops(), *t->fn, *env, seeds);
    ValueList grads;
    auto* tc = dynamic_cast<TraceContext*>(&in.ops());
    for (size_t i = 0; i < cts.size(); ++i) {
      Tensor g = cts[i] ? cts[i] : np::full_like(in.ops(), params[i], Scalar::of_float(0.0));
      // (Only a primal of this context has a type to give: vjp_fn may run
      // after the trace that made its primals is gone.)
      bool here = tc ? tc->owns(params[i]) : !params[i]->trace;
      if (float0 && !is_inexact(params[i]->aval.dtype))
        grads.push_back(float0_zeros(params[i]->aval.shape)); // JAX's cotangent of an integer
      else
        grads.push_back(make_array(here ? typed_like_primal(in, g, params[i]) : g));
    }
    return tree_unflatten(t->in_tree, grads);
  });
  if (!has_aux) return make_tuple({result, vjp_fn});
  const ValueList& pair = pair_items(result);
  return make_tuple({pair[0], vjp_fn, pair[1]});
}

} // namespace

void add_jvp_loops(Value& jax); // stdlib/autodiff_forward.cpp

void add_grad_functions(InterpreterImpl& in, Value& jax) {
  add_jvp_loops(jax);
  auto& vars = jax.as<ModuleObj>()->env->vars;
  auto maker = [](const char* name, bool with_value) {
    return make_builtin(name, [name, with_value](InterpreterImpl& in, CallArgs& a) {
      GradSpec g = read_spec(name, a, with_value);
      Value f =
          make_builtin(name, [g](InterpreterImpl& in, CallArgs& c) { return run_grad(in, g, c); });
      // (functools.wraps: JAX's messages name the differentiated function,
      // and the result has its __name__.)
      f.as<BuiltinObj>()->attrs.emplace_back("__wrapped__", g.fn);
      if (in.has_attr(g.fn, "__name__"))
        f.as<BuiltinObj>()->attrs.emplace_back("__name__", in.get_attr(g.fn, "__name__", Span{}));
      return f;
    });
  };
  vars["grad"] = maker("grad", false);
  vars["value_and_grad"] = maker("value_and_grad", true);
  vars["vjp"] =
      make_builtin("vjp", [](InterpreterImpl& in, CallArgs& a) { return run_vjp(in, a, "vjp"); });
  vars["_forward_vjp"] = make_builtin(
      "vjp", [](InterpreterImpl& in, CallArgs& a) { return run_vjp(in, a, "jvp", false); });
  // jvp's transpose of its vjp (jax_extra.pxl): the vjp at zero is not JAX's.
  vars["_transpose_vjp"] = make_builtin(
      "vjp", [](InterpreterImpl& in, CallArgs& a) { return run_vjp(in, a, "vjp", true, false); });
  // The stdlib's vjp: integer inputs' cotangents are integer zeros, not float0
  // (jacrev, linear_transpose and the jvp of the vjp differentiate through them).
  vars["_vjp"] = make_builtin(
      "vjp", [](InterpreterImpl& in, CallArgs& a) { return run_vjp(in, a, "vjp", false, false); });
  for (const char* n : {"grad", "value_and_grad"}) in.define_builtin(n, vars.at(n));
}

} // namespace pxl
