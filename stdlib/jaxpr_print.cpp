// make_jaxpr(f)(*args)'s text: pxl's IR read as JAX's equations
// (read_jaxpr) and printed with JAX's jaxpr syntax and layout
// (jax._src.core.pp_jaxpr: variables named a, b, ..., z, ba, ...; scalar
// constants as literals `2.0:f32[]`; params as JAX's printing rules show them).
#include <algorithm>
#include <map>
#include <utility>

#include "ir/op.hpp"
#include "runtime/format.hpp"
#include "stdlib/jaxpr_eqns.hpp"
#include "stdlib/pretty_doc.hpp"

namespace pxl {

namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

// Python's str of a tuple (list) of ints: "(0,)", "(0, 1)", "()" ("[0, 1]").
std::string py_seq(const std::vector<int64_t>& xs, bool list = false) {
  std::string s = list ? "[" : "(";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  if (!list && xs.size() == 1) s += ",";
  return s + (list ? "]" : ")");
}

const char* py_bool(bool b) { return b ? "True" : "False"; }

// The params JAX prints for the primitive (after its pp_eqn rule drops the
// trivial ones: accuracy=None, out_dtype=None, sharding, a broadcast's shape).
Params printed_params(Op op, const OpAttrs& a, const AVal& result) {
  Params p;
  switch (op) {
  case Op::ReduceSum:
    p = {{"axes", py_seq(a.axes)}, {"out_sharding", "None"}};
    break;
  case Op::ReduceMax:
  case Op::ReduceMin:
  case Op::ReduceProd:
  case Op::ReduceAnd:
  case Op::ReduceOr:
    p = {{"axes", py_seq(a.axes)}};
    break;
  case Op::Argmax:
  case Op::Argmin:
    p = {{"axes", py_seq({a.axis})}, {"index_dtype", dtype_name(a.dtype)}};
    break;
  case Op::BroadcastInDim:
    if (!a.axes.empty()) p = {{"broadcast_dimensions", py_seq(a.axes)}};
    break;
  case Op::Reshape:
    p = {{"dimensions", "None"}, {"new_sizes", py_seq(a.shape)}, {"sharding", "None"}};
    break;
  case Op::Transpose:
    p = {{"permutation", py_seq(a.perm)}};
    break;
  case Op::ConvertElementType:
    p = {{"new_dtype", dtype_name(a.dtype)}, {"weak_type", py_bool(a.weak)}};
    break;
  case Op::BitcastConvertType:
    p = {{"new_dtype", dtype_name(a.dtype)}};
    break;
  case Op::IntegerPow:
    p = {{"y", std::to_string(a.exponent)}};
    break;
  case Op::Iota:
    p = {{"dimension", std::to_string(a.axis)},
         {"dtype", dtype_name(a.dtype)},
         {"shape", py_seq(a.shape)},
         {"sharding", "None"}};
    break;
  case Op::Cumsum:
    p = {{"axis", std::to_string(a.axis)}, {"reverse", py_bool(a.reverse)}};
    break;
  case Op::Concatenate:
    p = {{"dimension", std::to_string(a.axis)}};
    break;
  case Op::Rev:
    p = {{"dimensions", py_seq(a.axes)}};
    break;
  case Op::Pad: {
    std::string cfg = "(";
    for (size_t i = 0; i < a.lo.size(); ++i)
      cfg += (i ? ", " : "") + std::string("(") + std::to_string(a.lo[i]) + ", " +
             std::to_string(a.hi[i]) + ", " + std::to_string(a.interior[i]) + ")";
    p = {{"padding_config", cfg + (a.lo.size() == 1 ? ",)" : ")")}};
    break;
  }
  case Op::Slice: {
    bool unit = std::all_of(a.strides.begin(), a.strides.end(), [](int64_t s) { return s == 1; });
    p = {{"limit_indices", py_seq(a.limits)},
         {"start_indices", py_seq(a.starts)},
         {"strides", unit ? "None" : py_seq(a.strides)}};
    break;
  }
  case Op::DotGeneral:
    p = {{"dimension_numbers",
          "((" + py_seq(a.dot.lhs_contract, true) + ", " + py_seq(a.dot.rhs_contract, true) +
              "), (" + py_seq(a.dot.lhs_batch, true) + ", " + py_seq(a.dot.rhs_batch, true) + "))"},
         {"preferred_element_type", dtype_name(result.dtype)}};
    break;
  default:
    break;
  }
  std::sort(p.begin(), p.end());
  return p;
}

// JAX's primitive name and operand order where pxl's op differs.
std::string prim_name(Op op) { return op == Op::Select ? "select_n" : op_name(op); }

std::string aval_str(const AVal& a) {
  std::string s = type_str(a);
  return !s.empty() && s[0] == '~' ? s.substr(1) : s;
}

struct Printer {
  const Function& fn;
  JaxprReading rd;
  std::map<int, Tensor> const_values; // value id -> its constant
  std::map<int, std::string> names;
  int next = 0;

  // core._encode_digits_alphabetic
  static std::string encode(int n) {
    std::string s;
    while (s.empty() || n) {
      s.insert(s.begin(), static_cast<char>('a' + n % 26));
      n /= 26;
    }
    return s;
  }
  std::string name(int v) {
    auto it = names.find(v);
    if (it != names.end()) return it->second;
    return names[v] = encode(next++);
  }

  // Literal.pretty_print: str(np.asarray(val).item()) and the short type. A
  // Python scalar that kept its weak type prints as typed; one converted to a
  // strong float prints the float32 value's double digits, as numpy's .item().
  std::string literal(int v) {
    const AVal& aval = fn.values[static_cast<size_t>(v)].aval;
    auto conv = rd.converted_from.find(v);
    int src = conv == rd.converted_from.end() ? v : conv->second;
    auto cv = const_values.find(src);
    std::string s = "?";
    if (cv != const_values.end() && cv->second->concrete) {
      double x = cv->second->concrete->get_f64(0);
      if (aval.dtype == DType::Bool) {
        s = py_bool(x != 0);
      } else if (is_integer(aval.dtype)) {
        s = std::to_string(static_cast<int64_t>(x));
      } else if (aval.dtype == DType::Float32 && (conv != rd.converted_from.end() || !aval.weak)) {
        s = python_float_repr(static_cast<double>(static_cast<float>(x)));
      } else if (aval.dtype == DType::Float32) {
        s = array_str(*cv->second->concrete); // numpy's float32 str: "0.1"
      } else {
        s = python_float_repr(x);
      }
    }
    return s + ":" + aval_str(aval);
  }

  std::string atom(int v) {
    v = rd.stands_for[static_cast<size_t>(v)];
    return rd.literal[static_cast<size_t>(v)] ? literal(v) : name(v);
  }

  // pp_vars: binders carry their types; uses are names (or literals).
  pp::Doc binders(const std::vector<int>& vs) {
    std::vector<pp::Doc> items;
    for (int v : vs)
      items.push_back(pp::text(name(v) + ":" + aval_str(fn.values[static_cast<size_t>(v)].aval)));
    return pp::nest(2,
                    pp::group(pp::join(pp::concat({pp::text(""), pp::group(pp::brk())}), items)));
  }
  pp::Doc uses(const std::vector<int>& vs, const std::string& sep) {
    std::vector<pp::Doc> items;
    for (int v : vs) items.push_back(pp::text(atom(v)));
    return pp::nest(2,
                    pp::group(pp::join(pp::concat({pp::text(sep), pp::group(pp::brk())}), items)));
  }

  pp::Doc eqn(const Instr& i) {
    std::vector<int> outs;
    for (int k = 0; k < i.nresults; ++k) outs.push_back(i.result + k);
    pp::Doc lhs = binders(outs);
    std::vector<int> ins = i.operands;
    if (i.op == Op::Select && ins.size() == 3)
      std::swap(ins[1], ins[2]); // select_n(pred, false, true)
    Params ps = printed_params(i.op, i.attrs, fn.values[static_cast<size_t>(i.result)].aval);
    pp::Doc kv = pp::nil();
    if (!ps.empty()) {
      std::vector<pp::Doc> pairs;
      for (auto& [k, v] : ps) pairs.push_back(pp::text(k + "=" + v));
      kv = pp::group(pp::concat(
          {pp::nest(2, pp::concat({pp::text("["), pp::brk(""), pp::join(pp::brk(), pairs)})),
           pp::brk(""), pp::text("]")}));
    }
    return pp::concat({lhs, pp::text(" = "), pp::text(prim_name(i.op)), kv,
                       pp::concat({pp::text(" "), uses(ins, "")})});
  }

  std::string print() {
    std::vector<int> constvars;
    for (int c : fn.consts)
      if (!rd.literal[static_cast<size_t>(c)]) constvars.push_back(c);
    pp::Doc cs = binders(constvars);
    pp::Doc ins = binders(fn.params);
    std::vector<pp::Doc> eqns;
    for (const Instr* i : rd.eqns) eqns.push_back(eqn(*i));
    pp::Doc outs = pp::concat(
        {pp::text("("), uses(fn.results, ","), pp::text(fn.results.size() != 1 ? ")" : ",)")});
    pp::Doc body = pp::concat({pp::text("{ "), pp::text("lambda "), cs, pp::text("; "), ins,
                               pp::text(". "), pp::text("let"),
                               pp::nest(2, pp::concat({pp::brk(), pp::join(pp::brk("; "), eqns)})),
                               pp::brk(), pp::text("in "), outs});
    return pp::format(pp::group(pp::concat({pp::nest(2, body), pp::text(" }")})));
  }
};

} // namespace

std::string jaxpr_text(const Function& fn, const std::vector<Tensor>& consts) {
  Printer p{fn, read_jaxpr(fn), {}, {}, 0};
  for (size_t k = 0; k < fn.consts.size() && k < consts.size(); ++k)
    p.const_values[fn.consts[k]] = consts[k];
  return p.print();
}

} // namespace pxl
