#include "stdlib/jaxpr_eqns.hpp"

#include <cstring>

#include "ir/op.hpp"
#include "lang/jaxpr_record.hpp"

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
  case Op::Concatenate:
    set("dimension", Value::integer(a.axis));
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
    set("precision", Value());
    set("preferred_element_type", dtype_value(result));
    set("out_sharding", Value());
    break;
  default:
    break;
  }
  return Value::object(d);
}

} // namespace

JaxprReading read_jaxpr(const Function& fn, const std::vector<int>& roots,
                        const std::vector<int>& bound) {
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
  size_t index = 0;
  for (const Instr& i : fn.body) {
    if (!keep[index++]) continue;
    if (i.op == Op::ConvertElementType && i.operands.size() == 1) {
      const IRValue& x = fn.values[static_cast<size_t>(i.operands[0])];
      bool is_param = is_bound[static_cast<size_t>(i.operands[0])];
      for (int p : fn.params) is_param = is_param || p == i.operands[0];
      if (x.producer < 0 && !is_param && x.aval.shape.empty()) { // a literal's conversion
        rd.literal[static_cast<size_t>(i.result)] = true;
        rd.converted_from[i.result] = i.operands[0];
        continue;
      }
    }
    if (i.op == Op::BroadcastInDim && i.operands.size() == 1 &&
        fn.values[static_cast<size_t>(i.operands[0])].aval.shape.empty()) {
      bool implicit = !users[static_cast<size_t>(i.result)].empty();
      for (const Instr* u : users[static_cast<size_t>(i.result)])
        implicit = implicit && is_elementwise_binary(u->op);
      for (int res : fn.results) implicit = implicit && res != i.result;
      if (implicit) {
        rd.stands_for[static_cast<size_t>(i.result)] =
            rd.stands_for[static_cast<size_t>(i.operands[0])];
        continue;
      }
    }
    rd.eqns.push_back(&i);
  }
  return rd;
}

Value jaxpr_eqns(const Function& fn, const JaxprRecord* record,
                 const std::function<Value(const AVal&)>& aval_value) {
  ValueList eqns;
  auto avals = [&](const std::vector<int>& ids) {
    ValueList out;
    for (int v : ids)
      if (v >= 0 && static_cast<size_t>(v) < fn.values.size())
        out.push_back(aval_value(fn.values[static_cast<size_t>(v)].aval));
    return make_list(out);
  };
  for (const JaxprTopEqn& e : jaxpr_top_eqns(fn, record)) {
    if (e.region) { // a jit, cond or scan: its printed params as Python values
      auto d = std::make_shared<DictObj>();
      for (const auto& [k, v] : e.region->params) {
        Value pv = make_str(v);
        if (v == "True" || v == "False")
          pv = Value::boolean(v == "True");
        else if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos)
          pv = Value::integer(std::stoll(v));
        d->set(make_str(k), pv);
      }
      eqns.push_back(make_tuple({make_str(e.prim), Value::object(d), avals(e.ins), avals(e.outs)}));
      continue;
    }
    const Instr& i = *e.instr;
    const IRValue& r = fn.values[static_cast<size_t>(i.result)];
    std::vector<int> outs;
    for (int k = 0; k < i.nresults; ++k) outs.push_back(i.result + k);
    Value params = params_of(i.op, i.attrs, r.aval.dtype);
    if (e.prim == "squeeze") {
      auto d = std::make_shared<DictObj>();
      d->set(make_str("dimensions"), ints(i.attrs.axes));
      params = Value::object(d);
    }
    eqns.push_back(make_tuple({make_str(e.prim), params, avals(i.operands), avals(outs)}));
  }
  return make_list(eqns);
}

} // namespace pxl
