// The marks lax_loops.pxl and jit leave for make_jaxpr's record of JAX's
// structure (lang/jaxpr_record.hpp). Each is a no-op unless the current
// trace is make_jaxpr's, so the code that calls them computes the same either
// way. From pxl:
//   lax._jaxpr_recording()                  whether make_jaxpr is recording
//   lax._jaxpr_fresh(tree)                  its arrays as new values (hidden
//                                           copies) a part's parameters stand for
//   lax._jaxpr_begin(prim, inputs, params, body=True)
//                                           an equation's region opens here
//                                           (body=False: it shows no sub-jaxpr)
//   lax._jaxpr_part(invars)                 a branch / body of it opens here
//   lax._jaxpr_end_part(outvars)            ... and closes here
//   lax._jaxpr_end(outputs, inputs=None)    the equation's region closes here
//                                           (inputs: its operands, when known late)
//   lax._jaxpr_jit(name, *dynamic)          a decorator: calls of the function
//                                           are a jit[name=...] equation
//                                           (call_as_jitted); `dynamic` names
//                                           the traced arguments by position
//                                           ("" for a static one, "*" for all
//                                           the rest) or keyword
// inputs/invars/outvars/outputs are lists of arrays (or numbers); params a
// list of (name, printed value) pairs.
#include "stdlib/jaxpr_record.hpp"

#include <algorithm>

#include "lang/args.hpp"
#include "lang/interp_impl.hpp"
#include "lang/tracer.hpp"
#include "runtime/eager.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/trace_util.hpp"
#include "stdlib/transforms.hpp"
#include "stdlib/xla_program.hpp"

namespace pxl {

namespace {

// The recording trace and its record, or nulls.
std::pair<TraceContext*, JaxprRecord*> recording(InterpreterImpl& in) {
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  if (!tc || !tc->jaxpr_record) return {nullptr, nullptr};
  return {tc, tc->jaxpr_record.get()};
}

std::vector<int> value_ids(InterpreterImpl& in, TraceContext& tc, const Value& tree) {
  ValueList leaves;
  tree_flatten(in, tree, leaves);
  std::vector<int> ids;
  for (const Value& l : leaves)
    if (l.is_obj(ObjKind::Array) || l.is_number())
      ids.push_back(tc.value_of(in.to_tensor(l, Span{})));
  return ids;
}

} // namespace

void jaxpr_note_passed(TraceContext& tc, const Value& passed, const Tensor& operand) {
  if (passed.is_float()) tc.jaxpr_record->python_floats[tc.value_of(operand)] = passed.f;
}

Tensor jaxpr_copy(InterpreterImpl& in, const Tensor& t) {
  auto [tc, rec] = recording(in);
  if (!tc || t->concrete) return t;
  int region = jaxpr_begin_region(*tc, "copy", {tc->value_of(t)}, {});
  rec->regions[static_cast<size_t>(region)].opaque = true;
  Tensor copy = jaxpr_fresh_copy(*tc, t);
  jaxpr_end_region(*tc, region, {tc->value_of(copy)});
  return copy;
}

Tensor jaxpr_fresh_copy(TraceContext& tc, const Tensor& t) {
  JaxprRecord& rec = *tc.jaxpr_record;
  OpAttrs same;
  same.shape = t->aval.shape;
  Tensor copy = tc.bind(Op::Reshape, same, std::span<const Tensor>(&t, 1));
  // (The copy is the last instruction: binding it may gate `t` first.)
  size_t at = tc.function().body.size() - 1;
  rec.hidden.push_back({at, at + 1});
  return copy;
}

size_t jaxpr_body_size(OpContext& cx) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  return tc ? tc->function().body.size() : 0;
}

void jaxpr_hide_operand_converts(OpContext& cx, size_t begin,
                                 const std::vector<std::pair<Tensor, Tensor>>& converted) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  if (!tc || !tc->jaxpr_record) return;
  size_t end = tc->function().body.size();
  if (end <= begin) return;
  tc->jaxpr_record->hidden.push_back({begin, end});
  for (const auto& [original, now] : converted) {
    int a = tc->value_of(now), b = tc->value_of(original);
    if (a != b) tc->jaxpr_record->alias[a] = b;
  }
}

int jaxpr_begin_region(TraceContext& tc, std::string prim, std::vector<int> inputs,
                       std::vector<std::pair<std::string, std::string>> params) {
  JaxprRecord& rec = *tc.jaxpr_record;
  JaxprRegion r;
  r.prim = std::move(prim);
  r.params = std::move(params);
  r.begin = tc.function().body.size();
  r.parent = rec.innermost();
  r.inputs = std::move(inputs);
  rec.regions.push_back(std::move(r));
  rec.open.push_back(static_cast<int>(rec.regions.size()) - 1);
  return rec.open.back();
}

int jaxpr_begin_body(TraceContext& tc, std::string prim,
                     std::vector<std::pair<std::string, std::string>> params,
                     std::vector<Tensor>& operands) {
  std::vector<int> inputs;
  for (const Tensor& t : operands) inputs.push_back(tc.value_of(t));
  int region = jaxpr_begin_region(tc, std::move(prim), std::move(inputs), std::move(params));
  // New values, told apart from the operands' other uses (an operand passed
  // twice is two parameters).
  for (Tensor& t : operands) {
    t = jaxpr_fresh_copy(tc, t);
    tc.jaxpr_record->regions[static_cast<size_t>(region)].invars.push_back(tc.value_of(t));
  }
  return region;
}

void jaxpr_end_region(TraceContext& tc, int region, std::vector<int> outputs) {
  JaxprRecord& rec = *tc.jaxpr_record;
  // (Regions left open by an error inside them close with their parent.)
  while (!rec.open.empty()) {
    int top = rec.open.back();
    rec.open.pop_back();
    JaxprRegion& r = rec.regions[static_cast<size_t>(top)];
    r.end = tc.function().body.size();
    r.closed = top == region;
    if (top == region) {
      r.outputs = std::move(outputs);
      return;
    }
  }
}

void carry_jaxpr_record(TraceContext& tc, const Function& f, const JaxprRecord& inner, size_t start,
                        const std::vector<size_t>& after, const std::function<int(int)>& id,
                        const std::function<bool(const JaxprRegion&)>& keep,
                        size_t regions_before) {
  JaxprRecord& rec = *tc.jaxpr_record;
  auto at = [&](size_t k) { return k == 0 ? start : after[std::min(k, after.size()) - 1]; };
  auto ids = [&](const std::vector<int>& vs) {
    std::vector<int> out;
    for (int v : vs) out.push_back(id(v));
    return out;
  };
  // The regions carried (a dropped one drops what it holds: parents come
  // first) with their new indices, and the instructions in dropped ones.
  const int parent = rec.innermost();
  const size_t first = rec.regions.size();
  std::vector<int> index(inner.regions.size(), -1);
  std::vector<bool> dropped_instr(f.body.size(), false);
  int next = static_cast<int>(first);
  for (size_t r = 0; r < inner.regions.size(); ++r) {
    const JaxprRegion& g = inner.regions[r];
    if ((g.parent < 0 || index[static_cast<size_t>(g.parent)] >= 0) && (!keep || keep(g))) {
      index[r] = next++;
      continue;
    }
    for (size_t k = g.begin; k < g.end && k < f.body.size(); ++k) dropped_instr[k] = true;
  }
  auto in_dropped = [&](size_t k) { return k < dropped_instr.size() && dropped_instr[k]; };
  auto value_in_dropped = [&](int v) {
    if (v < 0 || static_cast<size_t>(v) >= f.values.size()) return false;
    int p = f.values[static_cast<size_t>(v)].producer;
    return p >= 0 && in_dropped(static_cast<size_t>(p));
  };
  for (size_t r = 0; r < inner.regions.size(); ++r) {
    if (index[r] < 0) continue;
    const JaxprRegion& g = inner.regions[r];
    JaxprRegion n = g;
    n.begin = at(g.begin);
    n.end = at(g.end);
    n.parent = g.parent < 0 ? parent : index[static_cast<size_t>(g.parent)];
    n.inputs = ids(g.inputs);
    n.outputs = ids(g.outputs);
    n.invars = ids(g.invars);
    n.outvars = ids(g.outvars);
    n.parts.clear();
    for (int p : g.parts)
      if (index[static_cast<size_t>(p)] >= 0) n.parts.push_back(index[static_cast<size_t>(p)]);
    rec.regions.push_back(std::move(n));
  }
  // Regions the evaluation itself recorded (a batched custom_jvp) belong to
  // the innermost carried region around them.
  for (size_t r = regions_before; r < first; ++r) {
    JaxprRegion& made = rec.regions[r];
    if (made.parent != parent) continue;
    for (size_t c = rec.regions.size(); c-- > first;) {
      const JaxprRegion& g = rec.regions[c];
      if (g.begin <= made.begin && made.end <= g.end && g.begin < g.end) {
        made.parent = static_cast<int>(c);
        break;
      }
    }
  }
  // (In a dropped region only the hidden copies its parts' parameters stand
  // for stay hidden: the rest of its plumbing is what it now computes.)
  auto fresh_copy = [&](size_t b, size_t e) {
    if (e != b + 1 || b >= f.body.size()) return false;
    const Instr& i = f.body[b];
    return i.op == Op::Reshape && i.attrs.perm.empty() && i.attrs.axes.empty() &&
           f.values[static_cast<size_t>(i.operands[0])].aval.shape ==
               f.values[static_cast<size_t>(i.result)].aval.shape;
  };
  for (auto [b, e] : inner.hidden) {
    if (in_dropped(b) && !fresh_copy(b, e)) continue;
    rec.hidden.push_back({at(b), at(e)});
    if (in_dropped(b)) { // no part's parameter now: the copy prints as its original
      int a = id(f.body[b].result), o = id(f.body[b].operands[0]);
      if (a >= 0 && o >= 0 && a != o) rec.alias[a] = o;
    }
  }
  for (auto [from, to] : inner.alias) {
    if (value_in_dropped(from)) continue;
    int a = id(from), b = id(to);
    if (a >= 0 && b >= 0 && a != b) rec.alias[a] = b;
  }
  // Reverse mode's notes. An instruction that landed as several (a batching
  // broadcast, then the op) moves as a whole, after the last of its anchor's;
  // an add_any is the last of its.
  auto landed = [&](size_t k, size_t& lo, size_t& hi) {
    if (k >= after.size() || in_dropped(k)) return false;
    lo = at(k), hi = after[k];
    return lo < hi;
  };
  for (auto [j, k] : inner.moved)
    if (size_t j0 = 0, j1 = 0, k0 = 0, k1 = 0; landed(j, j0, j1) && landed(k, k0, k1))
      for (size_t p = j0; p < j1; ++p) rec.moved.push_back({p, k1 - 1});
  for (size_t k : inner.add_any)
    if (size_t k0 = 0, k1 = 0; landed(k, k0, k1)) rec.add_any.push_back(k1 - 1);
  for (int v : inner.kept)
    if (int k = id(v); k >= 0 && !value_in_dropped(v)) rec.kept.push_back(k);
}

void carry_batched_record(TraceContext& tc, const Function& f, JaxprRecord& inner,
                          const BatchLanding& landing, size_t regions_before) {
  auto batched = [&](int v) {
    return v >= 0 && static_cast<size_t>(v) < landing.env.size() &&
           landing.env[static_cast<size_t>(v)].batched;
  };
  // A batched sort's dimension (a split's axis) follows the batch dimension
  // put in front.
  for (JaxprRegion& g : inner.regions)
    if (g.opaque && !g.inputs.empty() && batched(g.inputs[0]))
      for (auto& [k, v] : g.params)
        if ((k == "dimension" || k == "axis") && !v.empty() && v.size() < 10 &&
            v.find_first_not_of("0123456789") == std::string::npos)
          v = std::to_string(std::stoll(v) + 1);
  carry_jaxpr_record(
      tc, f, inner, landing.start, landing.after,
      [&](int v) {
        const Tensor& t = v >= 0 && static_cast<size_t>(v) < landing.env.size()
                              ? landing.env[static_cast<size_t>(v)].t
                              : Tensor();
        return t ? tc.value_of(t) : -1;
      },
      // A jit stays a jit, a sort a sort, a scan a scan, a cond of an unbatched
      // index a cond; a cond of a batched one prints as the instructions it
      // became (JAX's batched cond is a select).
      [&](const JaxprRegion& g) {
        if (g.prim == "cond") return !g.inputs.empty() && !batched(g.inputs[0]);
        // (JAX batches a dynamic slice or update as a gather or scatter, and a
        // scatter of a batched operand with other dimension numbers: a
        // batched one prints as the instructions it became.)
        if (g.prim == "dynamic_slice" || g.prim == "dynamic_update_slice" ||
            g.prim.starts_with("scatter") || g.prim == "gather")
          return std::none_of(g.inputs.begin(), g.inputs.end(), batched);
        return g.prim == "jit" || g.prim == "checkpoint" || g.prim == "scan" || g.prim == "part" ||
               g.opaque;
      },
      regions_before);
}

std::vector<Tensor> inline_recorded(TraceContext& tc, const Function& f, const JaxprRecord& inner,
                                    std::span<const Tensor> params,
                                    std::span<const Tensor> consts) {
  const size_t start = tc.function().body.size();
  const size_t regions_before = tc.jaxpr_record->regions.size();
  // Where each of f's instructions lands (a branch gate may put hidden steps
  // before one): after[k] is the position just past f's instruction k.
  std::vector<size_t> after;
  auto landed = [&] { after.push_back(tc.function().body.size()); };
  std::vector<Tensor> env = walk_function<Tensor>(
      tc, f, params, consts,
      [&](Op op, const OpAttrs& attrs, const std::vector<Tensor>& args, const IRValue&) {
        Tensor r = tc.bind(op, attrs, args);
        landed();
        return r;
      },
      [&](const OpAttrs& attrs, const std::vector<Tensor>& args, const Instr&) {
        std::vector<Tensor> r = tc.bind_call(attrs, args);
        landed();
        return r;
      });
  carry_jaxpr_record(
      tc, f, inner, start, after,
      [&](int v) {
        const Tensor& t =
            v >= 0 && static_cast<size_t>(v) < env.size() ? env[static_cast<size_t>(v)] : Tensor();
        return t ? tc.value_of(t) : -1;
      },
      {}, regions_before);
  std::vector<Tensor> out;
  for (int r : f.results) out.push_back(env[static_cast<size_t>(r)]);
  return out;
}

namespace {

// Whether `dynamic` names positional argument i ("" a static one; a "*"
// names every positional argument from its place on: *args).
bool dynamic_position(const std::vector<std::string>& dynamic, size_t i) {
  for (size_t k = 0; k < dynamic.size() && k <= i; ++k)
    if (dynamic[k] == "*") return true;
  return i < dynamic.size() && !dynamic[i].empty();
}

// The arguments of `a` that `dynamic` names (by position, or by keyword) and
// `take` accepts: what a jitted stdlib function traces.
template <class Take>
std::vector<Value*> dynamic_args(CallArgs& a, const std::vector<std::string>& dynamic, Take take) {
  std::vector<Value*> out;
  for (size_t i = 0; i < a.pos.size(); ++i)
    if (dynamic_position(dynamic, i) && take(a.pos[i])) out.push_back(&a.pos[i]);
  for (auto& [k, v] : a.kw)
    if (std::count(dynamic.begin(), dynamic.end(), k) && take(v)) out.push_back(&v);
  return out;
}

bool is_array(const Value& v) { return v.is_obj(ObjKind::Array); }

// What keys the trace of `a` besides its arrays' types: the function and
// every argument that is not a traced array, with where it was passed; "" when
// one is no plain literal (the call is traced anew).
// (`numbers_traced`: dynamic Python numbers are traced too, as weak-typed
// arrays, and key like arrays.)
std::string static_key(const std::string& name, const std::vector<std::string>& dynamic,
                       const CallArgs& a, bool numbers_traced = false) {
  std::string key = name + "(";
  auto add = [&](const std::string& at, const Value& v, bool is_dynamic) {
    key += at + "=";
    if (is_dynamic && (is_array(v) || (numbers_traced && v.is_number())))
      return key += "array;", true;
    return append_literal_key(v, key);
  };
  for (size_t i = 0; i < a.pos.size(); ++i)
    if (!add(std::to_string(i), a.pos[i], dynamic_position(dynamic, i))) return "";
  for (const auto& [k, v] : a.kw)
    if (!add(k, v, std::count(dynamic.begin(), dynamic.end(), k) > 0)) return "";
  return key + ")";
}

// An eager call of a function JAX jits: one XLA program, so its array
// arguments are traced and the Function is contracted as XLA does
// (ir/contract.hpp) before it runs, once per signature. Arguments that are no
// arrays stay as they are (constants of the program).
Value call_as_xla_program(InterpreterImpl& in, const std::string& name,
                          const std::vector<std::string>& dynamic, CallArgs& a, const NativeFn& f) {
  std::vector<Value*> lifted = dynamic_args(a, dynamic, is_array);
  if (lifted.empty() || jit_disabled(in)) return f(in, a);
  ValueList args;
  std::vector<Tensor> leaves;
  for (Value* v : lifted) {
    args.push_back(*v);
    leaves.push_back(in.to_tensor(*v, Span{}));
  }
  std::string signature = program_signature(in, static_key(name, dynamic, a), leaves);
  std::shared_ptr<const TracedFunction> program = cached_program(in, signature);
  if (!program) {
    // fn(*arrays): the call with its array arguments replaced.
    Value body = make_builtin(name, [&](InterpreterImpl& i2, CallArgs& traced) {
      CallArgs call = a;
      std::vector<Value*> slots = dynamic_args(call, dynamic, is_array);
      for (size_t k = 0; k < slots.size() && k < traced.pos.size(); ++k) *slots[k] = traced.pos[k];
      return f(i2, call);
    });
    auto traced = std::make_shared<TracedFunction>(trace_function(in, body, args, Span{}, "jit"));
    compile_as_xla(*traced);
    cache_program(in, signature, traced);
    program = traced;
  }
  return apply_traced(in, *program, leaves);
}

} // namespace

namespace {
constexpr char kBinaryUpdate[] = "\x01binary-update ";
} // namespace

std::string jaxpr_binary_update_param(const std::string& op, DType dtype) {
  return kBinaryUpdate + op + " " + dtype_short_name(dtype);
}

bool read_binary_update_param(const std::string& v, std::string& op, std::string& type) {
  const std::string marker = kBinaryUpdate;
  if (v.compare(0, marker.size(), marker) != 0) return false;
  const size_t space = v.find(' ', marker.size());
  if (space == std::string::npos) return false;
  op = v.substr(marker.size(), space - marker.size());
  type = v.substr(space + 1);
  return true;
}

Value call_as_jitted(InterpreterImpl& in, const std::string& name,
                     const std::vector<std::string>& dynamic, CallArgs& a, const NativeFn& f) {
  TraceContext* tc = recording(in).first;
  if (!tc) return f(in, a);
  std::vector<Value*> lifted =
      dynamic_args(a, dynamic, [](const Value& v) { return is_array(v) || v.is_number(); });
  std::vector<Tensor> operands;
  for (Value* v : lifted) {
    operands.push_back(in.to_tensor(*v, Span{}));
    jaxpr_note_passed(*tc, *v, operands.back());
  }
  int region = jaxpr_begin_body(*tc, "jit", {{"name", name}}, operands);
  // JAX traces a jitted function once per signature: calls with the same
  // static arguments and operand types are one jaxpr (printed once, `let`).
  if (std::string key = static_key(name, dynamic, a, true); !key.empty()) {
    for (const Tensor& t : operands) key += type_str(t->aval) + (t->aval.weak ? "~;" : ";");
    tc->jaxpr_record->regions[static_cast<size_t>(region)].identity = "call:" + key;
  }
  for (size_t k = 0; k < lifted.size(); ++k) *lifted[k] = make_array(operands[k]);
  Value out = f(in, a);
  jaxpr_end_region(*tc, region, value_ids(in, *tc, out));
  return out;
}

Value jaxpr_jit_decorator() {
  return make_builtin("_jaxpr_jit", [](InterpreterImpl&, CallArgs& a) {
    if (a.pos.empty() || !a.kw.empty())
      throw Error(ErrCode::Arguments, "_jaxpr_jit(name, *dynamic) takes positional arguments");
    std::string name = value_to_str(a.pos[0], "name");
    std::vector<std::string> dynamic;
    for (size_t i = 1; i < a.pos.size(); ++i) dynamic.push_back(value_to_str(a.pos[i], "dynamic"));
    return make_builtin("_jaxpr_jit", [name, dynamic](InterpreterImpl&, CallArgs& d) {
      if (d.pos.size() != 1 || !d.kw.empty())
        throw Error(ErrCode::Arguments, "_jaxpr_jit(...) decorates one function");
      Value fn = d.pos[0];
      std::string own = fn.is_obj(ObjKind::Function) ? fn.as<FunctionObj>()->name : name;
      return make_builtin(own, [name, dynamic, fn](InterpreterImpl& in, CallArgs& c) {
        auto call = [&fn](InterpreterImpl& i2, CallArgs& c2) { return i2.call(fn, c2, Span{}); };
        if (dynamic_cast<EagerContext*>(&in.ops()))
          return call_as_xla_program(in, name, dynamic, c, call);
        return call_as_jitted(in, name, dynamic, c, call);
      });
    });
  });
}

void add_jaxpr_record(Value& lax) {
  auto& vars = lax.as<ModuleObj>()->env->vars;
  vars["_jaxpr_recording"] = make_builtin("_jaxpr_recording", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_jaxpr_recording", a, {}, 0);
    return Value::boolean(recording(in).first != nullptr);
  });
  vars["_jaxpr_jit"] = jaxpr_jit_decorator();
  vars["_jaxpr_fresh"] = make_builtin("_jaxpr_fresh", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_jaxpr_fresh", a, {"tree"}, 1);
    auto [tc, rec] = recording(in);
    if (!tc) return r[0];
    ValueList leaves;
    TreeDef def = tree_flatten(in, r[0], leaves);
    for (Value& l : leaves)
      if (l.is_obj(ObjKind::Array) || l.is_number())
        l = make_array(jaxpr_fresh_copy(*tc, in.to_tensor(l, Span{})));
    return tree_unflatten(def, leaves);
  });
  // _jaxpr_keep(tree): values a jaxpr shows although nothing uses them (a
  // step JAX's own code computes and discards, as logsumexp's sign).
  vars["_jaxpr_keep"] = make_builtin("_jaxpr_keep", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_jaxpr_keep", a, {"tree"}, 1);
    auto [tc, rec] = recording(in);
    if (!tc) return Value::none();
    for (int id : value_ids(in, *tc, r[0])) rec->kept.push_back(id);
    return Value::none();
  });
  vars["_jaxpr_begin"] = make_builtin("_jaxpr_begin", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_jaxpr_begin", a, {"prim", "inputs", "params", "body"}, 3);
    auto [tc, rec] = recording(in);
    if (!tc) return Value::none();
    std::vector<std::pair<std::string, std::string>> params;
    for (const Value& kv : in.iterate(r[2], Span{})) {
      ValueList pair = in.iterate(kv, Span{});
      if (pair.size() == 2) params.push_back({value_to_str(pair[0], "param"), pxl::str(pair[1])});
    }
    int k = jaxpr_begin_region(*tc, value_to_str(r[0], "prim"), value_ids(in, *tc, r[1]),
                               std::move(params));
    rec->regions[static_cast<size_t>(k)].opaque = r.has(3) && !in.truthy(r[3], Span{});
    return Value::none();
  });
  vars["_jaxpr_part"] = make_builtin("_jaxpr_part", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_jaxpr_part", a, {"invars"}, 1);
    auto [tc, rec] = recording(in);
    if (!tc || rec->open.empty()) return Value::none();
    int owner = rec->open.back();
    // A scan body traced again (its carry types promoted) replaces the first.
    if (rec->regions[static_cast<size_t>(owner)].prim == "scan")
      rec->regions[static_cast<size_t>(owner)].parts.clear();
    std::vector<int> invars = value_ids(in, *tc, r[0]);
    int part = jaxpr_begin_region(*tc, "part", {}, {});
    rec->regions[static_cast<size_t>(part)].invars = std::move(invars);
    rec->regions[static_cast<size_t>(owner)].parts.push_back(part);
    return Value::none();
  });
  vars["_jaxpr_end_part"] = make_builtin("_jaxpr_end_part", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_jaxpr_end_part", a, {"outvars"}, 1);
    auto [tc, rec] = recording(in);
    if (!tc || rec->open.empty() ||
        rec->regions[static_cast<size_t>(rec->open.back())].prim != "part")
      return Value::none();
    int part = rec->open.back();
    rec->regions[static_cast<size_t>(part)].outvars = value_ids(in, *tc, r[0]);
    jaxpr_end_region(*tc, part, {});
    return Value::none();
  });
  vars["_jaxpr_end"] = make_builtin("_jaxpr_end", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_jaxpr_end", a, {"outputs", "inputs"}, 1);
    auto [tc, rec] = recording(in);
    if (!tc || rec->open.empty()) return Value::none();
    // The innermost region that is not a part.
    for (auto it = rec->open.rbegin(); it != rec->open.rend(); ++it)
      if (rec->regions[static_cast<size_t>(*it)].prim != "part") {
        if (r.has(1)) // (known only now: a scan's carry types)
          rec->regions[static_cast<size_t>(*it)].inputs = value_ids(in, *tc, r[1]);
        jaxpr_end_region(*tc, *it, value_ids(in, *tc, r[0]));
        break;
      }
    return Value::none();
  });
}

} // namespace pxl
