// Forward mode (jax.jvp) through functions that contain while loops. pxl's
// jvp is the transpose of reverse mode (jax_extra.pxl), which a while loop
// does not have; JAX's forward mode goes through loops: the JVP of a loop is a
// loop over the carry and its tangent whose body is the JVP of the body. So a
// function with a loop is walked forward with (primal, tangent) pairs: a loop
// becomes that loop, and every other instruction takes its tangent from the
// vjp of its own vjp, as jvp does for whole functions.
#include "ir/while_loop.hpp"
#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/custom_derivatives.hpp"
#include "stdlib/float0.hpp"
#include "stdlib/np.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/trace_util.hpp"
#include "stdlib/while_loop.hpp"

namespace pxl {

namespace {

// What forward mode walks (rather than transposing reverse mode): a loop,
// or a call of a user's custom_jvp function, whose rule JAX's jvp calls on
// the tangents themselves (so a jax.debug.print in the rule prints them). The
// stdlib's lax ops with custom rules (clamp, ...) are JAX's primitives: the
// transposition gives their tangents as before.
bool walked_forward(const Function& f) {
  for (const Instr& in : f.body) {
    if (in.op == Op::While) return true;
    auto* rule =
        in.op == Op::CustomCall ? dynamic_cast<const CustomRule*>(in.attrs.custom.get()) : nullptr;
    if (rule && rule->kind == "custom_jvp" && rule->primitive.empty()) return true;
  }
  return false;
}

bool differentiable(const AVal& a) { return is_inexact(a.dtype); }

struct Jvp {
  std::vector<Tensor> primals, tangents; // tangents: nullptr = zero
};

Jvp jvp_walk(OpContext& cx, const Function& f, std::span<const Tensor> params,
             std::span<const Tensor> consts, std::span<const Tensor> tangents);

// The tangents of a one-instruction Function's results, by the vjp of its vjp.
Jvp instr_jvp(OpContext& cx, const Function& f, const Instr& in, const std::vector<Tensor>& x,
              const std::vector<Tensor>& tx) {
  Function one;
  one.name = op_name(in.op);
  one.mesh_axes = f.mesh_axes;
  one.mesh_sizes = f.mesh_sizes;
  Instr c = in;
  std::vector<Tensor> px, ptan;
  for (size_t k = 0; k < in.operands.size(); ++k) {
    IRValue v = f.values[in.operands[k]];
    v.producer = -1;
    int id = one.add_value(v);
    one.params.push_back(id);
    c.operands[k] = id;
    px.push_back(x[k]);
    ptan.push_back(tx[k] && differentiable(v.aval) ? tx[k] : nullptr);
  }
  c.result = static_cast<int>(one.values.size());
  for (int r = 0; r < in.nresults; ++r) {
    IRValue v = f.values[in.result + r];
    v.producer = 0;
    one.results.push_back(one.add_value(v));
  }
  one.body.push_back(c);
  std::vector<Tensor> env = forward_pass(cx, one, px, {});
  Jvp out;
  for (int r : one.results) out.primals.push_back(env[r]);
  std::vector<bool> wanted;
  for (const Tensor& t : ptan) wanted.push_back(t != nullptr);
  // G(u) = the cotangents of the operands that have tangents, linear in u.
  Function g;
  g.name = one.name + "_vjp";
  g.mesh_axes = f.mesh_axes;
  g.mesh_sizes = f.mesh_sizes;
  std::vector<Tensor> gconsts, zero_u;
  std::vector<int> u_of(one.results.size(), -1);
  {
    TraceContext tc(g, cx, "jvp");
    std::vector<Tensor> us;
    for (size_t r = 0; r < one.results.size(); ++r) {
      const IRValue& v = one.values[one.results[r]];
      if (!differentiable(v.aval)) {
        us.push_back(nullptr);
        continue;
      }
      u_of[r] = static_cast<int>(zero_u.size());
      us.push_back(tc.add_param(v.aval, v.vma, cx.loc, "a cotangent"));
      zero_u.push_back(np::zeros(cx, v.aval.shape, v.aval.dtype));
    }
    LocScope loc(tc, cx.loc);
    std::vector<Tensor> cts = backward_pass(tc, one, env, us, &wanted);
    for (size_t k = 0; k < cts.size(); ++k) {
      if (!wanted[k]) continue;
      const AVal& a = one.values[one.params[k]].aval;
      Tensor ct = cts[k] ? cts[k] : np::zeros(tc, a.shape, a.dtype);
      g.results.push_back(tc.value_of(ct));
    }
    gconsts = tc.captured_tensors();
  }
  std::vector<Tensor> seeds;
  for (const Tensor& t : ptan)
    if (t) seeds.push_back(t);
  std::vector<Tensor> genv = forward_pass(cx, g, zero_u, gconsts);
  std::vector<Tensor> jt = backward_pass(cx, g, genv, seeds);
  for (size_t r = 0; r < one.results.size(); ++r)
    out.tangents.push_back(u_of[r] >= 0 ? jt[static_cast<size_t>(u_of[r])] : nullptr);
  return out;
}

// The JVP of a while loop: a loop over (carry, carry tangents); the tangents
// of the body's constants are constants of the new body.
Jvp while_jvp(OpContext& cx, const Instr& in, const std::vector<Tensor>& x,
              const std::vector<Tensor>& tx) {
  const WhileLoop& w = *in.attrs.loop;
  const size_t ncc = static_cast<size_t>(w.cond_nconsts), nbc = static_cast<size_t>(w.body_nconsts),
               nc = w.ncarry();
  std::vector<AVal> types;
  std::vector<Tensor> start;
  std::vector<int> tangent_of(nc, -1); // carry i -> its tangent's position after the carry
  for (size_t i = 0; i < nc; ++i) {
    const Tensor& p = x[ncc + nbc + i];
    types.push_back(p->aval);
    start.push_back(p);
  }
  for (size_t i = 0; i < nc; ++i) {
    const Tensor& p = x[ncc + nbc + i];
    if (!differentiable(p->aval)) continue;
    tangent_of[i] = static_cast<int>(types.size() - nc);
    // A given tangent keeps its type (weak for a weak primal, as in JAX).
    const Tensor& ti = tx[ncc + nbc + i];
    Tensor t0 = ti ? ti : np::zeros(cx, p->aval.shape, p->aval.dtype);
    types.push_back(t0->aval);
    start.push_back(t0);
  }
  auto cond = [&](TraceContext& tc, std::span<const Tensor> ps) {
    std::vector<Tensor> args(x.begin(), x.begin() + static_cast<long>(ncc));
    args.insert(args.end(), ps.begin(), ps.begin() + static_cast<long>(nc));
    return inline_function(tc, *w.cond, args, {})[0];
  };
  auto body = [&](TraceContext& tc, std::span<const Tensor> ps) {
    std::vector<Tensor> args(x.begin() + static_cast<long>(ncc),
                             x.begin() + static_cast<long>(ncc + nbc));
    std::vector<Tensor> targs(tx.begin() + static_cast<long>(ncc),
                              tx.begin() + static_cast<long>(ncc + nbc));
    for (size_t i = 0; i < nc; ++i) {
      args.push_back(ps[i]);
      targs.push_back(tangent_of[i] >= 0 ? ps[nc + static_cast<size_t>(tangent_of[i])] : nullptr);
    }
    Jvp j = jvp_walk(tc, *w.body, args, {}, targs);
    std::vector<Tensor> res = j.primals;
    for (size_t i = 0; i < nc; ++i) {
      if (tangent_of[i] < 0) continue;
      const AVal& a = types[nc + static_cast<size_t>(tangent_of[i])];
      res.push_back(j.tangents[i] ? j.tangents[i] : np::zeros(tc, a.shape, a.dtype));
    }
    return res;
  };
  std::vector<Tensor> res = bind_loop(cx, w.cond->name, w.body->name + "_jvp", types, start, cond,
                                      body, w.mode, w.cache, w.trip_count);
  Jvp out;
  out.primals.assign(res.begin(), res.begin() + static_cast<long>(nc));
  for (size_t i = 0; i < nc; ++i)
    out.tangents.push_back(tangent_of[i] >= 0 ? res[nc + static_cast<size_t>(tangent_of[i])]
                                              : nullptr);
  return out;
}

// A custom_jvp call: its rule on the primals and tangents (false where the
// callee has no such rule).
bool custom_jvp(OpContext& cx, const Function& f, const Instr& in, const std::vector<Tensor>& x,
                const std::vector<Tensor>& tx, Jvp& out) {
  auto* rule = dynamic_cast<const CustomRule*>(in.attrs.custom.get());
  if (!rule) return false;
  // (What the primal captured carries no tangent into the rule.)
  for (size_t k = rule->num_args + rule->num_static; k < in.operands.size(); ++k)
    if (tx[k]) throw_captured_tracer(f.values[in.operands[k]].aval, true, f.values[in.result].loc);
  return rule->jvp(cx, x, tx, out.primals, out.tangents);
}

Jvp jvp_walk(OpContext& cx, const Function& f, std::span<const Tensor> params,
             std::span<const Tensor> consts, std::span<const Tensor> tangents) {
  std::vector<Tensor> env(f.values.size()), tan(f.values.size());
  for (size_t i = 0; i < params.size(); ++i) {
    env[f.params[i]] = params[i];
    tan[f.params[i]] = tangents[i];
  }
  for (size_t i = 0; i < consts.size(); ++i) env[f.consts[i]] = consts[i];
  LocScope keep(cx, Span{});
  for (const Instr& in : f.body) {
    std::vector<Tensor> x, tx;
    bool any = false;
    for (int o : in.operands) {
      x.push_back(env[o]);
      tx.push_back(differentiable(f.values[o].aval) ? tan[o] : nullptr);
      any = any || tx.back();
    }
    bool float_result = false;
    for (int r = 0; r < in.nresults; ++r)
      float_result = float_result || differentiable(f.values[in.result + r].aval);
    cx.loc = f.values[in.result].loc;
    try {
      if (!any || !float_result) {
        OpAttrs attrs = attrs_for_rebind(cx, f, in);
        if (is_multi_result(in.op)) {
          std::vector<Tensor> outs = cx.bind_call(attrs, x);
          for (int r = 0; r < in.nresults; ++r) env[in.result + r] = outs[r];
        } else {
          env[in.result] = cx.bind(in.op, attrs, x);
        }
        continue;
      }
      Jvp j;
      if (!(in.op == Op::CustomCall && custom_jvp(cx, f, in, x, tx, j)))
        j = in.op == Op::While ? while_jvp(cx, in, x, tx) : instr_jvp(cx, f, in, x, tx);
      for (int r = 0; r < in.nresults; ++r) {
        env[in.result + r] = j.primals[r];
        tan[in.result + r] = j.tangents[r];
      }
    } catch (Error& e) {
      e.set_span_if_missing(f.values[in.result].loc);
      throw;
    }
  }
  Jvp out;
  for (int r : f.results) {
    out.primals.push_back(env[r]);
    out.tangents.push_back(tan[r]);
  }
  return out;
}

// A traced function as a callable: its Function inlined in the caller's
// context, so that tracing it again does not run the Python code again.
struct TracedCallable : OpaqueObj {
  TracedFunction t;
  explicit TracedCallable(TracedFunction tf) : t(std::move(tf)) {}
  std::string type_name() const override { return "function"; }
  std::string repr() const override { return "<function " + t.fn->name + ">"; }
  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    out = apply_traced(in, t, leaf_tensors(in, a.pos, where));
    // Leaves fun returned as Python numbers come back as numbers (so that a
    // has_aux function's aux keeps them, as JAX's does).
    ValueList leaves;
    TreeDef tree = tree_flatten(in, out, leaves);
    bool any = false;
    for (size_t i = 0; i < leaves.size() && i < t.number_outputs.size(); ++i)
      if (!t.number_outputs[i].is_none()) leaves[i] = t.number_outputs[i], any = true;
    if (any) out = tree_unflatten(tree, leaves);
    return true;
  }
};

} // namespace

namespace {

// jax._jvp_loops(fun, primals, tangents, has_aux): traces fun at the
// primals; when it runs a while loop, returns (primal_out, tangent_out) (and
// aux) by forward mode; otherwise returns fun as traced (jvp goes on as the
// transpose of reverse mode with it, without running fun's Python code again).
Value jvp_loops(InterpreterImpl& in, CallArgs& a, const Span& where) {
  ArgReader r("jvp", a, {"fun", "primals", "tangents", "has_aux"}, 3);
  bool has_aux = r.get_bool(3, false);
  const ValueList* primals = sequence_items(r[1]);
  const ValueList* tangents = sequence_items(r[2]);
  if (!primals || !tangents)
    throw Error(ErrCode::Type, "jvp: primals and tangents must be tuples", where);
  TracedFunction t = trace_function(in, r[0], *primals, where, "jvp", nullptr, nullptr, {}, true);
  if (!walked_forward(*t.fn)) return Value::object(std::make_shared<TracedCallable>(std::move(t)));
  std::vector<Tensor> ps = leaf_tensors(in, *primals, where);
  std::vector<Tensor> ts = leaf_tensors(in, *tangents, where);
  if (ps.size() != ts.size())
    throw Error(ErrCode::Type, "jvp: primal and tangent arguments must have the same structure",
                where);
  const TreeDef* out_tree = &t.out_tree;
  if (has_aux) {
    if (!t.out_tree.is_tuple_like() || t.out_tree.children.size() != 2)
      throw Error(ErrCode::Type,
                  "jvp: with has_aux=True the function must return a pair (out, aux)", where);
    out_tree = &t.out_tree.children[0];
  }
  Jvp j = jvp_walk(in.ops(), *t.fn, ps, t.consts, ts);
  ValueList ys, dys, aux;
  size_t n = out_tree->num_leaves();
  for (size_t i = 0; i < j.primals.size(); ++i) {
    if (i >= n) {
      aux.push_back(make_array(j.primals[i]));
      continue;
    }
    ys.push_back(make_array(j.primals[i]));
    const AVal& av = j.primals[i]->aval;
    if (!is_inexact(av.dtype)) { // an integer or bool result's tangent: float0 zeros
      dys.push_back(float0_zeros(av.shape));
      continue;
    }
    dys.push_back(
        make_array(j.tangents[i] ? j.tangents[i] : np::zeros(in.ops(), av.shape, av.dtype)));
  }
  if (has_aux)
    return make_tuple({tree_unflatten(*out_tree, ys), tree_unflatten(*out_tree, dys),
                       tree_unflatten(t.out_tree.children[1], aux)});
  return make_tuple({tree_unflatten(*out_tree, ys), tree_unflatten(*out_tree, dys)});
}

struct JvpLoopsFn : OpaqueObj {
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override { return "<function _jvp_loops>"; }
  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    out = jvp_loops(in, a, where);
    return true;
  }
};

} // namespace

void add_jvp_loops(Value& jax) {
  jax.as<ModuleObj>()->env->vars["_jvp_loops"] = Value::object(std::make_shared<JvpLoopsFn>());
}

} // namespace pxl
