// jax.experimental.checkify, as JAX's: checkify(f, errors) traces f into a
// Function and walks it (JAX's checkify_jaxpr, stdlib/checkify_walk.cpp),
// binding every instruction in the calling context and, after the ones JAX
// checks, the check: NaN results of its nan primitives, division by zero,
// index bounds, and the check()/check_error() instructions recorded while
// tracing (CheckSite debug_prints, recorded here). The error
// travels as JAX's Error value: per error type (JAX's ErrorEffect) a bool
// predicate, an int32 code and a payload; the first error of each type is
// kept, and Error.get() reports the one with the smallest code (codes count
// up as checks are traced, so the one first in the program). The codes'
// messages (JAX's metadata treedefs) stay on the host, in this module's state.
//
// The Error is a named tuple Error(_pred, _code, _payload) (dicts keyed by
// error type), so that every transformation handles it as a pytree: a jit or
// vmap output, a scan's ys. Batched (vmap of checkify), get() reports each
// failing example as "at mapped index i: ..." as JAX does.
#include "stdlib/checkify.hpp"

#include "lang/args.hpp"
#include "lang/py_set.hpp"
#include "lang/tracer.hpp"
#include "stdlib/checkify_impl.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

using namespace checkify_impl;

namespace {

Value make_dict_of(const std::vector<std::pair<std::string, Value>>& kv) {
  auto d = std::make_shared<DictObj>();
  for (const auto& [k, v] : kv) d->set(make_str(k), v);
  return Value::object(d);
}

Value error_value(State& st, const ErrState& err) {
  std::vector<std::pair<std::string, Value>> preds, codes, payloads;
  for (const auto& [k, s] : err) {
    preds.push_back({k, make_array(s.pred)});
    codes.push_back({k, make_array(s.code)});
    ValueList p;
    for (const Tensor& t : s.payload) p.push_back(make_array(t));
    payloads.push_back({k, make_list(std::move(p))});
  }
  return make_namedtuple(st.type,
                         {make_dict_of(preds), make_dict_of(codes), make_dict_of(payloads)});
}

// The slots of an Error value (its fields, as the named tuple holds them).
ErrState error_state(InterpreterImpl& in, const ValueList& fields) {
  ErrState err;
  const auto* preds = fields[0].as<DictObj>();
  const auto* codes = fields[1].as<DictObj>();
  const auto* payloads = fields[2].as<DictObj>();
  preds->for_each([&](const Value& k, const Value& p) {
    Slot s;
    s.pred = in.to_tensor(p, Span{});
    s.code = in.to_tensor(*codes->find(k), Span{});
    ValueList leaves;
    tree_flatten(in, *payloads->find(k), leaves);
    for (const Value& l : leaves) s.payload.push_back(in.to_tensor(l, Span{}));
    err[value_to_str(k, "error type")] = std::move(s);
  });
  return err;
}

bool is_error(const State& st, const Value& v) {
  const ValueList* fields = nullptr;
  return namedtuple_parts(v, &fields) == st.type;
}

Error functionalization_error() {
  return Error(ErrCode::Value,
               "Cannot abstractly evaluate a checkify.check which was not functionalized. This "
               "probably means you tried to stage (jit/scan/pmap/...) a `check` without "
               "functionalizing it through `checkify.checkify`.");
}

bool under_checkify(InterpreterImpl& in, bool* staged) {
  *staged = false;
  for (auto* tc = dynamic_cast<TraceContext*>(&in.ops()); tc;
       tc = dynamic_cast<TraceContext*>(&tc->outer())) {
    if (tc->what() == "checkify") return true;
    if (tc->what() != "vmap" && tc->what() != "jvp") *staged = true;
  }
  return false;
}

// JAX's _reduce_any_error: a batched error (a scan's stacked errors) as one,
// per error type the last failing example's (argsort(pred)[-1]).
ErrState reduce_any(OpContext& cx, const ErrState& err) {
  ErrState out;
  for (const auto& [k, s] : err) {
    const Shape& bs = s.pred->aval.shape;
    if (bs.empty()) {
      out[k] = s;
      continue;
    }
    int64_t n = s.pred->aval.size();
    auto reshape = [&](const Tensor& t, Shape sh) {
      OpAttrs a;
      a.shape = std::move(sh);
      return cx.bind(Op::Reshape, a, std::vector<Tensor>{t});
    };
    auto flat = [&](const Tensor& t) {
      Shape sh{n};
      sh.insert(sh.end(), t->aval.shape.begin() + static_cast<long>(bs.size()),
                t->aval.shape.end());
      return reshape(t, sh);
    };
    Tensor p = flat(s.pred);
    OpAttrs rev;
    rev.axes = {0};
    OpAttrs to_int;
    to_int.dtype = DType::Int32;
    OpAttrs am;
    am.axis = 0;
    am.dtype = DType::Int32;
    Tensor r = cx.bind(Op::Rev, rev, std::vector<Tensor>{p});
    Tensor first = cx.bind(
        Op::Argmax, am,
        std::vector<Tensor>{cx.bind(Op::ConvertElementType, to_int, std::vector<Tensor>{r})});
    Tensor last = cx.constant(Array::scalar(Scalar::of_int(n - 1), DType::Int32));
    Tensor idx = cx.bind(Op::Sub, {}, std::vector<Tensor>{last, first});
    OpAttrs take;
    take.axis = 0;
    auto pick = [&](const Tensor& t) {
      return cx.bind(Op::Take, take, std::vector<Tensor>{flat(t), idx});
    };
    Slot o{pick(s.pred), pick(s.code), {}};
    for (const Tensor& t : s.payload) o.payload.push_back(pick(t));
    out[k] = std::move(o);
  }
  return out;
}

// check_error(err) (and check(), an error of one slot): raises now when the
// error is concrete; traced, records a CheckSite for checkify to functionalize.
void check_error_impl(InterpreterImpl& in, const std::shared_ptr<State>& st, const ErrState& err0,
                      bool debug) {
  ErrState err = reduce_any(in.ops(), err0);
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  bool all_concrete = true;
  for (const auto& [k, s] : err) {
    all_concrete = all_concrete && s.pred->concrete && s.code->concrete;
    for (const Tensor& t : s.payload) all_concrete = all_concrete && t->concrete;
  }
  if (!tc && all_concrete) {
    if (debug) return;
    if (std::optional<std::string> m = error_message(in, *st, err)) throw runtime_error(*m);
    return;
  }
  bool staged = false;
  if (tc && !under_checkify(in, &staged) && staged) {
    if (debug) return; // debug_check: dropped where it is not functionalized
    throw functionalization_error();
  }
  auto site = std::make_shared<CheckSiteImpl>();
  site->st = st;
  site->debug = debug;
  std::vector<Tensor> operands;
  for (const auto& [k, s] : err) {
    site->slots.push_back({k, s.payload.size()});
    operands.push_back(s.pred);
    operands.push_back(s.code);
    operands.insert(operands.end(), s.payload.begin(), s.payload.end());
  }
  auto df = std::make_shared<DebugFormat>();
  df->args = site;
  OpAttrs attrs;
  attrs.debug = df;
  if (tc) {
    Function& f = tc->function();
    attrs.axis = static_cast<int64_t>(f.debug_formats.size());
    f.debug_formats.push_back(*df);
  }
  in.ops().bind(Op::DebugPrint, attrs, operands);
}

std::set<std::string> error_set(const Value& v) {
  const ValueList* items = py_set_items(v);
  if (!items) items = sequence_items(v);
  if (!items) throw Error(ErrCode::Type, "checkify errors must be a set of error categories");
  std::set<std::string> out;
  for (const Value& i : *items) out.insert(value_to_str(i, "error category"));
  return out;
}

Value checkify_call(InterpreterImpl& in, const std::shared_ptr<State>& st, const Value& f,
                    const std::set<std::string>& enabled, CallArgs& a, const Span& where) {
  auto kw = a.kw;
  Value wrapper = make_builtin("checkify", [f, kw, where](InterpreterImpl& in, CallArgs& c) {
    CallArgs full;
    full.pos = c.pos;
    full.kw = kw;
    return in.call(f, full, where);
  });
  TracedFunction t = trace_function(in, wrapper, a.pos, where, "checkify");
  std::vector<Tensor> params = leaf_tensors(in, a.pos, where);
  ErrState err;
  std::vector<Tensor> outs;
  {
    LocScope keep(in.ops(), where);
    outs = checkify_function(in, *st, in.ops(), enabled, *t.fn, params, t.consts, err);
  }
  ValueList leaves;
  for (size_t i = 0; i < outs.size(); ++i)
    leaves.push_back(i < t.number_outputs.size() && !t.number_outputs[i].is_none()
                         ? t.number_outputs[i]
                         : make_array(outs[i]));
  return make_tuple({error_value(*st, err), tree_unflatten(t.out_tree, leaves)});
}

// check(pred, msg, *fmt_args, **fmt_kwargs) and debug_check.
Value check(InterpreterImpl& in, const std::shared_ptr<State>& st, CallArgs& a, bool debug) {
  const char* name = debug ? "debug_check" : "check";
  if (a.pos.size() < 2)
    throw Error(ErrCode::Arguments,
                std::string(name) + "() missing required positional arguments: 'pred' and 'msg'");
  const Value& pred = a.pos[0];
  Tensor p;
  if (pred.is_bool()) {
    p = make_tensor(Array::scalar(Scalar::of_bool(pred.b), DType::Bool));
  } else if (pred.is_obj(ObjKind::Array)) {
    p = pred.as<ArrayObj>()->tensor;
  }
  if (!p || !p->aval.shape.empty() || p->aval.dtype != DType::Bool)
    throw Error(ErrCode::Type,
                std::string(name) + " takes a scalar pred as argument, got " + str(pred));
  ErrorMeta m;
  m.kind = kCheck;
  m.fmt = value_to_str(a.pos[1], std::string(name) + "() msg");
  ValueList all(a.pos.begin() + 2, a.pos.end());
  m.npos = all.size();
  for (auto& [k, v] : a.kw) {
    if (k == "debug") continue;
    all.push_back(v);
    m.keywords.push_back(k);
  }
  ValueList leaves;
  m.tree = tree_flatten(in, make_tuple(all), leaves);
  std::vector<Tensor> payload;
  for (const Value& l : leaves) {
    if (!l.is_obj(ObjKind::Array))
      throw Error(ErrCode::Type,
                  "Formatting arguments to checkify.check need to be PyTrees of arrays, but got " +
                      repr(l) + " of type <class '" + type_name(l) + "'>.");
    payload.push_back(l.as<ArrayObj>()->tensor);
  }
  Tensor c = make_tensor(Array::scalar(Scalar::of_int(st->add(std::move(m))), DType::Int32));
  ErrState err;
  err[slot_key(kCheck, payload)] =
      Slot{in.ops().bind(Op::Not, {}, std::vector<Tensor>{p}), c, payload};
  check_error_impl(in, st, err, debug);
  return Value();
}

// The set of error categories named `names` (a frozenset, as JAX's).
Value category_set(std::initializer_list<const char*> names) {
  ValueList items;
  for (const char* n : names) items.push_back(make_str(n));
  return make_py_set(std::move(items), true);
}

// Records a check site in the trace as a debug_print instruction carrying
// `site` (so it travels through jit, vmap, autodiff and loops like a print).
void bind_site(OpContext& cx, TraceContext& tc, std::shared_ptr<const DebugFormatArgs> site,
               std::vector<Tensor> operands) {
  auto df = std::make_shared<DebugFormat>();
  df->args = std::move(site);
  OpAttrs attrs;
  attrs.debug = df;
  attrs.axis = static_cast<int64_t>(tc.function().debug_formats.size());
  tc.function().debug_formats.push_back(*df);
  cx.bind(Op::DebugPrint, attrs, operands);
}

} // namespace

bool tracing_under_checkify(OpContext& cx) {
  for (auto* tc = dynamic_cast<TraceContext*>(&cx); tc;
       tc = dynamic_cast<TraceContext*>(&tc->outer()))
    if (tc->what() == "checkify") return true;
  return false;
}

void record_index_check(OpContext& cx, const Shape& shape, std::span<const Tensor> indices,
                        std::span<const int64_t> axes, std::span<const int64_t> limits) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  if (!tc || indices.empty()) return;
  auto bind = [&](Op op, std::vector<Tensor> xs, OpAttrs a = {}) { return cx.bind(op, a, xs); };
  auto reshape = [&](const Tensor& t, Shape s) {
    OpAttrs a;
    a.shape = std::move(s);
    return bind(Op::Reshape, {t}, a);
  };
  const int64_t k = static_cast<int64_t>(indices.size());
  const int64_t n = indices[0]->aval.size();
  if (n == 0) return;
  // The indices as JAX's gather has them, (position, axis) row-major, flat.
  std::vector<Tensor> cols;
  for (const Tensor& t : indices) cols.push_back(reshape(t, {n, 1}));
  OpAttrs cat;
  cat.axis = 1;
  Tensor flat = reshape(k == 1 ? cols[0] : cx.bind(Op::Concatenate, cat, cols), {n * k});
  Array sizes(DType::Int32, {n * k}), axis_of(DType::Int32, {n * k}), zeros(DType::Int32, {n * k}),
      highest(DType::Int32, {n * k});
  for (int64_t p = 0; p < n; ++p)
    for (int64_t j = 0; j < k; ++j) {
      int64_t size = shape[static_cast<size_t>(axes[j])];
      sizes.set(p * k + j, Scalar::of_int(size));
      axis_of.set(p * k + j, Scalar::of_int(axes[j]));
      highest.set(p * k + j, Scalar::of_int(limits.empty() ? size - 1 : limits[j]));
    }
  Tensor size_c = cx.constant(sizes), axis_c = cx.constant(axis_of);
  Tensor oob = bind(Op::Or, {bind(Op::Lt, {flat, cx.constant(zeros)}),
                             bind(Op::Gt, {flat, cx.constant(highest)})});
  OpAttrs all;
  all.axes = {0};
  Tensor pred = bind(Op::ReduceOr, {oob}, all);
  OpAttrs to_int;
  to_int.dtype = DType::Int32;
  OpAttrs am;
  am.axis = 0;
  am.dtype = DType::Int32;
  Tensor first = bind(Op::Argmax, {bind(Op::ConvertElementType, {oob}, to_int)}, am);
  OpAttrs take;
  take.axis = 0;
  std::vector<Tensor> parts;
  for (const Tensor& src : {flat, axis_c, size_c})
    parts.push_back(reshape(bind(Op::Take, {src, first}, take), {1}));
  OpAttrs cat0;
  cat0.axis = 0;
  Tensor payload = cx.bind(Op::Concatenate, cat0, parts);
  auto site = std::make_shared<OobSite>();
  site->shape = shape;
  bind_site(cx, *tc, site, {pred, payload});
}

void record_branch(OpContext& cx, const Tensor& pred, bool begin) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  if (!tc) return;
  auto site = std::make_shared<BranchSite>();
  site->begin = begin;
  bind_site(cx, *tc, site, {pred});
}

void add_checkify(InterpreterImpl& in, ModuleBuilder& experimental) {
  auto st = std::make_shared<State>();
  st->in = &in;
  st->type = std::make_shared<NamedTupleType>();
  st->type->name = "Error";
  st->type->fields = {"_pred", "_code", "_payload"};
  std::weak_ptr<State> weak = st;
  st->type->attr = [weak](InterpreterImpl& in, const ValueList& fields, const std::string& attr,
                          Value& out) {
    auto st = weak.lock();
    if (!st) return false;
    if (attr == "get") {
      out = make_builtin("get", [st, fields](InterpreterImpl& in, CallArgs& a) {
        ArgReader r("get", a, {});
        std::optional<std::string> m = error_message(in, *st, error_state(in, fields));
        return m ? make_str(*m) : Value();
      });
      return true;
    }
    if (attr == "throw") {
      out = make_builtin("throw", [st, fields](InterpreterImpl& in, CallArgs& a) {
        ArgReader r("throw", a, {});
        check_error_impl(in, st, error_state(in, fields), false);
        return Value();
      });
      return true;
    }
    (void)in;
    return false;
  };
  st->type->str = [weak](const ValueList& fields) -> std::string {
    auto st = weak.lock();
    if (!st) return "Error";
    std::optional<std::string> m = error_message(*st->in, *st, error_state(*st->in, fields));
    return "Error(" + (m ? *m : std::string("None")) + ")";
  };

  ModuleBuilder mod("jax.experimental.checkify");
  // (The state lives as long as the module's functions, which hold it.)
  mod.fn("checkify", [st](InterpreterImpl&, CallArgs& a) {
    ArgReader r("checkify", a, {"f", "errors"}, 1);
    check_callable(r[0]);
    std::set<std::string> enabled = r.has(1) ? error_set(r[1]) : std::set<std::string>{kCheck};
    Value f = r[0];
    return make_builtin("checked_fun", [st, f, enabled](InterpreterImpl& in, CallArgs& c) {
      return checkify_call(in, st, f, enabled, c, in.ops().loc);
    });
  });
  mod.fn("check", [st](InterpreterImpl& in, CallArgs& a) { return check(in, st, a, false); });
  mod.fn("debug_check", [st](InterpreterImpl& in, CallArgs& a) { return check(in, st, a, true); });
  mod.fn("check_error", [st](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("check_error", a, {"error"}, 1);
    if (!is_error(*st, r[0]))
      throw Error(ErrCode::Type, "check_error takes an Error as argument, got type <class '" +
                                     type_name(r[0]) + "'> instead.");
    const ValueList* fields = nullptr;
    namedtuple_parts(r[0], &fields);
    check_error_impl(in, st, error_state(in, *fields), false);
    return Value();
  });
  // For the stdlib's .pxl indexing (lax.dynamic_slice & co., jnp.take):
  // _index_check(shape, indices, axes, limits) records JAX's bounds check of
  // a gather from an array of `shape` when tracing under checkify: each index
  // (wrapped, not yet clamped) must lie in [0, limit] (see record_index_check).
  mod.fn("_index_check", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_index_check", a, {"shape", "indices", "axes", "limits"}, 4);
    if (!tracing_under_checkify(in.ops())) return Value();
    Shape shape;
    for (const Value& d : *sequence_items(r[0])) shape.push_back(d.as_int());
    std::vector<Tensor> idx;
    std::vector<int64_t> axes, limits;
    for (const Value& v : *sequence_items(r[1]))
      idx.push_back(in.to_tensor(v, Span{}, DType::Int32));
    for (const Value& v : *sequence_items(r[2])) axes.push_back(v.as_int());
    for (const Value& v : *sequence_items(r[3])) limits.push_back(v.as_int());
    // (Scalars and arrays together: broadcast to one shape.)
    Shape b;
    for (const Tensor& t : idx)
      if (t->aval.shape.size() > b.size()) b = t->aval.shape;
    for (Tensor& t : idx)
      if (t->aval.shape != b) {
        OpAttrs bc;
        bc.shape = b;
        for (size_t i = 0; i < t->aval.shape.size(); ++i)
          bc.axes.push_back(static_cast<int64_t>(b.size() - t->aval.shape.size() + i));
        t = in.ops().bind(Op::BroadcastInDim, bc, std::vector<Tensor>{t});
      }
    record_index_check(in.ops(), shape, idx, axes, limits);
    return Value();
  });
  mod.val("init_error", error_value(*st, {}));
  mod.val("user_checks", category_set({kCheck}));
  mod.val("nan_checks", category_set({kNan}));
  mod.val("index_checks", category_set({kOob}));
  mod.val("div_checks", category_set({kDiv}));
  mod.val("float_checks", category_set({kNan, kDiv}));
  mod.val("automatic_checks", category_set({kNan, kDiv, kOob}));
  mod.val("all_checks", category_set({kNan, kDiv, kOob, kCheck}));
  experimental.val("checkify", mod.value());
  in.register_module("jax.experimental.checkify", mod.value());
}

} // namespace pxl
