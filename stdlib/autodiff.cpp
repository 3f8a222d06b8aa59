// The reverse-mode driver: forward pass, then the transpose rules in reverse
// order, accumulating cotangents. Under shard_map it also transposes the
// implicit invariant->varying broadcast: a cotangent that varies over mesh axes
// its primal is invariant over is psum'd over them (DESIGN §3).
#include "stdlib/autodiff.hpp"

#include <set>

#include "ir/aval_text.hpp"
#include "ir/while_loop.hpp"
#include "lang/diag.hpp"
#include "lang/interp_impl.hpp"
#include "lang/jaxpr_record.hpp"
#include "lang/tracer.hpp"
#include "stdlib/custom_derivatives.hpp"

namespace pxl {

bool transpose_reversed(Op op) {
  switch (op) {
  case Op::Mul:
  case Op::Div:
  case Op::Rem:
  case Op::Pow:
  case Op::Max:
  case Op::Min:
  case Op::Atan2:
  case Op::DotGeneral:
    return true;
  default:
    return false;
  }
}

SpmdMode spmd_mode(OpContext& cx) {
  // jit/grad/vmap traces nested inside an SPMD function share its mesh; the
  // enclosing pmap or shard_map decides.
  OpContext* c = &cx;
  while (auto* tc = dynamic_cast<TraceContext*>(c)) {
    if (tc->what() == "pmap") return SpmdMode::Pmap;
    if (tc->what() == "shard_map") return tc->check_vma ? SpmdMode::ShardMap : SpmdMode::Pmap;
    c = &tc->outer();
  }
  return SpmdMode::None;
}

AxisSet vma_of(OpContext& cx, const Tensor& t) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  if (!tc || !t->trace) return 0;
  return tc->function().values[tc->value_of(t)].vma;
}

namespace {

// `f` with the jax.debug.prints of its differentiated custom calls' primals
// taken out, or null when there are none: JAX's grad and vjp call a custom
// function's rule (a custom_jvp's jvp, a custom_vjp's fwd), never its primal,
// where an argument carries a tangent.
std::shared_ptr<const Function> without_primal_prints(const Function& f) {
  std::shared_ptr<Function> out;
  std::vector<bool> live;
  auto is_print = [](const Instr& i) { return i.op == Op::DebugPrint; };
  for (size_t k = 0; k < f.body.size(); ++k) {
    const Instr& in = f.body[k];
    auto* rule =
        in.op == Op::CustomCall ? dynamic_cast<const CustomRule*>(in.attrs.custom.get()) : nullptr;
    if (!rule || std::none_of(rule->fn->body.begin(), rule->fn->body.end(), is_print)) continue;
    if (live.empty()) live = parameter_dependent(f);
    bool differentiated = false;
    for (size_t a = 0; a < rule->num_args && a < in.operands.size(); ++a)
      differentiated = differentiated || live[static_cast<size_t>(in.operands[a])];
    if (!differentiated) continue;
    auto quiet = std::make_shared<Function>(*rule->fn);
    std::erase_if(quiet->body, is_print);
    std::shared_ptr<CustomRule> r = rule->with_primal(std::move(quiet));
    if (!r) continue;
    if (!out) out = std::make_shared<Function>(f);
    out->body[k].attrs.custom = std::move(r);
  }
  return out;
}

} // namespace

std::vector<Tensor> forward_pass(OpContext& cx, const Function& f, std::span<const Tensor> params,
                                 std::span<const Tensor> consts) {
  std::shared_ptr<const Function> quiet = without_primal_prints(f);
  return inline_function_values(cx, quiet ? *quiet : f, params, consts);
}

// Collectives name their axes in mesh order.
Tensor psum_over(TraceContext& tc, const Tensor& ct, AxisSet axes) {
  const Function& f = tc.function();
  OpAttrs a;
  for (size_t i = 0; i < f.mesh_axes.size(); ++i)
    if (axes & (AxisSet{1} << i)) {
      a.axis_names.push_back(f.mesh_axes[i]);
      a.group_size *= f.mesh_sizes[i];
    }
  return tc.bind(Op::Psum, a, std::span<const Tensor>(&ct, 1));
}

Tensor pvary_to(OpContext& cx, const Tensor& t, AxisSet axes) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  AxisSet extra = axes & ~vma_of(cx, t);
  if (!tc || !extra || spmd_mode(cx) != SpmdMode::ShardMap) return t;
  const Function& f = tc->function();
  OpAttrs attrs;
  attrs.group_size = 1;
  for (size_t b = 0; b < f.mesh_axes.size(); ++b)
    if (extra & (AxisSet{1} << b)) {
      attrs.axis_names.push_back(f.mesh_axes[b]);
      attrs.group_size *= f.mesh_sizes[b];
    }
  for (int64_t i = 0; i < attrs.group_size; ++i) attrs.pairs.push_back({i, i});
  return cx.bind(Op::Ppermute, attrs, std::span<const Tensor>(&t, 1));
}

namespace {

// make_jaxpr's record of reverse mode (lang/jaxpr_record.hpp). JAX's grad
// jaxpr is its linearized function transposed: every primal equation, each
// residual right after the primal equation whose JVP rule computes it, then
// the linear equations transposed, cotangents summed by add_any. pxl's rules
// compute residuals (cos x for sin x) in the backward pass; this notes which
// of a rule's instructions read no cotangent, so the printer moves them up.
// Inert unless make_jaxpr records.
class GradNotes {
public:
  explicit GradNotes(OpContext& cx) {
    tc_ = dynamic_cast<TraceContext*>(&cx);
    rec_ = tc_ ? tc_->jaxpr_record.get() : nullptr;
    if (rec_) params_.insert(tc_->function().params.begin(), tc_->function().params.end());
  }
  size_t mark() const { return rec_ ? tc_->function().body.size() : 0; }
  // The instructions from `from` on were bound by the rule transposing the
  // primal value `result` given its cotangent `ct`: those that read a
  // cotangent stay, those computed from primals move after result's equation
  // (with the constant-only ones they read).
  void rule_bound(size_t from, const Tensor& ct, const Tensor& result) {
    if (!rec_) return;
    const Function& f = tc_->function();
    cls_.resize(f.values.size(), Cls::Primal);
    if (int id = tc_->find_value(ct); id >= 0) cls_[static_cast<size_t>(id)] = Cls::Linear;
    int r = tc_->find_value(result);
    int k = r >= 0 ? f.values[static_cast<size_t>(r)].producer : -1;
    const size_t end = f.body.size();
    std::vector<Cls> own(end - from, Cls::Constant);
    for (size_t j = from; j < end; ++j) {
      const Instr& in = f.body[j];
      Cls c = Cls::Constant;
      for (int o : in.operands) {
        Cls oc = of(f, o);
        if (oc == Cls::Linear) c = Cls::Linear;
        if (oc == Cls::Primal && c == Cls::Constant) c = Cls::Primal;
      }
      own[j - from] = c;
      for (int q = 0; q < in.nresults; ++q) cls_[static_cast<size_t>(in.result + q)] = c;
    }
    if (k < 0) return;
    for (size_t j = end; j-- > from;) {
      if (own[j - from] != Cls::Primal) continue;
      for (int o : f.body[j].operands) {
        int p = f.values[static_cast<size_t>(o)].producer;
        if (p >= static_cast<int>(from) && own[static_cast<size_t>(p) - from] == Cls::Constant)
          own[static_cast<size_t>(p) - from] = Cls::Primal;
      }
    }
    for (size_t j = from; j < end; ++j)
      if (own[j - from] == Cls::Primal) rec_->moved.push_back({j, static_cast<size_t>(k)});
  }
  // `sum` was just bound as the sum of two cotangents (JAX's add_any).
  void summed(const Tensor& sum) {
    if (!rec_) return;
    const Function& f = tc_->function();
    int id = tc_->find_value(sum);
    if (id < 0) return;
    int p = f.values[static_cast<size_t>(id)].producer;
    if (p >= 0 && static_cast<size_t>(p) + 1 == f.body.size() && f.body.back().op == Op::Add) {
      rec_->add_any.push_back(static_cast<size_t>(p));
      // JAX sums a cotangent as soon as its second term is made.
      int k = -1;
      for (int o : f.body.back().operands)
        k = std::max(k, f.values[static_cast<size_t>(o)].producer);
      if (k >= 0 && k + 1 < p)
        rec_->moved.push_back({static_cast<size_t>(p), static_cast<size_t>(k)});
    }
    cls_.resize(f.values.size(), Cls::Primal);
    cls_[static_cast<size_t>(id)] = Cls::Linear;
  }

private:
  enum class Cls : char { Primal, Linear, Constant };
  Cls of(const Function& f, int v) {
    auto u = static_cast<size_t>(v);
    if (u < cls_.size() && cls_[u] != Cls::Primal) return cls_[u];
    if (f.values[u].producer < 0 && !params_.count(v)) return Cls::Constant;
    return Cls::Primal;
  }
  TraceContext* tc_ = nullptr;
  JaxprRecord* rec_ = nullptr;
  std::set<int> params_;
  std::vector<Cls> cls_; // per value id, once classified
};

// Cotangents by value id. Under shard_map a cotangent may carry a pending
// psum: the true cotangent is psum over `pending` of the stored one. The psum
// of the implicit broadcast is deferred through invariant values (where the
// transposes commute with it) down to the parameter, as JAX does by inserting
// pvary at the invariant operand: one psum of the parameter's size, summed in
// JAX's order.
struct Accumulator {
  OpContext& cx;
  TraceContext* tc; // set under shard_map
  GradNotes& notes;
  std::vector<Tensor> cts;
  std::vector<AxisSet> pending;
  Tensor take(int id, AxisSet& p) {
    p = pending[id];
    return std::move(cts[id]);
  }
  Tensor materialize(Tensor c, AxisSet p) { return p && tc ? psum_over(*tc, c, p) : c; }
  void add(int id, Tensor c, AxisSet p) {
    Tensor& slot = cts[id];
    if (!slot) {
      slot = std::move(c);
      pending[id] = p;
      return;
    }
    if (pending[id] != p) {
      slot = materialize(slot, pending[id]);
      c = materialize(c, p);
      pending[id] = 0;
    }
    std::vector<Tensor> xs{slot, c};
    slot = cx.bind(Op::Add, {}, xs);
    notes.summed(slot);
  }
};

// The cotangents of a call's results (nullptr = zero), their pending psums
// settled; false when all are zero.
bool call_result_cts(const Function& f, const Instr& in, const std::vector<bool>& live,
                     Accumulator& acc, std::vector<Tensor>& cts) {
  cts.assign(in.nresults, nullptr);
  bool any = false;
  for (int r = 0; r < in.nresults; ++r) {
    int id = in.result + r;
    AxisSet pend = 0;
    Tensor ct = acc.take(id, pend);
    if (!ct || !live[id] || !is_inexact(f.values[id].aval.dtype)) continue;
    cts[r] = acc.materialize(ct, pend);
    any = true;
  }
  return any;
}

// An spmd_call's operands get their cotangents from its transpose, another
// spmd_call (autodiff_spmd.cpp). Only single-device code calls one, so nothing
// is pending. A loop with a known trip count transposes to two loops
// (autodiff_loops.cpp).
void transpose_call(OpContext& cx, const Function& f, const Instr& in,
                    const std::vector<Tensor>& env, const std::vector<bool>& live,
                    Accumulator& acc) {
  std::vector<Tensor> cts;
  if (!call_result_cts(f, in, live, acc, cts)) return;
  std::vector<Tensor> primals;
  std::vector<bool> need;
  for (int o : in.operands) {
    primals.push_back(env[o]);
    need.push_back(live[o] && is_inexact(f.values[o].aval.dtype));
  }
  cx.loc = f.values[in.result].loc;
  std::vector<Tensor> oc = in.op == Op::While ? transpose_fixed_loop(cx, in, primals, cts, need)
                                              : transpose_spmd_call(cx, in, primals, cts, need);
  for (size_t k = 0; k < oc.size(); ++k)
    if (oc[k]) acc.add(in.operands[k], std::move(oc[k]), 0);
}

} // namespace

void throw_captured_tracer(const AVal& captured, bool under_jvp, const Span& where) {
  throw Error(ErrCode::ConcreteValue,
              "UnexpectedTracerError: Encountered an unexpected tracer. A function "
              "transformed by JAX had a side effect, allowing for a reference to an "
              "intermediate value with type " +
                  array_type_str(captured.dtype, captured.shape) + " wrapped in a " +
                  (under_jvp ? "JVPTracer" : "LinearizeTracer") +
                  " to escape the scope of the transformation.\nJAX transformations require "
                  "that functions explicitly return their outputs, and disallow saving "
                  "intermediate values to global state.\nTo catch the leak earlier, try "
                  "setting the environment variable JAX_CHECK_TRACER_LEAKS or using the "
                  "`jax.checking_leaks` context manager.\nSee "
                  "https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError",
              where);
}

namespace {

// A custom_call's operands get their cotangents from its rule
// (custom_derivatives.cpp), which binds its work in `cx`. Under shard_map a
// cotangent that varies where its operand does not is owed the psum, as for
// any op that implicitly broadcasts.
void transpose_custom(OpContext& cx, const Function& f, const Instr& in,
                      const std::vector<Tensor>& env, const std::vector<bool>& live,
                      Accumulator& acc) {
  const auto& rule = dynamic_cast<const CustomRule&>(*in.attrs.custom);
  std::vector<Tensor> cts;
  bool any = call_result_cts(f, in, live, acc, cts);
  // The rule sees cotangents typed as the results (varying where they vary).
  for (int r = 0; r < in.nresults; ++r)
    if (cts[r]) cts[r] = pvary_like(cx, cts[r], env[in.result + r]);
  bool needed = false;
  std::vector<bool> need(rule.num_args);
  for (size_t k = 0; k < rule.num_args; ++k) {
    need[k] = live[in.operands[k]] && is_inexact(f.values[in.operands[k]].aval.dtype);
    needed = needed || need[k];
  }
  if (!any) return;
  // What the primal captured gets no cotangent from the rule: differentiating
  // with respect to it is JAX's UnexpectedTracerError.
  for (size_t k = rule.num_args + rule.num_static; k < in.operands.size(); ++k)
    if (live[in.operands[k]] && is_inexact(f.values[in.operands[k]].aval.dtype))
      throw_captured_tracer(f.values[in.operands[k]].aval, rule.under_jvp, f.values[in.result].loc);
  if (!needed) return;
  std::vector<Tensor> primals;
  for (int o : in.operands) primals.push_back(env[o]);
  cx.loc = f.values[in.result].loc;
  std::vector<Tensor> oc = rule.vjp(cx, primals, cts, need);
  for (size_t k = 0; k < rule.num_args && k < oc.size(); ++k) {
    int o = in.operands[k];
    if (!oc[k] || !live[o] || !is_inexact(f.values[o].aval.dtype)) continue;
    AxisSet p = acc.tc ? vma_of(cx, oc[k]) & ~vma_of(cx, primals[k]) : 0;
    acc.add(o, std::move(oc[k]), p);
  }
}

} // namespace

void jaxpr_show_primal_results(OpContext& cx, const Function& f, const std::vector<Tensor>& env) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  if (!tc || !tc->jaxpr_record) return;
  for (int r : f.results)
    if (int id = tc->find_value(env[static_cast<size_t>(r)]); id >= 0)
      tc->jaxpr_record->kept.push_back(id);
}

std::vector<bool> parameter_dependent(const Function& f, const std::vector<bool>* wanted) {
  std::vector<bool> live(f.values.size(), false);
  for (size_t i = 0; i < f.params.size(); ++i) live[f.params[i]] = !wanted || (*wanted)[i];
  for (const Instr& in : f.body)
    for (int o : in.operands)
      for (int r = 0; r < in.nresults; ++r) live[in.result + r] = live[in.result + r] || live[o];
  return live;
}

std::vector<Tensor> backward_pass(OpContext& cx, const Function& f, const std::vector<Tensor>& env,
                                  std::span<const Tensor> result_cts,
                                  const std::vector<bool>* wanted) {
  SpmdMode mode = spmd_mode(cx);
  auto* tc = mode == SpmdMode::ShardMap ? dynamic_cast<TraceContext*>(&cx) : nullptr;
  GradNotes notes(cx);
  Accumulator acc{cx, tc, notes, std::vector<Tensor>(f.values.size()),
                  std::vector<AxisSet>(f.values.size(), 0)};

  // Only values that depend on a parameter get a cotangent (no work, and no
  // collective, for constants).
  std::vector<bool> live = parameter_dependent(f, wanted);
  LocScope keep(cx, Span{});
  for (size_t i = 0; i < f.results.size(); ++i)
    if (result_cts[i] && is_inexact(f.values[f.results[i]].aval.dtype))
      acc.add(f.results[i], result_cts[i], 0);
  for (auto it = f.body.rbegin(); it != f.body.rend(); ++it) {
    const Instr& in = *it;
    if (in.op == Op::SpmdCall || (in.op == Op::While && in.attrs.loop->trip_count >= 0)) {
      transpose_call(cx, f, in, env, live, acc);
      continue;
    }
    if (in.op == Op::While) {
      // As in JAX: a loop whose trip count is only known when it runs has no
      // transpose. One that no cotangent reaches (a counter, a constant) is fine.
      for (int r = 0; r < in.nresults; ++r) {
        AxisSet pend = 0;
        int id = in.result + r;
        if (acc.take(id, pend) && live[id] && is_inexact(f.values[id].aval.dtype))
          throw Error(ErrCode::Value,
                      "Reverse-mode differentiation does not work for lax.while_loop or "
                      "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or "
                      "using fori_loop with static start/stop.",
                      f.values[in.result].loc);
      }
      continue;
    }
    if (in.op == Op::CustomCall) {
      transpose_custom(cx, f, in, env, live, acc);
      continue;
    }
    if (in.op == Op::HostCallback) { // JAX's callbacks have no JVP
      std::vector<Tensor> cts;
      if (!call_result_cts(f, in, live, acc, cts)) continue;
      for (int o : in.operands)
        if (live[o] && is_inexact(f.values[o].aval.dtype))
          throw Error(ErrCode::Value, in.attrs.host->no_jvp, f.values[in.result].loc);
      continue;
    }
    AxisSet pend = 0;
    Tensor ct = acc.take(in.result, pend);
    if (!ct || !live[in.result] || !is_inexact(f.values[in.result].aval.dtype)) continue;
    if (is_collective(in.op)) {
      // A collective's transpose changes what varies: settle the psum first.
      ct = acc.materialize(ct, pend);
      pend = 0;
    }
    std::vector<Tensor> primals;
    for (int o : in.operands) primals.push_back(env[o]);
    cx.loc = f.values[in.result].loc;
    std::vector<bool> need;
    for (int o : in.operands) need.push_back(live[o] && is_inexact(f.values[o].aval.dtype));
    std::vector<std::pair<size_t, Tensor>> terms;
    size_t rule_start = notes.mark();
    std::vector<Tensor> oc = transpose_rule(cx, mode, in, primals, env[in.result], ct, need, terms);
    notes.rule_bound(rule_start, ct, env[in.result]);
    size_t n = std::min(oc.size(), in.operands.size());
    for (size_t i = 0; i < n; ++i) {
      size_t k = transpose_reversed(in.op) ? n - 1 - i : i;
      terms.insert(terms.begin() + static_cast<std::ptrdiff_t>(i), {k, std::move(oc[k])});
    }
    for (auto& [k, term] : terms) {
      Tensor c = std::move(term);
      const AVal& want = f.values[in.operands[k]].aval;
      if (!c || !live[in.operands[k]] || !is_inexact(want.dtype)) continue;
      PXL_ASSERT(c->aval.shape == want.shape && c->aval.dtype == want.dtype,
                 std::string("grad: the transpose of ") + op_name(in.op) +
                     " gave a cotangent of type " + type_str(c->aval) + " for an operand of type " +
                     type_str(want));
      // The cotangent has the type of the result, varying where it varies even
      // when its value happens not to (psum's transpose passes an invariant
      // one through): an operand that the op implicitly broadcast to those
      // axes is owed the psum over them.
      AxisSet varies = vma_of(cx, c) | vma_of(cx, env[in.result]);
      AxisSet p = tc ? pend | (varies & ~vma_of(cx, primals[k])) : 0;
      acc.add(in.operands[k], std::move(c), p);
    }
  }
  std::vector<Tensor> out;
  for (int p : f.params)
    out.push_back(acc.cts[p] ? acc.materialize(acc.cts[p], acc.pending[p]) : nullptr);
  return out;
}

} // namespace pxl
