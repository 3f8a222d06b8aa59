// checkify's walk over a traced Function (JAX's checkify_jaxpr and its rules):
// every instruction is bound in the calling context and, after those JAX
// checks, its check is added: a NaN result of a nan primitive, a zero
// divisor, and the sites that check()/check_error(), indexing and lax.cond
// record while tracing under checkify (CheckSite debug_prints). Loops, pmap
// and shard_map calls, and custom_jvp/custom_vjp functions have rules of
// their own.
#include "ir/custom_call.hpp"
#include "ir/while_loop.hpp"
#include "lang/tracer.hpp"
#include "runtime/spmd_call.hpp"
#include "stdlib/checkify_impl.hpp"
#include "stdlib/trace_util.hpp"
#include "stdlib/while_loop.hpp"

namespace pxl::checkify_impl {

namespace {

// JAX's nan_primitives that pxl has.
bool nan_primitive(Op op) {
  switch (op) {
  case Op::Exp:
  case Op::Log:
  case Op::Log1p:
  case Op::Expm1:
  case Op::Sqrt:
  case Op::Rsqrt:
  case Op::Tanh:
  case Op::Sin:
  case Op::Cos:
  case Op::Tan:
  case Op::Cbrt:
  case Op::Logistic:
  case Op::Erf:
  case Op::ErfInv:
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
  case Op::Rem:
  case Op::Pow:
  case Op::Atan2:
  case Op::ReduceSum:
  case Op::ReduceProd:
  case Op::Cumsum:
  case Op::Fft:
  case Op::DotGeneral:
  case Op::Pad:
  case Op::Psum:
    return true;
  default:
    return false;
  }
}

// JAX's checkify interpreter: binds `f`'s instructions in `cx`, adding the
// enabled checks, and threads the error through them.
struct Checkifier {
  InterpreterImpl& in;
  State& st;
  OpContext& cx;
  std::set<std::string> enabled;
  ErrState err;
  std::vector<Tensor> gates; // the predicates of the cond branches being walked

  bool on(const char* kind) const { return enabled.count(kind) > 0; }
  Tensor bind(Op op, std::vector<Tensor> xs, OpAttrs a = {}) { return cx.bind(op, a, xs); }
  Tensor code(ErrorMeta m) {
    return cx.constant(Array::scalar(Scalar::of_int(st.add(std::move(m))), DType::Int32));
  }
  Tensor any(const Tensor& m) {
    if (m->aval.shape.empty()) return m;
    OpAttrs a;
    for (size_t i = 0; i < m->aval.shape.size(); ++i) a.axes.push_back(static_cast<int64_t>(i));
    return bind(Op::ReduceOr, {m}, a);
  }
  Tensor select(const Tensor& p, const Tensor& a, const Tensor& b) {
    Tensor pp = p;
    if (pp->aval.shape != a->aval.shape) {
      OpAttrs bc;
      bc.shape = a->aval.shape;
      for (size_t i = 0; i < pp->aval.shape.size(); ++i) bc.axes.push_back(static_cast<int64_t>(i));
      pp = bind(Op::BroadcastInDim, {pp}, bc);
    }
    return bind(Op::Select, {pp, a, b});
  }
  // `t` with the leading dims `batch` added.
  Tensor lift(const Tensor& t, const Shape& batch) {
    OpAttrs bc;
    bc.shape = batch;
    bc.shape.insert(bc.shape.end(), t->aval.shape.begin(), t->aval.shape.end());
    for (size_t i = 0; i < t->aval.shape.size(); ++i)
      bc.axes.push_back(static_cast<int64_t>(batch.size() + i));
    return bind(Op::BroadcastInDim, {t}, bc);
  }
  // JAX's update_error: the slot's first error stays.
  void update(const std::string& key, const Tensor& pred0, Tensor c, std::vector<Tensor> payload) {
    Tensor pred = pred0;
    for (const Tensor& g : gates) pred = bind(Op::And, {pred, g});
    auto it = err.find(key);
    if (it == err.end()) {
      err[key] = Slot{pred, c, std::move(payload)};
      return;
    }
    Slot& s = it->second;
    // A mapped (pmap) error meets an unmapped one: the unmapped is broadcast.
    if (s.pred->aval.shape.size() < pred->aval.shape.size()) {
      Shape b = pred->aval.shape;
      s.pred = lift(s.pred, b);
      s.code = lift(s.code, b);
      for (Tensor& p : s.payload) p = lift(p, b);
    } else if (s.pred->aval.shape.size() > pred->aval.shape.size()) {
      Shape b = s.pred->aval.shape;
      pred = lift(pred, b);
      c = lift(c, b);
      for (Tensor& p : payload) p = lift(p, b);
    }
    Tensor was = s.pred;
    s.pred = bind(Op::Or, {was, pred});
    s.code = select(was, s.code, c);
    for (size_t i = 0; i < s.payload.size() && i < payload.size(); ++i)
      s.payload[i] = select(was, s.payload[i], payload[i]);
  }
  void discharge(const CheckSiteImpl& site, std::span<const Tensor> xs) {
    ErrState e = site.unpack(xs);
    for (auto& [k, s] : e)
      if (on(slot_kind(k).c_str())) update(k, s.pred, s.code, s.payload);
  }
  Tensor bind_checked(Op op, const OpAttrs& a, const std::vector<Tensor>& xs) {
    if (op == Op::DebugPrint && a.debug)
      if (auto* site = dynamic_cast<const CheckSiteImpl*>(a.debug->args.get())) {
        discharge(*site, xs);
        return cx.constant(Array(DType::Bool, {}));
      }
    if (op == Op::DebugPrint && a.debug)
      if (auto* site = dynamic_cast<const OobSite*>(a.debug->args.get())) {
        if (on(kOob)) {
          ErrorMeta m;
          m.kind = kOob;
          m.shape = site->shape;
          update(kOob, xs[0], code(m), {xs[1]});
        }
        return cx.constant(Array(DType::Bool, {}));
      }
    if (op == Op::DebugPrint && a.debug)
      if (auto* site = dynamic_cast<const BranchSite*>(a.debug->args.get())) {
        if (site->begin)
          gates.push_back(xs[0]);
        else if (!gates.empty())
          gates.pop_back();
        return cx.constant(Array(DType::Bool, {}));
      }
    if (op == Op::Div && on(kDiv)) {
      const Tensor& y = xs[1];
      Tensor zero = cx.constant(Array::scalar(Scalar::of_int(0), y->aval.dtype));
      if (!y->aval.shape.empty()) {
        OpAttrs bc;
        bc.shape = y->aval.shape;
        zero = bind(Op::BroadcastInDim, {zero}, bc);
      }
      ErrorMeta m;
      m.kind = kDiv;
      update(kDiv, any(bind(Op::Eq, {y, zero})), code(m), {});
    }
    Tensor out = cx.bind(op, a, xs);
    if (on(kNan) && nan_primitive(op) && is_inexact(out->aval.dtype)) {
      ErrorMeta m;
      m.kind = kNan;
      m.prim = op_name(op);
      update(kNan, any(bind(Op::Ne, {out, out})), code(m), {});
    }
    return out;
  }
  std::vector<Tensor> bind_call(const OpAttrs& a, const std::vector<Tensor>& xs) {
    // A custom_jvp/custom_vjp function: its primal is checked (JAX's rule).
    if (a.custom) return run(*a.custom->fn, xs, {});
    if (a.loop) return bind_while(*a.loop, xs);
    if (a.callee)
      if (std::optional<std::vector<Tensor>> r = bind_spmd(*a.callee, xs)) return *r;
    return cx.bind_call(a, xs);
  }
  // pmap and shard_map (JAX's rules): each participant checks its part, and
  // the errors come back mapped over the pmapped axis, or over all the mesh's
  // devices for a shard_map (a batched Error).
  std::optional<std::vector<Tensor>> bind_spmd(const SpmdCallee& c, const std::vector<Tensor>& xs) {
    std::optional<SpmdMapping> mapped;
    const bool expand = c.kind == "shard_map"; // each participant's error gets a leading dim
    if (expand) {
      if (c.fn->mesh_axes.empty()) return std::nullopt;
      mapped = SpmdMapping{};
      mapped->spec.entries = {c.fn->mesh_axes};
    } else {
      for (const SpmdMapping& o : c.outs)
        if (o.squeeze == 0 && !mapped) mapped = o;
      for (const SpmdMapping& o : c.ins)
        if (o.squeeze == 0 && !mapped) mapped = o;
    }
    if (!mapped) return std::nullopt;
    ErrState probe;
    {
      Function scratch;
      scratch.mesh_axes = c.fn->mesh_axes;
      scratch.mesh_sizes = c.fn->mesh_sizes;
      TraceContext tc(scratch, cx, c.kind);
      tc.check_vma = c.check_vma;
      std::vector<Tensor> params;
      for (size_t i = 0; i < c.fn->params.size(); ++i) {
        AxisSet vma = 0;
        for (const auto& axis : c.ins[i].spec.axes()) vma |= AxisSet{1} << scratch.axis_bit(axis);
        params.push_back(
            tc.add_param(c.fn->values[c.fn->params[i]].aval, vma, cx.loc, "a pmap operand"));
      }
      Checkifier sub{in, st, tc, enabled, {}, {}};
      sub.run(*c.fn, params, {});
      probe = std::move(sub.err);
    }
    if (probe.empty()) return std::nullopt;
    size_t ne = flatten(probe).size();
    std::vector<SpmdMapping> outs(ne, *mapped);
    outs.insert(outs.end(), c.outs.begin(), c.outs.end());
    std::vector<Tensor> res = bind_derived_spmd_call(
        cx, c, c.fn->name, c.ins, xs, outs, [&](TraceContext& tc, std::span<const Tensor> ps) {
          Checkifier sub{in, st, tc, enabled, {}, {}};
          std::vector<Tensor> out = sub.run(*c.fn, ps, {});
          for (const auto& [k, s] : probe) // (the same slots as the trial)
            if (!sub.err.count(k)) {
              Slot ph{tc.constant(Array(DType::Bool, {})),
                      tc.constant(Array::scalar(Scalar::of_int(-1), DType::Int32)),
                      {}};
              for (const Tensor& p : s.payload)
                ph.payload.push_back(tc.constant(Array(p->aval.dtype, p->aval.shape)));
              sub.err[k] = std::move(ph);
            }
          std::vector<Tensor> all = flatten(sub.err);
          if (expand)
            for (Tensor& t : all) {
              OpAttrs r;
              r.shape = {1};
              r.shape.insert(r.shape.end(), t->aval.shape.begin(), t->aval.shape.end());
              t = tc.bind(Op::Reshape, r, std::vector<Tensor>{t});
            }
          all.insert(all.end(), out.begin(), out.end());
          return all;
        });
    ErrState inner = unflatten(probe, std::span<const Tensor>(res).first(ne));
    for (auto& [k, s] : inner) update(k, s.pred, s.code, s.payload);
    return std::vector<Tensor>(res.begin() + static_cast<long>(ne), res.end());
  }
  // The slots' tensors, in key order (pred, code, payload...), and back.
  static std::vector<Tensor> flatten(const ErrState& e) {
    std::vector<Tensor> out;
    for (const auto& [k, s] : e) {
      out.push_back(s.pred);
      out.push_back(s.code);
      out.insert(out.end(), s.payload.begin(), s.payload.end());
    }
    return out;
  }
  static ErrState unflatten(const ErrState& like, std::span<const Tensor> xs) {
    ErrState out;
    size_t i = 0;
    for (const auto& [k, s] : like) {
      Slot n{xs[i], xs[i + 1], {}};
      i += 2;
      for (size_t j = 0; j < s.payload.size(); ++j) n.payload.push_back(xs[i++]);
      out[k] = std::move(n);
    }
    return out;
  }
  // JAX's while rule: cond is checked on the initial carry, and the loop
  // carries the error through a body that checks itself and then cond on its
  // result. (As JAX, a cond whose carry the body forwards loses its dead code.)
  std::vector<Tensor> bind_while(const WhileLoop& w, const std::vector<Tensor>& xs) {
    const size_t ncc = static_cast<size_t>(w.cond_nconsts),
                 nbc = static_cast<size_t>(w.body_nconsts);
    std::vector<Tensor> cconsts(xs.begin(), xs.begin() + static_cast<long>(ncc));
    std::vector<Tensor> bconsts(xs.begin() + static_cast<long>(ncc),
                                xs.begin() + static_cast<long>(ncc + nbc));
    std::vector<Tensor> init(xs.begin() + static_cast<long>(ncc + nbc), xs.end());
    std::shared_ptr<const Function> cond = w.cond;
    bool forwarded = false;
    for (size_t i = 0; i < w.ncarry(); ++i)
      forwarded = forwarded || w.body->results[i] == w.body->params[nbc + i];
    if (forwarded) {
      auto c = std::make_shared<Function>(*w.cond);
      remove_dead_code(*c);
      cond = c;
    }
    auto concat = [](std::vector<Tensor> a, std::span<const Tensor> b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    run(*cond, concat(cconsts, init), {});
    // The error types the loop can add: a trial trace of the checked body.
    ErrState probe;
    {
      Function scratch;
      TraceContext tc(scratch, cx, "while_loop");
      std::vector<Tensor> carry;
      for (const Tensor& t : init)
        carry.push_back(tc.add_param(t->aval, 0, cx.loc, "the while_loop carry"));
      Checkifier sub{in, st, tc, enabled, {}, gates};
      std::vector<Tensor> out = sub.run(*w.body, concat(bconsts, carry), {});
      sub.run(*cond, concat(cconsts, out), {});
      probe = std::move(sub.err);
    }
    for (const auto& [k, s] : probe) {
      if (err.count(k)) continue;
      Slot ph{cx.constant(Array(DType::Bool, {})),
              cx.constant(Array::scalar(Scalar::of_int(-1), DType::Int32)),
              {}};
      for (const Tensor& p : s.payload)
        ph.payload.push_back(cx.constant(Array(p->aval.dtype, p->aval.shape)));
      err[k] = std::move(ph);
    }
    std::vector<Tensor> err_in = flatten(err);
    const size_t ne = err_in.size();
    std::vector<AVal> avals;
    for (const Tensor& t : err_in) avals.push_back(t->aval);
    for (const Tensor& t : init) avals.push_back(t->aval);
    const ErrState layout = err;
    std::vector<Tensor> outs = bind_loop(
        cx, w.cond->name, w.body->name, avals, concat(err_in, init),
        [&](TraceContext& tc, std::span<const Tensor> ps) {
          // (Its checks were made in the body: here they are dropped.)
          Checkifier unchecked{in, st, tc, {}, {}, {}};
          return unchecked.run(*w.cond, concat(cconsts, ps.subspan(ne)), {})[0];
        },
        [&](TraceContext& tc, std::span<const Tensor> ps) {
          Checkifier sub{in, st, tc, enabled, unflatten(layout, ps.first(ne)), gates};
          std::vector<Tensor> out = sub.run(*w.body, concat(bconsts, ps.subspan(ne)), {});
          sub.run(*cond, concat(cconsts, out), {});
          return concat(flatten(sub.err), out);
        },
        w.mode, w.cache, w.trip_count);
    err = unflatten(layout, std::span<const Tensor>(outs).first(ne));
    return std::vector<Tensor>(outs.begin() + static_cast<long>(ne), outs.end());
  }
  std::vector<Tensor> run(const Function& f, std::span<const Tensor> params,
                          std::span<const Tensor> consts) {
    std::vector<Tensor> env = walk_function<Tensor>(
        cx, f, params, consts,
        [&](Op op, const OpAttrs& a, const std::vector<Tensor>& xs, const IRValue&) {
          return bind_checked(op, a, xs);
        },
        [&](const OpAttrs& a, const std::vector<Tensor>& xs, const Instr&) {
          return bind_call(a, xs);
        });
    std::vector<Tensor> out;
    for (int r : f.results) out.push_back(env[r]);
    return out;
  }
};

} // namespace

std::vector<Tensor> checkify_function(InterpreterImpl& in, State& st, OpContext& cx,
                                      const std::set<std::string>& enabled, const Function& f,
                                      std::span<const Tensor> params,
                                      std::span<const Tensor> consts, ErrState& err) {
  Checkifier ck{in, st, cx, enabled, std::move(err), {}};
  std::vector<Tensor> out = ck.run(f, params, consts);
  err = std::move(ck.err);
  return out;
}

} // namespace pxl::checkify_impl
