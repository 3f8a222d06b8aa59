// make_jaxpr(f)(*args)'s text: pxl's IR read as JAX's equations
// (read_jaxpr) and printed with JAX's jaxpr syntax and layout
// (jax._src.core.pp_jaxpr: variables named a, b, ..., z, ba, ...; scalar
// constants as literals `2.0:f32[]`; params as JAX's printing rules show them).
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "ir/custom_call.hpp"
#include "ir/op.hpp"
#include "ir/while_loop.hpp"
#include "lang/jaxpr_record.hpp"
#include "runtime/format.hpp"
#include "stdlib/jaxpr_eqns.hpp"
#include "stdlib/lax_precision.hpp"
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
    if (!a.perm.empty()) { // expand_dims: JAX's broadcast_in_dim
      if (auto dims = expand_broadcast_dims(a); !dims.empty())
        p = {{"broadcast_dimensions", py_seq(dims)}};
    } else if (!a.axes.empty()) // jnp.squeeze, or indexing dropping dimensions
      p = {{"dimensions", py_seq(a.axes)}};
    else
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
  case Op::Round: // pxl's round is jnp.round's: RoundingMethod.TO_NEAREST_EVEN
    p = {{"rounding_method", "1"}};
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
    p = {{"dimension_numbers", "((" + py_seq(a.dot.lhs_contract, true) + ", " +
                                   py_seq(a.dot.rhs_contract, true) + "), (" +
                                   py_seq(a.dot.lhs_batch, true) + ", " +
                                   py_seq(a.dot.rhs_batch, true) + "))"}};
    // JAX's dot_general printing rule leaves out the parameters that are None.
    if (a.dot.precision[0]) p.push_back({"precision", repr(precision_value(a.dot.precision))});
    if (!a.dot.preferred_none) p.push_back({"preferred_element_type", dtype_name(result.dtype)});
    break;
  default:
    break;
  }
  std::sort(p.begin(), p.end());
  return p;
}

// JAX's primitive name and operand order where pxl's op differs.
// custom_jvp_call, custom_vjp_call, linear_call
std::string custom_prim(const CustomCallee& c) {
  return c.kind == "linear_call" ? c.kind : c.kind + "_call";
}

std::string prim_name(const Instr& i) {
  if (i.op == Op::Reshape && !i.attrs.axes.empty()) return "squeeze";
  if (is_expand(i)) return "broadcast_in_dim";
  if (i.op == Op::CustomCall && i.attrs.custom)
    return i.attrs.custom->primitive.empty() ? custom_prim(*i.attrs.custom)
                                             : i.attrs.custom->primitive;
  return i.op == Op::Select ? "select_n" : op_name(i.op);
}

// The primitive instruction `index` of the reading's function shows as.
std::string shown_prim(const Instr& i, const JaxprReading& rd, size_t index) {
  auto r = rd.prim.find(index);
  return r != rd.prim.end() ? r->second : prim_name(i);
}

std::string aval_str(const AVal& a) {
  std::string s = type_str(a);
  return !s.empty() && s[0] == '~' ? s.substr(1) : s;
}

// Which of fn's instructions and recorded regions JAX's jaxpr shows, and
// where (lang/jaxpr_record.hpp). Without a record every kept instruction is
// shown at the top.
struct Structure {
  const Function& fn;
  const JaxprRecord* rec;
  const JaxprReading& rd;
  std::vector<int> innermost;  // per instruction: the deepest region holding it, or -1
  std::vector<char> shown_rgn; // per region: printed (an equation, or a part of one)
  std::vector<char> eqn;       // per instruction: read_jaxpr keeps it
  std::vector<char> hidden;    // per instruction: the record hides it

  Structure(const Function& f, const JaxprRecord* r, const JaxprReading& reading)
      : fn(f), rec(r), rd(reading), innermost(f.body.size(), -1), eqn(f.body.size(), 0) {
    for (const Instr* i : rd.eqns) eqn[static_cast<size_t>(i - f.body.data())] = 1;
    if (!rec) return;
    hidden.assign(f.body.size(), 0);
    for (auto [b, e] : rec->hidden)
      for (size_t i = b; i < e && i < f.body.size(); ++i) hidden[i] = 1;
    const auto& rs = rec->regions;
    shown_rgn.assign(rs.size(), 0);
    for (size_t k = 0; k < rs.size(); ++k) { // (a parent comes before its regions)
      const JaxprRegion& g = rs[k];
      bool ok = g.closed && g.end <= f.body.size() && g.begin <= g.end;
      if (ok && g.parent >= 0) {
        const JaxprRegion& p = rs[static_cast<size_t>(g.parent)];
        ok = shown_rgn[static_cast<size_t>(g.parent)] &&
             (g.prim == "part" ? std::count(p.parts.begin(), p.parts.end(), static_cast<int>(k)) > 0
                               : opens_body(p));
      }
      shown_rgn[k] = ok;
      if (!g.closed) continue;
      for (size_t i = g.begin; i < g.end && i < f.body.size(); ++i)
        innermost[i] = static_cast<int>(k);
    }
  }
  // A region whose instructions are its equation's own jaxpr (jit) or a
  // part's; a cond's or scan's own instructions are pxl's plumbing.
  bool opens_body(const JaxprRegion& g) const { return g.prim != "cond" && g.prim != "scan"; }
  const JaxprRegion& region(int k) const { return rec->regions[static_cast<size_t>(k)]; }
  bool instr_shown(size_t i) const {
    if (!eqn[i]) return false;
    if (!rec) return true;
    if (hidden[i]) return false;
    int k = innermost[i];
    return k < 0 || (shown_rgn[static_cast<size_t>(k)] && opens_body(region(k)));
  }
  // The shown regions directly inside `scope` (-1: the top), in program order.
  std::vector<int> children(int scope) const {
    std::vector<int> out;
    if (!rec) return out;
    for (size_t k = 0; k < rec->regions.size(); ++k)
      if (shown_rgn[k] && region(static_cast<int>(k)).parent == scope &&
          region(static_cast<int>(k)).prim != "part")
        out.push_back(static_cast<int>(k));
    std::stable_sort(out.begin(), out.end(),
                     [&](int a, int b) { return region(a).begin < region(b).begin; });
    return out;
  }
  int resolve(int v) const {
    for (int guard = 0; guard < 64 && v >= 0 && static_cast<size_t>(v) < fn.values.size();
         ++guard) {
      int next = rd.stands_for[static_cast<size_t>(v)];
      if (rec)
        if (auto a = rec->alias.find(next); a != rec->alias.end()) next = a->second;
      if (next == v) break;
      v = next;
    }
    return v;
  }
  bool literal(int v) const {
    return v >= 0 && static_cast<size_t>(v) < fn.values.size() &&
           rd.literal[static_cast<size_t>(v)];
  }
  bool defined_in(const JaxprRegion& g, int v) const {
    if (v < 0 || static_cast<size_t>(v) >= fn.values.size()) return false;
    int p = fn.values[static_cast<size_t>(v)].producer;
    return p >= 0 && static_cast<size_t>(p) >= g.begin && static_cast<size_t>(p) < g.end;
  }
  // The values a region's jaxpr uses from outside (not literals, not its own
  // parameters), in order of first use: the consts JAX's equation takes as
  // extra leading operands. For a cond or scan, its parts' together.
  std::vector<int> free_values(int k) const {
    const JaxprRegion& g = region(k);
    std::vector<int> out;
    auto add = [&](int v) {
      v = resolve(v);
      if (literal(v) || defined_in(g, v)) return;
      if (std::count(g.invars.begin(), g.invars.end(), v)) return;
      if (g.prim != "part" && opens_body(g) && std::count(g.inputs.begin(), g.inputs.end(), v))
        return; // a jit's operand
      if (!std::count(out.begin(), out.end(), v)) out.push_back(v);
    };
    if (!opens_body(g)) {
      for (int p : g.parts)
        if (shown_rgn[static_cast<size_t>(p)])
          for (int v : free_values(p)) add(v);
      return out;
    }
    std::vector<int> kids = children(k);
    size_t next_kid = 0;
    for (size_t i = g.begin; i <= g.end; ++i) {
      for (; next_kid < kids.size() && region(kids[next_kid]).begin <= i; ++next_kid) {
        for (int v : free_values(kids[next_kid])) add(v);
        for (int v : region(kids[next_kid]).inputs) add(v);
      }
      if (i < g.end && innermost[i] == k && instr_shown(i))
        for (int o : fn.body[i].operands) add(o);
    }
    for (int v : g.prim == "part" ? g.outvars : g.outputs) add(v);
    return out;
  }
};

// fn with each value a recorded alias names replaced by the value itself (a
// branch's gated inputs are its inputs in JAX's jaxpr).
Function without_aliases(const Function& f, const JaxprRecord* rec) {
  Function g = f;
  if (!rec || rec->alias.empty()) return g;
  for (Instr& i : g.body)
    for (int& o : i.operands)
      for (int guard = 0; guard < 64; ++guard) {
        auto a = rec->alias.find(o);
        if (a == rec->alias.end()) break;
        o = a->second;
      }
  return g;
}

// The values the record's equations use (kept alive when read_jaxpr drops
// unused steps), and the values sub-jaxpr parameters stand for.
std::vector<int> record_roots(const JaxprRecord* rec, bool parameters_only) {
  std::vector<int> out;
  if (!rec) return out;
  for (const JaxprRegion& g : rec->regions) {
    out.insert(out.end(), g.invars.begin(), g.invars.end());
    if (parameters_only) continue;
    out.insert(out.end(), g.inputs.begin(), g.inputs.end());
    out.insert(out.end(), g.outputs.begin(), g.outputs.end());
    out.insert(out.end(), g.outvars.begin(), g.outvars.end());
  }
  return out;
}

struct Printer {
  Function view; // the traced function, aliases resolved
  const Function& fn;
  JaxprReading rd;
  const JaxprRecord* rec;
  Structure st;
  std::map<int, Tensor> const_values; // value id -> its constant
  std::map<int, std::string> names;
  int own_next = 0;
  int* next = &own_next; // shared with the printers of a while's cond and body
  // Per sub-jaxpr being printed (innermost last): the names its parameters
  // give to the values they stand for, and values renamed after a jit whose
  // result is one of its operands (a new variable in JAX's jaxpr).
  struct Scope {
    std::map<int, std::string> names;
    std::map<int, int> renamed;
  };
  std::vector<Scope> scopes{Scope{}};
  std::map<int, AVal> synthetic;     // binders with no value of their own (id >= values.size())
  std::map<int, std::string> shared; // jit regions printed before the jaxpr: `let name = ...`
  std::vector<int> uses;             // per value: shown uses
  std::set<int> dropped;             // binders printed as `_`

  Printer(const Function& f, const JaxprRecord* r, const std::vector<Tensor>* consts = nullptr)
      : view(without_aliases(f, r)), fn(view),
        rd(read_jaxpr(view, record_roots(r, false), record_roots(r, true), consts)), rec(r),
        st(view, r, rd), uses(f.values.size(), 0) {
    count_uses(-1);
    for (int v : fn.results) use(v);
  }

  void use(int v) {
    v = st.resolve(v);
    if (v >= 0 && static_cast<size_t>(v) < uses.size()) ++uses[static_cast<size_t>(v)];
  }
  void count_uses(int scope) {
    for (size_t i = 0; i < fn.body.size(); ++i)
      if (st.instr_shown(i))
        for (int o : fn.body[i].operands) use(o);
    if (!rec) return;
    for (size_t k = 0; k < rec->regions.size(); ++k) {
      if (!st.shown_rgn[k]) continue;
      const JaxprRegion& g = rec->regions[k];
      if (g.prim == "part") {
        for (int v : g.outvars) use(v);
        continue;
      }
      for (int v : g.inputs) use(v);
      for (int v : st.free_values(static_cast<int>(k))) use(v);
    }
    (void)scope;
  }

  // core._encode_digits_alphabetic
  static std::string encode(int n) {
    std::string s;
    while (s.empty() || n) {
      s.insert(s.begin(), static_cast<char>('a' + n % 26));
      n /= 26;
    }
    return s;
  }
  std::string fresh() { return encode((*next)++); }
  std::string name(int v) {
    if (auto it = scopes.back().names.find(v); it != scopes.back().names.end()) return it->second;
    auto it = names.find(v);
    if (it != names.end()) return it->second;
    return names[v] = fresh();
  }
  const AVal& aval_of(int v) const {
    if (auto s = synthetic.find(v); s != synthetic.end()) return s->second;
    if (auto r = rd.retyped.find(v); r != rd.retyped.end()) return r->second;
    return fn.values[static_cast<size_t>(v)].aval;
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
    v = st.resolve(v);
    const Scope& sc = scopes.back();
    if (auto r = sc.renamed.find(v); r != sc.renamed.end()) v = r->second;
    if (sc.names.count(v) || synthetic.count(v)) return name(v);
    return st.literal(v) ? literal(v) : name(v);
  }

  // pp_vars: binders carry their types (an unused one is JAX's `_`); uses are
  // names (or literals).
  pp::Doc var_list(const std::vector<pp::Doc>& items) {
    return pp::nest(2,
                    pp::group(pp::join(pp::concat({pp::text(""), pp::group(pp::brk())}), items)));
  }
  pp::Doc binder(int v, bool may_drop) {
    bool unused = may_drop && !synthetic.count(v) && static_cast<size_t>(v) < uses.size() &&
                  uses[static_cast<size_t>(v)] == 0;
    if (unused) dropped.insert(st.resolve(v));
    return pp::text((unused ? std::string("_") : name(v)) + ":" + aval_str(aval_of(v)));
  }
  pp::Doc binders(const std::vector<int>& vs, bool may_drop = false) {
    std::vector<pp::Doc> items;
    for (int v : vs) items.push_back(binder(v, may_drop));
    return var_list(items);
  }
  static pp::Doc joined(const std::vector<pp::Doc>& items, const std::string& sep) {
    return pp::nest(2,
                    pp::group(pp::join(pp::concat({pp::text(sep), pp::group(pp::brk())}), items)));
  }
  pp::Doc uses_doc(const std::vector<int>& vs, const std::string& sep) {
    std::vector<pp::Doc> items;
    for (int v : vs) items.push_back(pp::text(atom(v)));
    return joined(items, sep);
  }

  // pp_kv_pairs: `[k=v k=v]`, a group that breaks one pair per line.
  static pp::Doc kv_pairs(const std::vector<pp::Doc>& pairs) {
    if (pairs.empty()) return pp::nil();
    return pp::group(pp::concat(
        {pp::nest(2, pp::concat({pp::text("["), pp::brk(""), pp::join(pp::brk(), pairs)})),
         pp::brk(""), pp::text("]")}));
  }
  pp::Doc eqn_doc(pp::Doc lhs, const std::string& prim, pp::Doc kv, const std::vector<int>& ins) {
    return pp::concat(
        {lhs, pp::text(" = "), pp::text(prim), kv, pp::concat({pp::text(" "), uses_doc(ins, "")})});
  }

  // A while's cond or body as its own jaxpr: the parameters `f` takes
  // from `operands` that are literals print inline, as in JAX's jaxpr where
  // a captured Python number is a literal; `kept` counts the constants left.
  pp::Doc loop_jaxpr(const Function& f, size_t nconsts, std::span<const int> operands,
                     size_t& kept) {
    Function g = f;
    std::map<int, Tensor> values;
    std::vector<int> params;
    kept = 0;
    for (size_t p = 0; p < g.params.size(); ++p) {
      int outer = p < operands.size() ? st.resolve(operands[p]) : -1;
      if (p < nconsts && st.literal(outer)) {
        auto conv = rd.converted_from.find(outer);
        auto cv = const_values.find(conv == rd.converted_from.end() ? outer : conv->second);
        if (cv != const_values.end()) {
          g.consts.push_back(g.params[p]);
          values[g.params[p]] = cv->second;
          continue;
        }
      }
      params.push_back(g.params[p]);
      if (p < nconsts) ++kept;
    }
    g.params = params;
    Printer sub(g, nullptr);
    sub.next = next;
    sub.const_values = values;
    return sub.top_doc();
  }

  pp::Doc while_eqn(const Instr& i) {
    const WhileLoop& w = *i.attrs.loop;
    std::vector<int> outs;
    for (int k = 0; k < i.nresults; ++k) outs.push_back(i.result + k);
    pp::Doc lhs = binders(outs, true);
    const size_t nc = static_cast<size_t>(w.cond_nconsts), nb = static_cast<size_t>(w.body_nconsts);
    std::span<const int> ops(i.operands);
    std::vector<int> carry(i.operands.begin() + static_cast<long>(nc + nb), i.operands.end());
    std::vector<int> body_ops(ops.begin() + static_cast<long>(nc), ops.end());
    std::vector<int> cond_ops(ops.begin(), ops.begin() + static_cast<long>(nc));
    cond_ops.insert(cond_ops.end(), carry.begin(), carry.end());
    size_t body_kept = 0, cond_kept = 0;
    // (JAX sorts the params: the body's jaxpr is named first.)
    pp::Doc body = loop_jaxpr(*w.body, nb, body_ops, body_kept);
    pp::Doc cond = loop_jaxpr(*w.cond, nc, cond_ops, cond_kept);
    std::vector<int> ins;
    auto keep_consts = [&](std::span<const int> consts) {
      for (int v : consts)
        if (!st.literal(st.resolve(v))) ins.push_back(v);
    };
    keep_consts(ops.subspan(0, nc));
    keep_consts(ops.subspan(nc, nb));
    ins.insert(ins.end(), carry.begin(), carry.end());
    std::vector<pp::Doc> pairs = {pp::concat({pp::text("body_jaxpr="), body}),
                                  pp::text("body_nconsts=" + std::to_string(body_kept)),
                                  pp::concat({pp::text("cond_jaxpr="), cond}),
                                  pp::text("cond_nconsts=" + std::to_string(cond_kept))};
    return eqn_doc(lhs, "while", kv_pairs(pairs), ins);
  }

  // A custom_jvp/custom_vjp function's call: JAX's custom_jvp_call with the
  // primal's jaxpr (fresh parameters), or the lax primitive it implements.
  pp::Doc custom_eqn(const Instr& i) {
    const CustomCallee& c = *i.attrs.custom;
    std::vector<int> outs;
    for (int k = 0; k < i.nresults; ++k) outs.push_back(i.result + k);
    pp::Doc lhs = binders(outs, true);
    if (!c.primitive.empty()) { // (its argument leaves; the rest are what the primal captured)
      std::vector<pp::Doc> kv;  // the op's params (custom_jvp _params), if the stdlib gives them
      for (const auto& [k, v] : c.jaxpr_params) kv.push_back(pp::text(k + "=" + v));
      return eqn_doc(lhs, c.primitive, kv_pairs(kv),
                     std::vector<int>(i.operands.begin(),
                                      i.operands.begin() + static_cast<long>(std::min(
                                                               c.num_args, i.operands.size()))));
    }
    std::vector<std::pair<std::string, pp::Doc>> pairs;
    for (const auto& [k, v] : c.jaxpr_params) pairs.push_back({k, pp::text(k + "=" + v)});
    size_t kept = 0;
    pp::Doc call = loop_jaxpr(*c.fn, c.fn->params.size(), i.operands, kept);
    pairs.push_back({"call_jaxpr", pp::concat({pp::text("call_jaxpr="), call})});
    std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
      if ((a.first == "name") != (b.first == "name")) return a.first == "name";
      return a.first < b.first;
    });
    std::vector<pp::Doc> docs;
    std::vector<int> ins;
    for (size_t k = 0; k < i.operands.size(); ++k)
      if (!st.literal(st.resolve(i.operands[k]))) ins.push_back(i.operands[k]);
    for (auto& kv : pairs) docs.push_back(kv.second);
    return eqn_doc(lhs, custom_prim(c), kv_pairs(docs), ins);
  }

  pp::Doc eqn(const Instr& i) {
    if (i.op == Op::While && i.attrs.loop) return while_eqn(i);
    if (i.op == Op::CustomCall && i.attrs.custom) return custom_eqn(i);
    std::vector<int> outs;
    for (int k = 0; k < i.nresults; ++k) outs.push_back(i.result + k);
    pp::Doc lhs = binders(outs, true);
    std::vector<int> ins = i.operands;
    if (i.op == Op::Select && ins.size() == 3)
      std::swap(ins[1], ins[2]); // select_n(pred, false, true)
    const size_t index = static_cast<size_t>(&i - fn.body.data());
    Params ps;
    if (!rd.prim.count(index))
      ps = printed_params(i.op, i.attrs, fn.values[static_cast<size_t>(i.result)].aval);
    std::vector<pp::Doc> pairs;
    for (auto& [k, v] : ps) pairs.push_back(pp::text(k + "=" + v));
    return eqn_doc(lhs, shown_prim(i, rd, index), kv_pairs(pairs), ins);
  }

  // The equations of a scope (-1: the top jaxpr) in program order.
  std::vector<pp::Doc> eqns_of(int scope, size_t begin, size_t end) {
    std::vector<pp::Doc> out;
    std::vector<int> kids = st.children(scope);
    size_t next_kid = 0;
    for (size_t i = begin; i <= end; ++i) {
      for (; next_kid < kids.size() && st.region(kids[next_kid]).begin <= i; ++next_kid)
        out.push_back(region_eqn(kids[next_kid]));
      if (i < end && (scope < 0 ? (!rec || st.innermost[i] < 0) : st.innermost[i] == scope) &&
          st.instr_shown(i))
        out.push_back(eqn(fn.body[i]));
    }
    return out;
  }

  // pp_jaxpr_skeleton
  pp::Doc skeleton(pp::Doc constvars, pp::Doc invars, const std::vector<pp::Doc>& eqns,
                   const std::vector<int>& outvars) {
    // A sub-jaxpr's result the program never uses is `_` here too, as its
    // binder is (JAX names a jaxpr's dropped variables once, for all scopes).
    std::vector<pp::Doc> out_items;
    for (int v : outvars)
      out_items.push_back(pp::text(dropped.count(st.resolve(v)) ? std::string("_") : atom(v)));
    pp::Doc outs = pp::concat(
        {pp::text("("), joined(out_items, ","), pp::text(outvars.size() != 1 ? ")" : ",)")});
    pp::Doc body = pp::concat({pp::text("{ "), pp::text("lambda "), constvars, pp::text("; "),
                               invars, pp::text(". "), pp::text("let"),
                               pp::nest(2, pp::concat({pp::brk(), pp::join(pp::brk("; "), eqns)})),
                               pp::brk(), pp::text("in "), outs});
    return pp::group(pp::concat({pp::nest(2, body), pp::text(" }")}));
  }

  // Region k's jaxpr with fresh parameters for `consts`, then for the values
  // its invars stand for, returning `outs`: a part's (a cond branch, a scan
  // body) or a hoisted jit's.
  pp::Doc fresh_params_jaxpr(int k, const std::vector<int>& consts, const std::vector<int>& outs) {
    const JaxprRegion& g = st.region(k);
    Scope sc;
    std::vector<pp::Doc> params;
    auto bind = [&](int v) {
      v = st.resolve(v);
      std::string n = fresh();
      if (!sc.names.count(v)) sc.names[v] = n;
      params.push_back(pp::text(n + ":" + aval_str(aval_of(v))));
    };
    for (int v : consts) bind(v);
    for (int v : g.invars) bind(v);
    scopes.push_back(sc);
    pp::Doc doc = skeleton(pp::nil(), var_list(params), eqns_of(k, g.begin, g.end), outs);
    scopes.pop_back();
    return doc;
  }
  pp::Doc part_jaxpr(int k, const std::vector<int>& consts) {
    return fresh_params_jaxpr(k, consts, st.region(k).outvars);
  }

  // The lhs of a region's equation: its results, each a new variable (one
  // that is an operand, a literal or repeated gets a variable of its own).
  pp::Doc region_lhs(const JaxprRegion& g, bool hoisted, std::vector<int>& binder_ids) {
    std::vector<pp::Doc> items;
    for (int v : g.outputs) {
      int r = st.resolve(v);
      bool own =
          !hoisted && st.defined_in(g, r) && !std::count(binder_ids.begin(), binder_ids.end(), r);
      if (!own) {
        int id = static_cast<int>(fn.values.size() + synthetic.size());
        synthetic[id] = aval_of(r);
        r = id;
      }
      binder_ids.push_back(r);
      items.push_back(binder(r, true));
    }
    return var_list(items);
  }

  pp::Doc region_eqn(int k) {
    const JaxprRegion& g = st.region(k);
    std::vector<int> binder_ids;
    auto hoisted = shared.find(k);
    pp::Doc lhs = region_lhs(g, hoisted != shared.end(), binder_ids);
    std::vector<int> consts = st.free_values(k);
    std::vector<std::pair<std::string, pp::Doc>> pairs;
    for (auto& [key, v] : g.params) pairs.push_back({key, pp::text(key + "=" + v)});
    std::vector<int> ins;
    if (g.prim == "cond") {
      // cond[branches=(...)] index *consts *operands
      std::vector<pp::Doc> branches;
      for (int p : g.parts) branches.push_back(part_jaxpr(p, consts));
      pp::Doc tuple = pp::group(pp::concat(
          {pp::nest(2, pp::concat({pp::text("("), pp::brk(""), pp::join(pp::brk(), branches)})),
           pp::brk(""), pp::text(")")}));
      pairs.push_back({"branches", pp::concat({pp::text("branches="), tuple})});
      if (!g.inputs.empty()) ins.push_back(g.inputs[0]);
      ins.insert(ins.end(), consts.begin(), consts.end());
      ins.insert(ins.end(), g.inputs.begin() + (g.inputs.empty() ? 0 : 1), g.inputs.end());
    } else if (g.prim == "scan") {
      if (!g.parts.empty())
        pairs.push_back(
            {"jaxpr", pp::concat({pp::text("jaxpr="), part_jaxpr(g.parts[0], consts)})});
      pairs.push_back({"num_consts", pp::text("num_consts=" + std::to_string(consts.size()))});
      ins = consts;
      ins.insert(ins.end(), g.inputs.begin(), g.inputs.end());
    } else if (hoisted != shared.end()) { // printed before the jaxpr
      ins = consts;
      ins.insert(ins.end(), g.inputs.begin(), g.inputs.end());
      pairs.push_back({"jaxpr", pp::text("jaxpr=" + hoisted->second)});
    } else { // jit, checkpoint: the body's parameters are named as the operands
      ins = consts;
      ins.insert(ins.end(), g.inputs.begin(), g.inputs.end());
      Scope sc;
      std::vector<pp::Doc> params;
      std::vector<std::string> taken;
      for (size_t p = 0; p < ins.size(); ++p) {
        // consts stand for themselves; operands for the body's parameters
        // (a region opened by hand, lax._jaxpr_begin, has none: then the
        // operand itself)
        size_t q = p - consts.size();
        int inner = p < consts.size() ? consts[p] : q < g.invars.size() ? g.invars[q] : ins[p];
        int r = st.resolve(inner);
        std::string outer = atom(ins[p]);
        bool shared =
            !st.literal(st.resolve(ins[p])) && !std::count(taken.begin(), taken.end(), outer);
        std::string n = shared ? outer : fresh();
        taken.push_back(n);
        if (!sc.names.count(r)) sc.names[r] = n;
        params.push_back(pp::text(n + ":" + aval_str(aval_of(r))));
      }
      // Results named as the equation's binders.
      for (size_t o = 0; o < g.outputs.size(); ++o) {
        int r = st.resolve(g.outputs[o]);
        if (st.defined_in(g, r) && !sc.names.count(r) && binder_ids[o] == r && !dropped.count(r))
          sc.names[r] = name(r);
      }
      scopes.push_back(sc);
      pp::Doc body = skeleton(pp::nil(), var_list(params), eqns_of(k, g.begin, g.end), g.outputs);
      scopes.pop_back();
      pairs.push_back({"jaxpr", pp::concat({pp::text("jaxpr="), body})});
    }
    // JAX sorts params by name; jit's pp rule moves name= to the front.
    std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
      if ((a.first == "name") != (b.first == "name")) return a.first == "name";
      return a.first < b.first;
    });
    std::vector<pp::Doc> docs;
    for (auto& kv : pairs) docs.push_back(kv.second);
    pp::Doc doc = eqn_doc(lhs, g.prim, kv_pairs(docs), ins);
    // Later uses of a result that was no value of its own name its binder.
    for (size_t o = 0; o < g.outputs.size(); ++o) {
      int r = st.resolve(g.outputs[o]);
      if (binder_ids[o] != r && !scopes.back().renamed.count(r))
        scopes.back().renamed[r] = binder_ids[o];
    }
    return doc;
  }

  pp::Doc top_doc() {
    std::vector<int> constvars;
    for (int c : fn.consts)
      if (!rd.literal[static_cast<size_t>(c)]) constvars.push_back(c);
    pp::Doc cs = binders(constvars);
    pp::Doc ins = binders(fn.params);
    std::vector<pp::Doc> eqns = eqns_of(-1, 0, fn.body.size());
    return skeleton(cs, ins, eqns, fn.results);
  }
  // The equations a region's own jaxpr shows (as eqns_of lists them).
  size_t eqn_count(int k) const {
    const JaxprRegion& g = st.region(k);
    size_t n = st.children(k).size();
    for (size_t i = g.begin; i < g.end && i < fn.body.size(); ++i)
      n += st.innermost[i] == k && st.instr_shown(i);
    return n;
  }

  // pp_toplevel_jaxpr: a sub-jaxpr of more than 10 equations is printed
  // first, as `let name = { lambda ... } in`, and named by its equation (a
  // jit's name=, else "jaxpr"; repeated names numbered); found breadth first.
  std::vector<int> hoist() {
    std::vector<int> order;
    if (!rec) return order;
    std::map<std::string, int> taken;
    std::vector<int> queue{-1};
    for (size_t q = 0; q < queue.size(); ++q)
      for (int c : st.children(queue[q])) {
        const JaxprRegion& g = st.region(c);
        if (!st.opens_body(g)) {
          for (int p : g.parts)
            if (st.shown_rgn[static_cast<size_t>(p)]) queue.push_back(p);
          continue;
        }
        queue.push_back(c);
        if (eqn_count(c) <= 10) continue;
        std::string name = "jaxpr";
        for (const auto& [k, v] : g.params)
          if (k == "name") name = v;
        std::erase(name, '<'), std::erase(name, '>');
        if (int n = taken[name]++; n > 0) name += std::to_string(n), ++taken[name];
        shared[c] = name;
        order.push_back(c);
      }
    return order;
  }
  std::string print() {
    std::vector<pp::Doc> docs;
    for (int k : hoist())
      docs.push_back(pp::concat({pp::text("let " + shared[k] + " = "),
                                 fresh_params_jaxpr(k, st.free_values(k), st.region(k).outputs),
                                 pp::text(" in"), pp::brk()}));
    docs.push_back(top_doc());
    return pp::format(pp::concat(docs));
  }
};

} // namespace

std::vector<JaxprTopEqn> jaxpr_top_eqns(const Function& fn, const JaxprRecord* record,
                                        const std::vector<Tensor>& consts) {
  Function view = without_aliases(fn, record);
  JaxprReading rd =
      read_jaxpr(view, record_roots(record, false), record_roots(record, true), &consts);
  Structure st(view, record, rd);
  std::vector<JaxprTopEqn> out;
  std::vector<int> kids = st.children(-1);
  size_t next_kid = 0;
  for (size_t i = 0; i <= view.body.size(); ++i) {
    for (; next_kid < kids.size() && st.region(kids[next_kid]).begin <= i; ++next_kid) {
      const JaxprRegion& g = st.region(kids[next_kid]);
      JaxprTopEqn e;
      e.region = &g;
      std::vector<int> consts = st.free_values(kids[next_kid]);
      if (g.prim == "cond" && !g.inputs.empty()) {
        e.ins = {g.inputs[0]};
        e.ins.insert(e.ins.end(), consts.begin(), consts.end());
        e.ins.insert(e.ins.end(), g.inputs.begin() + 1, g.inputs.end());
      } else {
        e.ins = consts;
        e.ins.insert(e.ins.end(), g.inputs.begin(), g.inputs.end());
      }
      e.outs = g.outputs;
      out.push_back(std::move(e));
    }
    if (i < view.body.size() && (!record || st.innermost[i] < 0) && st.instr_shown(i)) {
      JaxprTopEqn e;
      e.instr = &fn.body[i];
      e.prim = shown_prim(fn.body[i], rd, i);
      e.renamed = rd.prim.count(i) > 0;
      out.push_back(std::move(e));
    }
  }
  for (JaxprTopEqn& e : out)
    if (e.region) e.prim = e.region->prim;
  return out;
}

std::string jaxpr_text(const Function& fn, const std::vector<Tensor>& consts,
                       const JaxprRecord* record) {
  Printer p(fn, record, &consts);
  for (size_t k = 0; k < fn.consts.size() && k < consts.size(); ++k)
    p.const_values[fn.consts[k]] = consts[k];
  return p.print();
}

} // namespace pxl
