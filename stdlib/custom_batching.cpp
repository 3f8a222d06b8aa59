// jax.custom_batching: custom_vmap(fun) with f.def_vmap(rule), and
// sequential_vmap(fun).
//
// Design. Called outside any trace, a custom_vmap function is its `fun`.
// Called while tracing, `fun` is traced to a Function P and the call recorded
// as one custom_call (ir/custom_call.hpp) of P whose callee is a VmapRule.
// vmap (batch_custom_call) then calls the user's rule,
// rule(axis_size, in_batched, *args) -> (out, out_batched), on the batched
// operands in the batching trace instead of batching P: what the rule computes
// is what vmap gives, and what a later jvp differentiates (jvp of vmap).
// Everything else (eager evaluation, executables) runs P.
//
// Differentiation. JAX differentiates a custom_vmap call in forward mode only
// (reverse mode is its "Linearization failed ..." error): the jvp of the call
// is a custom_vmap call of the jvp of `fun` whose rule is the jvp of the rule.
// pxl's forward mode is the transpose of its reverse mode, so a call's
// cotangents come from another custom_vmap call (a derived one): the vjp of
// `fun`, whose rule is the vjp of the rule (called with every argument
// batched). Transposing that call for jvp derives once more: jvp then batches
// by the derivative of the rule, as JAX's vmap of jvp does.
#include "stdlib/custom_batching.hpp"

#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "stdlib/custom_derivatives.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/np.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

namespace {

struct VmapDef {
  Value fun;
  Value rule;
  // Made for the cotangents of another call (reverse mode allowed).
  bool derived = false;
  std::string name() const { return callable_name(fun); }
};

Value call_vmap(InterpreterImpl& in, const std::shared_ptr<const VmapDef>& def,
                const ValueList& args, const Span& where);

Value jax_fn(InterpreterImpl& in, const std::string& module, const std::string& name,
             const Span& where) {
  return in.import_module(module, where, "").as<ModuleObj>()->env->vars.at(name);
}

// The rule's output for these (possibly batched) arguments, checked as JAX
// checks it: `leaves` of the output and whether each is batched.
struct RuleOut {
  ValueList leaves;
  std::vector<bool> batched;
  TreeDef tree;
};

RuleOut call_rule(InterpreterImpl& in, const VmapDef& d, int64_t axis_size, const Value& in_batched,
                  const ValueList& args, const TreeDef& want_tree, const Span& where) {
  ValueList call_args{Value::integer(axis_size), in_batched};
  call_args.insert(call_args.end(), args.begin(), args.end());
  Value res = in.call(d.rule, call_args, where);
  ValueList items = in.iterate(res, where);
  if (items.size() != 2)
    throw Error(ErrCode::Value,
                items.size() > 2 ? "too many values to unpack (expected 2)"
                                 : "not enough values to unpack (expected 2, got " +
                                       std::to_string(items.size()) + ")",
                where);
  RuleOut out;
  ValueList flags;
  out.tree = tree_flatten(in, items[0], out.leaves);
  TreeDef ftree = tree_flatten(in, items[1], flags);
  std::string rule = callable_name(d.rule);
  if (!(ftree == out.tree))
    throw Error(ErrCode::Value,
                "structure of output value and output batching specification returned by custom "
                "vmap rule (" +
                    rule + ") do not match.\nOutput values: " + out.tree.repr() +
                    "\nBatching spec: " + ftree.repr(),
                where);
  if (!(out.tree == want_tree))
    throw Error(
        ErrCode::Value,
        "structure of output returned by custom vmap rule (" + rule +
            ") does not match that of original custom-vmapped function.\nOriginal output: " +
            want_tree.repr() + "\nRule output: " + out.tree.repr(),
        where);
  for (size_t i = 0; i < out.leaves.size(); ++i) {
    bool b = in.truthy(flags[i], where);
    Tensor t = in.to_tensor(out.leaves[i], where);
    if (b && (t->aval.shape.empty() || t->aval.shape[0] != axis_size))
      throw Error(ErrCode::Value,
                  "custom vmap rule (" + rule + ") returned a batched output of shape " +
                      shape_str(t->aval.shape) +
                      " whose leading axis is not the vmap axis (of size " +
                      std::to_string(axis_size) + ")",
                  where);
    out.leaves[i] = make_array(t);
    out.batched.push_back(b);
  }
  return out;
}

// `tree` with each leaf whose flag (in `flags`, a tree of its structure) is
// false broadcast to a leading axis of `n`.
Value broadcast_unbatched(InterpreterImpl& in, const Value& tree, const Value& flags, int64_t n,
                          const Span& where) {
  ValueList leaves, fl;
  TreeDef def = tree_flatten(in, tree, leaves);
  tree_flatten(in, flags, fl);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (i < fl.size() && in.truthy(fl[i], where)) continue;
    Tensor t = in.to_tensor(leaves[i], where);
    Shape s{n};
    s.insert(s.end(), t->aval.shape.begin(), t->aval.shape.end());
    leaves[i] = make_array(np::broadcast_to(in.ops(), t, s));
  }
  return tree_unflatten(def, leaves);
}

Value all_true(InterpreterImpl& in, const Value& tree) {
  return map_tree(in, tree, [](const Value&) { return Value::boolean(true); });
}

// The derived custom_vmap whose call computes the cotangents of `d`'s call:
// fun(args, ct) = vjp(d.fun, *args)(ct), rule = the vjp of d's rule with every
// argument batched.
std::shared_ptr<const VmapDef> derive(const std::shared_ptr<const VmapDef>& d) {
  auto out = std::make_shared<VmapDef>();
  out->derived = true;
  std::string name = d->name();
  out->fun = make_builtin(name, [d](InterpreterImpl& in, CallArgs& c) {
    Span where = in.ops().loc;
    ValueList vargs{d->fun};
    for (const Value& a : in.iterate(c.pos[0], where)) vargs.push_back(a);
    Value pair = in.call(jax_fn(in, "jax", "vjp", where), vargs, where);
    return in.call(in.iterate(pair, where)[1], ValueList{c.pos[1]}, where);
  });
  out->rule = make_builtin(callable_name(d->rule), [d](InterpreterImpl& in, CallArgs& c) {
    Span where = in.ops().loc;
    int64_t n = c.pos[0].as_int();
    ValueList flags = in.iterate(c.pos[1], where);
    Value args = broadcast_unbatched(in, c.pos[2], flags[0], n, where);
    Value ct = broadcast_unbatched(in, c.pos[3], flags[1], n, where);
    ValueList arg_items = in.iterate(args, where);
    ValueList true_flags;
    for (const Value& a : arg_items) true_flags.push_back(all_true(in, a));
    Value in_batched = make_list(true_flags);
    ValueList ct_leaves;
    TreeDef out_tree = tree_flatten(in, ct, ct_leaves);
    // The rule with every argument batched, its unbatched outputs broadcast.
    Value batched_rule = make_builtin(
        callable_name(d->rule), [d, n, in_batched, out_tree](InterpreterImpl& in, CallArgs& r) {
          Span at = in.ops().loc;
          RuleOut o = call_rule(in, *d, n, in_batched, r.pos, out_tree, at);
          for (size_t i = 0; i < o.leaves.size(); ++i)
            if (!o.batched[i]) {
              Tensor t = in.to_tensor(o.leaves[i], at);
              Shape s{n};
              s.insert(s.end(), t->aval.shape.begin(), t->aval.shape.end());
              o.leaves[i] = make_array(np::broadcast_to(in.ops(), t, s));
            }
          return tree_unflatten(o.tree, o.leaves);
        });
    ValueList vargs{batched_rule};
    vargs.insert(vargs.end(), arg_items.begin(), arg_items.end());
    Value pair = in.call(jax_fn(in, "jax", "vjp", where), vargs, where);
    Value cts = in.call(in.iterate(pair, where)[1], ValueList{ct}, where);
    return make_tuple({cts, all_true(in, cts)});
  });
  return out;
}

// The callee of a custom_vmap call.
struct VmapRule : CustomRule {
  InterpreterImpl* in = nullptr;
  std::shared_ptr<const VmapDef> def;
  TreeDef in_tree, out_tree; // of the argument tuple, of fun's result
  Span where;

  std::vector<Tensor> vjp(OpContext& cx, std::span<const Tensor> operands,
                          std::span<const Tensor> cts, const std::vector<bool>&) const override {
    if (!def->derived && !under_jvp)
      throw Error(ErrCode::Value,
                  "Linearization failed to produce known values for all output primals. This is "
                  "typically caused by attempting to differentiate a function uses an operation "
                  "that does not support reverse-mode autodiff.",
                  where);
    InterpreterImpl& ip = *in;
    OpsScope scope(ip, cx);
    ValueList xs, cl;
    for (size_t k = 0; k < num_args; ++k) xs.push_back(make_array(operands[k]));
    for (size_t r = 0; r < cts.size(); ++r) {
      const AVal& a = fn->values[fn->results[r]].aval;
      cl.push_back(make_array(cts[r] ? cts[r] : np::zeros(cx, a.shape, a.dtype)));
    }
    Value res = call_vmap(ip, derive(def),
                          {tree_unflatten(in_tree, xs), tree_unflatten(out_tree, cl)}, where);
    ValueList leaves;
    tree_flatten(ip, res, leaves);
    std::vector<Tensor> out(operands.size());
    for (size_t k = 0; k < num_args && k < leaves.size(); ++k)
      if (leaves[k].is_obj(ObjKind::Array)) out[k] = ip.to_tensor(leaves[k], where);
    return out;
  }
};

Value call_vmap(InterpreterImpl& in, const std::shared_ptr<const VmapDef>& def,
                const ValueList& args, const Span& where) {
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  if (!tc) { // fun sees arrays, as JAX traces it: Python numbers become weak scalars
    ValueList as_arrays;
    for (const Value& a : args)
      as_arrays.push_back(map_tree(in, a, [&](const Value& l) {
        return l.is_int() || l.is_float() || l.is_bool() ? make_array(in.to_tensor(l, where)) : l;
      }));
    return in.call(def->fun, as_arrays, where);
  }
  TreeDef in_tree;
  std::vector<Tensor> operands = leaf_tensors(in, args, where, &in_tree);
  TracedFunction t =
      trace_function(in, def->fun, args, where, "custom_vmap", nullptr, nullptr, {}, true);
  auto fn = t.fn;
  fn->name = def->name();
  fn->params.insert(fn->params.end(), fn->consts.begin(), fn->consts.end());
  fn->consts.clear();
  auto rule = std::make_shared<VmapRule>();
  rule->kind = "custom_vmap";
  rule->jaxpr_params = {{"name", def->name()}};
  rule->fn = fn;
  rule->num_args = operands.size();
  rule->under_jvp = forward_mode(in);
  rule->in = &in;
  rule->def = def;
  rule->in_tree = t.in_tree;
  rule->out_tree = t.out_tree;
  rule->where = where;
  operands.insert(operands.end(), t.consts.begin(), t.consts.end());
  return bind_custom_call(in, rule, operands, t.out_tree, where);
}

// The custom_vmap-decorated function.
struct CustomVmapObj : OpaqueObj {
  std::shared_ptr<VmapDef> def;
  std::string type_name() const override { return "custom_vmap"; }
  std::string repr() const override { return "<jax._src.custom_batching.custom_vmap object>"; }
  std::vector<std::string> attr_names() const override {
    return {"def_vmap", "fun", "vmap_rule", "__wrapped__"};
  }
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override {
    std::shared_ptr<VmapDef> d = def;
    if (name == "fun" || name == "__wrapped__") return out = d->fun, true;
    if (name == "vmap_rule") return out = d->rule, true;
    if (name == "def_vmap") {
      out = make_builtin("def_vmap", [d](InterpreterImpl&, CallArgs& a) {
        ArgReader r("def_vmap", a, {"vmap_rule"}, 1);
        d->rule = r[0];
        return r[0]; // usable as a decorator
      });
      return true;
    }
    // JAX forwards the other custom_* methods (defjvp, ...) to the function it wraps.
    if (d->fun.is_obj(ObjKind::Opaque)) return d->fun.as<OpaqueObj>()->get_attr(in, name, out);
    return false;
  }
  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    if (def->rule.is_none())
      throw Error(ErrCode::Attribute,
                  "No batching rule defined for custom_vmap function " + def->name() +
                      " using def_vmap.",
                  where);
    ValueList args = positional_args(in, def->fun, "custom_vmap", a, where);
    out = call_vmap(in, def, args, where);
    return true;
  }
};

Value make_custom_vmap(const Value& fun) {
  auto obj = std::make_shared<CustomVmapObj>();
  obj->def = std::make_shared<VmapDef>();
  obj->def->fun = fun;
  return Value::object(obj);
}

// sequential_vmap(fun): custom_vmap(fun) whose rule maps fun over the batch
// with lax.map (the unbatched arguments passed to every step), as JAX's.
Value sequential_vmap(InterpreterImpl&, CallArgs& a) {
  ArgReader r("sequential_vmap", a, {"f"}, 1);
  auto obj = std::make_shared<CustomVmapObj>();
  obj->def = std::make_shared<VmapDef>();
  obj->def->fun = r[0];
  // The rule calls the custom_vmap function itself (weakly held: no cycle).
  std::weak_ptr<VmapDef> weak = obj->def;
  obj->def->rule = make_builtin("rule", [weak](InterpreterImpl& in, CallArgs& c) {
    Span where = in.ops().loc;
    auto self = std::make_shared<CustomVmapObj>();
    self->def = weak.lock();
    Value f = Value::object(self);
    ValueList flags = in.iterate(c.pos[1], where);
    ValueList args(c.pos.begin() + 2, c.pos.end());
    // The batched leaves are mapped over; the others are passed as they are.
    std::vector<TreeDef> trees;
    std::vector<ValueList> leaves;
    std::vector<std::vector<bool>> batched;
    ValueList mapped;
    for (size_t i = 0; i < args.size(); ++i) {
      ValueList ls, fs;
      trees.push_back(tree_flatten(in, args[i], ls));
      tree_flatten(in, flags[i], fs);
      std::vector<bool> b;
      for (size_t k = 0; k < ls.size(); ++k) {
        b.push_back(k < fs.size() && in.truthy(fs[k], where));
        if (b.back()) mapped.push_back(ls[k]);
      }
      leaves.push_back(ls);
      batched.push_back(b);
    }
    Value step =
        make_builtin("to_map", [f, trees, leaves, batched](InterpreterImpl& in, CallArgs& s) {
          ValueList ms = in.iterate(s.pos[0], in.ops().loc);
          size_t m = 0;
          ValueList call_args;
          for (size_t i = 0; i < trees.size(); ++i) {
            ValueList ls = leaves[i];
            for (size_t k = 0; k < ls.size(); ++k)
              if (batched[i][k]) ls[k] = ms[m++];
            call_args.push_back(tree_unflatten(trees[i], ls));
          }
          return in.call(f, call_args, in.ops().loc);
        });
    Value out =
        in.call(jax_fn(in, "jax.lax", "map", where), ValueList{step, make_list(mapped)}, where);
    return make_tuple({out, all_true(in, out)});
  });
  return Value::object(obj);
}

} // namespace

bool batch_custom_vmap(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> args,
                       const BatchAxis& axis, std::vector<BVal>& out) {
  auto rule = std::dynamic_pointer_cast<const VmapRule>(attrs.custom);
  if (!rule) return false;
  for (size_t i = rule->num_args; i < args.size(); ++i)
    if (args[i].batched) return false; // a captured value is batched
  InterpreterImpl& in = *rule->in;
  OpsScope scope(in, cx);
  LocScope loc(cx, rule->where);
  ValueList leaves, flags;
  for (size_t i = 0; i < rule->num_args; ++i) {
    leaves.push_back(make_array(args[i].t));
    flags.push_back(Value::boolean(args[i].batched));
  }
  ValueList arg_items = in.iterate(tree_unflatten(rule->in_tree, leaves), rule->where);
  Value in_batched = make_list(in.iterate(tree_unflatten(rule->in_tree, flags), rule->where));
  RuleOut o =
      call_rule(in, *rule->def, axis.size, in_batched, arg_items, rule->out_tree, rule->where);
  for (size_t i = 0; i < o.leaves.size(); ++i)
    out.push_back({in.to_tensor(o.leaves[i], rule->where), o.batched[i]});
  return true;
}

void add_custom_batching(InterpreterImpl& in, Value& jax) {
  ModuleBuilder cb("jax.custom_batching");
  cb.fn("custom_vmap", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("custom_vmap", a, {"fun"}, 1);
    return make_custom_vmap(r[0]);
  });
  cb.fn("sequential_vmap", sequential_vmap);
  jax.as<ModuleObj>()->env->vars["custom_batching"] = cb.value();
  in.register_module("jax.custom_batching", cb.value());
}

} // namespace pxl
