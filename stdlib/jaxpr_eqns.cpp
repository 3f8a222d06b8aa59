#include "stdlib/jaxpr_eqns.hpp"

#include <algorithm>
#include <cstring>

#include "ir/constant_of.hpp"
#include "ir/custom_call.hpp"
#include "ir/op.hpp"
#include "lang/jaxpr_record.hpp"
#include "runtime/spmd_call.hpp"
#include "stdlib/jaxpr_view.hpp"
#include "stdlib/lax_precision.hpp"
#include "stdlib/sharding.hpp"

namespace pxl {

namespace {

Value ints(const std::vector<int64_t>& xs) {
  ValueList v;
  for (int64_t x : xs) v.push_back(Value::integer(x));
  return make_tuple(v);
}

Value dtype_value(DType d) { return Value::object(std::make_shared<DTypeObj>(d)); }

bool is_elementwise_binary(Op op) {
  switch (op) {
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
  case Op::Max:
  case Op::Min:
  case Op::Pow:
  case Op::Atan2:
  case Op::Rem:
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::Eq:
  case Op::Ne:
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge:
    return true;
  default:
    return false;
  }
}

// Whether broadcast `i` keeps its operand's dimensions in order, stretching
// only unit ones: the broadcasting of numpy (trailing dimensions) or of a
// batched binary op (vmap's batch dimension first).
bool stretches(const Function& fn, const Instr& i) {
  if (i.op != Op::BroadcastInDim || i.operands.size() != 1 || i.attrs.filled) return false;
  const Shape& in = fn.values[static_cast<size_t>(i.operands[0])].aval.shape;
  const Shape& out = fn.values[static_cast<size_t>(i.result)].aval.shape;
  if (in.size() > out.size() || i.attrs.axes.size() != in.size()) return false;
  for (size_t k = 0; k < in.size(); ++k) {
    int64_t d = i.attrs.axes[k];
    if (d < 0 || static_cast<size_t>(d) >= out.size() || (k && d <= i.attrs.axes[k - 1]) ||
        (in[k] != out[static_cast<size_t>(d)] && in[k] != 1))
      return false;
  }
  return true;
}

// What JAX's jaxpr shows of such a broadcast: the operand with unit
// dimensions where the broadcast adds ones (jnp's rank promotion); the
// operand's own shape when it adds none (a rank-0 operand included).
Shape promoted_shape(const Function& fn, const Instr& i) {
  const Shape& in = fn.values[static_cast<size_t>(i.operands[0])].aval.shape;
  const Shape& out = fn.values[static_cast<size_t>(i.result)].aval.shape;
  if (in.empty() || in.size() == out.size()) return in;
  Shape s(out.size(), 1);
  for (size_t k = 0; k < in.size(); ++k) s[static_cast<size_t>(i.attrs.axes[k])] = in[k];
  return s;
}

// The values used outside fn's equations: its results and `roots`.
std::vector<bool> used_outside(const Function& fn, const std::vector<int>& roots) {
  std::vector<bool> out(fn.values.size(), false);
  for (int r : fn.results) out[static_cast<size_t>(r)] = true;
  for (int r : roots)
    if (r >= 0 && static_cast<size_t>(r) < out.size()) out[static_cast<size_t>(r)] = true;
  return out;
}

// Per instruction: a stretching broadcast of a rank-0 value, or of such a
// broadcast (vmap batches an unbatched scalar's broadcast by broadcasting it
// again): where all of them are implicit, JAX's jaxpr shows the scalar.
std::vector<bool> scalar_broadcasts(const Function& fn) {
  std::vector<bool> out(fn.body.size(), false);
  for (size_t k = 0; k < fn.body.size(); ++k) {
    const Instr& i = fn.body[k];
    if (!stretches(fn, i)) continue;
    const IRValue& x = fn.values[static_cast<size_t>(i.operands[0])];
    out[k] = x.aval.shape.empty() || (x.producer >= 0 && out[static_cast<size_t>(x.producer)]);
  }
  return out;
}

// Per instruction: a broadcast that only does the broadcasting of the
// elementwise binary ops reading it, which JAX's jaxpr leaves to the
// primitive (rank-0 operands, unit dimensions) except for jnp's rank
// promotion. Each binary op must keep an operand of its result's rank and
// each of its sizes; where all of them are such broadcasts (`jnp.zeros((3,
// 4)) + 1.0`), the earliest one is an equation of its own, as JAX's explicit
// broadcast is. `of_scalar`: scalar_broadcasts(fn).
std::vector<bool> implicit_broadcasts(const Function& fn, const std::vector<bool>& keep,
                                      const std::vector<std::vector<const Instr*>>& users,
                                      const std::vector<bool>& outside,
                                      const std::vector<bool>& of_scalar) {
  std::vector<bool> implicit(fn.body.size(), false);
  auto index_of = [&](int v) { return fn.values[static_cast<size_t>(v)].producer; };
  // (Last first: a scalar's broadcast that only feeds such broadcasts, vmap's
  // batching of an unbatched operand, is one too: the scalar shows.)
  for (size_t k = fn.body.size(); k-- > 0;) {
    const Instr& i = fn.body[k];
    if (!keep[k] || !stretches(fn, i) || outside[static_cast<size_t>(i.result)]) continue;
    const auto& us = users[static_cast<size_t>(i.result)];
    implicit[k] = !us.empty() && std::all_of(us.begin(), us.end(), [&](const Instr* u) {
      return is_elementwise_binary(u->op) ||
             (of_scalar[k] && implicit[static_cast<size_t>(u - fn.body.data())]);
    });
  }
  // Whether v is an implicit broadcast of a scalar (it shows as the scalar).
  auto shows_scalar = [&](int v) {
    int p = index_of(v);
    return p >= 0 && implicit[static_cast<size_t>(p)] && of_scalar[static_cast<size_t>(p)];
  };
  // The shape an operand shows in the binary op.
  auto shown = [&](int v) -> Shape {
    int p = index_of(v);
    if (p < 0 || !implicit[static_cast<size_t>(p)])
      return fn.values[static_cast<size_t>(v)].aval.shape;
    if (shows_scalar(v)) return {};
    return promoted_shape(fn, fn.body[static_cast<size_t>(p)]);
  };
  for (size_t k = 0; k < fn.body.size(); ++k) {
    const Instr& u = fn.body[k];
    if (!keep[k] || !is_elementwise_binary(u.op)) continue;
    const Shape& out = fn.values[static_cast<size_t>(u.result)].aval.shape;
    auto covered = [&] {
      bool has_rank = out.empty();
      std::vector<bool> size_ok(out.size(), false);
      for (int o : u.operands) {
        Shape s = shown(o);
        if (s.size() != out.size()) continue;
        has_rank = true;
        for (size_t d = 0; d < s.size(); ++d) size_ok[d] = size_ok[d] || s[d] == out[d];
      }
      return has_rank && std::all_of(size_ok.begin(), size_ok.end(), [](bool b) { return b; });
    };
    while (!covered()) {
      int earliest = -1;
      for (int o : u.operands) {
        int p = index_of(o);
        if (p >= 0 && implicit[static_cast<size_t>(p)] && (earliest < 0 || p < earliest))
          earliest = p;
      }
      if (earliest < 0) break;
      implicit[static_cast<size_t>(earliest)] = false;
    }
  }
  // A scalar's broadcast stays implicit only while every broadcast reading it does.
  for (size_t k = fn.body.size(); k-- > 0;) {
    const Instr& i = fn.body[k];
    if (!implicit[k] || !of_scalar[k]) continue;
    for (const Instr* u : users[static_cast<size_t>(i.result)])
      if (!is_elementwise_binary(u->op) && !implicit[static_cast<size_t>(u - fn.body.data())])
        implicit[k] = false;
  }
  return implicit;
}

// Whether value v is the constant 1 (or its conversion or broadcast).
bool is_one(const Function& fn, int v, const std::vector<Tensor>* constants) {
  int k = constant_of(fn, v);
  if (!constants || k < 0 || static_cast<size_t>(k) >= constants->size() ||
      !fn.values[static_cast<size_t>(fn.consts[static_cast<size_t>(k)])].aval.shape.empty())
    return false;
  const Tensor& t = (*constants)[static_cast<size_t>(k)];
  return t && t->concrete && t->concrete->get_f64(0) == 1.0;
}

// pxl binds x / y, y smaller than the result, as x * broadcast(1 / y)
// (np_elementwise.cpp: XLA's rewrite, for its rounding); JAX's jaxpr has
// div x broadcast(y). Per reciprocal instruction skipped: the divisor its
// value shows as; the muls reading it show as div (`prim`).
std::map<size_t, int> reciprocal_divisions(const Function& fn, const std::vector<bool>& keep,
                                           const std::vector<bool>& implicit,
                                           const std::vector<std::vector<const Instr*>>& users,
                                           const std::vector<bool>& outside,
                                           const std::vector<Tensor>* constants,
                                           std::map<size_t, std::string>& prim) {
  std::map<size_t, int> out;
  for (size_t k = 0; k < fn.body.size(); ++k) {
    const Instr& r = fn.body[k];
    if (!keep[k] || r.op != Op::Div || r.operands.size() != 2 ||
        outside[static_cast<size_t>(r.result)] || !is_one(fn, r.operands[0], constants))
      continue;
    // Each reader: an implicit broadcast whose readers are muls by it.
    std::vector<const Instr*> muls;
    bool ok = !users[static_cast<size_t>(r.result)].empty();
    for (const Instr* b : users[static_cast<size_t>(r.result)]) {
      size_t bi = static_cast<size_t>(b - fn.body.data());
      ok = ok && implicit[bi];
      for (const Instr* m : users[static_cast<size_t>(b->result)])
        ok = ok && m->op == Op::Mul && m->operands.size() == 2 && m->operands[1] == b->result &&
             m->operands[0] != b->result;
      if (ok)
        muls.insert(muls.end(), users[static_cast<size_t>(b->result)].begin(),
                    users[static_cast<size_t>(b->result)].end());
    }
    if (!ok) continue;
    out[k] = r.operands[1];
    for (const Instr* m : muls) prim[static_cast<size_t>(m - fn.body.data())] = "div";
  }
  return out;
}

// JAX's params of the primitives whose attributes pxl's IR holds.
Value params_of(Op op, const OpAttrs& a, DType result) {
  auto d = std::make_shared<DictObj>();
  auto set = [&](const char* k, Value v) { d->set(make_str(k), std::move(v)); };
  const std::string name = op_name(op);
  static const char* accuracy_ops[] = {"sin",      "cos",  "tan",   "exp",  "exp2",  "log",  "tanh",
                                       "logistic", "sqrt", "rsqrt", "cbrt", "log1p", "expm1"};
  for (const char* n : accuracy_ops)
    if (name == n) set("accuracy", Value());
  switch (op) {
  case Op::ReduceSum:
    set("axes", ints(a.axes));
    set("out_sharding", Value());
    break;
  case Op::ReduceMax:
  case Op::ReduceMin:
  case Op::ReduceProd:
  case Op::ReduceAnd:
  case Op::ReduceOr:
    set("axes", ints(a.axes));
    break;
  case Op::Argmax:
  case Op::Argmin:
    set("axes", ints({a.axis}));
    set("index_dtype", dtype_value(a.dtype));
    break;
  case Op::BroadcastInDim:
    set("shape", ints(a.shape));
    set("broadcast_dimensions", ints(a.axes));
    set("sharding", Value());
    break;
  case Op::Reshape:
    set("new_sizes", ints(a.shape));
    set("dimensions", Value());
    set("sharding", Value());
    break;
  case Op::Transpose:
    set("permutation", ints(a.perm));
    break;
  case Op::ConvertElementType:
    set("new_dtype", dtype_value(a.dtype));
    set("weak_type", Value::boolean(a.weak));
    set("sharding", Value());
    break;
  case Op::IntegerPow:
    set("y", Value::integer(a.exponent));
    break;
  case Op::Iota:
    set("dtype", dtype_value(a.dtype));
    set("shape", ints(a.shape));
    set("dimension", Value::integer(a.axis));
    set("sharding", Value());
    break;
  case Op::Cumsum:
    set("axis", Value::integer(a.axis));
    set("reverse", Value::boolean(a.reverse));
    break;
  case Op::Argsort:
    set("dimension", Value::integer(a.axis));
    break;
  case Op::Round:
    set("rounding_method", Value::integer(1)); // TO_NEAREST_EVEN
    break;
  case Op::Concatenate:
    set(a.stacked ? "axis" : "dimension", Value::integer(a.axis));
    break;
  case Op::Rev:
    set("dimensions", ints(a.axes));
    break;
  case Op::Slice: {
    set("start_indices", ints(a.starts));
    set("limit_indices", ints(a.limits));
    bool unit = true;
    for (int64_t s : a.strides) unit = unit && s == 1;
    set("strides", unit ? Value() : ints(a.strides));
    break;
  }
  case Op::DotGeneral:
    set("dimension_numbers",
        make_tuple({make_tuple({ints(a.dot.lhs_contract), ints(a.dot.rhs_contract)}),
                    make_tuple({ints(a.dot.lhs_batch), ints(a.dot.rhs_batch)})}));
    set("precision", precision_value(a.dot.precision));
    set("preferred_element_type", a.dot.preferred_none ? Value() : dtype_value(result));
    set("out_sharding", Value());
    break;
  default:
    break;
  }
  return Value::object(d);
}

} // namespace

bool is_expand(const Instr& i) { return i.op == Op::Reshape && !i.attrs.perm.empty(); }

std::vector<int64_t> expand_broadcast_dims(const OpAttrs& a) {
  std::vector<int64_t> dims;
  const auto& added = a.perm;
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (!std::count(added.begin(), added.end(), static_cast<int64_t>(d)))
      dims.push_back(static_cast<int64_t>(d));
  return dims;
}

JaxprReading read_jaxpr(const Function& fn, const std::vector<int>& roots,
                        const std::vector<int>& bound, const std::vector<Tensor>* constants) {
  JaxprReading rd;
  rd.stands_for.resize(fn.values.size());
  for (size_t v = 0; v < fn.values.size(); ++v) rd.stands_for[v] = static_cast<int>(v);
  rd.literal.assign(fn.values.size(), false);
  // Who reads each value.
  std::vector<std::vector<const Instr*>> users(fn.values.size());
  for (const Instr& i : fn.body)
    for (int o : i.operands) users[static_cast<size_t>(o)].push_back(&i);
  // What the results need (pxl's tracing leaves steps whose values go unused,
  // such as the conversion of an exponent integer_pow took as an attribute).
  std::vector<bool> live(fn.values.size(), false);
  for (int r : fn.results) live[static_cast<size_t>(r)] = true;
  for (int r : roots)
    if (r >= 0 && static_cast<size_t>(r) < live.size()) live[static_cast<size_t>(r)] = true;
  std::vector<bool> is_bound(fn.values.size(), false);
  for (int b : bound)
    if (b >= 0 && static_cast<size_t>(b) < is_bound.size()) is_bound[static_cast<size_t>(b)] = true;
  std::vector<bool> keep(fn.body.size(), false);
  for (size_t k = fn.body.size(); k-- > 0;) {
    const Instr& i = fn.body[k];
    bool needed = op_family(i.op) == OpFamily::Effect;
    for (int r = 0; r < i.nresults; ++r) needed = needed || live[static_cast<size_t>(i.result + r)];
    if (!needed) continue;
    keep[k] = true;
    for (int o : i.operands) live[static_cast<size_t>(o)] = true;
  }
  // A scalar constant is a literal in a jaxpr.
  for (int c : fn.consts)
    if (fn.values[static_cast<size_t>(c)].aval.shape.empty())
      rd.literal[static_cast<size_t>(c)] = true;
  const std::vector<bool> outside = used_outside(fn, roots);
  const std::vector<bool> of_scalar = scalar_broadcasts(fn);
  const std::vector<bool> implicit = implicit_broadcasts(fn, keep, users, outside, of_scalar);
  const std::map<size_t, int> divisor =
      reciprocal_divisions(fn, keep, implicit, users, outside, constants, rd.prim);
  // The expand_dims jnp.stack's concatenate reads (and nothing else does):
  // JAX's stack takes the operands as they are.
  std::vector<bool> stacked_expand(fn.body.size(), false);
  for (size_t k = 0; k < fn.body.size(); ++k) {
    const Instr& c = fn.body[k];
    if (!keep[k] || c.op != Op::Concatenate || !c.attrs.stacked) continue;
    for (int o : c.operands) {
      int p = fn.values[static_cast<size_t>(o)].producer;
      if (p < 0 || !is_expand(fn.body[static_cast<size_t>(p)]) || outside[static_cast<size_t>(o)])
        continue;
      const auto& us = users[static_cast<size_t>(o)];
      stacked_expand[static_cast<size_t>(p)] =
          std::all_of(us.begin(), us.end(), [&](const Instr* u) { return u == &c; });
    }
  }
  size_t index = 0;
  for (const Instr& i : fn.body) {
    if (!keep[index++]) continue;
    if (stacked_expand[index - 1]) {
      rd.stands_for[static_cast<size_t>(i.result)] =
          rd.stands_for[static_cast<size_t>(i.operands[0])];
      continue;
    }
    if (i.op == Op::ConvertElementType && i.operands.size() == 1) {
      const IRValue& x = fn.values[static_cast<size_t>(i.operands[0])];
      bool is_param = is_bound[static_cast<size_t>(i.operands[0])];
      for (int p : fn.params) is_param = is_param || p == i.operands[0];
      if (x.producer < 0 && !is_param && x.aval.shape.empty()) { // a literal's conversion
        rd.literal[static_cast<size_t>(i.result)] = true;
        rd.converted_from[i.result] = i.operands[0];
        continue;
      }
      // pxl's stop_gradient of a weak value restores the weak type its
      // bitcast lost; JAX's stop_gradient keeps it.
      const Instr* sg = x.producer >= 0 ? &fn.body[static_cast<size_t>(x.producer)] : nullptr;
      if (sg && sg->op == Op::BitcastConvertType && i.attrs.weak && i.attrs.dtype == x.aval.dtype &&
          fn.values[static_cast<size_t>(sg->operands[0])].aval.dtype == x.aval.dtype &&
          fn.values[static_cast<size_t>(sg->operands[0])].aval.weak) {
        rd.stands_for[static_cast<size_t>(i.result)] =
            rd.stands_for[static_cast<size_t>(i.operands[0])];
        continue;
      }
    }
    if (implicit[index - 1]) {
      const AVal& out = fn.values[static_cast<size_t>(i.result)].aval;
      Shape shown = promoted_shape(fn, i);
      // A scalar's implicit broadcast, broadcast again (vmap): the scalar.
      int q = fn.values[static_cast<size_t>(i.operands[0])].producer;
      bool again = q >= 0 && implicit[static_cast<size_t>(q)] && of_scalar[static_cast<size_t>(q)];
      if (again ||
          shown == fn.values[static_cast<size_t>(i.operands[0])].aval.shape) { // the operand
        rd.stands_for[static_cast<size_t>(i.result)] =
            rd.stands_for[static_cast<size_t>(i.operands[0])];
        continue;
      }
      AVal promoted = out;
      promoted.shape = shown;
      rd.retyped[i.result] = promoted;
    }
    if (auto c = divisor.find(index - 1); c != divisor.end()) { // shown as a div's operand
      rd.stands_for[static_cast<size_t>(i.result)] = rd.stands_for[static_cast<size_t>(c->second)];
      continue;
    }
    if (i.op == Op::BitcastConvertType && i.operands.size() == 1 &&
        fn.values[static_cast<size_t>(i.operands[0])].aval.dtype == i.attrs.dtype)
      rd.prim[index - 1] = "stop_gradient"; // pxl's stop_gradient (mod_lax.cpp)
    rd.eqns.push_back(&i);
  }
  return rd;
}

namespace {
// A printed param as a Python value: a bool, an int, else its text.
Value printed_param_value(const std::string& v) {
  if (v == "True" || v == "False") return Value::boolean(v == "True");
  if (!v.empty() && v.size() < 19 && v.find_first_not_of("0123456789") == std::string::npos)
    return Value::integer(std::stoll(v));
  return make_str(v);
}
Value printed_params_dict(const std::vector<std::pair<std::string, std::string>>& params) {
  auto d = std::make_shared<DictObj>();
  for (const auto& [k, v] : params) d->set(make_str(k), printed_param_value(v));
  return Value::object(d);
}
} // namespace

Value jaxpr_eqns(const Function& fn, const std::vector<Tensor>& consts, const JaxprRecord* record,
                 const std::function<Value(const AVal&)>& aval_value) {
  ValueList eqns;
  auto avals = [&](const std::vector<int>& ids) {
    ValueList out;
    for (int v : ids)
      if (v >= 0 && static_cast<size_t>(v) < fn.values.size())
        out.push_back(aval_value(fn.values[static_cast<size_t>(v)].aval));
    return make_list(out);
  };
  JaxprView shown = jaxpr_view(fn, record);
  for (const JaxprTopEqn& e : jaxpr_top_eqns(shown, consts)) {
    if (e.region) { // a jit, cond or scan: its printed params as Python values
      eqns.push_back(make_tuple(
          {make_str(e.prim), printed_params_dict(e.region->params), avals(e.ins), avals(e.outs)}));
      continue;
    }
    const Instr& i = *e.instr;
    const IRValue& r = fn.values[static_cast<size_t>(i.result)];
    std::vector<int> outs;
    for (int k = 0; k < i.nresults; ++k) outs.push_back(i.result + k);
    Value params = e.renamed ? Value::object(std::make_shared<DictObj>())
                             : params_of(i.op, i.attrs, r.aval.dtype);
    if (is_expand(i)) {
      OpAttrs b;
      b.shape = i.attrs.shape;
      b.axes = expand_broadcast_dims(i.attrs);
      params = params_of(Op::BroadcastInDim, b, r.aval.dtype);
    }
    if (i.op == Op::CustomCall && i.attrs.custom && !i.attrs.custom->primitive.empty())
      params = printed_params_dict(i.attrs.custom->jaxpr_params); // a stdlib lax op's
    if (i.op == Op::SpmdCall && i.attrs.callee) { // shard_map's params (pmap: its jit's name)
      const SpmdCallee& c = *i.attrs.callee;
      auto d = std::make_shared<DictObj>();
      if (c.kind == "pmap") {
        d->set(make_str("name"), make_str("_fun"));
      } else {
        ValueList ins, outs;
        for (size_t p : e.spmd_operands) ins.push_back(make_spec_value(c.ins[p].spec));
        for (const SpmdMapping& m : c.outs) outs.push_back(make_spec_value(m.spec));
        d->set(make_str("check_vma"), Value::boolean(c.check_vma));
        d->set(make_str("in_specs"), make_tuple(ins));
        d->set(make_str("mesh"), make_mesh_value(c.layout.mesh));
        d->set(make_str("out_specs"), make_tuple(outs));
      }
      params = Value::object(d);
    }
    if (e.prim == "squeeze") {
      auto d = std::make_shared<DictObj>();
      d->set(make_str("dimensions"), ints(i.attrs.axes));
      params = Value::object(d);
    }
    const std::vector<int>& ins = i.op == Op::SpmdCall ? e.ins : i.operands; // (JAX's order)
    eqns.push_back(make_tuple({make_str(e.prim), params, avals(ins), avals(outs)}));
  }
  return make_list(eqns);
}

} // namespace pxl
