// lax.while_loop and lax.fori_loop. Eagerly (no trace), a while loop runs on
// the host (lax_loops.pxl's _host_while_loop); inside jit, pmap, shard_map,
// vmap or grad the cond and body are traced once into Functions of their own
// and the loop becomes one while instruction (ir/while_loop.hpp), run by the
// runtime (runtime/while_loop.cpp). fori_loop with static bounds is a scan
// (lax_loops.pxl's _fori_scan), as JAX lowers it, which reverse mode
// differentiates; with traced bounds it is a while loop over (i, upper,
// carry), as in JAX.
// Also here: while's batching rule (vmap).
#include "ir/while_loop.hpp"

#include "lang/args.hpp"
#include "lang/jaxpr_record.hpp"
#include "lang/tracer.hpp"
#include "runtime/eager.hpp"
#include "runtime/sharded.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/checkify.hpp"
#include "stdlib/host_callback.hpp"
#include "stdlib/inspect_sharding.hpp"
#include "stdlib/mutable_ref.hpp"
#include "stdlib/np.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/trace_util.hpp"
#include "stdlib/transforms.hpp"
#include "stdlib/while_loop.hpp"
#include "stdlib/xla_program.hpp"

namespace pxl {

namespace {

// The types a loop part (cond or body) is traced with.
struct CarryTypes {
  std::vector<AVal> avals;
  std::vector<AxisSet> vmas;
};

// A traced cond or body: its Function, whose captured constants have become
// its leading parameters, and those constants as tensors of the caller.
struct Part {
  std::shared_ptr<Function> fn;
  std::vector<Tensor> consts;
  std::shared_ptr<JaxprRecord> record; // make_jaxpr's, when it traces the loop
};

// Traces a loop part in a context nested in `cx`: `record` gets the carry
// parameters and must set the Function's results.
Part trace_part(OpContext& cx, const std::string& name, const CarryTypes& carry,
                const std::function<void(TraceContext&, std::span<const Tensor>)>& record) {
  Part p;
  p.fn = std::make_shared<Function>();
  p.fn->name = name;
  auto* enclosing = dynamic_cast<TraceContext*>(&cx);
  if (enclosing) {
    p.fn->mesh_axes = enclosing->function().mesh_axes;
    p.fn->mesh_sizes = enclosing->function().mesh_sizes;
  }
  {
    TraceContext tc(*p.fn, cx, "while_loop");
    if (enclosing && enclosing->jaxpr_record)
      tc.jaxpr_record = p.record = std::make_shared<JaxprRecord>();
    std::vector<Tensor> params;
    for (size_t i = 0; i < carry.avals.size(); ++i)
      params.push_back(tc.add_param(carry.avals[i], carry.vmas[i], cx.loc, "the while_loop carry"));
    LocScope loc(tc, cx.loc);
    record(tc, params);
    p.consts = tc.captured_tensors();
  }
  std::vector<int> params = p.fn->consts;
  params.insert(params.end(), p.fn->params.begin(), p.fn->params.end());
  p.fn->params = std::move(params);
  p.fn->consts.clear();
  return p;
}

std::vector<Tensor> bind_while(OpContext& cx, const Part& cond, const Part& body,
                               std::span<const Tensor> init, ExecMode mode, CodeCache* cache,
                               int64_t trip_count = -1) {
  std::vector<Tensor> operands = cond.consts;
  operands.insert(operands.end(), body.consts.begin(), body.consts.end());
  operands.insert(operands.end(), init.begin(), init.end());
  auto loop = make_while_loop(cond.fn, body.fn, static_cast<int>(cond.consts.size()),
                              static_cast<int>(body.consts.size()), mode, cache);
  loop->trip_count = trip_count;
  loop->cond_record = cond.record;
  loop->body_record = body.record;
  // jax.debug.print formats go to the caller's table, which the SPMD printer
  // reads (a single-device loop prints each record's own format as it ends).
  if (auto* tc = dynamic_cast<TraceContext*>(&cx)) {
    auto& table = tc->function().debug_formats;
    loop->cond_format_base = static_cast<int>(table.size());
    table.insert(table.end(), cond.fn->debug_formats.begin(), cond.fn->debug_formats.end());
    loop->body_format_base = static_cast<int>(table.size());
    table.insert(table.end(), body.fn->debug_formats.begin(), body.fn->debug_formats.end());
  }
  OpAttrs attrs;
  attrs.loop = std::move(loop);
  return cx.bind_call(attrs, operands);
}

// ---- lax.while_loop / lax.fori_loop ------------------------------------------

// JAX's spelling of a type in while_loop's errors: "float32[3]", "float32[]{V:i}".
std::string jax_type(const AVal& a, AxisSet vma, const std::vector<std::string>& axes) {
  std::string s = std::string(dtype_name(a.dtype)) + "[";
  for (size_t i = 0; i < a.shape.size(); ++i) s += (i ? "," : "") + std::to_string(a.shape[i]);
  s += "]";
  if (!vma) return s;
  s += "{V:";
  bool first = true;
  for (size_t i = 0; i < axes.size(); ++i)
    if (vma & (AxisSet{1} << i)) s += (first ? "" : ",") + axes[i], first = false;
  return s + "}";
}

// The key path of every leaf of `d` in flattening order, as JAX's errors write
// them after the parameter name: "[1]", "['a']".
void leaf_paths(const TreeDef& d, const std::string& prefix, std::vector<std::string>& out) {
  switch (d.kind) {
  case TreeDef::Kind::Leaf:
    out.push_back(prefix);
    return;
  case TreeDef::Kind::None:
    return;
  case TreeDef::Kind::Key:
    leaf_paths(d.children[0], prefix, out);
    return;
  default:
    for (size_t i = 0; i < d.children.size(); ++i)
      leaf_paths(
          d.children[i],
          prefix +
              (d.kind == TreeDef::Kind::NamedTuple
                   ? "." + d.nt_type->fields[i]
                   : "[" + (d.kind == TreeDef::Kind::Dict ? repr(d.keys[i]) : std::to_string(i)) +
                         "]"),
          out);
  }
}

std::string first_param_name(const Value& fn) {
  if (fn.is_obj(ObjKind::Function)) {
    const auto* f = fn.as<FunctionObj>();
    if (f->params && !f->params->empty()) return (*f->params)[0].name;
  }
  return "carry";
}

bool is_traced(const Value& v) {
  if (!v.is_obj(ObjKind::Array)) return false;
  const Tensor& t = v.as<ArrayObj>()->tensor;
  return t->trace != nullptr;
}

// A traced loop: `cond` and `body` map the carry pytree (a Value shaped like
// `tree`) to the predicate and the next carry.
struct LoopSpec {
  std::function<Value(const Value&)> cond, body;
  std::string cond_name, body_name;
  std::string carry_name; // body_fun's parameter, for errors
  int64_t trip_count = -1;
  // Mutable array references from outside that the loop carries (their
  // values are the carry's second part, see lifted_while).
  std::vector<std::shared_ptr<RefObj>> carried_refs;
};

Value loops_fn(InterpreterImpl& in, const std::string& name);
Value traced_while(InterpreterImpl& in, const Span& where, const Value& init_val,
                   const LoopSpec& spec);

// A loop whose cond or body writes references made outside it: as JAX
// discharges them, the loop carries their values ((carry, (values...)));
// each step sets the references to the carried values and returns their
// new ones, and afterwards the references hold the final values.
Value lifted_while(InterpreterImpl& in, const Span& where, const Value& init_val,
                   const LoopSpec& spec, const std::vector<std::shared_ptr<RefObj>>& refs) {
  auto set_refs = [&](const Value& values) {
    const ValueList& vs = *sequence_items(values);
    for (size_t k = 0; k < refs.size(); ++k) store_ref(in, refs[k], vs[k]);
  };
  auto ref_values = [&] {
    ValueList vs;
    for (const auto& r : refs) vs.push_back(load_ref(in, *r));
    return make_tuple(std::move(vs));
  };
  // (JAX carries them strongly typed.)
  ValueList init_values;
  for (const auto& r : refs) init_values.push_back(strongly_typed(in, load_ref(in, *r)));
  LoopSpec lifted = spec;
  lifted.carried_refs.insert(lifted.carried_refs.end(), refs.begin(), refs.end());
  lifted.cond = [&](const Value& c) {
    const ValueList& parts = *sequence_items(c);
    set_refs(parts[1]);
    return spec.cond(parts[0]);
  };
  lifted.body = [&](const Value& c) {
    const ValueList& parts = *sequence_items(c);
    set_refs(parts[1]);
    Value out = spec.body(parts[0]);
    return make_tuple({out, ref_values()});
  };
  Value out = traced_while(in, where, make_tuple({init_val, make_tuple(init_values)}), lifted);
  const ValueList& parts = *sequence_items(out);
  set_refs(parts[1]);
  return parts[0];
}

bool same_type(const AVal& a, const AVal& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.weak == b.weak;
}

Value traced_while(InterpreterImpl& in, const Span& where, const Value& init_val,
                   const LoopSpec& spec) {
  OpContext& cx = in.ops();
  LocScope at(cx, where);
  ValueList init_leaves;
  TreeDef tree = tree_flatten(in, init_val, init_leaves);
  std::vector<Tensor> init;
  for (const Value& l : init_leaves) {
    if (!l.is_obj(ObjKind::Array) && !l.is_number())
      throw Error(ErrCode::Type,
                  "while_loop: the carry must be a pytree of arrays and numbers, not " +
                      type_name(l),
                  where);
    init.push_back(in.to_tensor(l, where));
  }
  std::vector<std::string> paths;
  leaf_paths(tree, spec.carry_name, paths);
  auto* enclosing = dynamic_cast<TraceContext*>(&cx);
  std::vector<std::string> axes;
  if (enclosing) axes = enclosing->function().mesh_axes;
  const bool shard_map = spmd_mode(cx) == SpmdMode::ShardMap;
  auto carry_values = [&](std::span<const Tensor> params) {
    ValueList leaves;
    for (const Tensor& t : params) leaves.push_back(make_array(t));
    return tree_unflatten(tree, leaves);
  };
  // The body's own weak type of each carry result (-1: the carry's), when the
  // two differ only in it: JAX runs every step with the initial carry's types
  // and gives the loop's results the body's.
  std::vector<int> body_weak(init.size(), -1);
  Value body_out; // the body's last result, for the structure error
  // References from outside that cond or body write and the loop does not
  // carry yet: the loop is then traced again carrying them (lifted_while).
  std::vector<std::shared_ptr<RefObj>> written_refs;
  auto record_in = [&](const std::function<Value(const Value&)>& fn, TraceContext& tc,
                       std::span<const Tensor> params, TreeDef& out_tree,
                       const CarryTypes* retype) {
    in.push_ops(&tc);
    struct Pop {
      InterpreterImpl& in;
      ~Pop() { in.pop_ops(); }
    } pop{in};
    RefFrameScope ref_frame(in);
    tc.ref_writes_ok = true;
    Value r = fn(carry_values(params));
    for (const RefWrite& w : ref_frame.frame.writes)
      if (ref_from_outside(*w.ref, tc) &&
          std::find(spec.carried_refs.begin(), spec.carried_refs.end(), w.ref) ==
              spec.carried_refs.end() &&
          std::find(written_refs.begin(), written_refs.end(), w.ref) == written_refs.end())
        written_refs.push_back(w.ref);
    if (retype) body_out = r;
    ValueList outs;
    out_tree = tree_flatten(in, r, outs);
    for (const Value& v : outs) {
      if (!v.is_obj(ObjKind::Array) && !v.is_number())
        throw Error(ErrCode::Type,
                    "while_loop: the body and cond must return arrays or numbers, not " +
                        type_name(v),
                    where);
      Tensor t = in.to_tensor(v, where);
      size_t i = tc.function().results.size();
      if (retype && i < retype->avals.size()) {
        const AVal& want = retype->avals[i];
        body_weak[i] = -1;
        if (t->aval.dtype == want.dtype && t->aval.shape == want.shape &&
            t->aval.weak != want.weak) {
          body_weak[i] = t->aval.weak ? 1 : 0;
          OpAttrs at;
          at.dtype = want.dtype;
          at.weak = want.weak;
          t = tc.bind(Op::ConvertElementType, at, std::vector<Tensor>{t});
        }
      }
      tc.function().results.push_back(tc.value_of(t));
    }
  };
  // (An eager loop is compiled once its parts are traced.)
  auto record = [&](const std::function<Value(const Value&)>& fn, TraceContext& tc,
                    std::span<const Tensor> params, TreeDef& out_tree, const CarryTypes* retype) {
    PendingCompileCallbacks pending(in);
    record_in(fn, tc, params, out_tree, retype);
    pending.finish(tc.what());
  };

  CarryTypes types;
  for (const Tensor& t : init) {
    types.avals.push_back(t->aval);
    types.vmas.push_back(vma_of(cx, t));
  }
  auto trace_cond = [&]() {
    return trace_part(cx, spec.cond_name, types, [&](TraceContext& tc, std::span<const Tensor> ps) {
      TreeDef out_tree;
      record(spec.cond, tc, ps, out_tree, nullptr);
      if (out_tree.kind != TreeDef::Kind::Leaf)
        throw Error(ErrCode::Type,
                    "cond_fun must return a boolean scalar, but got pytree " + out_tree.repr() +
                        ".",
                    where);
      const Function& f = tc.function();
      std::string got;
      for (int r : f.results)
        got += std::string(got.empty() ? "" : ", ") + "ShapedArray(" +
               jax_type(f.values[r].aval, 0, axes) +
               (f.values[r].aval.weak ? ", weak_type=True" : "") + ")";
      if (f.results.size() != 1 || f.values[f.results[0]].aval.dtype != DType::Bool ||
          !f.values[f.results[0]].aval.shape.empty())
        throw Error(ErrCode::Type,
                    "cond_fun must return a boolean scalar, but got output type(s) [" + got + "].",
                    where);
    });
  };
  Part body, cond;
  // A weakly typed initial value takes the body's stronger type, and (outside
  // shard_map's checks) the carry varies over what the body makes it vary
  // over; either changes the carry's type, and both are traced again (cond_fun
  // first, in JAX's order).
  for (int attempt = 0;; ++attempt) {
    TreeDef out_tree;
    cond = trace_cond();
    body = trace_part(cx, spec.body_name, types, [&](TraceContext& tc, std::span<const Tensor> ps) {
      record(spec.body, tc, ps, out_tree, &types);
    });
    // (Once more if a carrying loop's body writes others: they are carried around it.)
    if (!written_refs.empty()) return lifted_while(in, where, init_val, spec, written_refs);
    if (!(out_tree == tree)) {
      // JAX's list of the differences (stdlib/lax_tree_errors.pxl), else the two structures.
      in.call(loops_fn(in, "_while_structure_error"),
              ValueList{make_str(spec.carry_name), init_val, body_out}, where);
      throw Error(ErrCode::Type,
                  "while_loop body function carry input and carry output must have the same "
                  "pytree structure, but they differ: the input carry is " +
                      tree.repr() + " and the carry output is " + out_tree.repr(),
                  where,
                  "Revise the function so that the carry output has the same pytree structure as "
                  "the carry input.");
    }
    bool changed = false;
    std::vector<std::string> diffs; // JAX's type differences, all of them
    for (size_t i = 0; i < init.size(); ++i) {
      const IRValue& out = body.fn->values[body.fn->results[i]];
      AVal& want = types.avals[i];
      bool same = out.aval.shape == want.shape && out.aval.dtype == want.dtype;
      // A weakly typed initial value the body gives another dtype takes it.
      if (want.weak && out.aval.shape == want.shape && !same && attempt < 3) {
        init[i] = np::astype(cx, init[i], out.aval.dtype);
        want = init[i]->aval;
        changed = true;
        continue;
      }
      std::string what = paths.size() == 1 && tree.kind == TreeDef::Kind::Leaf
                             ? "The input carry " + paths[i]
                             : "The input carry component " + paths[i];
      if (!same) {
        std::string why = out.aval.dtype != want.dtype && out.aval.shape != want.shape
                              ? "the dtypes do not match, and the shapes do not match"
                          : out.aval.shape != want.shape ? "the shapes do not match"
                                                         : "the dtypes do not match";
        diffs.push_back(
            "the input carry " +
            std::string(what.find("component") != std::string::npos ? "component " : "") +
            paths[i] + " has type " + jax_type(want, 0, axes) +
            " but the corresponding output carry component has type " +
            jax_type(out.aval, 0, axes) + ", so " + why);
        continue;
      }
      if (out.vma != types.vmas[i]) {
        if (shard_map) {
          AxisSet extra = out.vma & ~types.vmas[i];
          std::string fix;
          if (extra) {
            std::string names;
            for (size_t a = 0; a < axes.size(); ++a)
              if (extra & (AxisSet{1} << a)) names += "'" + axes[a] + "',";
            fix = "apply jax.lax.pcast(..., (" + names +
                  "), to='varying') to the initial carry value "
                  "corresponding to the input carry component " +
                  paths[i];
          } else {
            fix =
                "Revise the function so that all output types match the corresponding input types.";
          }
          throw Error(ErrCode::Vma,
                      "while_loop body function carry input and carry output must have equal "
                      "types, but they differ: " +
                          what + " has type " + jax_type(want, types.vmas[i], axes) +
                          " but the corresponding output carry component has type " +
                          jax_type(out.aval, out.vma, axes) +
                          ", so the manual axis types do not match",
                      where, fix);
        }
        if (attempt < 3) {
          types.vmas[i] |= out.vma;
          changed = true;
        }
      }
    }
    if (!diffs.empty()) {
      // As JAX lists them: one sentence, or bullets (a blank line after each but the last two).
      std::string listed;
      if (diffs.size() == 1) {
        listed = diffs[0] + ".\n";
        listed[0] = 'T';
      } else {
        for (size_t k = 0; k + 1 < diffs.size(); ++k)
          listed += (k ? "\n" : "") + std::string("  * ") + diffs[k] + ";\n";
        listed += "  * " + diffs.back() + ".\n";
      }
      throw Error(
          ErrCode::Type,
          "while_loop body function carry input and carry output must have equal types, but they "
          "differ:\n\n" +
              listed +
              "\nRevise the function so that all output types match the "
              "corresponding input types.",
          where);
    }
    if (!changed) break;
  }
  std::vector<Tensor> out = bind_while(cx, cond, body, init, in.options().exec,
                                       &in.platform().code_cache(), spec.trip_count);
  ValueList leaves;
  for (size_t i = 0; i < out.size(); ++i) {
    // A carry the body returns unchanged (of unchanged type) is the initial
    // value itself, as JAX forwards it.
    const size_t nconst =
        body.fn->params.size() - std::min(body.fn->params.size(), out.size()); // (first)
    if (body.fn->params.size() >= out.size() && body.fn->results.size() == out.size() &&
        body.fn->results[i] == body.fn->params[nconst + i] && body_weak[i] < 0 &&
        init_leaves[i].is_obj(ObjKind::Array) &&
        same_type(init_leaves[i].as<ArrayObj>()->tensor->aval, types.avals[i])) {
      leaves.push_back(init_leaves[i]);
      continue;
    }
    Tensor t = std::move(out[i]);
    if (body_weak[i] >= 0) {
      OpAttrs at;
      at.dtype = t->aval.dtype;
      at.weak = body_weak[i] == 1;
      t = cx.bind(Op::ConvertElementType, at, std::vector<Tensor>{t});
    }
    leaves.push_back(make_array(std::move(t)));
  }
  return tree_unflatten(tree, leaves);
}

// Values that plainly cannot be called (JAX's "should be callable" errors).
bool plainly_not_callable(const Value& v) {
  return v.is_none() || v.is_number() || v.is_obj(ObjKind::Str) || v.is_obj(ObjKind::Tuple) ||
         v.is_obj(ObjKind::List) || v.is_obj(ObjKind::Dict) || v.is_obj(ObjKind::Array);
}

// A function of stdlib/lax_loops.pxl (imported once; its private functions
// are not merged into jax.lax).
Value loops_fn(InterpreterImpl& in, const std::string& name) {
  Value m = in.import_module("lax_loops", Span{}, "");
  auto& vars = m.as<ModuleObj>()->env->vars;
  auto it = vars.find(name);
  if (it == vars.end()) throw Error(ErrCode::Internal, "lax_loops." + name + " is missing");
  return it->second;
}

struct WhileLoopFn : OpaqueObj {
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override { return "<function while_loop>"; }
  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    ArgReader r("while_loop", a, {"cond_fun", "body_fun", "init_val"}, 3);
    Value cond_fun = r[0], body_fun = r[1];
    if (plainly_not_callable(cond_fun) || plainly_not_callable(body_fun))
      throw Error(ErrCode::Type,
                  "lax.while_loop: body_fun and cond_fun arguments should be callable.", where);
    auto traced = [cond_fun, body_fun, where](InterpreterImpl& in, const Value& init) {
      LoopSpec spec;
      spec.cond = [&](const Value& c) { return in.call(cond_fun, ValueList{c}, where); };
      spec.body = [&](const Value& c) { return in.call(body_fun, ValueList{c}, where); };
      spec.cond_name = "cond_fun";
      spec.body_name = "body_fun";
      spec.carry_name = first_param_name(body_fun);
      return traced_while(in, where, init, spec);
    };
    if (dynamic_cast<TraceContext*>(&in.ops())) {
      out = traced(in, r[2]);
      return true;
    }
    // Eagerly JAX still traces cond_fun and body_fun once (their Python runs
    // once, on tracers) and runs the loop; under disable_jit it is a Python
    // loop (lax_loops.pxl).
    if (jit_disabled(in)) {
      out = in.call(loops_fn(in, "_host_while_loop"), ValueList{cond_fun, body_fun, r[2]}, where);
      return true;
    }
    Value loop = make_builtin("while_loop", [traced](InterpreterImpl& in, CallArgs& c) {
      return traced(in, c.pos.at(0));
    });
    TracedFunction t = trace_function(in, loop, ValueList{r[2]}, where, "while_loop", nullptr,
                                      nullptr, {}, false, RefMode::Effects);
    Value res = apply_traced(in, t, leaf_tensors(in, ValueList{r[2]}, where));
    // Carries the body forwards come back as the caller's own values.
    ValueList init_leaves, out_leaves;
    tree_flatten(in, r[2], init_leaves);
    TreeDef out_tree = tree_flatten(in, res, out_leaves);
    for (size_t k = 0; k < out_leaves.size() && k < t.fn->results.size(); ++k)
      for (size_t j = 0; j < t.fn->params.size() && j < init_leaves.size(); ++j)
        if (t.fn->results[k] == t.fn->params[j]) out_leaves[k] = init_leaves[j];
    out = apply_ref_outputs(in, t, tree_unflatten(out_tree, out_leaves));
    return true;
  }
};

// The type of fori_loop's index, JAX's rule: equal dtypes stay as they are
// (a weak bound stays weak); a weakly typed signed bound takes the other's
// signed type; other differences are errors.
DType fori_index_dtype(const AVal& lo, const AVal& hi, const Span& where) {
  if (lo.dtype == hi.dtype) return lo.dtype;
  bool both_signed = is_signed_int(lo.dtype) && is_signed_int(hi.dtype);
  if (both_signed && lo.weak && !hi.weak) return hi.dtype;
  if (both_signed && !lo.weak && hi.weak) return lo.dtype;
  throw Error(ErrCode::Type,
              std::string("lower and upper arguments to fori_loop must have equal types, got ") +
                  dtype_name(lo.dtype) + " and " + dtype_name(hi.dtype),
              where);
}

// fori_loop as a while loop over (i, upper, carry), i and upper of the
// bounds' (common) integer type; `trip_count` when the bounds are static.
Value fori_as_while(InterpreterImpl& in, const Span& where, const Value& lower, const Value& upper,
                    const Value& body_fun, const Value& init, int64_t trip_count) {
  Tensor lo = in.to_tensor(lower, where), hi = in.to_tensor(upper, where);
  // JAX counts with whatever real type the bounds have (floats included).
  auto real = [](DType d) { return is_integer(d) || is_floating(d); };
  if (!lo->aval.shape.empty() || !hi->aval.shape.empty() || !real(lo->aval.dtype) ||
      !real(hi->aval.dtype))
    throw Error(ErrCode::Type,
                "fori_loop: lower and upper must be real scalars, got " + type_str(lo->aval) +
                    " and " + type_str(hi->aval),
                where);
  DType dt = fori_index_dtype(lo->aval, hi->aval, where);
  if (lo->aval.dtype != hi->aval.dtype) {
    LocScope at(in.ops(), where);
    if (lo->aval.dtype != dt) lo = np::astype(in.ops(), lo, dt);
    if (hi->aval.dtype != dt) hi = np::astype(in.ops(), hi, dt);
  }
  LoopSpec spec;
  spec.cond = [&](const Value& c) {
    ValueList items = *sequence_items(c);
    return in.compare(CmpOpKind::Lt, items[0], items[1], where);
  };
  spec.body = [&](const Value& c) {
    ValueList items = *sequence_items(c);
    // (JAX's order: the step's i + 1 first, then body_fun.)
    Value i_next = in.binary_op(BinOpKind::Add, items[0], Value::integer(1), where);
    Value next = in.call(body_fun, ValueList{items[0], items[2]}, where);
    return make_tuple({i_next, items[1], next});
  };
  spec.cond_name = "fori_cond";
  spec.body_name = "fori_body";
  spec.carry_name = "loop_carry"; // JAX's name in its errors
  spec.trip_count = trip_count;
  Value result = traced_while(in, where, make_tuple({make_array(lo), make_array(hi), init}), spec);
  return (*sequence_items(result))[2];
}

// lax._fixed_loop(lower, upper, body_fun, init_val): fori_loop with static
// bounds as one loop when traced (lax.scan over long sequences), reverse
// mode differentiable since its trip count is known; eagerly too, as JAX
// compiles a scan's loop (one compiled body, not one dispatch per op and step).
struct FixedLoopFn : OpaqueObj {
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override { return "<function _fixed_loop>"; }
  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    ArgReader r("_fixed_loop", a, {"lower", "upper", "body_fun", "init_val"}, 4);
    int64_t lo = r.get_int(0), hi = r.get_int(1);
    Value l = make_array(in.to_tensor(Value::integer(lo), where, DType::Int32));
    Value u = make_array(in.to_tensor(Value::integer(hi), where, DType::Int32));
    out = fori_as_while(in, where, l, u, r[2], r[3], std::max<int64_t>(hi - lo, 0));
    return true;
  }
};

struct ForiLoopFn : OpaqueObj {
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override { return "<function fori_loop>"; }
  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    ArgReader r("fori_loop", a, {"lower", "upper", "body_fun", "init_val", "unroll"}, 4);
    Value lower = r[0], upper = r[1], body_fun = r[2];
    if (plainly_not_callable(body_fun))
      throw Error(ErrCode::Type, "lax.fori_loop: body_fun argument should be callable.", where);
    // JAX's fori_loop is a scan when int(lower) and int(upper) work: for
    // Python numbers and concrete arrays, and for traced values whose value
    // the trace knows (grad and jvp away from jit).
    auto known = [&](const Value& v) -> std::optional<Array> {
      if (v.is_int() || v.is_bool() || v.is_float()) return std::nullopt;
      const Tensor* t = v.is_obj(ObjKind::Array) ? &v.as<ArrayObj>()->tensor : nullptr;
      if (!t) return std::nullopt;
      if ((*t)->concrete) return *(*t)->concrete;
      if ((*t)->sharded) return (*t)->sharded->assemble();
      if (!(*t)->trace) return std::nullopt;
      try {
        return in.ops().concrete(*t);
      } catch (const Error&) {
        return std::nullopt; // abstract (inside jit, vmap, a loop body): a while loop
      }
    };
    std::optional<Array> lo_arr = known(lower), hi_arr = known(upper);
    bool lo_static = lo_arr || !is_traced(lower), hi_static = hi_arr || !is_traced(upper);
    if (lo_static && hi_static) {
      // Static bounds, truncated as Python's int() does.
      auto bound = [&](const Value& v, const std::optional<Array>& arr) -> int64_t {
        if (v.is_int() || v.is_bool()) return v.as_int();
        if (v.is_float()) return static_cast<int64_t>(v.as_float());
        if (!arr || arr->size() != 1 || !(is_integer(arr->dtype()) || is_floating(arr->dtype())))
          throw Error(ErrCode::Type,
                      "fori_loop: lower and upper must be real scalars, got " +
                          (arr ? type_str(arr->aval()) : pxl::type_name(v)),
                      where);
        return static_cast<int64_t>(arr->get_f64(0));
      };
      int64_t lo = bound(lower, lo_arr), hi = bound(upper, hi_arr);
      fori_index_dtype(in.to_tensor(lower, where)->aval, in.to_tensor(upper, where)->aval, where);
      // A scan over (i, carry), as JAX's (lax_loops.pxl): reverse mode
      // differentiates it; a long one is one loop with a known trip count.
      out = in.call(loops_fn(in, "_fori_scan"),
                    ValueList{Value::integer(lo), Value::integer(hi), body_fun, r[3],
                              r.has(4) ? r[4] : Value::none()},
                    where);
      return true;
    }
    // Traced bounds: a while loop, which cannot be unrolled.
    if (r.has(4) && !r[4].is_none() && !(r[4].is_bool() && r[4].as_int() == 0) &&
        !(r[4].is_int() && r[4].as_int() == 1))
      throw Error(ErrCode::Value,
                  "Can only use `unroll` in `fori_loop` if the loop bounds are statically known.",
                  where);
    out = fori_as_while(in, where, lower, upper, body_fun, r[3], -1);
    return true;
  }
};

} // namespace

// A loop over `init` (typed `carry_avals`) whose cond and body are built by
// the callbacks from the carry parameters; for transformations that derive
// loops (forward mode, stdlib/autodiff_forward.cpp).
std::vector<Tensor>
bind_loop(OpContext& cx, const std::string& cond_name, const std::string& body_name,
          const std::vector<AVal>& carry_avals, std::span<const Tensor> init,
          const std::function<Tensor(TraceContext&, std::span<const Tensor>)>& cond,
          const std::function<std::vector<Tensor>(TraceContext&, std::span<const Tensor>)>& body,
          ExecMode mode, CodeCache* cache, int64_t trip_count) {
  CarryTypes types;
  types.avals = carry_avals;
  for (const Tensor& t : init) types.vmas.push_back(vma_of(cx, t));
  Part c = trace_part(cx, cond_name, types, [&](TraceContext& tc, std::span<const Tensor> ps) {
    tc.function().results.push_back(tc.value_of(cond(tc, ps)));
  });
  Part b = trace_part(cx, body_name, types, [&](TraceContext& tc, std::span<const Tensor> ps) {
    for (const Tensor& r : body(tc, ps)) tc.function().results.push_back(tc.value_of(r));
  });
  return bind_while(cx, c, b, init, mode, cache, trip_count);
}

void add_while_loop(Value& lax) {
  auto& vars = lax.as<ModuleObj>()->env->vars;
  vars["while_loop"] = Value::object(std::make_shared<WhileLoopFn>());
  vars["fori_loop"] = Value::object(std::make_shared<ForiLoopFn>());
  // For lax_loops.pxl: the name of a function's first parameter (JAX's errors
  // name the carry by it) and whether an array's value is known (not traced).
  vars["_param_name"] = make_builtin("_param_name", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_param_name", a, {"fun"}, 1);
    return make_str(first_param_name(r[0]));
  });
  // JAX's fun_sourceinfo, which its cond/switch errors show: "f at file:line".
  vars["_fun_where"] = make_builtin("_fun_where", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_fun_where", a, {"fun"}, 1);
    if (!r[0].is_obj(ObjKind::Function)) return make_str("<unknown>");
    const auto* f = r[0].as<FunctionObj>();
    if (!f->span.valid()) return make_str(f->name);
    return make_str(f->name + " at " + f->span.file->path() + ":" +
                    std::to_string(f->span.file->line_of(f->span.begin)));
  });
  // For lax_loops.pxl: fn(*args) as JAX runs a cond branch: traced (its Python
  // runs on tracers), then the traced Function evaluated in the current context.
  vars["_run_traced"] = make_builtin("_run_traced", [](InterpreterImpl& in, CallArgs& a) {
    if (a.pos.empty()) throw Error(ErrCode::Arguments, "_run_traced(fn, *args) needs a function");
    ValueList args(a.pos.begin() + 1, a.pos.end());
    TracedFunction t = trace_function(in, a.pos[0], args, Span{}, "cond", nullptr, nullptr, {},
                                      false, RefMode::Effects);
    // With jax_debug_nans/infs the branch runs whole, as JAX's cond primitive:
    // only its outputs are checked, and the error names cond.
    auto* eager = dynamic_cast<EagerContext*>(&in.ops());
    if (eager) compile_as_xla(t); // JAX compiles the cond: one XLA program
    Value out;
    {
      FloatChecksOff unchecked(eager);
      out = apply_ref_outputs(in, t, apply_traced(in, t, leaf_tensors(in, args, Span{})));
    }
    if (eager && eager->float_checks().any()) // (the error takes the cond call's place)
      eager->checked_results("invalid value (%) encountered in cond",
                             leaf_tensors(in, {out}, Span{}), Span{});
    return out;
  });
  vars["_is_concrete"] = make_builtin("_is_concrete", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_is_concrete", a, {"x"}, 1);
    return Value::boolean(!is_traced(r[0]));
  });
  vars["_fixed_loop"] = Value::object(std::make_shared<FixedLoopFn>());
  // lax.cond/switch on a traced predicate: _branch_gate(pred) before tracing a
  // branch, _branch_gate_end() after it (see TraceContext::push_branch_gate).
  vars["_branch_gate"] = make_builtin("_branch_gate", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_branch_gate", a, {"pred"}, 1);
    if (auto* tc = dynamic_cast<TraceContext*>(&in.ops())) {
      Tensor pred = in.to_tensor(r[0], Span{});
      tc->push_branch_gate(pred);
      if (tracing_under_checkify(*tc)) record_branch(*tc, pred, true);
    }
    return Value::none();
  });
  vars["_branch_gate_end"] = make_builtin("_branch_gate_end", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_branch_gate_end", a, {}, 0);
    if (auto* tc = dynamic_cast<TraceContext*>(&in.ops())) {
      if (tracing_under_checkify(*tc)) {
        std::vector<Tensor> preds = tc->branch_predicates();
        record_branch(*tc, preds.back(), false);
      }
      tc->pop_branch_gate();
    }
    return Value::none();
  });
}

// ---- batching ------------------------------------------------------------------

// vmap of a while loop, as JAX's batching rule: a carry component is batched
// when its initial value is or the body makes it so. With an unbatched
// predicate the batched cond and body run as they are; with a batched one
// (each example stops at its own step) every carry component is batched (but
// those the body returns unchanged), the
// loop runs while any example's predicate holds, and the body keeps the carry
// of the examples whose predicate is false.
std::vector<BVal> batch_while(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> args,
                              const BatchAxis& ax) {
  const WhileLoop& w = *attrs.loop;
  const size_t ncc = static_cast<size_t>(w.cond_nconsts), nbc = static_cast<size_t>(w.body_nconsts),
               nc = w.ncarry();
  std::vector<BVal> cconsts(args.begin(), args.begin() + static_cast<long>(ncc));
  std::vector<BVal> bconsts(args.begin() + static_cast<long>(ncc),
                            args.begin() + static_cast<long>(ncc + nbc));
  std::vector<BVal> init(args.begin() + static_cast<long>(ncc + nbc), args.end());
  bool any = false;
  for (const BVal& a : args) any = any || a.batched;
  // axis_index or a collective over the vmapped axis batches the loop too.
  std::function<bool(const Function&)> names_axis = [&](const Function& f) {
    for (const Instr& i : f.body) {
      if (i.op == Op::AxisIndex || !i.attrs.axis_names.empty()) return true;
      if (i.attrs.loop && (names_axis(*i.attrs.loop->cond) || names_axis(*i.attrs.loop->body)))
        return true;
    }
    return false;
  };
  if (!any && !names_axis(*w.cond) && !names_axis(*w.body)) {
    std::vector<Tensor> ts;
    for (const BVal& a : args) ts.push_back(a.t);
    std::vector<BVal> out;
    for (Tensor& t : cx.bind_call(attrs, ts)) out.push_back({std::move(t), false});
    return out;
  }
  const IoEffects io = io_effects(*w.cond), body_io = io_effects(*w.body);
  if (io.ordered || body_io.ordered)
    throw Error(ErrCode::Unsupported, "Ordered IO effects not supported in vmap.");
  auto with_carry = [](std::vector<BVal> consts, std::span<const Tensor> carry,
                       const std::vector<bool>& batched) {
    for (size_t i = 0; i < carry.size(); ++i) consts.push_back({carry[i], batched[i]});
    return consts;
  };
  auto types_for = [&](const std::vector<bool>& batched) {
    CarryTypes t;
    for (size_t i = 0; i < nc; ++i) {
      AVal a = init[i].t->aval;
      if (batched[i] && !init[i].batched) a.shape.insert(a.shape.begin(), ax.size);
      t.avals.push_back(a);
      t.vmas.push_back(vma_of(cx, init[i].t));
    }
    return t;
  };
  // Which carry components are batched: a fixpoint over the body, traced
  // (and thrown away) to see which results come out batched.
  std::vector<bool> carry_b(nc);
  for (size_t i = 0; i < nc; ++i) carry_b[i] = init[i].batched;
  // A carry component the body returns unchanged stays unbatched even under a
  // batched predicate (JAX's read-only carry: every example has its value).
  auto read_only = [&](size_t i) {
    const Function& b = *w.body;
    return b.params.size() == nbc + nc && b.results.size() == nc &&
           b.results[i] == b.params[nbc + i];
  };
  bool pred_b = false;
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<BVal> outs;
    trace_part(cx, "scratch", types_for(carry_b),
               [&](TraceContext& tc, std::span<const Tensor> ps) {
                 outs = batch_function(tc, *w.body, with_carry(bconsts, ps, carry_b), {}, ax);
               });
    for (size_t i = 0; i < nc; ++i)
      if (outs[i].batched && !carry_b[i]) carry_b[i] = changed = true;
    if (changed) continue;
    trace_part(
        cx, "scratch", types_for(carry_b), [&](TraceContext& tc, std::span<const Tensor> ps) {
          pred_b = batch_function(tc, *w.cond, with_carry(cconsts, ps, carry_b), {}, ax)[0].batched;
        });
    if (pred_b)
      for (size_t i = 0; i < nc; ++i) carry_b[i] = carry_b[i] || !read_only(i);
  }
  // (JAX's while batching rule: with a batched predicate each example would
  // need effects of its own.)
  if (pred_b && (io.unordered || body_io.unordered))
    throw Error(ErrCode::Unsupported,
                "Unordered IO effects not supported in while_loop with batched predicate");
  CarryTypes types = types_for(carry_b);
  Part cond = trace_part(
      cx, w.cond->name + "_batched", types, [&](TraceContext& tc, std::span<const Tensor> ps) {
        BVal p = batch_function(tc, *w.cond, with_carry(cconsts, ps, carry_b), {}, ax)[0];
        Tensor pred = p.t;
        if (p.batched) {
          OpAttrs any_lane;
          any_lane.axes = {0};
          pred = tc.bind(Op::ReduceOr, any_lane, std::vector<Tensor>{pred});
        }
        tc.function().results.push_back(tc.value_of(pred));
      });
  Part body = trace_part(
      cx, w.body->name + "_batched", types, [&](TraceContext& tc, std::span<const Tensor> ps) {
        std::vector<BVal> outs =
            batch_function(tc, *w.body, with_carry(bconsts, ps, carry_b), {}, ax);
        Tensor pred;
        if (pred_b)
          pred = batch_function(tc, *w.cond, with_carry(cconsts, ps, carry_b), {}, ax)[0].t;
        for (size_t i = 0; i < nc; ++i) {
          Tensor r =
              outs[i].batched || !carry_b[i] ? outs[i].t : broadcast_batch(tc, outs[i].t, ax.size);
          if (pred_b && carry_b[i]) { // examples that are done keep their carry
            OpAttrs b;
            b.shape = r->aval.shape;
            b.axes = {0};
            Tensor p = tc.bind(Op::BroadcastInDim, b, std::vector<Tensor>{pred});
            r = tc.bind(Op::Select, {}, std::vector<Tensor>{p, r, ps[i]});
          }
          tc.function().results.push_back(tc.value_of(r));
        }
      });
  std::vector<Tensor> start;
  for (size_t i = 0; i < nc; ++i)
    start.push_back(carry_b[i] && !init[i].batched ? broadcast_batch(cx, init[i].t, ax.size)
                                                   : init[i].t);
  std::vector<BVal> out;
  size_t i = 0;
  // A batched predicate runs as long as the longest example: no fixed count.
  for (Tensor& t : bind_while(cx, cond, body, start, w.mode, w.cache, pred_b ? -1 : w.trip_count)) {
    out.push_back({std::move(t), carry_b[i]});
    ++i;
  }
  return out;
}

} // namespace pxl
