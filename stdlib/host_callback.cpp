// jax.pure_callback / io_callback with results, traced: a host_callback
// instruction (ir/ops.def) whose callee calls back into the interpreter when
// the instruction runs -- eagerly, each time a jitted function runs, per loop
// iteration, only in the cond branch taken, per device under pmap/shard_map --
// with the arguments' concrete arrays. stdlib/callbacks.pxl's `run` calls the
// user's callback and makes JAX's checks of its results (against the shapes
// the callee is given: under vmap they carry the batch).
#include "stdlib/host_callback.hpp"

#include <mutex>

#include "ir/custom_call.hpp"
#include "ir/while_loop.hpp"
#include "lang/args.hpp"
#include "lang/interp_impl.hpp"
#include "lang/tracer.hpp"
#include "runtime/sharded.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/debug_print.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/pytree.hpp"

namespace pxl {

namespace {

struct Callee : HostCallee {
  InterpreterImpl* in = nullptr; // the interpreter that traced it
  // Serializes calls into that interpreter: under pmap/shard_map every device
  // thread calls at once (recursive: a callback may run a jitted function
  // that calls back on the same thread).
  std::shared_ptr<std::recursive_mutex> mu;
  Value run;                 // callbacks.pxl's run(shapes, *leaves) -> list of checked arrays
  std::vector<bool> dynamic; // per argument leaf: an operand, or static (kept in `statics`)
  ValueList statics;
  bool ordered = false;
  std::string vmap_method; // "" when None

  std::vector<Array> call(std::span<const Array> operands) const override {
    std::lock_guard<std::recursive_mutex> lock(*mu);
    ValueList shapes;
    for (const AVal& a : results) {
      ValueList dims;
      for (int64_t d : a.shape) dims.push_back(Value::integer(d));
      shapes.push_back(make_tuple(std::move(dims)));
    }
    ValueList pos{make_list(std::move(shapes))};
    size_t k = 0;
    for (size_t i = 0; i < dynamic.size(); ++i)
      pos.push_back(dynamic[i] ? make_array(make_tensor(operands[k++])) : statics[i]);
    Value out = in->call(run, std::move(pos), Span{});
    const ValueList* items = sequence_items(out);
    PXL_ASSERT(items && items->size() == results.size(),
               "host_callback: run returned the wrong results");
    std::vector<Array> arrays;
    for (size_t r = 0; r < results.size(); ++r) {
      Tensor t = in->to_tensor((*items)[r], Span{});
      arrays.push_back(t->concrete ? *t->concrete : t->sharded->assemble());
    }
    return arrays;
  }
};

// jax.debug._host_callback(run, shapes, dtypes, pure, ordered, vmap_method,
// no_jvp, *leaves): run(shapes, *leaves) now when eager; traced, a
// host_callback instruction on the array leaves that calls it when it runs.
// Returns the list of results.
Value host_callback(InterpreterImpl& in, CallArgs& a,
                    const std::shared_ptr<std::recursive_mutex>& mu) {
  if (a.pos.size() < 7)
    throw Error(ErrCode::Arguments, "_host_callback() takes at least 7 arguments");
  ValueList leaves(a.pos.begin() + 7, a.pos.end());
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  if (!tc) {
    ValueList pos{a.pos[1]};
    pos.insert(pos.end(), leaves.begin(), leaves.end());
    return in.call(a.pos[0], std::move(pos), Span{});
  }
  auto c = std::make_shared<Callee>();
  c->in = &in;
  c->mu = mu;
  c->run = a.pos[0];
  const ValueList* shapes = sequence_items(a.pos[1]);
  const ValueList* dtypes = sequence_items(a.pos[2]);
  PXL_ASSERT(shapes && dtypes && shapes->size() == dtypes->size(),
             "_host_callback: bad result types");
  for (size_t i = 0; i < shapes->size(); ++i) {
    AVal av;
    av.dtype = required_dtype((*dtypes)[i], "result_shape_dtypes");
    for (const Value& d : *sequence_items((*shapes)[i])) av.shape.push_back(d.as_int());
    c->results.push_back(av);
  }
  c->pure = in.truthy(a.pos[3], Span{});
  c->ordered = in.truthy(a.pos[4], Span{});
  c->vmap_method = a.pos[5].is_none() ? "" : value_to_str(a.pos[5], "vmap_method");
  c->no_jvp = value_to_str(a.pos[6], "no_jvp");
  std::vector<Tensor> operands;
  for (const Value& l : leaves) {
    Tensor t;
    try {
      t = in.to_tensor(l, Span{});
    } catch (Error&) { // a static value (a string, a dtype): handed to the callback as it is
    }
    c->dynamic.push_back(t != nullptr);
    c->statics.push_back(t ? Value() : l);
    if (t) operands.push_back(t);
  }
  // In a branch of a traced cond/switch it runs only where the branch is taken.
  std::vector<Tensor> preds = tc->branch_predicates();
  if (!preds.empty()) {
    Tensor taken = preds[0];
    for (size_t i = 1; i < preds.size(); ++i) {
      std::vector<Tensor> both{taken, preds[i]};
      taken = in.ops().bind(Op::And, {}, both);
    }
    operands.push_back(taken);
    c->gated = true;
  }
  OpAttrs attrs;
  attrs.host = c;
  ValueList out;
  for (Tensor& t : in.ops().bind_call(attrs, operands)) out.push_back(make_array(std::move(t)));
  return make_list(std::move(out));
}

Tensor bind1(OpContext& cx, Op op, const OpAttrs& a, std::vector<Tensor> xs) {
  return cx.bind(op, a, xs);
}

Tensor reshaped(OpContext& cx, const Tensor& t, Shape shape) {
  OpAttrs r;
  r.shape = std::move(shape);
  return bind1(cx, Op::Reshape, r, {t});
}

// Example i of a batched tensor (batch dimension first).
Tensor example(OpContext& cx, const Tensor& t, int64_t i) {
  const Shape& s = t->aval.shape;
  OpAttrs a;
  a.starts.assign(s.size(), 0);
  a.limits = s;
  a.strides.assign(s.size(), 1);
  a.starts[0] = i;
  a.limits[0] = i + 1;
  return reshaped(cx, bind1(cx, Op::Slice, a, {t}), Shape(s.begin() + 1, s.end()));
}

} // namespace

std::vector<BVal> batch_host_callback(OpContext& cx, const OpAttrs& attrs,
                                      std::span<const BVal> args, const BatchAxis& axis) {
  const auto& c = dynamic_cast<const Callee&>(*attrs.host);
  const int64_t B = axis.size;
  std::vector<Tensor> ts;
  bool any = false;
  for (const BVal& v : args) {
    ts.push_back(v.t);
    any = any || v.batched;
  }
  std::vector<BVal> out;
  if (!any) { // the same call for every example
    for (Tensor& t : cx.bind_call(attrs, ts)) out.push_back({std::move(t), false});
    return out;
  }
  const bool gate_batched = c.gated && args.back().batched;
  if (!c.pure) {
    if (c.ordered) throw Error(ErrCode::Value, "Cannot `vmap` ordered IO callback.");
    if (gate_batched) throw Error(ErrCode::Unsupported, "IO effect not supported in vmap-of-cond.");
  } else if (c.vmap_method.empty()) {
    throw Error(ErrCode::Unsupported,
                "vmap is only supported for the pure_callback primitive when vmap_method is one of "
                "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
                "'legacy_vectorized'. Got vmap_method=None.");
  }
  // vmap of a cond whose predicate is batched runs both branches for every
  // example (JAX's select): a pure callback there runs ungated.
  OpAttrs a = attrs;
  if (gate_batched) {
    auto nc = std::make_shared<Callee>(c);
    nc->gated = false;
    a.host = nc;
    args = args.first(args.size() - 1);
  }
  const std::string method = c.pure ? c.vmap_method : "sequential";
  if (method == "sequential" || method == "sequential_unrolled") {
    // One call per example, in order; the results stacked.
    std::vector<std::vector<Tensor>> rows(c.results.size());
    for (int64_t i = 0; i < B; ++i) {
      std::vector<Tensor> row;
      for (const BVal& v : args) row.push_back(v.batched ? example(cx, v.t, i) : v.t);
      std::vector<Tensor> r = cx.bind_call(a, row);
      for (size_t k = 0; k < r.size(); ++k) {
        Shape s = r[k]->aval.shape;
        s.insert(s.begin(), 1);
        rows[k].push_back(reshaped(cx, r[k], s));
      }
    }
    for (size_t k = 0; k < rows.size(); ++k) {
      if (B == 0) {
        Shape s = c.results[k].shape;
        s.insert(s.begin(), 0);
        out.push_back({cx.constant(Array(c.results[k].dtype, s)), true});
        continue;
      }
      OpAttrs cat;
      cat.axis = 0;
      out.push_back({B == 1 ? rows[k][0] : cx.bind(Op::Concatenate, cat, rows[k]), true});
    }
    return out;
  }
  // One call that sees the whole batch: unbatched arguments get a size-1
  // batch dimension (expand_dims), the batch's (broadcast_all) or none
  // (legacy_vectorized); the callback returns the batch of results, which
  // the results' check expects.
  auto nc = std::make_shared<Callee>(dynamic_cast<const Callee&>(*a.host));
  for (AVal& r : nc->results) r.shape.insert(r.shape.begin(), B);
  a.host = nc;
  std::vector<Tensor> row;
  for (size_t i = 0; i < args.size(); ++i) {
    const BVal& v = args[i];
    bool gate = nc->gated && i + 1 == args.size();
    if (v.batched || gate || method == "legacy_vectorized") {
      row.push_back(v.t);
      continue;
    }
    Shape s = v.t->aval.shape;
    if (method == "expand_dims") {
      s.insert(s.begin(), 1);
      row.push_back(reshaped(cx, v.t, s));
    } else { // broadcast_all
      OpAttrs b;
      b.shape = s;
      b.shape.insert(b.shape.begin(), B);
      for (size_t d = 0; d < s.size(); ++d) b.axes.push_back(static_cast<int64_t>(d) + 1);
      row.push_back(bind1(cx, Op::BroadcastInDim, b, {v.t}));
    }
  }
  for (Tensor& t : cx.bind_call(a, row)) out.push_back({std::move(t), true});
  return out;
}

IoEffects io_effects(const Function& f) {
  IoEffects e;
  auto add = [&](bool ordered) { (ordered ? e.ordered : e.unordered) = true; };
  auto add_all = [&](const IoEffects& sub) {
    e.ordered = e.ordered || sub.ordered;
    e.unordered = e.unordered || sub.unordered;
  };
  for (const Instr& in : f.body) {
    if (in.op == Op::HostCallback) {
      const auto& c = dynamic_cast<const Callee&>(*in.attrs.host);
      if (!c.pure) add(c.ordered);
    } else if (in.op == Op::DebugPrint && in.attrs.debug) {
      bool ordered = false;
      if (is_io_callback(*in.attrs.debug, ordered)) add(ordered);
    } else if (in.op == Op::While) {
      add_all(io_effects(*in.attrs.loop->cond));
      add_all(io_effects(*in.attrs.loop->body));
    } else if (in.op == Op::CustomCall && in.attrs.custom) {
      add_all(io_effects(*in.attrs.custom->fn));
    }
  }
  return e;
}

void add_host_callback(ModuleBuilder& debug) {
  auto mu = std::make_shared<std::recursive_mutex>();
  debug.fn("_host_callback",
           [mu](InterpreterImpl& in, CallArgs& a) { return host_callback(in, a, mu); });
}

} // namespace pxl
