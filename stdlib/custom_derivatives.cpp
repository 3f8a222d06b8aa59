// jax.custom_jvp, jax.custom_vjp and jax.custom_gradient.
//
// Design. pxl differentiates traced IR in reverse mode (autodiff.cpp: a
// forward pass, then each instruction's transpose in reverse order); forward
// mode (jax.jvp, jax_extra.pxl) is the transpose of that. So a custom rule has
// to be found by the backward pass, and it has to survive every trace that lies
// between the call and the differentiation (jit, vmap, shard_map, the forward
// pass of an enclosing grad):
//
//  * Called outside any trace, a custom function is just its primal.
//  * Called while tracing, the primal is traced to a sub-Function P and the
//    call is recorded as one custom_call instruction (ir/custom_call.hpp) whose
//    callee is P plus a CustomRule. Inlining a Function (jit inside a trace,
//    grad's forward pass) binds the instruction again, so the rule travels;
//    eager evaluation and executables run P (lowered before compiling), so
//    plain evaluation is unchanged; vmap batches P and wraps the rule
//    (BatchedRule).
//  * The backward pass asks the rule for the operands' cotangents, in the
//    context it is running in (eagerly, or recorded into an enclosing trace,
//    where an outer grad differentiates the rule's own operations: grad of
//    grad differentiates the jvp rule / bwd, as JAX does):
//      custom_vjp: calls fwd(*args) for the residuals, then bwd(res, g).
//      custom_jvp: traces the jvp rule to a Function J(x, t) -> (y, t_out),
//                  linear in t, and transposes J with respect to t at t = 0.
//    The rules run lazily, only when something differentiates the call (a jvp
//    rule may call the custom function itself).
//  * A custom_vjp function under forward mode (the innermost differentiating
//    trace is jvp's) raises JAX's TypeError.
//
// A rule runs after the trace that recorded the call has ended, so it must not
// close over that trace's values (JAX's closure_convert case): those are
// reported as escaped traced values.
#include "stdlib/custom_derivatives.hpp"

#include <optional>

#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/closure_convert.hpp"
#include "stdlib/custom_batching.hpp"
#include "stdlib/float0.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/np.hpp"
#include "stdlib/prng_key.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/trace_origin.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

namespace {

// JAX's aval.str_short(): "float32[2,3]".
std::string short_str(const AVal& a) {
  std::string s = std::string(dtype_name(a.dtype)) + "[";
  for (size_t i = 0; i < a.shape.size(); ++i) s += (i ? "," : "") + std::to_string(a.shape[i]);
  return s + "]";
}

// JAX's str(tree_unflatten(tree, [aval.str_short() ...])).replace("'", "").
std::string types_tree(const TreeDef& tree, const std::vector<AVal>& avals) {
  ValueList leaves;
  for (const AVal& a : avals) leaves.push_back(make_str(short_str(a)));
  std::string s = repr(tree_unflatten(tree, leaves)), out;
  for (char c : s)
    if (c != '\'') out += c;
  return out;
}

std::vector<AVal> avals_of(InterpreterImpl& in, const ValueList& leaves, const Span& where) {
  std::vector<AVal> out;
  for (const Value& v : leaves) out.push_back(in.to_tensor(v, where)->aval);
  return out;
}

// With the mesh axes it varies over, as in bwd's type errors: "float32[2,3]{V:x}".
std::string long_type(OpContext& cx, const AVal& a, AxisSet vma) {
  std::string s = short_str(a);
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  if (vma && tc) {
    std::string axes = tc->function().axes_str(vma); // "{x,y}"
    s += "{V:" + axes.substr(1);
  }
  return s;
}

bool same_type(const AVal& a, const AVal& b) { return a.shape == b.shape && a.dtype == b.dtype; }

// A new Function for tracing in `cx`: it shares the enclosing trace's mesh axes.
std::shared_ptr<Function> function_in(OpContext& cx, const std::string& name) {
  auto f = std::make_shared<Function>();
  f->name = name;
  if (auto* tc = dynamic_cast<TraceContext*>(&cx)) {
    f->mesh_axes = tc->function().mesh_axes;
    f->mesh_sizes = tc->function().mesh_sizes;
  }
  return f;
}

// The user's custom function: the primal and its rule(s).
struct CustomDef {
  bool is_vjp = false;
  Value fun;
  std::vector<int64_t> nondiff_argnums;
  Value jvp; // custom_jvp: jvp(*nondiff, primals, tangents)
  // defjvps(*jvps): the per-argument rules `jvp` was made from (jvps_rule).
  std::optional<ValueList> jvps;
  Value fwd, bwd;        // custom_vjp
  std::string primitive; // jax.custom_jvp(f, _primitive=name): the stdlib's lax ops
  // jax.custom_jvp(f, _transpose=rule): how the stdlib's lax op transposes
  // where its jvp rule's tangent calls it linearly (JAX's transpose rule of
  // the primitive, e.g. a convolution's are convolutions), instead of by
  // transposing its implementation.
  Value transpose;
  // jax.custom_jvp(f, _batch=rule): how vmap batches the stdlib's lax op, as
  // JAX's batching rule of the primitive does (rule(*nondiff, args, batched)
  // gives the result batched in front, or None to batch it per example), so
  // that the batched call is one call of the op, which derivatives and the
  // op's own order then see whole.
  Value batch;
  // jax.custom_jvp(f, _params=fn): fn(*nondiff) gives the (name, text) pairs
  // a jaxpr prints for the stdlib's lax op (its JAX params).
  Value params;
  // linear_call: a custom_vjp (fwd and bwd built by linear_call) that forward
  // mode may differentiate too, as it is linear.
  bool linear = false;
  // custom_jvp: how many transpositions of this function's jvp rule are under
  // way. A rule whose tangent output calls the function again (f(t)) puts a
  // call of it in the linear part: JAX transposes that one by its primal.
  mutable int transposing = 0;
  std::string name() const { return callable_name(fun); }
  const char* kind() const { return linear ? "linear_call" : is_vjp ? "custom_vjp" : "custom_jvp"; }
};

// One call of a custom function, as its rules need it.
struct CallSite {
  InterpreterImpl* in = nullptr;
  std::shared_ptr<const CustomDef> def;
  // The nondiff_argnums arguments. Their array leaves are operands of the call
  // (after the differentiable leaves), so that a rule sees them as they are
  // where it runs (inlined elsewhere, batched), not as the trace that recorded
  // the call had them.
  struct Static {
    size_t pos;
    TreeDef tree;
    ValueList leaves;         // the non-array leaves
    std::vector<int> operand; // per leaf: index among the array operands, or -1
  };
  std::vector<Static> statics;
  size_t num_arrays = 0; // array leaves of the statics
  size_t nargs = 0;      // positional arguments in all
  TreeDef in_tree;       // of the tuple of differentiable arguments
  TreeDef out_tree;      // of the primal's result
  Span where;

  // (position, value) of each nondiff argument, its arrays from `arrays`.
  std::vector<std::pair<size_t, Value>> nondiff(std::span<const Tensor> arrays) const {
    std::vector<std::pair<size_t, Value>> out;
    for (const Static& s : statics) {
      ValueList leaves = s.leaves;
      for (size_t i = 0; i < leaves.size(); ++i)
        if (s.operand[i] >= 0) leaves[i] = make_array(arrays[s.operand[i]]);
      out.push_back({s.pos, tree_unflatten(s.tree, leaves)});
    }
    return out;
  }
  // The whole positional argument list.
  ValueList full_args(const ValueList& diff, std::span<const Tensor> arrays) const {
    return with_static_args(nondiff(arrays), diff, nargs);
  }
  ValueList nondiff_values(std::span<const Tensor> arrays) const {
    ValueList out;
    for (const auto& [pos, v] : nondiff(arrays)) out.push_back(v);
    return out;
  }
  // The differentiable arguments rebuilt from operand leaves.
  Value diff_tuple(std::span<const Tensor> leaves) const {
    ValueList vs;
    for (const Tensor& t : leaves) vs.push_back(make_array(t));
    return tree_unflatten(in_tree, vs);
  }
};

struct SiteRule : CustomRule {
  CallSite site;
  std::span<const Tensor> arrays(std::span<const Tensor> operands) const {
    return operands.subspan(num_args, site.num_arrays);
  }
  std::vector<AVal> out_avals() const {
    std::vector<AVal> out;
    for (int r : fn->results) out.push_back(fn->values[r].aval);
    return out;
  }
  // JAX's check that a rule's primal output (`tree`, `avals`) is the custom
  // function's: `structure` / `types` begin the message for either mismatch.
  void check_primal_out(const TreeDef& tree, const std::vector<AVal>& avals, const char* rule,
                        const std::string& structure, const std::string& types) const {
    std::vector<AVal> want = out_avals();
    bool same_tree = tree == site.out_tree;
    bool same_types = same_tree;
    for (size_t i = 0; same_types && i < avals.size(); ++i)
      same_types = same_type(avals[i], want[i]);
    if (same_types) return;
    const char* what = same_tree ? "shapes/dtypes of" : "container/pytree structure";
    throw Error(ErrCode::Type,
                (same_tree ? types : structure) + "instead the " + rule +
                    " output's first element had " + what + ":\n    " + types_tree(tree, avals) +
                    "\nwhile the " + site.def->kind() + "-decorated function " + site.def->name() +
                    " had output " + what + ":\n    " + types_tree(site.out_tree, want) +
                    (same_tree ? "" : "."),
                site.where);
  }
};

// custom_jvp: the transpose of the jvp rule's tangent map.
struct JvpRule : SiteRule {
  // The cotangents by differentiating the primal (what the rule's own
  // transposition uses for calls of the function inside it).
  std::vector<Tensor> primal_vjp(OpContext& cx, std::span<const Tensor> operands,
                                 std::span<const Tensor> cts) const {
    std::vector<Tensor> env = forward_pass(cx, *fn, operands, {});
    std::vector<Tensor> seeds(cts.begin(), cts.end());
    std::vector<bool> wanted(operands.size(), false);
    for (size_t k = 0; k < num_args; ++k) wanted[k] = true;
    std::vector<Tensor> ct = backward_pass(cx, *fn, env, seeds, &wanted);
    ct.resize(operands.size());
    for (size_t k = num_args; k < ct.size(); ++k) ct[k] = nullptr;
    return ct;
  }

  // Calls the jvp rule on (primals, tangents) and checks its output as JAX does.
  Value call_rule(InterpreterImpl& in, std::span<const Tensor> arrays, const Value& primals,
                  const Value& tangents) const {
    const CustomDef& d = *site.def;
    ValueList args = site.nondiff_values(arrays);
    args.push_back(primals);
    // An integer or bool primal's tangent is float0 zeros, as JAX gives the rule.
    args.push_back(map_tree(in, tangents, [](const Value& t) {
      if (!t.is_obj(ObjKind::Array) || is_inexact(t.as<ArrayObj>()->tensor->aval.dtype)) return t;
      return float0_zeros(t.as<ArrayObj>()->tensor->aval.shape);
    }));
    Value pair = in.call(d.jvp, args, site.where);
    {
      // ... and the rule may give an integer output a float0 tangent: zeros.
      const ValueList* got = sequence_items(pair);
      if (got && got->size() == 2) {
        ValueList po, to;
        TreeDef pt = tree_flatten(in, (*got)[0], po), tt = tree_flatten(in, (*got)[1], to);
        bool any = false;
        for (size_t i = 0; i < to.size() && i < po.size(); ++i)
          if (is_float0(to[i])) {
            to[i] = make_array(np::zeros(in.ops(), in.to_tensor(po[i], site.where)->aval.shape,
                                         in.to_tensor(po[i], site.where)->aval.dtype));
            any = true;
          }
        if (any && pt == tt) pair = make_tuple({(*got)[0], tree_unflatten(tt, to)});
      }
    }
    std::string rule = "Custom JVP rule " + callable_name(d.jvp) + " for function " + d.name();
    const ValueList* items = sequence_items(pair);
    if (!items || items->size() != 2)
      throw Error(ErrCode::Type,
                  rule +
                      " must produce a pair (list or tuple of length two) "
                      "representing primal and tangent outputs, but got " +
                      repr(pair) + ".",
                  site.where);
    ValueList po, to;
    TreeDef pt = tree_flatten(in, (*items)[0], po), tt = tree_flatten(in, (*items)[1], to);
    if (!(pt == tt))
      throw Error(ErrCode::Type,
                  rule +
                      " must produce primal and tangent outputs with equal "
                      "container (pytree) structures, but got " +
                      pt.repr() + " and " + tt.repr() + " respectively.",
                  site.where);
    std::vector<AVal> pa = avals_of(in, po, site.where), ta = avals_of(in, to, site.where);
    std::string head = rule +
                       " must produce a pair (list or tuple of length two) where the first element "
                       "represents the primal output (equal in value to the output of the "
                       "custom_jvp-decorated function " +
                       d.name() + ", and in particular ";
    check_primal_out(pt, pa, "JVP rule", head + "of the same container/pytree structure), but ",
                     head + "with leaves of the same shape/dtype), but ");
    std::vector<std::string> bad;
    for (size_t i = 0; i < pa.size(); ++i)
      if (is_floating(pa[i].dtype) && !same_type(pa[i], ta[i]))
        bad.push_back("  primal " + short_str(pa[i]) + " with tangent " + short_str(ta[i]) +
                      ", expecting tangent ShapedArray(" + short_str(pa[i]) + ")");
    if (!bad.empty() && pa.size() == 1)
      throw Error(ErrCode::Type,
                  "Custom JVP rule must produce primal and tangent outputs with corresponding "
                  "shapes and dtypes. Expected " +
                      short_str(pa[0]) + " (tangent type of " + short_str(pa[0]) + ") but got " +
                      short_str(ta[0]) + ".",
                  site.where);
    if (!bad.empty()) {
      std::string m = "Custom JVP rule must produce primal and tangent outputs with corresponding "
                      "shapes and dtypes, but got:";
      for (const std::string& b : bad) m += "\n" + b;
      throw Error(ErrCode::Type, m, site.where);
    }
    return make_tuple({(*items)[0], (*items)[1]});
  }

  // The stdlib's transpose rule for a call in a jvp rule's linear part:
  // transpose(*nondiff, primals, ct, k) is the cotangent of argument k (whose
  // primal is a placeholder of its type), for each argument `need`s.
  std::vector<Tensor> rule_transpose(OpContext& cx, std::span<const Tensor> operands,
                                     std::span<const Tensor> cts,
                                     const std::vector<bool>& need) const {
    InterpreterImpl& in = *site.in;
    LocScope loc(cx, site.where);
    Value primals = site.diff_tuple(operands.subspan(0, num_args));
    std::vector<AVal> outs = out_avals();
    if (outs.size() != 1)
      throw Error(ErrCode::Type,
                  "_transpose rule of " + site.def->name() + ": the function must have one result",
                  site.where);
    Tensor ct = cts[0] ? cts[0] : np::zeros(cx, outs[0].shape, outs[0].dtype);
    ValueList nondiff = site.nondiff_values(arrays(operands));
    std::vector<Tensor> out(operands.size());
    for (size_t k = 0; k < num_args; ++k) {
      if (!need[k]) continue;
      ValueList args = nondiff;
      args.insert(args.end(), {primals, make_array(ct), Value::integer(static_cast<int64_t>(k))});
      out[k] = in.to_tensor(in.call(site.def->transpose, args, site.where), site.where);
      if (!same_type(out[k]->aval, operands[k]->aval))
        throw Error(ErrCode::Type,
                    "_transpose rule of " + site.def->name() + " gave a cotangent of type " +
                        short_str(out[k]->aval) + " for an operand of type " +
                        short_str(operands[k]->aval),
                    site.where);
    }
    return out;
  }

  // Reverse mode transposes the rule's tangent map: a jax.debug.print of a
  // tangent there has no value to print (JAX's partial evaluation stages it
  // with the tangents, and transposing drops it), so it goes; one of primals
  // alone prints.
  static void drop_tangent_prints(Function& j, size_t num_primals) {
    std::vector<bool> tangent(j.params.size(), false);
    for (size_t k = num_primals; k < tangent.size(); ++k) tangent[k] = true;
    std::vector<bool> dep = parameter_dependent(j, &tangent);
    std::erase_if(j.body, [&](const Instr& i) {
      return i.op == Op::DebugPrint &&
             std::any_of(i.operands.begin(), i.operands.end(),
                         [&](int o) { return dep[static_cast<size_t>(o)]; });
    });
  }

  std::shared_ptr<CustomRule> with_primal(std::shared_ptr<const Function> f) const override {
    auto r = std::make_shared<JvpRule>(*this);
    r->fn = std::move(f);
    return r;
  }

  bool jvp(OpContext& cx, std::span<const Tensor> operands, std::span<const Tensor> tangents,
           std::vector<Tensor>& results, std::vector<Tensor>& result_tangents) const override {
    InterpreterImpl& in = *site.in;
    OpsScope scope(in, cx);
    LocScope loc(cx, site.where);
    std::span<const Tensor> xs = operands.subspan(0, num_args);
    std::vector<Tensor> ts;
    for (size_t k = 0; k < num_args; ++k)
      ts.push_back(k < tangents.size() && tangents[k]
                       ? tangents[k]
                       : np::zeros(cx, xs[k]->aval.shape, xs[k]->aval.dtype));
    std::vector<Tensor> statics(arrays(operands).begin(), arrays(operands).end());
    Value pair = call_rule(in, statics, site.diff_tuple(xs), site.diff_tuple(ts));
    const ValueList& items = *sequence_items(pair);
    ValueList po, to;
    tree_flatten(in, items[0], po);
    tree_flatten(in, items[1], to);
    for (size_t i = 0; i < po.size(); ++i) {
      results.push_back(in.to_tensor(po[i], site.where));
      Tensor t = in.to_tensor(to[i], site.where);
      // (In the result's dtype: call_rule checks a floating result's tangent
      // type, not a complex or integer one's.)
      if (t->aval.dtype != results.back()->aval.dtype) {
        OpAttrs c;
        c.dtype = results.back()->aval.dtype;
        t = cx.bind(Op::ConvertElementType, c, std::vector<Tensor>{t});
      }
      result_tangents.push_back(t);
    }
    return true;
  }

  std::vector<Tensor> vjp(OpContext& cx, std::span<const Tensor> operands,
                          std::span<const Tensor> cts,
                          const std::vector<bool>& need) const override {
    InterpreterImpl& in = *site.in;
    OpsScope scope(in, cx);
    size_t n = num_args;
    if (site.def->transposing > 0)
      return site.def->transpose.is_none() ? primal_vjp(cx, operands, cts)
                                           : rule_transpose(cx, operands, cts, need);
    struct Transposing {
      const CustomDef& d;
      explicit Transposing(const CustomDef& def) : d(def) { ++d.transposing; }
      ~Transposing() { --d.transposing; }
      Transposing(const Transposing&) = delete;
      Transposing& operator=(const Transposing&) = delete;
    } guard(*site.def);
    std::span<const Tensor> xs = operands.subspan(0, n);
    Value primals = site.diff_tuple(xs);
    // J(primals, tangents) -> (primal_out, tangent_out): the tangents are
    // typed as the primals.
    std::vector<Tensor> statics(arrays(operands).begin(), arrays(operands).end());
    Value rule = make_builtin("jvp", [this, &statics](InterpreterImpl& in, CallArgs& a) {
      return call_rule(in, statics, a.pos[0], a.pos[1]);
    });
    TracedFunction j = trace_function(in, rule, {primals, primals}, site.where, "custom_jvp",
                                      nullptr, nullptr, {}, true);
    drop_tangent_prints(*j.fn, n);
    std::vector<Tensor> params(xs.begin(), xs.end());
    for (const Tensor& x : xs)
      params.push_back(pvary_like(cx, np::full_like(cx, x, Scalar::of_float(0.0)), x));
    std::vector<Tensor> env = forward_pass(cx, *j.fn, params, j.consts);
    size_t ny = cts.size();
    std::vector<Tensor> seeds(j.fn->results.size());
    for (size_t r = 0; r < ny; ++r) seeds[ny + r] = cts[r];
    std::vector<bool> wanted(2 * n, false);
    for (size_t k = n; k < 2 * n; ++k) wanted[k] = true;
    std::vector<Tensor> ct = backward_pass(cx, *j.fn, env, seeds, &wanted);
    std::vector<Tensor> out(operands.size());
    for (size_t k = 0; k < n; ++k) out[k] = ct[n + k];
    return out;
  }
};

// Where a bwd output leaf goes: its value (None: zero) and JAX's keystr.
struct CtLeaf {
  Value v;
  std::string path;
};

// Matches bwd's output for one argument against the argument's structure; a
// None stands for zeros of a whole subtree. False on a structure mismatch.
bool match_cts(InterpreterImpl& in, const Value& v, const TreeDef& def, const std::string& path,
               std::vector<CtLeaf>& out) {
  if (v.is_none() && def.kind != TreeDef::Kind::None) {
    out.insert(out.end(), def.num_leaves(), CtLeaf{Value(), path});
    return true;
  }
  switch (def.kind) {
  case TreeDef::Kind::Leaf:
    out.push_back({v, path});
    return true;
  case TreeDef::Kind::None:
    return v.is_none();
  case TreeDef::Kind::Key:
    if (!as_key_array(v)) return false;
    out.push_back({as_key_array(v)->data, path});
    return true;
  case TreeDef::Kind::Tuple:
  case TreeDef::Kind::List: {
    bool tuple = def.kind == TreeDef::Kind::Tuple;
    if (!v.is_obj(tuple ? ObjKind::Tuple : ObjKind::List)) return false;
    const ValueList& items = *sequence_items(v);
    if (items.size() != def.children.size()) return false;
    for (size_t i = 0; i < items.size(); ++i)
      if (!match_cts(in, items[i], def.children[i], path + "[" + std::to_string(i) + "]", out))
        return false;
    return true;
  }
  case TreeDef::Kind::NamedTuple: {
    const ValueList* items = nullptr;
    if (namedtuple_parts(v, &items) != def.nt_type) return false;
    for (size_t i = 0; i < items->size(); ++i)
      if (!match_cts(in, (*items)[i], def.children[i], path + "." + def.nt_type->fields[i], out))
        return false;
    return true;
  }
  case TreeDef::Kind::Partial: {
    if (!v.is_obj(ObjKind::Partial) || !v.as<PartialObj>()->pytree) return false;
    ValueList leaves;
    TreeDef vd = tree_flatten(in, v, leaves);
    if (!(vd == def)) return false;
    for (const Value& x : leaves) out.push_back({x, path});
    return true;
  }
  case TreeDef::Kind::Dict: {
    if (!v.is_obj(ObjKind::Dict)) return false;
    ValueList ignored;
    TreeDef vd = tree_flatten(in, v, ignored);
    if (vd.keys.size() != def.keys.size()) return false;
    for (size_t i = 0; i < def.keys.size(); ++i) {
      const Value* item = v.as<DictObj>()->find(def.keys[i]);
      if (!item ||
          !match_cts(in, *item, def.children[i], path + "[" + repr(def.keys[i]) + "]", out))
        return false;
    }
    return true;
  }
  }
  return false;
}

// custom_vjp: fwd for the residuals, then bwd.
struct VjpRule : SiteRule {
  std::shared_ptr<CustomRule> with_primal(std::shared_ptr<const Function> f) const override {
    auto r = std::make_shared<VjpRule>(*this);
    r->fn = std::move(f);
    return r;
  }

  std::vector<Tensor> vjp(OpContext& cx, std::span<const Tensor> operands,
                          std::span<const Tensor> cts, const std::vector<bool>&) const override {
    InterpreterImpl& in = *site.in;
    OpsScope scope(in, cx);
    LocScope loc(cx, site.where);
    const CustomDef& d = *site.def;
    size_t n = num_args;
    std::span<const Tensor> xs = operands.subspan(0, n);
    Value diff = site.diff_tuple(xs);
    std::string fwd_name = callable_name(d.fwd);
    Value pair =
        in.call(d.fwd, site.full_args(*sequence_items(diff), arrays(operands)), site.where);
    std::string head = "Custom VJP fwd rule " + fwd_name + " for function " + d.name() +
                       " must produce a pair (list or tuple of length two) where the first "
                       "element represents the primal output (equal to ";
    std::string res_words = ") and the second element represents residuals (i.e. values stored "
                            "from the forward pass for use on the backward pass), but ";
    const ValueList* items = sequence_items(pair);
    if (!items || items->size() != 2)
      throw Error(ErrCode::Type,
                  head + "those of the custom_vjp-decorated function " + d.name() + res_words +
                      "instead of a pair the fwd rule " + fwd_name + " produced " + repr(pair) +
                      ".",
                  site.where);
    ValueList ys;
    TreeDef yt = tree_flatten(in, (*items)[0], ys);
    std::vector<AVal> ya = avals_of(in, ys, site.where), want = out_avals();
    std::string same =
        head + "the output of the custom_vjp-decorated function " + d.name() + res_words;
    check_primal_out(yt, ya, "fwd rule", same, same);
    // Zero cotangents have the outputs' types (weak ones stay weak, as in JAX).
    ValueList g;
    for (size_t r = 0; r < want.size(); ++r) {
      Tensor z = cts[r];
      if (!z) {
        z = np::scalar(cx, Scalar::of_float(0.0), want[r].dtype, want[r].weak);
        if (!want[r].shape.empty()) z = np::broadcast_to(cx, z, want[r].shape);
      }
      g.push_back(make_array(z));
    }
    ValueList bargs = site.nondiff_values(arrays(operands));
    bargs.push_back((*items)[1]);
    bargs.push_back(tree_unflatten(site.out_tree, g));
    Value got = in.call(d.bwd, bargs, site.where);
    // The cotangents: a tuple with one entry per differentiable argument.
    if (got.is_obj(ObjKind::List) && sequence_items(got)->size() == site.in_tree.children.size())
      got = make_tuple(*sequence_items(got));
    std::vector<CtLeaf> leaves;
    bool ok =
        got.is_obj(ObjKind::Tuple) && sequence_items(got)->size() == site.in_tree.children.size();
    for (size_t i = 0; ok && i < site.in_tree.children.size(); ++i)
      ok = match_cts(in, (*sequence_items(got))[i], site.in_tree.children[i],
                     "[" + std::to_string(i) + "]", leaves);
    if (!ok) {
      ValueList ignored;
      throw Error(ErrCode::Type,
                  "Custom VJP bwd rule must produce an output with the same container (pytree) "
                  "structure as the args tuple of the primal function, and in particular must "
                  "produce a tuple of length equal to the number of arguments to the primal "
                  "function, but got bwd output structure " +
                      tree_flatten(in, got, ignored).repr() + " for primal input structure " +
                      site.in_tree.repr() + ".",
                  site.where);
    }
    std::vector<Tensor> out(operands.size());
    for (size_t k = 0; k < n; ++k) {
      const AVal& want_k = xs[k]->aval;
      if (leaves[k].v.is_none() || !is_floating(want_k.dtype)) continue;
      Tensor c = in.to_tensor(leaves[k].v, site.where);
      if (c->aval.weak && c->aval.shape == want_k.shape && is_floating(c->aval.dtype) &&
          c->aval.dtype != want_k.dtype)
        c = np::astype(cx, c, want_k.dtype);
      // Under shard_map the type includes the mesh axes a value varies over.
      AxisSet cv = 0, xv = 0;
      if (spmd_mode(cx) == SpmdMode::ShardMap) {
        cv = vma_of(cx, c);
        xv = vma_of(cx, xs[k]);
        // As in JAX, a cotangent must vary over exactly its input's axes
        // (jnp.ones_like(g) of a varying g varies as g does).
      }
      const char* why = c->aval.shape != want_k.shape   ? "shapes"
                        : c->aval.dtype != want_k.dtype ? "dtypes"
                        : cv != xv                      ? "manual axis types"
                                                        : nullptr;
      if (why)
        throw Error(ErrCode::Value,
                    "Custom VJP bwd rule must produce an output with the same type as the args "
                    "tuple of the primal function, but at output" +
                        leaves[k].path + " the bwd rule produced an output of type " +
                        long_type(cx, c->aval, cv) + " corresponding to an input of type " +
                        long_type(cx, want_k, xv) + ", so the " + why + " do not match",
                    site.where);
      out[k] = c;
    }
    return out;
  }
};

// vmap of a custom_call: the inner rule on each example, by batching a trace
// of it; cotangents of operands the batch does not split are summed over it.
struct BatchedRule : CustomRule {
  std::shared_ptr<const CustomRule> inner;
  std::vector<bool> batched; // per operand of the inner call
  BatchAxis axis;

  std::vector<Tensor> vjp(OpContext& cx, std::span<const Tensor> operands,
                          std::span<const Tensor> cts,
                          const std::vector<bool>& need) const override {
    const Function& p = *inner->fn;
    size_t nin = p.params.size();
    auto v = function_in(cx, p.name + "_vjp");
    std::vector<Tensor> consts;
    {
      TraceContext tc(*v, cx, "vmap");
      auto per_example = [](AVal a, bool b) {
        if (b) a.shape.erase(a.shape.begin());
        return a;
      };
      std::vector<Tensor> ps, ct_ps;
      for (size_t i = 0; i < nin; ++i)
        ps.push_back(tc.add_param(per_example(operands[i]->aval, batched[i]),
                                  vma_of(cx, operands[i]), cx.loc, "operand " + std::to_string(i)));
      for (size_t r = 0; r < cts.size(); ++r)
        ct_ps.push_back(cts[r] ? tc.add_param(per_example(cts[r]->aval, true), vma_of(cx, cts[r]),
                                              cx.loc, "cotangent " + std::to_string(r))
                               : nullptr);
      std::vector<Tensor> outs = inner->vjp(tc, ps, ct_ps, need);
      LocScope loc(tc, cx.loc);
      for (size_t k = 0; k < inner->num_args; ++k) {
        Tensor o = outs[k] ? outs[k] : np::zeros(tc, ps[k]->aval.shape, ps[k]->aval.dtype);
        v->results.push_back(tc.value_of(o));
      }
      consts = tc.captured_tensors();
    }
    std::vector<BVal> bparams;
    for (size_t i = 0; i < nin; ++i) bparams.push_back({operands[i], batched[i]});
    for (const Tensor& c : cts)
      if (c) bparams.push_back({c, true});
    std::vector<BVal> r = batch_function(cx, *v, bparams, consts, axis);
    std::vector<Tensor> out(operands.size());
    for (size_t k = 0; k < inner->num_args; ++k) {
      if (batched[k])
        out[k] = r[k].batched ? r[k].t : broadcast_batch(cx, r[k].t, axis.size);
      else
        out[k] =
            r[k].batched ? np::reduce(cx, np::ReduceOp::Sum, r[k].t, std::vector<int>{0}) : r[k].t;
    }
    return out;
  }
};

} // namespace

std::string callable_name(const Value& fn) {
  Value f = unwrapped_function(fn); // (functools.wraps: a jitted f's __name__ is f's)
  if (f.is_obj(ObjKind::Function)) return f.as<FunctionObj>()->name;
  if (f.is_obj(ObjKind::Builtin)) return f.as<BuiltinObj>()->name;
  return type_name(f);
}

// Whether the innermost differentiating trace is forward mode's (jax.jvp).
bool forward_mode(InterpreterImpl& in) {
  for (auto* tc = dynamic_cast<TraceContext*>(&in.ops()); tc;
       tc = dynamic_cast<TraceContext*>(&tc->outer())) {
    const std::string& w = tc->what();
    if (w == "jvp") return true;
    if (w == "grad" || w == "value_and_grad" || w == "vjp") return false;
  }
  return false;
}

namespace {

// The TypeError JAX raises for forward mode through a custom_vjp: when the
// innermost differentiating trace around the call is jvp's.
void check_not_forward_mode(InterpreterImpl& in, const Span& where) {
  if (forward_mode(in))
    throw Error(ErrCode::Type, "can't apply forward-mode autodiff (jvp) to a custom_vjp function.",
                where);
}

} // namespace

// JAX binds keyword arguments to positions through the signature (with defaults).
ValueList positional_args(InterpreterImpl& in, const Value& fun, const std::string& kind,
                          CallArgs& a, const Span& where) {
  const std::string name = callable_name(fun);
  if (a.kw.empty() && !fun.is_obj(ObjKind::Function)) return a.pos;
  if (!fun.is_obj(ObjKind::Function)) {
    throw Error(ErrCode::Type,
                "The input arguments to the " + kind + "-decorated function " + name +
                    " could not be resolved to positional-only arguments.",
                where);
  }
  const FunctionObj& f = *fun.as<FunctionObj>();
  ValueList out = a.pos;
  std::vector<bool> used(a.kw.size(), false);
  for (size_t i = 0; f.params && i < f.params->size(); ++i) {
    const Param& p = (*f.params)[i];
    if (p.kind != Param::Kind::Normal || p.keyword_only) break;
    if (i < a.pos.size()) continue;
    bool found = false;
    for (size_t k = 0; k < a.kw.size(); ++k)
      if (a.kw[k].first == p.name) {
        out.push_back(a.kw[k].second);
        used[k] = found = true;
      }
    if (found) continue;
    if (!p.default_value)
      throw Error(ErrCode::Type,
                  "The input arguments to the " + kind + "-decorated function " + name +
                      " could not be resolved to positional-only arguments. Binding failed with "
                      "the error:\nmissing a required argument: '" +
                      p.name + "'",
                  where);
    out.push_back(f.defaults[i]);
  }
  // Keyword-only parameters bind, but not to positions (JAX lists them).
  std::string keyword_only;
  for (size_t k = 0; k < a.kw.size(); ++k) {
    if (used[k]) continue;
    bool named = false;
    for (size_t i = 0; f.params && i < f.params->size(); ++i) {
      const Param& p = (*f.params)[i];
      named = named ||
              (p.kind == Param::Kind::Normal && p.keyword_only && p.name == a.kw[k].first) ||
              p.kind == Param::Kind::KwArgs;
    }
    if (named) {
      keyword_only += (keyword_only.empty() ? "" : ", ") + a.kw[k].first;
      continue;
    }
    throw Error(ErrCode::Type,
                "The input arguments to the " + kind + "-decorated function " + name +
                    " could not be resolved to positional-only arguments. Binding failed with "
                    "the error:\ngot an unexpected keyword argument '" +
                    a.kw[k].first + "'",
                where);
  }
  if (!keyword_only.empty())
    throw Error(ErrCode::Type,
                "The input arguments to the " + kind + "-decorated function " + name +
                    " could not be resolved to positional-only arguments. Binding failed with "
                    "the error:\nThe following keyword arguments could not be resolved to "
                    "positions: " +
                    keyword_only,
                where);
  (void)in;
  return out;
}

Value bind_custom_call(InterpreterImpl& in, std::shared_ptr<const CustomCallee> rule,
                       std::span<const Tensor> operands, const TreeDef& out_tree,
                       const Span& where) {
  OpAttrs attrs;
  attrs.custom = std::move(rule);
  LocScope loc(in.ops(), where);
  std::vector<Tensor> outs = in.ops().bind_call(attrs, operands);
  ValueList leaves;
  for (Tensor& o : outs) leaves.push_back(make_array(std::move(o)));
  return tree_unflatten(out_tree, leaves);
}

namespace {

Value call_custom(InterpreterImpl& in, const std::shared_ptr<const CustomDef>& def, CallArgs& a,
                  const Span& where) {
  const CustomDef& d = *def;
  if (d.is_vjp ? (d.fwd.is_none() || d.bwd.is_none()) : d.jvp.is_none())
    throw Error(ErrCode::Attribute,
                std::string("No ") + (d.is_vjp ? "VJP" : "JVP") + " defined for " + d.kind() +
                    " function " + d.name() + " using " + (d.is_vjp ? "defvjp" : "defjvp") + ".",
                where);
  ValueList args = positional_args(in, d.fun, d.kind(), a, where);
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  if (!tc) return in.call(d.fun, args, where); // nothing differentiates an eager call
  if (d.is_vjp && !d.linear) check_not_forward_mode(in, where);
  CallSite site;
  site.in = &in;
  site.def = def;
  site.nargs = args.size();
  site.where = where;
  ValueList diff, arrays;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!is_static_position(d.nondiff_argnums, i, args.size())) {
      diff.push_back(args[i]);
      continue;
    }
    CallSite::Static s{i, {}, {}, {}};
    s.tree = tree_flatten(in, args[i], s.leaves);
    for (Value& l : s.leaves) {
      bool array = l.is_obj(ObjKind::Array);
      s.operand.push_back(array ? static_cast<int>(arrays.size()) : -1);
      if (array) arrays.push_back(std::move(l));
    }
    site.statics.push_back(std::move(s));
  }
  site.num_arrays = arrays.size();
  // JAX refuses traced values in a custom_vjp's nondiff_argnums.
  if (d.is_vjp && !d.linear)
    for (const Value& v : arrays)
      if (!v.as<ArrayObj>()->tensor->concrete)
        throw Error(ErrCode::ConcreteValue,
                    "UnexpectedTracerError: Found a JAX Tracer object passed as an argument to a "
                    "custom_vjp function in a position indicated by nondiff_argnums as "
                    "non-differentiable. Tracers cannot be passed as non-differentiable arguments "
                    "to custom_vjp functions; instead, nondiff_argnums should only be used for "
                    "arguments that can't be or contain JAX tracers, e.g. function-valued "
                    "arguments. In particular, array-valued arguments should typically not be "
                    "indicated as nondiff_argnums.\nSee "
                    "https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError",
                    where);
  for (int64_t k : d.nondiff_argnums)
    if (k >= static_cast<int64_t>(args.size()) || k < -static_cast<int64_t>(args.size()))
      throw Error(ErrCode::Arguments,
                  std::string(d.kind()) + " function " + d.name() + ": nondiff_argnums " +
                      std::to_string(k) + " is out of range for " + std::to_string(args.size()) +
                      " positional arguments",
                  where);
  // The primal, with the leaves of the differentiable arguments and then the
  // static arrays as parameters.
  size_t ndiff = diff.size();
  auto statics = std::make_shared<const CallSite>(site);
  Value primal = make_builtin(d.name(), [statics, ndiff, where](InterpreterImpl& in, CallArgs& c) {
    ValueList dyn(c.pos.begin(), c.pos.begin() + static_cast<std::ptrdiff_t>(ndiff));
    std::vector<Tensor> arrays;
    for (size_t i = ndiff; i < c.pos.size(); ++i) arrays.push_back(in.to_tensor(c.pos[i], where));
    return in.call(statics->def->fun, statics->full_args(dyn, arrays), where);
  });
  std::vector<Tensor> operands = leaf_tensors(in, diff, where, &site.in_tree);
  size_t nargs = operands.size();
  ValueList traced_args = diff;
  traced_args.insert(traced_args.end(), arrays.begin(), arrays.end());
  // Python control flow on the arguments reads their values where the calling
  // context knows them (grad's), as JAX's JVPTracer carries its primal.
  // Under make_jaxpr the primal keeps a record of its own (custom_jvp_call's
  // call_jaxpr shows a jit inside it).
  auto* enclosing = dynamic_cast<TraceContext*>(&in.ops());
  std::shared_ptr<JaxprRecord> record;
  std::function<void(TraceContext&)> prepare;
  if (enclosing && enclosing->jaxpr_record) {
    record = std::make_shared<JaxprRecord>();
    prepare = [record](TraceContext& tc) { tc.jaxpr_record = record; };
  }
  TracedFunction t =
      trace_function(in, primal, traced_args, where, d.kind(), nullptr, nullptr, prepare, true);
  site.out_tree = t.out_tree;
  auto fn = t.fn;
  fn->name = d.name();
  for (const Value& a : arrays) operands.push_back(in.to_tensor(a, where));
  fn->params.insert(fn->params.end(), fn->consts.begin(), fn->consts.end());
  fn->consts.clear();
  operands.insert(operands.end(), t.consts.begin(), t.consts.end());
  std::shared_ptr<SiteRule> rule;
  if (d.is_vjp)
    rule = std::make_shared<VjpRule>();
  else
    rule = std::make_shared<JvpRule>();
  rule->kind = d.kind();
  rule->primitive = d.primitive;
  if (d.primitive.empty()) {
    rule->jaxpr_params = {{"name", d.name()}};
    if (d.is_vjp)
      rule->jaxpr_params.insert(rule->jaxpr_params.end(),
                                {{"bwd", callable_name(d.bwd)}, {"fwd", callable_name(d.fwd)}});
    else
      rule->jaxpr_params.push_back({"jvp", callable_name(d.jvp)});
    rule->jaxpr_params.push_back({"symbolic_zeros", "False"});
  } else if (!d.params.is_none()) { // a stdlib lax op: its JAX params
    ValueList nondiff;
    for (size_t i = 0; i < args.size(); ++i)
      if (is_static_position(d.nondiff_argnums, i, args.size())) nondiff.push_back(args[i]);
    Value pairs = in.call(d.params, nondiff, where);
    const ValueList* items = sequence_items(pairs);
    for (size_t k = 0; items && k < items->size(); ++k) {
      const ValueList* kv = sequence_items((*items)[k]);
      if (!kv || kv->size() != 2) throw Error(ErrCode::Internal, "_params: (name, text) pairs");
      rule->jaxpr_params.push_back(
          {value_to_str((*kv)[0], "_params"), value_to_str((*kv)[1], "_params")});
    }
  }
  rule->fn = fn;
  rule->num_args = nargs;
  rule->num_static = site.num_arrays;
  rule->under_jvp = forward_mode(in);
  rule->jaxpr_record = record;
  rule->site = std::move(site);
  return bind_custom_call(in, rule, operands, t.out_tree, where);
}

// defjvps(*jvps): JAX's jvp from one rule per argument, jvp_i(t_i, ans, *primals),
// the tangents summed (None: no contribution). The rule kept in the function's
// own `jvp` refers to it weakly (`keep` null): a strong reference there would
// be a cycle that outlives the interpreter. `f.jvp` handed to the user keeps f.
Value jvps_rule(std::shared_ptr<const CustomDef> keep, std::weak_ptr<const CustomDef> weak,
                ValueList jvps) {
  return make_builtin("jvp", [keep, weak, jvps](InterpreterImpl& in, CallArgs& a) {
    Span where = in.ops().loc;
    std::shared_ptr<const CustomDef> self = weak.lock();
    if (!self) throw Error(ErrCode::Internal, "defjvps: the custom_jvp function is gone", where);
    const ValueList& primals = *sequence_items(a.pos[0]);
    const ValueList& tangents = *sequence_items(a.pos[1]);
    CallArgs call;
    call.pos = primals;
    Value ans = call_custom(in, self, call, where);
    ValueList ans_leaves;
    TreeDef tree = tree_flatten(in, ans, ans_leaves);
    std::vector<Tensor> sum(ans_leaves.size());
    for (size_t i = 0; i < jvps.size() && i < tangents.size(); ++i) {
      if (jvps[i].is_none()) continue;
      ValueList args{tangents[i], ans};
      args.insert(args.end(), primals.begin(), primals.end());
      ValueList ts;
      TreeDef tt = tree_flatten(in, in.call(jvps[i], args, where), ts);
      if (!(tt == tree))
        throw Error(ErrCode::Type,
                    "defjvps: the jvp for argument " + std::to_string(i) + " returned structure " +
                        tt.repr() + " but the function returns " + tree.repr(),
                    where);
      for (size_t k = 0; k < ts.size(); ++k) {
        Tensor t = in.to_tensor(ts[k], where);
        sum[k] = sum[k] ? np::binary(in.ops(), np::BinOp::Add, sum[k], t) : t;
      }
    }
    ValueList out;
    for (size_t k = 0; k < sum.size(); ++k)
      out.push_back(make_array(sum[k] ? sum[k]
                                      : np::full_like(in.ops(), in.to_tensor(ans_leaves[k], where),
                                                      Scalar::of_float(0.0))));
    return make_tuple({ans, tree_unflatten(tree, out)});
  });
}

struct CustomFunctionObj : OpaqueObj {
  std::shared_ptr<CustomDef> def;
  std::string type_name() const override { return def->kind(); }
  std::string repr() const override {
    return std::string("<jax._src.custom_derivatives.") + def->kind() + " object>";
  }
  std::vector<std::string> attr_names() const override {
    if (def->is_vjp) return {"defvjp", "fun", "fwd", "bwd", "nondiff_argnums", "__wrapped__"};
    return {"defjvp", "defjvps", "fun", "jvp", "nondiff_argnums", "__wrapped__"};
  }
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override {
    std::shared_ptr<CustomDef> d = def;
    if (name == "fun" || name == "__wrapped__") return out = d->fun, true;
    if (name == "nondiff_argnums") {
      ValueList v;
      for (int64_t k : d->nondiff_argnums) v.push_back(Value::integer(k));
      return out = make_tuple(v), true;
    }
    if (!d->is_vjp && name == "jvp")
      return out = d->jvps ? jvps_rule(d, d, *d->jvps) : d->jvp, true;
    if (d->is_vjp && name == "fwd") return out = d->fwd, true;
    if (d->is_vjp && name == "bwd") return out = d->bwd, true;
    if (!d->is_vjp && name == "defjvp") {
      out = make_builtin("defjvp", [d](InterpreterImpl&, CallArgs& a) {
        ArgReader r("defjvp", a, {"jvp", "symbolic_zeros"}, 1);
        if (r.get_bool(1, false))
          throw Error(ErrCode::Unsupported, "defjvp: symbolic_zeros=True is not supported");
        d->jvp = r[0];
        d->jvps.reset();
        return r[0]; // usable as a decorator
      });
      return true;
    }
    if (!d->is_vjp && name == "defjvps") {
      out = make_builtin("defjvps", [d](InterpreterImpl&, CallArgs& a) {
        if (!a.kw.empty())
          throw Error(ErrCode::Arguments,
                      "defjvps() got an unexpected keyword argument '" + a.kw[0].first + "'");
        if (!d->nondiff_argnums.empty())
          throw Error(ErrCode::Type, "Can't use ``defjvps`` with ``nondiff_argnums``.");
        d->jvps = a.pos;
        d->jvp = jvps_rule(nullptr, d, a.pos);
        return Value();
      });
      return true;
    }
    if (d->is_vjp && name == "defvjp") {
      out = make_builtin("defvjp", [d](InterpreterImpl&, CallArgs& a) {
        ArgReader r("defvjp", a, {"fwd", "bwd", "symbolic_zeros", "optimize_remat"}, 2);
        if (r.get_bool(2, false))
          throw Error(ErrCode::Unsupported, "defvjp: symbolic_zeros=True is not supported");
        d->fwd = r[0];
        d->bwd = r[1];
        return Value();
      });
      return true;
    }
    // JAX forwards the other custom_* methods (def_vmap, ...) to the function it wraps.
    if (d->fun.is_obj(ObjKind::Opaque)) return d->fun.as<OpaqueObj>()->get_attr(in, name, out);
    return false;
  }
  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    out = call_custom(in, def, a, where);
    return true;
  }
};

Value make_custom(CallArgs& a, bool is_vjp) {
  const char* name = is_vjp ? "custom_vjp" : "custom_jvp";
  ArgReader r(name, a,
              {"fun", "nondiff_argnums", "nondiff_argnames", "_primitive", "_transpose", "_batch",
               "_params"},
              1);
  auto obj = std::make_shared<CustomFunctionObj>();
  obj->def = std::make_shared<CustomDef>();
  obj->def->is_vjp = is_vjp;
  obj->def->fun = r[0];
  if (r.has(3)) obj->def->primitive = value_to_str(r[3], "_primitive");
  if (r.has(4)) obj->def->transpose = r[4];
  if (r.has(5)) obj->def->batch = r[5];
  if (r.has(6)) obj->def->params = r[6];
  std::vector<int64_t>& nums = obj->def->nondiff_argnums;
  if (r.has(1)) nums = value_to_int_list(r[1], std::string(name) + "() nondiff_argnums");
  if (r.has(2)) { // JAX adds their positions in fun's signature, then sorts
    ValueList names;
    if (const ValueList* items = sequence_items(r[2]))
      names = *items;
    else
      names.push_back(r[2]);
    const FunctionObj* f = r[0].is_obj(ObjKind::Function) ? r[0].as<FunctionObj>() : nullptr;
    for (const Value& nv : names) {
      const std::string& n = value_to_str(nv, std::string(name) + "() nondiff_argnames");
      int64_t pos = -1;
      for (size_t i = 0; f && f->params && i < f->params->size(); ++i)
        if ((*f->params)[i].name == n) pos = static_cast<int64_t>(i);
      if (pos < 0) throw Error(ErrCode::Value, "'" + n + "' is not in list");
      if (std::find(nums.begin(), nums.end(), pos) == nums.end()) nums.push_back(pos);
    }
    std::sort(nums.begin(), nums.end());
  }
  return Value::object(obj);
}

// jax.custom_gradient(fun): fun returns (value, vjp); a custom_vjp whose fwd
// keeps the vjp function as its residual.
Value make_custom_gradient(InterpreterImpl&, CallArgs& a) {
  ArgReader r("custom_gradient", a, {"fun"}, 1);
  Value fun = r[0];
  auto obj = std::make_shared<CustomFunctionObj>();
  obj->def = std::make_shared<CustomDef>();
  CustomDef& d = *obj->def;
  d.is_vjp = true;
  auto pair_of = [fun](InterpreterImpl& in, CallArgs& c) {
    Value p = in.call(fun, c, in.ops().loc);
    const ValueList* items = sequence_items(p);
    if (!items || items->size() != 2)
      throw Error(ErrCode::Type,
                  "custom_gradient: the function must return a pair (value, vjp function), got " +
                      repr(p));
    return *items;
  };
  d.fun = make_builtin(callable_name(fun),
                       [pair_of](InterpreterImpl& in, CallArgs& c) { return pair_of(in, c)[0]; });
  d.fwd = make_builtin(callable_name(fun), [pair_of](InterpreterImpl& in, CallArgs& c) {
    return make_tuple(pair_of(in, c));
  });
  d.bwd = make_builtin("vjp", [](InterpreterImpl& in, CallArgs& c) {
    Value cts = in.call(c.pos[0], ValueList{c.pos[1]}, in.ops().loc);
    if (!cts.is_obj(ObjKind::Tuple) && !cts.is_obj(ObjKind::List)) cts = make_tuple({cts});
    return cts;
  });
  return Value::object(obj);
}

// jax.custom_derivatives.linear_call(fun, fun_transpose, residual_args, linear_args):
// fun(residual_args, linear_args), which must be linear in linear_args, with
// fun_transpose(residual_args, cotangent) as its transpose. Recorded as a
// custom_vjp call whose residual_args are nondiff and whose bwd is
// linear_call(fun_transpose, fun, ...), so that transposing twice gives fun
// back, as JAX's linear_call_p transposes. pxl's forward mode (the transpose
// of reverse mode) then computes fun's map on the tangents, as JAX does.
Value linear_call(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("linear_call", a, {"fun", "fun_transpose", "residual_args", "linear_args"}, 4);
  Value fun = r[0], tp = r[1];
  Span where = in.ops().loc;
  if (!dynamic_cast<TraceContext*>(&in.ops())) return in.call(fun, ValueList{r[2], r[3]}, where);
  ValueList lin_leaves;
  TreeDef lin_tree = tree_flatten(in, r[3], lin_leaves);
  std::vector<AVal> lin_avals = avals_of(in, lin_leaves, where);
  auto def = std::make_shared<CustomDef>();
  def->is_vjp = true;
  def->linear = true;
  def->fun = fun;
  def->nondiff_argnums = {0};
  def->fwd = make_builtin(callable_name(fun), [fun](InterpreterImpl& in, CallArgs& c) {
    return make_tuple({in.call(fun, c.pos, in.ops().loc), Value()});
  });
  // Under forward mode pxl transposes the call's transpose: that is fun's own
  // transpose (autodiff's) recorded with fun as its rule, so that the tangent
  // map is fun's, as JAX's jvp of linear_call_p, even where fun_transpose is
  // not fun's true transpose.
  if (forward_mode(in)) {
    Value vjp = in.import_module("jax", where, "").as<ModuleObj>()->env->vars.at("vjp");
    // transposed(res, ct): fun's transpose at res (by autodiff), applied to ct.
    Value transposed = make_builtin("transpose", [fun, vjp, lin_tree,
                                                  lin_avals](InterpreterImpl& in, CallArgs& t) {
      Span at = in.ops().loc;
      Value res = t.pos[0];
      Value along = make_builtin(callable_name(fun), [fun, res](InterpreterImpl& in, CallArgs& l) {
        return in.call(fun, ValueList{res, l.pos[0]}, in.ops().loc);
      });
      ValueList zeros;
      for (const AVal& z : lin_avals)
        zeros.push_back(make_array(np::broadcast_to(
            in.ops(), np::scalar(in.ops(), Scalar::of_float(0.0), z.dtype, z.weak), z.shape)));
      Value pair = in.call(vjp, ValueList{along, tree_unflatten(lin_tree, zeros)}, at);
      Value cts = in.call((*sequence_items(pair))[1], ValueList{t.pos[1]}, at);
      return (*sequence_items(cts))[0];
    });
    def->bwd =
        make_builtin(callable_name(fun), [fun, transposed](InterpreterImpl& in, CallArgs& c) {
          CallArgs t;
          t.pos = {transposed, fun, c.pos[0], c.pos[2]};
          return make_tuple({linear_call(in, t)});
        });
    CallArgs call;
    call.pos = {r[2], r[3]};
    return call_custom(in, def, call, where);
  }
  // bwd(residual_args, None, ct): JAX's checks of the transpose's output.
  def->bwd = make_builtin(
      callable_name(tp), [fun, tp, lin_tree, lin_avals](InterpreterImpl& in, CallArgs& c) {
        Span at = in.ops().loc;
        CallArgs t;
        t.pos = {tp, fun, c.pos[0], c.pos[2]};
        Value out = linear_call(in, t);
        ValueList leaves;
        TreeDef tree = tree_flatten(in, out, leaves);
        if (!(tree == lin_tree))
          throw Error(ErrCode::Type,
                      "transpose output pytree structure must match that of linear inputs, got "
                      "output structure " +
                          tree.repr() + " and input structure " + lin_tree.repr() + ".",
                      at);
        for (size_t i = 0; i < leaves.size(); ++i) {
          AVal got = in.to_tensor(leaves[i], at)->aval; // a copy: the tensor may be a temporary
          if (!same_type(got, lin_avals[i]))
            throw Error(ErrCode::Value,
                        "Expected cotangent type " + short_str(lin_avals[i]) + " but got " +
                            short_str(got),
                        at);
        }
        return make_tuple({out});
      });
  CallArgs call;
  call.pos = {r[2], r[3]};
  return call_custom(in, def, call, where);
}

// jax.custom_derivatives.zero_from_primal(val): zero tangents shaped as val's
// leaves (float0 ones for integer and bool leaves), as JAX's ad_util builds them.
Value zero_from_primal(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("zero_from_primal", a, {"val", "symbolic_zeros"}, 1);
  if (r.get_bool(1, false))
    throw Error(ErrCode::Unsupported, "zero_from_primal: symbolic_zeros=True is not supported");
  Span where = in.ops().loc;
  return map_tree(in, r[0], [&in, &where](const Value& leaf) {
    AVal t = in.to_tensor(leaf, where)->aval; // a copy: the tensor may be a temporary
    if (!is_inexact(t.dtype)) return float0_zeros(t.shape);
    Tensor z = np::scalar(in.ops(), Scalar::of_float(0.0), t.dtype, t.weak);
    return make_array(t.shape.empty() ? z : np::broadcast_to(in.ops(), z, t.shape));
  });
}

} // namespace

Tensor pvary_like(OpContext& cx, const Tensor& t, const Tensor& like) {
  if ((vma_of(cx, like) & ~vma_of(cx, t)) == 0) return t;
  // select(false, like, t): t's value, typed as varying where `like` does.
  Tensor no = np::full(cx, {}, Scalar::of_bool(false), DType::Bool);
  std::vector<Tensor> xs{no, like, t};
  return cx.bind(Op::Select, {}, xs);
}

namespace {

// A custom_jvp call whose definition has a `_batch` rule, batched by it: only
// its differentiable arguments may be batched (in front).
bool batch_by_rule(OpContext& cx, const CustomRule& rule, const std::vector<Tensor>& ts,
                   const std::vector<bool>& batched, std::vector<BVal>& out) {
  const auto* jr = dynamic_cast<const JvpRule*>(&rule);
  if (!jr || jr->site.def->batch.is_none() || rule.fn->results.size() != 1) return false;
  for (size_t k = rule.num_args; k < ts.size(); ++k)
    if (batched[k]) return false;
  InterpreterImpl& in = *jr->site.in;
  OpsScope scope(in, cx);
  LocScope loc(cx, jr->site.where);
  ValueList flags;
  for (size_t k = 0; k < rule.num_args; ++k) flags.push_back(Value::boolean(batched[k]));
  std::span<const Tensor> all(ts);
  ValueList args = jr->site.nondiff_values(jr->arrays(all));
  args.insert(args.end(), {jr->site.diff_tuple(all.subspan(0, rule.num_args)), make_tuple(flags)});
  Value res = in.call(jr->site.def->batch, args, jr->site.where);
  if (res.is_none()) return false;
  Tensor t = in.to_tensor(res, jr->site.where);
  AVal want = rule.fn->values[static_cast<size_t>(rule.fn->results[0])].aval;
  for (size_t k = 0; k < rule.num_args; ++k)
    if (batched[k]) {
      want.shape.insert(want.shape.begin(), ts[k]->aval.shape.at(0));
      break;
    }
  if (!same_type(t->aval, want))
    throw Error(ErrCode::Type,
                "_batch rule of " + jr->site.def->name() + " gave a result of type " +
                    short_str(t->aval) + " where " + short_str(want) + " was due",
                jr->site.where);
  out.push_back({std::move(t), true});
  return true;
}

} // namespace

std::vector<BVal> batch_custom_call(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> args,
                                    const BatchAxis& axis) {
  auto inner = std::dynamic_pointer_cast<const CustomRule>(attrs.custom);
  PXL_ASSERT(inner != nullptr, "custom_call without a rule");
  std::vector<Tensor> ts;
  std::vector<bool> batched;
  std::vector<BVal> out;
  if (!call_operands(cx, attrs, args, ts, batched, out)) return out;
  if (batch_custom_vmap(cx, attrs, args, axis, out)) return out; // the user's vmap rule
  if (batch_by_rule(cx, *inner, ts, batched, out)) return out;   // the stdlib's batching rule
  // The batched primal, every result batched.
  auto pb = function_in(cx, inner->fn->name);
  std::vector<Tensor> consts;
  std::shared_ptr<const JaxprRecord> record;
  {
    TraceContext tc(*pb, cx, "vmap");
    std::vector<BVal> ps;
    for (size_t i = 0; i < ts.size(); ++i)
      ps.push_back(
          {tc.add_param(ts[i]->aval, vma_of(cx, ts[i]), cx.loc, "operand " + std::to_string(i)),
           batched[i]});
    LocScope loc(tc, cx.loc);
    // The primal's make_jaxpr record, carried onto the batched primal (a
    // copy: carrying retouches it).
    BatchLanding landing;
    if (inner->jaxpr_record) tc.jaxpr_record = std::make_shared<JaxprRecord>();
    std::vector<BVal> rs =
        batch_function(tc, *inner->fn, ps, {}, axis, inner->jaxpr_record ? &landing : nullptr);
    if (inner->jaxpr_record) {
      JaxprRecord carried = *inner->jaxpr_record;
      carry_batched_record(tc, *inner->fn, carried, landing, 0);
    }
    for (const BVal& r : rs)
      pb->results.push_back(tc.value_of(r.batched ? r.t : broadcast_batch(tc, r.t, axis.size)));
    record = tc.jaxpr_record;
    consts = tc.captured_tensors();
  }
  pb->params.insert(pb->params.end(), pb->consts.begin(), pb->consts.end());
  pb->consts.clear();
  ts.insert(ts.end(), consts.begin(), consts.end());
  auto rule = std::make_shared<BatchedRule>();
  rule->kind = inner->kind;
  rule->primitive = inner->primitive;
  rule->jaxpr_params = inner->jaxpr_params;
  rule->fn = pb;
  rule->num_args = inner->num_args;
  rule->num_static = inner->num_static;
  rule->under_jvp = inner->under_jvp;
  rule->jaxpr_record = record;
  rule->inner = inner;
  rule->batched = batched;
  rule->axis = axis;
  OpAttrs a;
  a.custom = rule;
  for (Tensor& t : cx.bind_call(a, ts)) out.push_back({std::move(t), true});
  return out;
}

void add_custom_derivatives(InterpreterImpl& in, Value& jax) {
  auto& vars = jax.as<ModuleObj>()->env->vars;
  vars["custom_jvp"] = make_builtin(
      "custom_jvp", [](InterpreterImpl&, CallArgs& a) { return make_custom(a, false); });
  vars["custom_vjp"] = make_builtin(
      "custom_vjp", [](InterpreterImpl&, CallArgs& a) { return make_custom(a, true); });
  vars["custom_gradient"] = make_builtin("custom_gradient", make_custom_gradient);
  add_closure_convert(jax);
  // jax.custom_derivatives: the same functions, and linear_call.
  ModuleBuilder cd("jax.custom_derivatives");
  for (const char* n : {"custom_jvp", "custom_vjp", "custom_gradient", "closure_convert"})
    cd.alias(n, jax);
  cd.fn("linear_call", linear_call);
  cd.fn("zero_from_primal", zero_from_primal);
  vars["custom_derivatives"] = cd.value();
  in.register_module("jax.custom_derivatives", cd.value());
}

} // namespace pxl
