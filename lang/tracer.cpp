#include "lang/tracer.hpp"

#include "ir/aval_text.hpp"
#include "ir/custom_call.hpp"
#include "ir/vma.hpp"
#include "ir/while_loop.hpp"
#include "lang/diag.hpp"

namespace pxl {

TraceContext::TraceContext(Function& fn, OpContext& outer, std::string what)
    : fn_(fn), outer_(outer), what_(std::move(what)) {}

Tensor TraceContext::make(int id) {
  auto t = std::make_shared<TensorImpl>();
  t->aval = fn_.values[id].aval;
  t->trace = this;
  t->trace_id = id;
  return t;
}

Tensor TraceContext::add_param(const AVal& aval, AxisSet vma, const Span& at, std::string origin) {
  IRValue v;
  v.aval = aval;
  v.vma = vma;
  v.loc = at;
  v.origin = std::move(origin);
  int id = fn_.add_value(std::move(v));
  fn_.params.push_back(id);
  return make(id);
}

int TraceContext::find_value(const Tensor& t) const {
  if (owns(t)) return static_cast<int>(t->trace_id);
  for (const auto& [held, id] : captured_ids_)
    if (held == t) return id;
  return -1;
}

int TraceContext::value_of(const Tensor& t) {
  if (owns(t)) return static_cast<int>(t->trace_id);
  for (auto& [held, id] : captured_ids_)
    if (held == t) return id;
  IRValue v;
  v.aval = t->aval;
  v.loc = loc;
  if (t->trace) {
    // A value of an enclosing trace (not necessarily the next one out: the
    // traces in between capture it in turn when this one's call is bound in
    // them): keep its vma (the mesh axes are shared).
    TraceContext* owner = nullptr;
    for (auto* tc = dynamic_cast<TraceContext*>(&outer_); tc && !owner;
         tc = dynamic_cast<TraceContext*>(&tc->outer()))
      if (tc->owns(t)) owner = tc;
    if (!owner)
      throw Error(ErrCode::Unsupported,
                  "a traced value escaped the transformation that produced it and is used inside " +
                      what_,
                  loc);
    const IRValue& ov = owner->function().values[t->trace_id];
    v.vma = ov.vma;
    v.origin = ov.origin.empty() ? "a value of the enclosing " + owner->what() : ov.origin;
  } else {
    v.origin = "a constant captured from the host";
  }
  int id = fn_.add_value(std::move(v));
  fn_.consts.push_back(id);
  captured_ids_.push_back({t, id});
  return id;
}

std::vector<int> TraceContext::operand_ids(std::span<const Tensor> inputs,
                                           std::vector<AVal>& avals) {
  std::vector<int> ids;
  for (const Tensor& t : inputs) {
    int id = value_of(t);
    if (!gates_.empty()) id = gated(t, id);
    ids.push_back(id);
    avals.push_back(fn_.values[id].aval);
  }
  return ids;
}

void TraceContext::push_branch_gate(const Tensor& pred) {
  gates_.push_back(BranchGate{pred, fn_.body.size(), {}});
}

void TraceContext::pop_branch_gate() {
  PXL_ASSERT(!gates_.empty(), "pop_branch_gate without a gate");
  gates_.pop_back();
}

int TraceContext::gated(const Tensor& t, int id) {
  // Host constants and integers have no derivative to keep out.
  if (!t->trace || !is_inexact(fn_.values[static_cast<size_t>(id)].aval.dtype)) return id;
  const int producer = fn_.values[static_cast<size_t>(id)].producer;
  const int orig = id;
  for (size_t g = 0; g < gates_.size(); ++g) { // outermost first
    if (producer >= 0 && static_cast<size_t>(producer) >= gates_[g].start)
      continue; // the branch's own
    int found = -1;
    for (const auto& [from, to] : gates_[g].ids)
      if (from == orig) found = to;
    if (found < 0) {
      // Bound with no gate open (the gate's own operands are not gated).
      std::vector<BranchGate> open = std::move(gates_);
      gates_.clear();
      const IRValue src = fn_.values[static_cast<size_t>(id)];
      Tensor x = make(id);
      const size_t gate_begin = fn_.body.size();
      OpAttrs same;
      same.dtype = src.aval.dtype;
      // stop_gradient(x) as lax.stop_gradient binds it (keeping a weak type,
      // which the bitcast drops), so that every pass re-infers x's type.
      Tensor frozen = bind(Op::BitcastConvertType, same, std::span<const Tensor>(&x, 1));
      if (src.aval.weak) {
        same.weak = true;
        frozen = bind(Op::ConvertElementType, same, std::span<const Tensor>(&frozen, 1));
      }
      Tensor sel = bind(Op::Select, {}, std::vector<Tensor>{open[g].pred, x, frozen});
      gates_ = std::move(open);
      fn_.values[static_cast<size_t>(sel->trace_id)].vma = src.vma; // not the predicate's axes
      found = static_cast<int>(sel->trace_id);
      gates_[g].ids.push_back({orig, found});
      if (jaxpr_record) { // JAX's branch uses the value itself
        jaxpr_record->hidden.push_back({gate_begin, fn_.body.size()});
        jaxpr_record->alias[found] = orig;
      }
    }
    id = found;
  }
  return id;
}

namespace {
std::string axes_frozenset(const Function& f, AxisSet s) {
  std::string out;
  for (size_t i = 0; i < f.mesh_axes.size(); ++i)
    if (s & (AxisSet{1} << i)) out += (out.empty() ? "'" : ", '") + f.mesh_axes[i] + "'";
  return out.empty() ? "frozenset()" : "frozenset({" + out + "})";
}

// str(aval) as JAX prints an operand in its sharding-type errors: float32[8]{R:x}.
std::string long_type(const Function& f, const IRValue& v) {
  return array_type_str(v.aval.dtype, v.aval.shape) + mat_suffix(f, v);
}

// JAX's unreduced rules (aval.mat.unreduced: per-device partial sums): psum
// and psum_scatter reduce over their axes, add keeps operands unreduced alike,
// mul takes one unreduced operand times one reduced alike (bilinear), the
// structural ops, convert and reduce_sum keep them, the identity ppermute
// (pcast) keeps them; other ops refuse such operands, as JAX's do not
// implement them (their results would not be partial sums).
AxisSet unreduced_result(const Function& fn, Op op, const std::vector<int>& ids, AxisSet named) {
  AxisSet any = 0;
  for (int id : ids) any |= fn.values[static_cast<size_t>(id)].unreduced;
  if (!any) return 0;
  auto val = [&](size_t k) -> const IRValue& { return fn.values[static_cast<size_t>(ids.at(k))]; };
  switch (op) {
  case Op::Psum:
  case Op::PsumScatter:
    return any & ~named;
  case Op::Ppermute:
  case Op::ShardingConstraint:
  case Op::ConvertElementType:
  case Op::BitcastConvertType:
  case Op::Reshape:
  case Op::Transpose:
  case Op::Slice:
  case Op::ReduceSum:
    return any;
  case Op::Pad:
    return val(0).unreduced;
  case Op::Select:
    return val(1).unreduced;
  case Op::Concatenate:
    for (size_t k = 0; k < ids.size(); ++k)
      if (val(k).unreduced && val(k).unreduced != any)
        throw Error(ErrCode::Type, "All operands should be unreduced along the same mesh axes. "
                                   "Got unreduced specs: {" +
                                       axes_frozenset(fn, val(k).unreduced) + ", " +
                                       axes_frozenset(fn, any & ~val(k).unreduced) + "}");
    return any;
  case Op::Mul: {
    const IRValue &x = val(0), &y = val(1);
    if (x.unreduced && y.unreduced)
      throw Error(ErrCode::Type, "lhs and rhs to `mul` cannot be unreduced since mul is bilinear. "
                                 "Got lhs=" +
                                     axes_frozenset(fn, x.unreduced) +
                                     ", rhs=" + axes_frozenset(fn, y.unreduced));
    const IRValue &u = x.unreduced ? x : y, &o = x.unreduced ? y : x;
    if (u.unreduced != o.reduced)
      throw Error(ErrCode::Type, std::string(x.unreduced ? "RHS" : "LHS") +
                                     " should be reduced along the same axes " +
                                     (x.unreduced ? "LHS" : "RHS") + " is unreduced on. Got lhs=" +
                                     long_type(fn, x) + " and rhs=" + long_type(fn, y));
    return u.unreduced;
  }
  case Op::Add: {
    AxisSet x = val(0).unreduced, y = val(1).unreduced;
    if (x && y && x != y)
      throw Error(ErrCode::Type, "lhs and rhs to `add` must be unreduced along the same mesh axes. "
                                 "Got lhs=" +
                                     axes_frozenset(fn, x) + ", rhs=" + axes_frozenset(fn, y));
    if (!x || !y) {
      std::string l = x ? "lhs" : "rhs", r = x ? "rhs" : "lhs";
      throw Error(ErrCode::Type, l + " is unreduced while " + r +
                                     " is not. `add` operation does not allow this because there "
                                     "will be implicit communication. Please reduce " +
                                     l + " via `reshard` before calling `add`.");
    }
    return any;
  }
  default:
    throw Error(ErrCode::Unsupported,
                std::string("unreduced rule for ") + op_name(op) +
                    " is not implemented. Please file an issue at "
                    "https://github.com/jax-ml/jax/issues",
                Span{}, "reduce the partial sums first (jax.lax.psum over the unreduced axes)");
  }
}

// JAX's reduced rules (aval.mat.reduced: replicated, typed as reduced so that
// the cotangent is unreduced). An operand reduced over an axis another operand
// varies over is cast to varying there first (JAX's implicit
// reduced_vary_cast). Elementwise ops, convert, the structural ops JAX gives
// a rule (reshape, transpose, slice, pad, concatenate) and reduce_sum keep the
// reduced axes; an elementwise op refuses an operand replicated over them (it
// would be summed with the cotangent of the others); ops without a rule in JAX
// (dot_general, cumsum, broadcast_in_dim, the other reductions, ...) drop them.
// psum/pmax/pmin over other axes keep them; the callers of the other
// collectives type them (stdlib/collectives.cpp).
AxisSet reduced_result(const Function& fn, Op op, const std::vector<int>& ids, AxisSet named,
                       AxisSet out_vma) {
  AxisSet any = 0, vary = 0;
  for (int id : ids) {
    any |= fn.values[static_cast<size_t>(id)].reduced;
    vary |= fn.values[static_cast<size_t>(id)].vma;
  }
  any &= ~(vary | out_vma);
  if (!any) return 0;
  auto val = [&](size_t k) -> const IRValue& { return fn.values[static_cast<size_t>(ids.at(k))]; };
  switch (op_family(op)) {
  case OpFamily::Unary:
  case OpFamily::Convert:
    return any;
  case OpFamily::Select:
    return val(1).reduced & any;
  case OpFamily::Binary:
  case OpFamily::Compare:
  case OpFamily::Nary: {
    std::vector<AxisSet> distinct;
    for (size_t k = 0; k < ids.size(); ++k)
      if (AxisSet r = val(k).reduced & ~vary;
          r && std::find(distinct.begin(), distinct.end(), r) == distinct.end())
        distinct.push_back(r);
    if (distinct.size() > 1) {
      std::string specs;
      for (AxisSet r : distinct) specs += (specs.empty() ? "" : ", ") + axes_frozenset(fn, r);
      throw Error(ErrCode::Type,
                  "All inputs should be reduced across the same mesh axes. Got specs: {" + specs +
                      "}");
    }
    AxisSet all = fn.mesh_axes.size() >= 64 ? ~AxisSet{0} : (AxisSet{1} << fn.mesh_axes.size()) - 1;
    for (size_t k = 0; k < ids.size(); ++k) {
      const IRValue& a = val(k);
      if (!(all & ~(a.vma | a.unreduced | (a.reduced & ~vary)) & any)) continue;
      // JAX's operand is the scalar pxl broadcast before the op (x * 2).
      const IRValue* shown = &a;
      if (a.producer >= 0) {
        const Instr& p = fn.body[static_cast<size_t>(a.producer)];
        if (p.op == Op::BroadcastInDim &&
            fn.values[static_cast<size_t>(p.operands.at(0))].aval.shape.empty())
          shown = &fn.values[static_cast<size_t>(p.operands.at(0))];
      }
      throw Error(ErrCode::Type,
                  "Inputs cannot be replicated on the same axes that another input "
                  "is reduced on. Got input type: " +
                      long_type(fn, *shown) + " and reduced spec: " + axes_frozenset(fn, any),
                  Span{},
                  "make every operand reduced alike (jax.lax.pcast(x, axes, to='reduced'))");
    }
    return any;
  }
  case OpFamily::Structural:
    switch (op) {
    case Op::Reshape:
    case Op::Transpose:
    case Op::Slice:
    case Op::Concatenate:
      return any;
    case Op::Pad:
      return val(0).reduced & any;
    default:
      return 0;
    }
  case OpFamily::Reduce:
    return op == Op::ReduceSum ? any : 0;
  case OpFamily::Index:
    return op == Op::Take ? val(0).reduced & any : 0;
  case OpFamily::Collective: // a reduction over other axes keeps them
    return op == Op::Psum || op == Op::Pmax || op == Op::Pmin ? any & ~named : 0;
  default:
    return 0;
  }
}
} // namespace

Tensor TraceContext::bind(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs) {
  std::vector<AVal> avals;
  std::vector<int> ids = operand_ids(inputs, avals);
  std::vector<AxisSet> vmas;
  for (int id : ids) vmas.push_back(fn_.values[id].vma);
  AVal out = infer(op, attrs, avals); // throws a span-less Error; the caller adds the span
  AxisSet named = 0;
  for (const auto& name : attrs.axis_names) {
    int bit = fn_.axis_bit(name);
    PXL_ASSERT(bit >= 0, "collective over an axis the function does not know");
    named |= AxisSet{1} << bit;
  }
  IRValue v;
  v.aval = out;
  v.vma = infer_vma(op, vmas, named, attrs.index_groups.size() > 1);
  // pcast(to='reduced') binds the identity ppermute marked `tiled`: the cast
  // leaves the value invariant (JAX's preduced), and so does its transpose
  // (autodiff copies the attrs), where a pvary's is a psum.
  if (op == Op::Ppermute && attrs.tiled) v.vma = vmas.at(0);
  v.unreduced = unreduced_result(fn_, op, ids, named);
  // (partial sums times a reduced value are partial sums, not reduced: JAX's mul)
  v.reduced = reduced_result(fn_, op, ids, named, v.vma) & ~v.unreduced;
  v.loc = loc;
  v.producer = static_cast<int>(fn_.body.size());
  int id = fn_.add_value(std::move(v));
  fn_.body.push_back(Instr{op, attrs, std::move(ids), id});
  return make(id);
}

std::vector<Tensor> TraceContext::bind_call(const OpAttrs& attrs, std::span<const Tensor> inputs) {
  std::vector<AVal> avals;
  std::vector<int> ids = operand_ids(inputs, avals);
  Op op = attrs.loop     ? Op::While
          : attrs.custom ? Op::CustomCall
          : attrs.host   ? Op::HostCallback
                         : Op::SpmdCall;
  std::vector<AVal> outs = infer_results(op, attrs, avals);
  // A while's carry varies over what its initial value or the body's result
  // varies over (the body shares this function's mesh axes); a custom_call's
  // results vary as its primal's do; an spmd_call's results are invariant.
  std::vector<AxisSet> vmas(outs.size(), 0);
  if (attrs.loop) {
    const Function& body = *attrs.loop->body;
    size_t first = ids.size() - outs.size();
    for (size_t r = 0; r < outs.size(); ++r)
      vmas[r] = fn_.values[ids[first + r]].vma | body.values[body.results[r]].vma;
  }
  if (attrs.host) { // a callback's results vary where its operands do
    AxisSet all = 0;
    for (int id : ids) all |= fn_.values[id].vma;
    vmas.assign(outs.size(), all);
  }
  std::vector<AxisSet> reduced(outs.size(), 0);
  if (attrs.custom) {
    std::vector<AxisSet> in_vma;
    for (int id : ids) in_vma.push_back(fn_.values[id].vma);
    vmas = custom_call_vma(*attrs.custom, in_vma);
    // A custom_jvp/vjp function returning an argument as it is keeps its
    // reduced axes (JAX types the call by the primal function).
    const Function& cf = *attrs.custom->fn;
    for (size_t r = 0; r < outs.size() && r < cf.results.size(); ++r) {
      reduced[r] = cf.values[static_cast<size_t>(cf.results[r])].reduced;
      for (size_t k = 0; k < cf.params.size() && k < ids.size(); ++k)
        if (cf.params[k] == cf.results[r]) reduced[r] |= fn_.values[ids[k]].reduced;
      reduced[r] &= ~vmas[r];
    }
  }
  // A call with no results (a custom_vjp function returning None) computes
  // nothing anyone can use: it is not recorded (an instruction names its
  // first result, and every pass looks that value up).
  if (outs.empty()) return {};
  Instr in{op, attrs, std::move(ids), -1};
  in.nresults = static_cast<int>(outs.size());
  std::vector<Tensor> results;
  for (size_t r = 0; r < outs.size(); ++r) {
    IRValue v;
    v.aval = outs[r];
    v.vma = vmas[r];
    v.reduced = reduced[r];
    v.loc = loc;
    v.producer = static_cast<int>(fn_.body.size());
    int id = fn_.add_value(std::move(v));
    if (in.result < 0) in.result = id;
    results.push_back(make(id));
  }
  fn_.body.push_back(std::move(in));
  return results;
}

const Array& TraceContext::concrete(const Tensor& t) {
  if (!t->trace) return outer_.concrete(t);
  if (concretize && owns(t))
    if (std::optional<Array> a = concretize(value_of(t)))
      return concretized_.emplace_back(std::move(*a));
  throw Error(ErrCode::ConcreteValue,
              "this array is traced inside " + what_ + " (its type is " + type_str(t->aval) +
                  "): its value is not known while the function is being traced",
              Span{},
              "use jnp.where instead of if/while on array values, and do host-side work "
              "(float(), .tolist(), printing) outside the mapped function");
}

Tensor TraceContext::constant(Array a) { return make(value_of(outer_.constant(std::move(a)))); }

std::vector<Tensor> TraceContext::captured_tensors() const {
  std::vector<Tensor> out;
  for (const auto& [t, id] : captured_ids_) out.push_back(t);
  return out;
}

std::vector<Array> TraceContext::captured() const {
  std::vector<Array> out;
  for (const auto& [t, id] : captured_ids_) out.push_back(outer_.concrete(t));
  return out;
}

OpAttrs attrs_for_rebind(OpContext& cx, const Function& f, const Instr& in) {
  OpAttrs attrs = in.attrs;
  if (in.op != Op::DebugPrint) return attrs;
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  if (!tc) return attrs; // eager (or batching) contexts print through attrs.debug
  attrs.axis = static_cast<int64_t>(tc->function().debug_formats.size());
  tc->function().debug_formats.push_back(f.debug_formats[in.attrs.axis]);
  return attrs;
}

std::vector<Tensor> inline_function_values(OpContext& cx, const Function& f,
                                           std::span<const Tensor> params,
                                           std::span<const Tensor> consts) {
  return walk_function<Tensor>(
      cx, f, params, consts,
      [&](Op op, const OpAttrs& attrs, const std::vector<Tensor>& args, const IRValue&) {
        return cx.bind(op, attrs, args);
      },
      [&](const OpAttrs& attrs, const std::vector<Tensor>& args, const Instr&) {
        return cx.bind_call(attrs, args);
      });
}

std::vector<Tensor> inline_function(OpContext& cx, const Function& f,
                                    std::span<const Tensor> params,
                                    std::span<const Tensor> consts) {
  std::vector<Tensor> env = inline_function_values(cx, f, params, consts);
  std::vector<Tensor> out;
  for (int r : f.results) out.push_back(env[r]);
  return out;
}

} // namespace pxl
