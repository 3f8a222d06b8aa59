// make_jaxpr(f)(*args)'s text: pxl's IR read as JAX's equations
// (read_jaxpr) and printed with JAX's jaxpr syntax and layout
// (jax._src.core.pp_jaxpr: variables named a, b, ..., z, ba, ...; scalar
// constants as literals `2.0:f32[]`; params as JAX's printing rules show them).
#include <algorithm>
#include <charconv>
#include <complex>
#include <map>
#include <set>
#include <utility>

#include "ir/custom_call.hpp"
#include "ir/op.hpp"
#include "ir/while_loop.hpp"
#include "lang/jaxpr_record.hpp"
#include "runtime/format.hpp"
#include "runtime/spmd_call.hpp"
#include "stdlib/custom_derivatives.hpp"
#include "stdlib/jaxpr_eqns.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/jaxpr_spmd.hpp"
#include "stdlib/jaxpr_view.hpp"
#include "stdlib/lax_precision.hpp"
#include "stdlib/pretty_doc.hpp"

namespace pxl {

namespace {

using Params = JaxprParams;

// An int as Python prints it; `numpy`: a numpy int, np.int64(n).
std::string py_int(int64_t v, bool numpy) {
  return numpy ? "np.int64(" + std::to_string(v) + ")" : std::to_string(v);
}

// A tuple of such ints.
std::string ints_seq(const std::vector<int64_t>& xs, bool numpy) {
  if (!numpy) return py_seq(xs);
  std::string s = "(";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + py_int(xs[i], true);
  return s + (xs.size() == 1 ? ",)" : ")");
}

// The params JAX prints for the primitive (after its pp_eqn rule drops the
// trivial ones: accuracy=None, out_dtype=None, sharding, a broadcast's shape).
Params printed_params(Op op, const OpAttrs& a, const AVal& result) {
  Params p;
  switch (op) {
  case Op::ReduceSum:
    p = {{"axes", ints_seq(a.axes, a.numpy_ints & 1)}, {"out_sharding", "None"}};
    break;
  case Op::ReduceMax:
  case Op::ReduceMin:
  case Op::ReduceProd:
  case Op::ReduceAnd:
  case Op::ReduceOr:
    p = {{"axes", ints_seq(a.axes, a.numpy_ints & 1)}};
    break;
  case Op::Argmax:
  case Op::Argmin:
    p = {{"axes", ints_seq({a.axis}, a.numpy_ints & 1)}, {"index_dtype", dtype_name(a.dtype)}};
    break;
  case Op::BroadcastInDim:
    if (!a.axes.empty()) p = {{"broadcast_dimensions", ints_seq(a.axes, a.numpy_ints & 1)}};
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
  case Op::Argsort: // (pxl's: JAX sorts the operand with an iota)
    p = {{"dimension", std::to_string(a.axis)}};
    break;
  case Op::Round: // pxl's round is jnp.round's: RoundingMethod.TO_NEAREST_EVEN
    p = {{"rounding_method", "1"}};
    break;
  case Op::Concatenate:
    p = {{a.stacked ? "axis" : "dimension", std::to_string(a.axis)}};
    break;
  case Op::Rev:
    p = {{"dimensions", py_seq(a.axes)}};
    break;
  case Op::Pad: {
    std::string cfg = "(";
    auto n = [&](int64_t v, int bit) { return py_int(v, a.numpy_ints & (1 << bit)); };
    for (size_t i = 0; i < a.lo.size(); ++i)
      cfg += (i ? ", " : "") + std::string("(") + n(a.lo[i], 0) + ", " + n(a.hi[i], 1) + ", " +
             n(a.interior[i], 2) + ")";
    p = {{"padding_config", cfg + (a.lo.size() == 1 ? ",)" : ")")}};
    break;
  }
  case Op::Slice: {
    bool unit = std::all_of(a.strides.begin(), a.strides.end(), [](int64_t s) { return s == 1; });
    p = {{"limit_indices", ints_seq(a.limits, a.numpy_ints & 2)},
         {"start_indices", ints_seq(a.starts, a.numpy_ints & 1)},
         {"strides", unit && !(a.numpy_ints & 4) ? "None" : ints_seq(a.strides, a.numpy_ints & 4)}};
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
  // JAX 0.10's pmap is a jit (named _fun) of a shard_map.
  if (i.op == Op::SpmdCall && i.attrs.callee)
    return i.attrs.callee->kind == "pmap" ? "jit" : "shard_map";
  if (i.op == Op::Reshape && !i.attrs.axes.empty()) return "squeeze";
  if (is_expand(i)) return "broadcast_in_dim";
  if (i.op == Op::Concatenate && i.attrs.stacked) return "stack";
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
  bool opens_body(const JaxprRegion& g) const {
    return g.prim != "cond" && g.prim != "scan" && !g.opaque;
  }
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
  if (!parameters_only) out.insert(out.end(), rec->kept.begin(), rec->kept.end());
  return out;
}

// The value a scalar-constant operand of a shard_map equation stands for,
// which its body takes as a literal; null for any other operand.
const Tensor* inlined_constant(int v, const Structure& st, const JaxprReading& rd,
                               const std::map<int, Tensor>& const_values) {
  v = st.resolve(v);
  if (!st.literal(v)) return nullptr;
  auto conv = rd.converted_from.find(v);
  auto cv = const_values.find(conv == rd.converted_from.end() ? v : conv->second);
  return cv == const_values.end() ? nullptr : &cv->second;
}

// An SPMD call's operands (positions in the instruction and the callee's
// mappings) as its shard_map equation takes them: the constants its trace
// captured first (the callee's trailing params), then the arguments; the
// scalar constants its body takes as literals are `inlined` instead.
struct SpmdOperands {
  std::vector<size_t> taken, inlined;
};
SpmdOperands spmd_operands(const Instr& i, const Structure& st, const JaxprReading& rd,
                           const std::map<int, Tensor>& const_values) {
  const SpmdCallee& c = *i.attrs.callee;
  const size_t np = std::min({c.fn->params.size(), i.operands.size(), c.ins.size()});
  const size_t nargs = np - std::min(c.num_consts, np);
  SpmdOperands out;
  for (size_t p = nargs; p < np; ++p)
    (inlined_constant(i.operands[p], st, rd, const_values) ? out.inlined : out.taken).push_back(p);
  for (size_t p = 0; p < nargs; ++p) out.taken.push_back(p);
  return out;
}

struct Printer {
  JaxprView view; // the traced function as the record says JAX shows it
  const Function& fn;
  JaxprReading rd;
  const JaxprRecord* rec;
  Structure st;
  std::map<int, Tensor> const_values; // value id -> its constant
  std::map<int, std::string> names;
  int own_next = 0;
  int* next = &own_next; // shared with the printers of a while's cond and body
  std::set<std::string> own_hoisted_names;
  std::set<std::string>* hoisted_names = &own_hoisted_names; // (shared so too)
  // Per sub-jaxpr being printed (innermost last): the names its parameters
  // give to the values they stand for, and values renamed after a jit whose
  // result is one of its operands (a new variable in JAX's jaxpr).
  struct Scope {
    std::map<int, std::string> names;
    std::map<int, int> renamed;
  };
  std::vector<Scope> scopes{Scope{}};
  std::map<int, AVal> synthetic; // binders with no value of their own (id >= values.size())
  // Regions printed before the jaxpr, `let name = ...`: jit bodies, and the
  // parts (a scan's body, a cond's branches) of more than 10 equations.
  std::map<int, std::string> shared;
  std::set<int> printing_hoisted; // the hoisted part being printed at the top
  // A while's cond (0) or body (1) of more than 10 equations, by instruction:
  // printed before the jaxpr under this name.
  std::map<std::pair<size_t, int>, std::string> hoisted_loops;
  std::vector<int> uses; // per value: shown uses
  std::set<int> dropped; // binders printed as `_`
  // Printing a shard_map's body: its call. Where it checks vma, types show
  // their varying axes and JAX's implicit pvary casts are equations.
  const SpmdCallee* spmd = nullptr;
  std::map<int, AxisSet> synthetic_vma; // the synthetic binders' varying axes
  std::map<int, int> cast;              // operand -> its pvary, in the equation being printed
  std::map<size_t, std::string> hoisted_bodies; // SpmdCall instruction -> its `let` name
  size_t emitted = 0;                           // equations printed (counted for hoisting)
  SpmdBodyReading body_reading;                 // a shard_map body's (stdlib/jaxpr_spmd.hpp)
  // Unused binders print as `_` (JAX's _dropvars), which JAX does in the
  // top-level jaxpr's equations only, not in a shard_map's body.
  bool drop_unused = true;

  Printer(const Function& f, const JaxprRecord* r, const std::vector<Tensor>* consts = nullptr)
      : view(jaxpr_view(f, r)), fn(view.fn),
        rd(read_jaxpr(fn, record_roots(view.rec, false), record_roots(view.rec, true), consts)),
        rec(view.rec), st(fn, rec, rd), uses(f.values.size(), 0) {
    name_add_any(view, rd);
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
  // (Names of jaxprs hoisted before the jaxpr are no variable's, as JAX's.)
  std::string fresh() {
    std::string n = encode((*next)++);
    while (hoisted_names->count(n)) n = encode((*next)++);
    return n;
  }
  std::string name(int v) {
    if (auto it = scopes.back().names.find(v); it != scopes.back().names.end()) return it->second;
    auto it = names.find(v);
    if (it != names.end()) return it->second;
    return names[v] = fresh();
  }
  AxisSet vma_of(int v) const {
    if (auto s = synthetic_vma.find(v); s != synthetic_vma.end()) return s->second;
    return body_reading.vma(fn, v);
  }
  bool checks_vma() const { return spmd && spmd->check_vma; }
  // A binder's or parameter's type: JAX's short form, with the varying,
  // unreduced and reduced axes in a shard_map that checks them.
  std::string type_of(int v) {
    std::string s = aval_str(aval_of(v));
    if (!checks_vma()) return s;
    IRValue mat;
    mat.vma = vma_of(v);
    if (!synthetic_vma.count(v) && v >= 0 && static_cast<size_t>(v) < fn.values.size()) {
      const IRValue& iv = fn.values[static_cast<size_t>(v)];
      mat.unreduced = iv.unreduced, mat.reduced = iv.reduced;
    }
    return s + mat_suffix(fn, mat);
  }
  // A synthetic binder (a pvary, a pmap body's squeeze or broadcast).
  int add_synthetic(const AVal& a, AxisSet vma) {
    int id = static_cast<int>(fn.values.size() + synthetic.size());
    synthetic[id] = a;
    synthetic_vma[id] = vma;
    return id;
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
    if (rec && aval.weak && rec->python_floats.count(src)) { // a Python float passed to a jit
      s = python_float_repr(rec->python_floats.at(src));
    } else if (cv != const_values.end() && cv->second->concrete) {
      double x = cv->second->concrete->get_f64(0);
      if (aval.dtype == DType::Bool) {
        s = py_bool(x != 0);
      } else if (is_complex(aval.dtype)) { // .item() of a complex64: Python's complex
        const Array& c = *cv->second->concrete;
        std::complex<float> z = is_complex(c.dtype()) ? c.as<std::complex<float>>()[0]
                                                      : std::complex<float>(static_cast<float>(x));
        s = python_complex_repr(z.real(), z.imag());
      } else if (is_integer(aval.dtype)) { // (a Python int converted wraps, as numpy's)
        s = std::to_string(wrap_to(aval.dtype, static_cast<int64_t>(x)));
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
    if (auto c = cast.find(v); c != cast.end()) return name(c->second);
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
    // JAX's _dropvars: the top-level jaxpr's unused binders; a sub-jaxpr's
    // binder prints as `_` only where it stands for one of those.
    bool unused = may_drop && drop_unused && !synthetic.count(v) &&
                  (scopes.size() == 1
                       ? static_cast<size_t>(v) < uses.size() && uses[static_cast<size_t>(v)] == 0
                       : dropped.count(st.resolve(v)) > 0);
    if (unused) dropped.insert(st.resolve(v));
    return pp::text((unused ? std::string("_") : name(v)) + ":" + type_of(v));
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
  // (`no_results`: an equation with none prints as JAX's, without ` = `.)
  pp::Doc eqn_doc(pp::Doc lhs, const std::string& prim, pp::Doc kv, const std::vector<int>& ins,
                  bool no_results = false) {
    std::vector<std::string> names;
    for (int v : ins) names.push_back(atom(v));
    return eqn_doc(std::move(lhs), prim, std::move(kv), names, no_results);
  }
  static pp::Doc eqn_doc(pp::Doc lhs, const std::string& prim, pp::Doc kv,
                         const std::vector<std::string>& ins, bool no_results = false) {
    std::vector<pp::Doc> items;
    for (const std::string& n : ins) items.push_back(pp::text(n));
    pp::Doc head = no_results ? pp::text(prim) : pp::concat({lhs, pp::text(" = "), pp::text(prim)});
    return pp::concat({head, kv, pp::concat({pp::text(" "), joined(items, "")})});
  }

  // A while's cond or body as its own jaxpr: the parameters `f` takes
  // from `operands` that are literals print inline, as in JAX's jaxpr where
  // a captured Python number is a literal; `kept` counts the constants left.
  // `fold_from`: the first parameter that a literal operand may be folded into (the ones
  // before it stay parameters, their literals shown as the equation's operands).
  pp::Doc loop_jaxpr(const Function& f, size_t nconsts, std::span<const int> operands, size_t& kept,
                     const JaxprRecord* record = nullptr, size_t* count = nullptr,
                     size_t fold_from = 0) {
    Function g = f;
    std::map<int, Tensor> values;
    std::vector<int> params;
    kept = 0;
    for (size_t p = 0; p < g.params.size(); ++p) {
      int outer = p < operands.size() ? st.resolve(operands[p]) : -1;
      if (p >= fold_from && p < nconsts && st.literal(outer)) {
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
    // (The folded literals' values, in g.consts' order: the reading knows a
    // reciprocal's 1 among them.)
    std::vector<Tensor> folded;
    for (int c : g.consts) {
      auto v = values.find(c);
      folded.push_back(v == values.end() ? nullptr : v->second);
    }
    Printer sub(g, record, &folded);
    sub.next = next;
    sub.hoisted_names = hoisted_names;
    sub.const_values = values;
    sub.drop_unused = false; // (a sub-jaxpr names its unused values)
    if (count) {             // its number of equations, naming nothing
      const int saved = *next;
      *count = sub.eqns_of(-1, 0, g.body.size()).size();
      *next = saved;
      return pp::nil();
    }
    return sub.top_doc();
  }

  // A while's cond (part 0) or body (part 1) as loop_jaxpr prints it, its
  // kept constants in `kept`; with `count`, only its number of equations.
  pp::Doc loop_part_jaxpr(const Instr& i, int part, size_t* count = nullptr,
                          size_t* kept = nullptr) {
    const WhileLoop& w = *i.attrs.loop;
    const size_t nc = static_cast<size_t>(w.cond_nconsts), nb = static_cast<size_t>(w.body_nconsts);
    std::span<const int> ops(i.operands);
    std::vector<int> carry(i.operands.begin() + static_cast<long>(nc + nb), i.operands.end());
    size_t scratch = 0;
    if (part == 1) {
      std::vector<int> body_ops(ops.begin() + static_cast<long>(nc), ops.end());
      return loop_jaxpr(*w.body, nb, body_ops, kept ? *kept : scratch, w.body_record.get(), count);
    }
    std::vector<int> cond_ops(ops.begin(), ops.begin() + static_cast<long>(nc));
    cond_ops.insert(cond_ops.end(), carry.begin(), carry.end());
    return loop_jaxpr(*w.cond, nc, cond_ops, kept ? *kept : scratch, w.cond_record.get(), count);
  }

  pp::Doc while_eqn(const Instr& i) {
    const WhileLoop& w = *i.attrs.loop;
    std::vector<int> outs;
    for (int k = 0; k < i.nresults; ++k) outs.push_back(i.result + k);
    pp::Doc lhs = binders(outs, true);
    const size_t nc = static_cast<size_t>(w.cond_nconsts), nb = static_cast<size_t>(w.body_nconsts);
    std::span<const int> ops(i.operands);
    std::vector<int> carry(i.operands.begin() + static_cast<long>(nc + nb), i.operands.end());
    size_t body_kept = 0, cond_kept = 0;
    // (JAX sorts the params: the body's jaxpr is named first.) A part
    // hoisted before the jaxpr is its name.
    auto part_doc = [&](int part, size_t& kept) {
      auto h = hoisted_loops.find({static_cast<size_t>(&i - fn.body.data()), part});
      if (h == hoisted_loops.end()) return loop_part_jaxpr(i, part, nullptr, &kept);
      size_t count = 0;
      loop_part_jaxpr(i, part, &count, &kept);
      return pp::text(h->second);
    };
    pp::Doc body = part_doc(1, body_kept);
    pp::Doc cond = part_doc(0, cond_kept);
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
    // (The primal's own record, when make_jaxpr traced it: a jit inside it.)
    const auto* rule = dynamic_cast<const CustomRule*>(&c);
    // The argument leaves stay the call's parameters, a literal one (a Python number) shown
    // as its operand, as JAX passes it; what the primal captured is folded.
    pp::Doc call = loop_jaxpr(*c.fn, c.fn->params.size(), i.operands, kept,
                              rule ? rule->jaxpr_record.get() : nullptr, nullptr, c.num_args);
    pairs.push_back({"call_jaxpr", pp::concat({pp::text("call_jaxpr="), call})});
    std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
      if ((a.first == "name") != (b.first == "name")) return a.first == "name";
      return a.first < b.first;
    });
    std::vector<pp::Doc> docs;
    std::vector<int> ins;
    for (size_t k = 0; k < i.operands.size(); ++k)
      if (k < c.num_args || !st.literal(st.resolve(i.operands[k]))) ins.push_back(i.operands[k]);
    for (auto& kv : pairs) docs.push_back(kv.second);
    return eqn_doc(lhs, custom_prim(c), kv_pairs(docs), ins);
  }

  pp::Doc eqn(const Instr& i) {
    if (i.op == Op::While && i.attrs.loop) return while_eqn(i);
    if (i.op == Op::CustomCall && i.attrs.custom) return custom_eqn(i);
    if (i.op == Op::SpmdCall && i.attrs.callee) return spmd_eqn(i);
    const size_t index = static_cast<size_t>(&i - fn.body.data());
    if (auto u = body_reading.untiled_all_to_all.find(index);
        u != body_reading.untiled_all_to_all.end()) {
      std::vector<pp::Doc> kv;
      for (auto [k, v] : untiled_all_to_all_params(i)) kv.push_back(pp::text(k + "=" + v));
      return eqn_doc(binders({u->second.second}, true), "all_to_all", kv_pairs(kv),
                     std::vector<int>{u->second.first});
    }
    std::vector<int> outs;
    for (int k = 0; k < i.nresults; ++k) outs.push_back(i.result + k);
    pp::Doc lhs = binders(outs, true);
    std::vector<int> ins = i.operands;
    if (i.op == Op::Select && ins.size() == 3)
      std::swap(ins[1], ins[2]); // select_n(pred, false, true)
    std::string prim = shown_prim(i, rd, index);
    Params ps;
    if (op_family(i.op) == OpFamily::Collective)
      ps = collective_params(i, checks_vma(), prim);
    else if (!rd.prim.count(index))
      ps = printed_params(i.op, i.attrs, fn.values[static_cast<size_t>(i.result)].aval);
    std::vector<pp::Doc> pairs;
    for (auto& [k, v] : ps) pairs.push_back(pp::text(k + "=" + v));
    if (i.op == Op::Mul && i.attrs.shown_divisor > 0 && ins.size() == 2) { // jnp.mean's div
      AVal count{fn.values[static_cast<size_t>(i.result)].aval.dtype, {}};
      std::string n = std::to_string(i.attrs.shown_divisor); // Python's repr of the count
      n = is_complex(count.dtype) ? "(" + n + "+0j)" : n + ".0";
      return eqn_doc(lhs, "div", kv_pairs(pairs),
                     std::vector<std::string>{atom(ins[0]), n + ":" + aval_str(count)});
    }
    return eqn_doc(lhs, prim, kv_pairs(pairs), ins);
  }

  // JAX's pvary of `v` to the axes `to` (mesh bits) it lacks, as an equation;
  // returns the cast value.
  int push_pvary(std::vector<pp::Doc>& out, int v, AxisSet to) {
    return push_pvary(out, atom(v), aval_of(v), vma_of(v), to);
  }
  int push_pvary(std::vector<pp::Doc>& out, const std::string& operand, const AVal& a, AxisSet have,
                 AxisSet to) {
    int id = add_synthetic(a, have | to);
    out.push_back(eqn_doc(binder(id, false), "pvary",
                          kv_pairs({pp::text("axes=" + axes_tuple(fn, to & ~have))}),
                          std::vector<std::string>{operand}));
    ++emitted;
    return id;
  }
  // `operand` (of varying axes `have`) as an operand of an equation varying
  // over `all`: itself, or its pvary where vma is checked.
  std::string varying(std::vector<pp::Doc>& out, const std::string& operand, const AVal& a,
                      AxisSet have, AxisSet all) {
    if (!checks_vma() || (have & all) == all) return operand;
    return name(push_pvary(out, operand, a, have, all));
  }
  void push(std::vector<pp::Doc>& out, pp::Doc lhs, const std::string& prim, pp::Doc kv,
            const std::vector<std::string>& ins) {
    out.push_back(eqn_doc(std::move(lhs), prim, std::move(kv), ins));
    ++emitted;
  }
  // axis_index of several axes: JAX binds one per axis and adds them up in
  // Python (lax.axis_index: the last axis minor, from the int 0), with the
  // casts its binary ops insert.
  void push_axis_index(std::vector<pp::Doc>& out, const Instr& i) {
    const AVal& a = fn.values[static_cast<size_t>(i.result)].aval;
    const std::vector<std::string>& names = i.attrs.axis_names;
    int64_t inner = 1;
    std::string acc = "0:i32[]";
    AxisSet acc_vma = 0;
    for (size_t k = names.size(); k-- > 0;) {
      const AxisSet bit = axis_bits(fn, {names[k]});
      int index = add_synthetic(a, bit);
      push(out, binder(index, false), "axis_index", kv_pairs({pp::text("axis_name=" + names[k])}),
           {});
      std::string size = varying(out, std::to_string(inner) + ":i32[]", a, 0, bit);
      int term = add_synthetic(a, bit);
      push(out, binder(term, false), "mul", pp::nil(), {name(index), size});
      const AxisSet all = acc_vma | bit;
      std::string lhs = varying(out, acc, a, acc_vma, all);
      std::string rhs = varying(out, name(term), a, bit, all);
      int sum = k == 0 ? i.result : add_synthetic(a, all);
      push(out, binder(sum, k == 0), "add", pp::nil(), {lhs, rhs});
      acc = name(sum), acc_vma = all;
      if (int b = fn.axis_bit(names[k]); b >= 0 && static_cast<size_t>(b) < fn.mesh_sizes.size())
        inner *= fn.mesh_sizes[static_cast<size_t>(b)];
    }
  }
  // pxl's argsort is JAX's sort of the operand along with an iota, whose
  // second result is the permutation.
  void push_argsort(std::vector<pp::Doc>& out, const Instr& i) {
    const AVal& perm = fn.values[static_cast<size_t>(i.result)].aval;
    const int x = i.operands[0];
    int iota = add_synthetic(perm, 0);
    push(out, binder(iota, false), "iota",
         kv_pairs({pp::text("dimension=" + std::to_string(i.attrs.axis)), pp::text("dtype=int32"),
                   pp::text("shape=" + py_seq(perm.shape)), pp::text("sharding=None")}),
         {});
    int sorted = add_synthetic(aval_of(st.resolve(x)), vma_of(st.resolve(x)));
    push(out, binders({sorted, i.result}, true), "sort",
         kv_pairs({pp::text("dimension=" + std::to_string(i.attrs.axis)),
                   pp::text("is_stable=True"), pp::text("num_keys=1")}),
         {atom(x), name(iota)});
  }
  // An equation, after the pvary casts JAX inserts before it where vma is
  // checked: an operand varying over fewer axes than the others (or than a
  // collective's axes) is cast to all of them first (core.auto_insert_reshard,
  // lax.parallel.insert_collective_pvary).
  void push_eqn(std::vector<pp::Doc>& out, const Instr& i) {
    cast.clear();
    if (i.op == Op::AxisIndex && i.attrs.axis_names.size() > 1) return push_axis_index(out, i);
    if (i.op == Op::Argsort) return push_argsort(out, i);
    if (checks_vma() && !i.attrs.loop && !i.attrs.custom && i.op != Op::SpmdCall && !is_pvary(i)) {
      std::vector<int> ins = i.operands;
      if (i.op == Op::Select && ins.size() == 3) std::swap(ins[1], ins[2]);
      if (auto u = body_reading.untiled_all_to_all.find(static_cast<size_t>(&i - fn.body.data()));
          u != body_reading.untiled_all_to_all.end())
        ins = {u->second.first};
      AxisSet need = 0;
      for (int& v : ins) need |= vma_of(v = st.resolve(v));
      if (op_family(i.op) == OpFamily::Collective)
        for (const std::string& n : i.attrs.axis_names)
          if (int b = fn.axis_bit(n); b >= 0) need |= AxisSet{1} << b;
      for (int v : ins)
        if ((vma_of(v) & need) != need && !cast.count(v)) {
          int id = push_pvary(out, v, need);
          cast[v] = id;
        }
    }
    out.push_back(eqn(i));
    ++emitted;
    cast.clear();
  }

  // A shard_map's body as its jaxpr shows it: the callee with the captured
  // constants that are literals here as its constants, the others first.
  struct SpmdBody {
    Function g;
    std::vector<Tensor> const_tensors; // the values of g.consts
    std::map<int, Tensor> values;
    std::vector<int> ins; // the equation's operands
    std::vector<const SpmdMapping*> in_maps;
  };
  SpmdBody spmd_body_of(const Instr& i) {
    const SpmdCallee& c = *i.attrs.callee;
    const Function& body = *c.fn;
    SpmdBody b{body, {}, {}, {}, {}};
    b.g.params.clear();
    const SpmdOperands order = spmd_operands(i, st, rd, const_values);
    for (size_t p : order.taken) {
      b.g.params.push_back(body.params[p]);
      b.ins.push_back(i.operands[p]);
      b.in_maps.push_back(&c.ins[p]);
    }
    for (size_t p : order.inlined) {
      const Tensor& value = *inlined_constant(i.operands[p], st, rd, const_values);
      b.g.consts.push_back(body.params[p]);
      b.const_tensors.push_back(value);
      b.values[body.params[p]] = value;
    }
    return b;
  }
  // Its jaxpr, named from `*counter` on; `count` receives its equations.
  pp::Doc spmd_body_doc(const Instr& i, const SpmdBody& b, int* counter, size_t* count = nullptr) {
    Printer sub(b.g, i.attrs.callee->jaxpr_record.get(), &b.const_tensors);
    sub.next = counter;
    sub.hoisted_names = hoisted_names;
    sub.const_values = b.values;
    sub.spmd = i.attrs.callee.get();
    sub.drop_unused = false;
    pp::Doc doc = sub.spmd_body(b.in_maps);
    if (count) *count = sub.emitted;
    return doc;
  }

  // A pmap'd or shard_map'd call: JAX's shard_map equation, its body the
  // callee (the constants its trace captured are leading operands with P()
  // specs, or literals). JAX 0.10's pmap is a jit named _fun of a shard_map
  // whose body squeezes the mapped axis in and broadcasts it back out.
  pp::Doc spmd_eqn(const Instr& i) {
    const SpmdCallee& c = *i.attrs.callee;
    SpmdBody b = spmd_body_of(i);
    const std::vector<int>& ins = b.ins;
    const std::vector<const SpmdMapping*>& in_maps = b.in_maps;
    std::vector<int> outs;
    for (int k = 0; k < i.nresults; ++k) outs.push_back(i.result + k);
    pp::Doc lhs = binders(outs, true);

    // The operands' names inside: pmap's jit names its parameters as them.
    std::vector<std::string> operand_names, jit_params;
    std::vector<pp::Doc> jit_param_docs;
    for (int v : ins) {
      std::string outer = atom(v);
      if (c.kind == "pmap") {
        bool fresh_name =
            st.literal(st.resolve(v)) || std::count(jit_params.begin(), jit_params.end(), outer);
        std::string n = fresh_name ? fresh() : outer;
        jit_params.push_back(n);
        jit_param_docs.push_back(pp::text(n + ":" + aval_str(aval_of(st.resolve(v)))));
        operand_names.push_back(n);
      } else {
        operand_names.push_back(outer);
      }
    }
    std::vector<std::string> result_names; // pmap: the shard_map's, inside the jit
    std::vector<pp::Doc> result_docs;
    for (int v : outs) {
      if (c.kind != "pmap") break;
      std::string n = dropped.count(v) ? fresh() : name(v);
      result_names.push_back(n);
      result_docs.push_back(pp::text(n + ":" + aval_str(aval_of(v))));
    }

    Mesh mesh = c.layout.mesh;
    if (c.kind == "pmap") mesh.axis_types.clear(); // (Auto)
    std::vector<std::string> manual = c.manual_axes.empty() ? mesh.axis_names : c.manual_axes;
    std::vector<std::string> in_specs, out_specs;
    for (const SpmdMapping* m : in_maps) in_specs.push_back(m->spec.repr());
    for (const SpmdMapping& m : c.outs) out_specs.push_back(m.spec.repr());
    std::string manual_set;
    for (const std::string& n : mesh.axis_names)
      if (std::count(manual.begin(), manual.end(), n))
        manual_set += (manual_set.empty() ? "'" : ", '") + n + "'";
    std::vector<pp::Doc> pairs = {pp::text(std::string("check_vma=") + py_bool(c.check_vma)),
                                  pp::text("in_specs=" + py_tuple_of(in_specs))};
    const size_t index = static_cast<size_t>(&i - fn.body.data());
    if (auto h = hoisted_bodies.find(index); h != hoisted_bodies.end()) {
      pairs.push_back(pp::text("jaxpr=" + h->second));
    } else {
      pairs.push_back(pp::concat({pp::text("jaxpr="), spmd_body_doc(i, b, next)}));
    }
    pairs.push_back(pp::text("mesh=" + mesh.jax_str()));
    pairs.push_back(pp::text("newly_manual_axes=frozenset({" + manual_set + "})"));
    pairs.push_back(pp::text("out_specs=" + py_tuple_of(out_specs)));
    if (c.kind != "pmap") return eqn_doc(lhs, "shard_map", kv_pairs(pairs), operand_names);
    pp::Doc inner = eqn_doc(var_list(result_docs), "shard_map", kv_pairs(pairs), operand_names);
    std::vector<pp::Doc> out_items;
    for (const std::string& n : result_names) out_items.push_back(pp::text(n));
    pp::Doc jaxpr = skeleton_of(pp::nil(), var_list(jit_param_docs), {inner}, out_items);
    std::vector<pp::Doc> jit_pairs = {pp::text("name=_fun"),
                                      pp::concat({pp::text("jaxpr="), jaxpr})};
    std::vector<std::string> outer_names;
    for (int v : ins) outer_names.push_back(atom(v));
    return eqn_doc(lhs, "jit", kv_pairs(jit_pairs), outer_names);
  }

  // The jaxpr of a shard_map's body (this printer's function, its parameters
  // laid out by `in_maps`): a pmap's mapped parameters come in with the
  // mapped axis and are squeezed; its mapped results are broadcast back to
  // it; where vma is checked a result varies over its out_spec's axes (a
  // pvary where it did not).
  pp::Doc spmd_body(const std::vector<const SpmdMapping*>& in_maps) {
    body_reading = read_spmd_body(fn);
    std::vector<pp::Doc> params, eqns;
    std::vector<int> shown(fn.params.size());
    for (size_t p = 0; p < fn.params.size(); ++p) {
      int v = fn.params[p];
      shown[p] = v;
      if (p < in_maps.size() && in_maps[p]->squeeze >= 0) {
        AVal a = aval_of(v);
        a.shape.insert(a.shape.begin() + in_maps[p]->squeeze, 1);
        shown[p] = add_synthetic(a, vma_of(v));
      }
      params.push_back(binder(shown[p], false));
    }
    for (size_t p = 0; p < fn.params.size(); ++p)
      if (shown[p] != fn.params[p]) {
        eqns.push_back(eqn_doc(binder(fn.params[p], true), "squeeze",
                               kv_pairs({pp::text("dimensions=" + py_seq({in_maps[p]->squeeze}))}),
                               std::vector<int>{shown[p]}));
        ++emitted;
      }
    for (pp::Doc& d : eqns_of(-1, 0, fn.body.size())) eqns.push_back(std::move(d));
    std::vector<int> results;
    for (size_t r = 0; r < fn.results.size(); ++r) {
      int v = fn.results[r];
      const SpmdMapping& m = spmd->outs[r];
      if (checks_vma()) {
        AxisSet need = 0;
        for (const auto& entry : m.spec.entries)
          for (const std::string& n : entry)
            if (int b = fn.axis_bit(n); b >= 0) need |= AxisSet{1} << b;
        if ((vma_of(st.resolve(v)) & need) != need) v = push_pvary(eqns, st.resolve(v), need);
      }
      if (m.squeeze >= 0) {
        AVal a = aval_of(st.resolve(v));
        std::vector<int64_t> dims;
        for (int64_t d = 0; d < a.ndim(); ++d) dims.push_back(d < m.squeeze ? d : d + 1);
        a.shape.insert(a.shape.begin() + m.squeeze, 1);
        int id = add_synthetic(a, vma_of(st.resolve(v)));
        std::vector<pp::Doc> kv;
        if (!dims.empty()) kv.push_back(pp::text("broadcast_dimensions=" + py_seq(dims)));
        eqns.push_back(
            eqn_doc(binder(id, false), "broadcast_in_dim", kv_pairs(kv), std::vector<int>{v}));
        ++emitted;
        v = id;
      }
      results.push_back(v);
    }
    return skeleton(pp::nil(), var_list(params), eqns, results);
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
          st.instr_shown(i) && !body_reading.folded.count(i))
        push_eqn(out, fn.body[i]);
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
    return skeleton_of(std::move(constvars), std::move(invars), eqns, out_items);
  }
  static pp::Doc skeleton_of(pp::Doc constvars, pp::Doc invars, const std::vector<pp::Doc>& eqns,
                             const std::vector<pp::Doc>& out_items) {
    pp::Doc outs = pp::concat(
        {pp::text("("), joined(out_items, ","), pp::text(out_items.size() != 1 ? ")" : ",)")});
    pp::Doc body = pp::concat({pp::text("{ "), pp::text("lambda "), constvars, pp::text("; "),
                               invars, pp::text(". "), pp::text("let"),
                               pp::nest(2, pp::concat({pp::brk(), pp::join(pp::brk("; "), eqns)})),
                               pp::brk(), pp::text("in "), outs});
    return pp::group(pp::concat({pp::nest(2, body), pp::text(" }")}));
  }

  // Region k's jaxpr with fresh parameters for `consts`, then for the values
  // its invars stand for, returning `outs`: a part's (a cond branch, a scan
  // body) or a hoisted jit's.
  pp::Doc fresh_params_jaxpr(int k, const std::vector<int>& consts, const std::vector<int>& outs,
                             const std::vector<int>* invars = nullptr) {
    const JaxprRegion& g = st.region(k);
    if (!invars) invars = &g.invars;
    Scope sc;
    std::vector<pp::Doc> params;
    auto bind = [&](int v) {
      v = st.resolve(v);
      std::string n = fresh();
      if (!sc.names.count(v)) sc.names[v] = n;
      params.push_back(pp::text(n + ":" + type_of(v)));
    };
    for (int v : consts) bind(v);
    for (int v : *invars) bind(v);
    scopes.push_back(sc);
    pp::Doc doc = skeleton(pp::nil(), var_list(params), eqns_of(k, g.begin, g.end), outs);
    scopes.pop_back();
    return doc;
  }
  pp::Doc part_jaxpr(int k, const std::vector<int>& consts) {
    return fresh_params_jaxpr(k, consts, st.region(k).outvars);
  }
  // Part `p` of scan or cond region `k` as its equation shows it: the jaxpr,
  // or the name it was hoisted under.
  pp::Doc part_doc(int k, int p) {
    if (auto h = shared.find(p); h != shared.end() && !printing_hoisted.count(p))
      return pp::text(h->second);
    if (st.region(k).prim != "scan") return part_jaxpr(p, st.free_values(k));
    const ScanForwarding fwd = scan_forwarding(st.region(k));
    std::vector<int> body_consts = fwd.moved_params;
    std::vector<int> consts = st.free_values(k);
    body_consts.insert(body_consts.end(), consts.begin(), consts.end());
    return fresh_params_jaxpr(p, body_consts, fwd.outvars, &fwd.invars);
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

  // JAX's scan takes out what its body passes through unchanged: a carry the
  // body returns as it got it becomes a leading const (the scan's result is
  // the operand itself), and an output that is one of the xs is not
  // computed (the result is that operand). `g` without them: the part's
  // invars and outvars here, and the moved carries' operands and parameters.
  struct ScanForwarding {
    JaxprRegion eqn;
    std::vector<int> invars, outvars; // the body's, what is left of them
    std::vector<int> moved_inputs, moved_params;
  };
  ScanForwarding scan_forwarding(const JaxprRegion& g) {
    ScanForwarding f{g, {}, {}, {}, {}};
    if (g.parts.empty()) return f;
    const JaxprRegion& body = st.region(g.parts[0]);
    f.invars = body.invars;
    f.outvars = body.outvars;
    size_t nc = 0;
    bool known = false;
    for (const auto& [key, v] : g.params)
      if (key == "num_carry")
        known = std::from_chars(v.data(), v.data() + v.size(), nc).ec == std::errc();
    if (!known) return f;
    const size_t nin = body.invars.size(), nout = body.outvars.size();
    if (nc > nin || nc > nout || g.inputs.size() != nin || g.outputs.size() != nout) return f;
    auto same = [&](int a, int b) { return st.resolve(a) == st.resolve(b); };
    std::vector<bool> moved(nc, false), gone(nout, false);
    for (size_t i = 0; i < nc; ++i)
      moved[i] = gone[i] = same(body.outvars[i], body.invars[i]) && same(g.outputs[i], g.inputs[i]);
    for (size_t j = nc; j < nout; ++j)
      for (size_t m = nc; m < nin && !gone[j]; ++m)
        gone[j] = same(body.outvars[j], body.invars[m]) && same(g.outputs[j], g.inputs[m]);
    f.invars.clear();
    f.outvars.clear();
    f.eqn.inputs.clear();
    f.eqn.outputs.clear();
    for (size_t i = 0; i < nin; ++i) {
      bool m = i < nc && moved[i];
      (m ? f.moved_params : f.invars).push_back(body.invars[i]);
      (m ? f.moved_inputs : f.eqn.inputs).push_back(g.inputs[i]);
    }
    for (size_t j = 0; j < nout; ++j)
      if (!gone[j]) {
        f.outvars.push_back(body.outvars[j]);
        f.eqn.outputs.push_back(g.outputs[j]);
      }
    for (auto& [key, v] : f.eqn.params)
      if (key == "num_carry") v = std::to_string(nc - f.moved_params.size());
    return f;
  }

  pp::Doc region_eqn(int k) {
    const bool scan = st.region(k).prim == "scan";
    const ScanForwarding fwd = scan ? scan_forwarding(st.region(k)) : ScanForwarding{};
    const JaxprRegion& g = scan ? fwd.eqn : st.region(k);
    std::vector<int> binder_ids;
    auto hoisted = shared.find(k);
    pp::Doc lhs = region_lhs(g, hoisted != shared.end(), binder_ids);
    std::vector<int> consts = st.free_values(k);
    std::vector<std::pair<std::string, pp::Doc>> pairs;
    for (auto& [key, v] : g.params) {
      std::string op, type;
      if (read_binary_update_param(v, op, type)) { // a scatter's update_jaxpr
        const std::string t = type + "[]", a = fresh(), b = fresh(), c = fresh();
        pp::Doc eqn = eqn_doc(pp::text(c + ":" + t), op, pp::nil(), std::vector<std::string>{a, b});
        pp::Doc jaxpr =
            skeleton_of(pp::nil(), var_list({pp::text(a + ":" + t), pp::text(b + ":" + t)}), {eqn},
                        {pp::text(c)});
        pairs.push_back({key, pp::concat({pp::text(key + "="), jaxpr})});
      } else {
        pairs.push_back({key, pp::text(key + "=" + v)});
      }
    }
    std::vector<int> ins;
    if (g.opaque) {
      ins = g.inputs;
    } else if (g.prim == "cond") {
      // cond[branches=(...)] index *consts *operands
      std::vector<pp::Doc> branches;
      for (int p : g.parts) branches.push_back(part_doc(k, p));
      pp::Doc tuple = pp::group(pp::concat(
          {pp::nest(2, pp::concat({pp::text("("), pp::brk(""), pp::join(pp::brk(), branches)})),
           pp::brk(""), pp::text(")")}));
      pairs.push_back({"branches", pp::concat({pp::text("branches="), tuple})});
      if (!g.inputs.empty()) ins.push_back(g.inputs[0]);
      ins.insert(ins.end(), consts.begin(), consts.end());
      ins.insert(ins.end(), g.inputs.begin() + (g.inputs.empty() ? 0 : 1), g.inputs.end());
    } else if (g.prim == "scan") {
      std::vector<int> body_consts = fwd.moved_params;
      body_consts.insert(body_consts.end(), consts.begin(), consts.end());
      if (!g.parts.empty())
        pairs.push_back({"jaxpr", pp::concat({pp::text("jaxpr="), part_doc(k, g.parts[0])})});
      pairs.push_back({"num_consts", pp::text("num_consts=" + std::to_string(body_consts.size()))});
      ins = fwd.moved_inputs;
      ins.insert(ins.end(), consts.begin(), consts.end());
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
        params.push_back(pp::text(n + ":" + type_of(r)));
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
    pp::Doc doc = eqn_doc(lhs, g.prim, kv_pairs(docs), ins, g.outputs.empty());
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
  // (A shard_map's body, whose equation has no name=, is a "jaxpr".)
  struct Hoisted {
    int region = -1; // or a shard_map's body or a while's cond or body:
    size_t instr = 0;
    int parent = -1;    // the scan or cond whose part `region` is
    int loop_part = -1; // a while's: 0 its cond, 1 its body
  };
  std::vector<Hoisted> hoist() {
    std::vector<Hoisted> order;
    std::map<std::string, int> taken;
    auto unique = [&](std::string name) {
      if (int n = taken[name]++; n > 0) name += std::to_string(n), ++taken[name];
      hoisted_names->insert(name);
      return name;
    };
    // A jit of one function and signature, used more than once, is one
    // jaxpr in JAX: hoisted whatever its size, printed once.
    std::map<std::string, int> uses, first;
    for (size_t r = 0; r < st.shown_rgn.size(); ++r)
      if (st.shown_rgn[r] && !st.region(static_cast<int>(r)).identity.empty())
        ++uses[st.region(static_cast<int>(r)).identity];
    std::vector<int> queue{-1};
    for (size_t q = 0; q < queue.size(); ++q) {
      const int scope = queue[q];
      // The scope's sub-jaxprs in program order: its regions, and the bodies
      // of its shard_map equations (before the instruction at a region's start).
      std::vector<std::pair<size_t, int>> items; // (position, region or -1 - instr)
      for (int c : st.children(scope)) items.push_back({2 * st.region(c).begin, c});
      for (size_t i = 0; i < fn.body.size(); ++i) {
        const Instr& in = fn.body[i];
        const bool spmd = in.op == Op::SpmdCall && in.attrs.callee;
        const bool loop = in.op == Op::While && in.attrs.loop;
        if ((!spmd && !loop) || !st.instr_shown(i)) continue;
        if (rec && (scope < 0 ? st.innermost[i] >= 0 : st.innermost[i] != scope)) continue;
        if (loop) { // JAX's while params: cond_jaxpr, then body_jaxpr
          for (int part = 0; part < 2; ++part) {
            size_t count = 0;
            loop_part_jaxpr(in, part, &count);
            if (count <= 10) continue;
            hoisted_loops[{i, part}] = unique("jaxpr");
            order.push_back(Hoisted{-1, i, -1, part});
          }
          continue;
        }
        items.push_back({2 * i + 1, -1 - static_cast<int>(i)});
      }
      std::stable_sort(items.begin(), items.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto [pos, c] : items) {
        if (c < 0) {
          const size_t i = static_cast<size_t>(-1 - c);
          int scratch = 0;
          size_t count = 0;
          spmd_body_doc(fn.body[i], spmd_body_of(fn.body[i]), &scratch, &count);
          if (count <= 10) continue;
          hoisted_bodies[i] = unique("jaxpr");
          order.push_back(Hoisted{-1, i});
          continue;
        }
        const JaxprRegion& g = st.region(c);
        if (!st.opens_body(g)) {
          for (int p : g.parts) {
            if (!st.shown_rgn[static_cast<size_t>(p)]) continue;
            queue.push_back(p);
            if ((g.prim != "scan" && g.prim != "cond") || eqn_count(p) <= 10) continue;
            shared[p] = unique("jaxpr");
            order.push_back(Hoisted{p, 0, c});
          }
          continue;
        }
        const std::string& id = g.identity;
        if (auto f = first.find(id); !id.empty() && f != first.end()) {
          if (shared.count(f->second)) shared[c] = shared[f->second];
          continue;
        }
        if (!id.empty()) first[id] = c;
        queue.push_back(c);
        if (eqn_count(c) <= 10 && (id.empty() || uses[id] < 2)) continue;
        std::string name = "jaxpr";
        for (const auto& [k, v] : g.params)
          if (k == "name") name = v;
        std::erase(name, '<'), std::erase(name, '>');
        shared[c] = unique(name);
        order.push_back(Hoisted{c, 0});
      }
    }
    return order;
  }
  std::string print() {
    std::vector<pp::Doc> docs;
    for (Hoisted h : hoist()) {
      if (h.loop_part >= 0) {
        docs.push_back(pp::concat({pp::text("let " + hoisted_loops[{h.instr, h.loop_part}] + " = "),
                                   loop_part_jaxpr(fn.body[h.instr], h.loop_part), pp::text(" in"),
                                   pp::brk()}));
        continue;
      }
      if (h.region < 0) {
        const Instr& i = fn.body[h.instr];
        docs.push_back(
            pp::concat({pp::text("let " + hoisted_bodies[h.instr] + " = "),
                        spmd_body_doc(i, spmd_body_of(i), next), pp::text(" in"), pp::brk()}));
        continue;
      }
      const int k = h.region;
      printing_hoisted.insert(k);
      docs.push_back(
          pp::concat({pp::text("let " + shared[k] + " = "),
                      h.parent < 0 ? fresh_params_jaxpr(k, st.free_values(k), st.region(k).outputs)
                                   : part_doc(h.parent, k),
                      pp::text(" in"), pp::brk()}));
      printing_hoisted.erase(k);
    }
    docs.push_back(top_doc());
    return pp::format(pp::concat(docs));
  }
};

} // namespace

std::vector<JaxprTopEqn> jaxpr_top_eqns(const JaxprView& shown, const std::vector<Tensor>& consts) {
  const Function& view = shown.fn;
  const JaxprRecord* record = shown.rec;
  JaxprReading rd =
      read_jaxpr(view, record_roots(record, false), record_roots(record, true), &consts);
  name_add_any(shown, rd);
  Structure st(view, record, rd);
  std::map<int, Tensor> const_values;
  for (size_t k = 0; k < view.consts.size() && k < consts.size(); ++k)
    const_values[view.consts[k]] = consts[k];
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
      e.instr = &view.body[i];
      e.prim = shown_prim(view.body[i], rd, i);
      e.renamed = rd.prim.count(i) > 0;
      if (const Instr& in = view.body[i]; in.op == Op::SpmdCall && in.attrs.callee) {
        e.spmd_operands = spmd_operands(in, st, rd, const_values).taken;
        for (size_t p : e.spmd_operands) e.ins.push_back(in.operands[p]);
      }
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
