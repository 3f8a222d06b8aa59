// Where JAX's array-producing functions put their result: the `out_sharding=`
// and `device=` arguments (jnp.zeros(..., out_sharding=P('x')),
// jnp.dot(a, b, out_sharding=...), jax.random.normal(..., out_sharding=...)),
// and jax.reshard / jax.sharding.reshard. Each listed function is wrapped once
// at start-up: the wrapper takes those two arguments off, calls the function,
// and lays the result out. A bare PartitionSpec names axes of the mesh made
// current by jax.set_mesh. Inside traced code the layout is the partitioner's
// business (as for with_sharding_constraint), so values pass through.
#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/jit_devices.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/sharding_rules.hpp"

namespace pxl {

namespace {

// out_sharding= (and reshard) go through JAX's sharding-in-types: the spec must
// name Explicit axes only, and the result's spec names every dimension.
enum class Placement { Device, OutSharding };

ShardingObj* sharding_of(const Value& v) {
  return v.is_obj(ObjKind::Opaque) ? dynamic_cast<ShardingObj*>(v.as<OpaqueObj>()) : nullptr;
}

// `leaf` laid out by `target` (None, a Device, a NamedSharding or a bare
// PartitionSpec), for function `fn` (its JAX name, for messages).
Value place(InterpreterImpl& in, const Value& leaf, Value target, Placement how,
            const std::string& fn) {
  if (target.is_none()) return leaf;
  // JAX's jnp.array/asarray/astype place their result through a
  // with_sharding_constraint, whose spec must name Auto axes only.
  if (how == Placement::Device && (fn == "jnp.array" || fn == "jnp.asarray" || fn == "jnp.astype"))
    if (ShardingObj* s = sharding_of(target); s && !s->single_device)
      check_wsc_auto_axes(in, s->mesh, s->spec);
  if (dynamic_cast<TraceContext*>(&in.ops())) {
    // device= a NamedSharding lays the traced result out so, as out_sharding= does.
    ShardingObj* s = sharding_of(target);
    bool over_mesh = s && !s->single_device && !s->is_abstract();
    return how == Placement::Device && !over_mesh ? leaf : constrain_traced(in, leaf, target, fn);
  }
  target = spec_over_current_mesh(in, target, fn);
  ShardingObj* s = sharding_of(target);
  if (how == Placement::OutSharding && !s)
    throw Error(ErrCode::Type,
                fn + "() out_sharding must be a NamedSharding or a PartitionSpec, not " +
                    type_name(target));
  if (how == Placement::OutSharding && !s->single_device) {
    PartitionSpec spec = s->spec;
    for (const auto& entry : spec.entries)
      for (const std::string& axis : entry) {
        int a = s->mesh.axis_of(axis);
        if (a >= 0 && s->mesh.axis_type(a) != AxisType::Explicit)
          throw Error(ErrCode::Spec,
                      "PartitionSpec passed to " + fn +
                          " cannot contain axis names that are of type Auto or Manual. Got "
                          "PartitionSpec: " +
                          spec.repr() + " with axis name: " + axis + " of type: AxisType." +
                          axis_type_name(s->mesh.axis_type(a)) + ".");
      }
    // The type names every dimension: P('x') of a matrix is P('x', None).
    size_t ndim = in.to_tensor(leaf, Span{})->aval.ndim();
    if (spec.entries.size() < ndim) {
      spec.entries.resize(ndim);
      target = Value::object(std::make_shared<ShardingObj>(s->mesh, std::move(spec)));
    }
  }
  return device_put_leaf(in, leaf, target);
}

// Whether `target` (a NamedSharding, or a PartitionSpec over the current
// mesh) lies over a mesh whose axes are all Auto.
bool auto_only(InterpreterImpl& in, const Value& target) {
  auto* obj = target.is_obj(ObjKind::Opaque) ? target.as<OpaqueObj>() : nullptr;
  const Mesh* mesh = nullptr;
  if (auto* named = dynamic_cast<ShardingObj*>(obj)) {
    if (!named->single_device) mesh = &named->mesh;
  } else if (dynamic_cast<SpecObj*>(obj) && in.context_mesh()) {
    mesh = value_to_mesh(*in.context_mesh());
  }
  if (!mesh || mesh->axis_names.empty()) return false;
  for (int a = 0; a < mesh->ndim(); ++a)
    if (mesh->axis_type(a) != AxisType::Auto) return false;
  return true;
}

// Replaces module function `name` by one that also takes out_sharding= and/or
// device= (`prefix` starts its name in messages, as JAX's "jnp.zeros"); a
// `contraction` (dot, einsum, ...) may contract dimensions both operands split.
void wrap(Value& module, const std::string& name, const std::string& prefix, bool out_sharding,
          bool device, bool contraction = false) {
  auto& vars = module.as<ModuleObj>()->env->vars;
  auto it = vars.find(name);
  if (it == vars.end()) return;
  Value inner = it->second;
  std::string fn = prefix + name;
  it->second = make_builtin(name, [inner, fn, out_sharding, device,
                                   contraction](InterpreterImpl& in, CallArgs& a) {
    Value target;
    Placement how = Placement::Device;
    for (auto kw = a.kw.begin(); kw != a.kw.end();) {
      bool mine =
          (out_sharding && kw->first == "out_sharding") || (device && kw->first == "device");
      if (!mine) {
        ++kw;
        continue;
      }
      if (!kw->second.is_none()) {
        if (!target.is_none())
          throw Error(ErrCode::Arguments, fn + "() takes at most one of out_sharding= and device=");
        target = kw->second;
        how = kw->first == "device" ? Placement::Device : Placement::OutSharding;
      }
      kw = a.kw.erase(kw);
    }
    // A contraction with out_sharding= is never ambiguous in JAX: the result's
    // layout is given. pxl computes it from replicated operands, so the
    // Explicit-axes rules have nothing to refuse, then lays it out as asked.
    if (contraction && how == Placement::OutSharding && !target.is_none() &&
        !dynamic_cast<TraceContext*>(&in.ops())) {
      auto replicate = [&](Value& v) {
        if (!v.is_obj(ObjKind::Array)) return;
        const Tensor& t = v.as<ArrayObj>()->tensor;
        if (t->sharded && t->sharded->spans_devices())
          v = device_put_leaf(
              in, v,
              Value::object(std::make_shared<ShardingObj>(t->sharded->mesh, PartitionSpec{})));
      };
      for (Value& v : a.pos) replicate(v);
      for (auto& kw : a.kw) replicate(kw.second);
    }
    // The call site is the wrapper's (errors inside point at the user's call).
    bool given_array = !a.pos.empty() && a.pos[0].is_obj(ObjKind::Array);
    Value result = in.call(inner, a, in.ops().loc);
    if (target.is_none()) {
      // Under jax.set_mesh the result is committed to the mesh: jnp.array
      // places its copy as device_put does (P()), jnp.asarray leaves an array
      // it is given as it is (on its device), the others compute theirs.
      if (fn == "jnp.asarray" && given_array) return result;
      return results_on_current_mesh(in, result, fn != "jnp.array" && fn != "jnp.asarray");
    }
    return map_tree(in, result,
                    [&](const Value& leaf) { return place(in, leaf, target, how, fn); });
  });
}

// A contraction's out_sharding is a parameter of its dot_general (JAX's
// sharding rule takes it as the result's type): when `t` was just made by a
// dot_general of this trace (or a transpose of one, as einsum orders its
// result), the dot is typed `dims` (permuted back), so that it needs no
// ambiguity check wherever it is replayed (eagerly under grad, say).
void type_contraction(TraceContext& tc, const Tensor& t, const DimSpec& dims) {
  if (!tc.owns(t)) return;
  std::vector<Instr>& body = tc.function().body;
  if (body.empty() || body.back().result != t->trace_id) return;
  Instr* last = &body.back();
  DimSpec want = dims;
  if (last->op == Op::Transpose && body.size() >= 2) {
    Instr& dot = body[body.size() - 2];
    if (dot.result != last->operands[0]) return;
    DimSpec inv(want.size());
    for (size_t i = 0; i < last->attrs.perm.size() && i < want.size(); ++i)
      inv[static_cast<size_t>(last->attrs.perm[i])] = want[i];
    want = std::move(inv);
    last = &dot;
  }
  if (last->op == Op::DotGeneral) last->attrs.dim_axes = std::move(want);
}

} // namespace

void check_wsc_auto_axes(InterpreterImpl& in, const Mesh& mesh, const PartitionSpec& spec) {
  for (const auto& entry : spec.entries)
    for (const std::string& axis : entry) {
      int a = mesh.axis_of(axis);
      if (a >= 0 && mesh.axis_type(a) == AxisType::Explicit)
        throw Error(ErrCode::Value,
                    "The spec of NamedSharding passed to with_sharding_constraint can only refer "
                    "to Auto axes "
                    "of the mesh. Got spec=" +
                        spec.repr() + " and mesh=" +
                        pxl::repr(make_abstract_mesh_value(mesh, in.platform().name())) +
                        ". You probably meant to use `reshard` API?");
    }
}

Value constrain_traced(InterpreterImpl& in, const Value& leaf, const Value& target,
                       const std::string& fn) {
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  if (!tc || target.is_none()) return leaf;
  auto* obj = target.is_obj(ObjKind::Opaque) ? target.as<OpaqueObj>() : nullptr;
  auto* spec = dynamic_cast<SpecObj*>(obj);
  auto* named = dynamic_cast<ShardingObj*>(obj);
  if (!tc->function().mesh_axes.empty()) {
    // Inside shard_map the layout over its automatic axes is the compiler's;
    // naming a manual axis is JAX's ValueError (raised when it lowers).
    if (fn == "with_sharding_constraint" && (spec || named))
      for (OpContext* c = tc; auto* t = dynamic_cast<TraceContext*>(c); c = &t->outer()) {
        if (t->what() != "shard_map") continue;
        std::vector<std::string> manual;
        for (const std::string& n : t->function().mesh_axes)
          if (std::find(t->auto_axes.begin(), t->auto_axes.end(), n) == t->auto_axes.end())
            manual.push_back(n);
        const PartitionSpec& want = spec ? spec->spec : named->spec;
        for (const std::string& a : want.axes())
          if (std::find(manual.begin(), manual.end(), a) != manual.end()) {
            std::string names;
            for (const std::string& n : manual) names += (names.empty() ? "'" : ", '") + n + "'";
            throw Error(
                ErrCode::Value,
                "pspec " + want.repr() + " contains a manual axes (" + names +
                    (manual.size() == 1 ? ",)" : ")") +
                    " of mesh which is not allowed. If you are using a with_sharding_constraint "
                    "under a "
                    "shard_map, only use the mesh axis in PartitionSpec which are not manual.");
          }
        break;
      }
    return leaf;
  }
  if (!spec && !(named && !named->single_device))
    throw Error(ErrCode::Type, fn +
                                   "() inside traced code needs a NamedSharding or a "
                                   "PartitionSpec, not " +
                                   type_name(target));
  PartitionSpec s = spec ? spec->spec : named->spec;
  Tensor t = in.to_tensor(leaf, Span{});
  const Shape& shape = t->aval.shape;
  // with_sharding_constraint also reads the deprecated `with mesh:`'s mesh.
  const Value* cur = in.context_mesh();
  const Mesh* ctx = cur ? value_to_mesh(*cur) : nullptr;
  if (!ctx && fn == "with_sharding_constraint") ctx = legacy_context_mesh(in);
  if (!ctx && spec)
    throw Error(ErrCode::Value, fn == "with_sharding_constraint" ? wsc_needs_mesh_message()
                                                                 : spec_needs_mesh_message(s));
  if (fn ==
      "with_sharding_constraint") { // JAX's messages (its sharding shown over the abstract mesh)
    const Mesh* m = named ? &named->mesh : ctx;
    if (m) {
      check_spec_names(*m, s, "shardings");
      check_wsc_auto_axes(in, *m, s);
      Value typed = make_abstract_sharding(make_abstract_mesh_value(*m, in.platform().name()), s);
      check_sharding_rank("with_sharding_constraint arguments", pxl::repr(typed), s,
                          static_cast<int>(shape.size()));
    }
  }
  if (s.entries.size() > shape.size())
    throw Error(ErrCode::Spec, fn + "(): " + s.repr() + " has " + std::to_string(s.entries.size()) +
                                   " entries for a rank-" + std::to_string(shape.size()) +
                                   " array");
  // A mesh to check against: the sharding's, else the current one.
  const Mesh* mesh = named ? &named->mesh : ctx;
  if (mesh) {
    std::string problem = check_spec_axes(*mesh, s, shape);
    if (!problem.empty()) throw Error(ErrCode::Spec, fn + "(): " + problem);
    // A dimension the axes do not divide: XLA pads it into uneven shards;
    // pxl leaves it unsplit (the values are the same, only the layout differs).
    std::vector<int64_t> parts = tiling_factors(*mesh, s, shape.size());
    for (size_t d = 0; d < s.entries.size(); ++d)
      if (shape[d] % parts[d] != 0) s.entries[d].clear();
  }
  // (A bare PartitionSpec is over the mesh in context, which the call then runs over.)
  if (mesh && !tc->function().constraint_mesh && mesh->size() > 0)
    tc->function().constraint_mesh = std::make_shared<const Mesh>(*mesh);
  OpAttrs a;
  a.dim_axes = s.entries;
  a.dim_axes.resize(shape.size());
  a.unreduced = s.unreduced; // a contraction's partial sums (jit_partition.cpp)
  type_contraction(*tc, t, a.dim_axes);
  return make_array(in.ops().bind(Op::ShardingConstraint, a, std::vector<Tensor>{t}));
}

Tensor typed_like_primal(InterpreterImpl& in, const Tensor& ct_in, const Tensor& primal) {
  // Inside shard_map a cotangent varies over the axes its primal varies over,
  // even where its value does not (an unused argument's zeros, a replicated
  // seed): JAX gives it the primal's type.
  Tensor ct = ct_in;
  if (auto* tc = dynamic_cast<TraceContext*>(&in.ops()))
    if (ct->aval.shape == primal->aval.shape && tc->owns(primal))
      ct = pvary_to(in.ops(), ct, vma_of(in.ops(), primal));
  auto typed = explicit_mesh_type(primal);
  if (!typed || ct->aval.shape != primal->aval.shape) return ct;
  // JAX's cotangent type swaps the primal's unreduced and reduced axes
  // (to_ct_spec): a reduced primal's gradient is partial sums.
  std::vector<std::string> primal_reduced, primal_unreduced;
  if (primal->sharded) {
    primal_reduced = primal->sharded->spec.reduced;
    primal_unreduced = primal->sharded->spec.unreduced;
  } else if (primal->trace && primal->trace_id >= 0) {
    auto& ptc = *const_cast<TraceContext*>(static_cast<const TraceContext*>(primal->trace));
    Value s = ptc.type_sharding ? ptc.type_sharding(primal->trace_id) : Value();
    if (!s.is_none()) {
      primal_reduced = static_cast<ShardingObj*>(s.as<OpaqueObj>())->spec.reduced;
      primal_unreduced = static_cast<ShardingObj*>(s.as<OpaqueObj>())->spec.unreduced;
    }
  }
  if (auto* tc = dynamic_cast<TraceContext*>(&in.ops())) {
    if (!tc->function().mesh_axes.empty()) return ct;
    OpAttrs a;
    a.dim_axes = *typed;
    a.unreduced = primal_reduced;
    a.tiled = !primal_reduced.empty(); // (made partial sums if it is whole: jit_partition.cpp)
    if (primal_reduced.empty() && !primal_unreduced.empty()) { // typed reduced (concat_axis 1)
      a.unreduced = primal_unreduced;
      a.concat_axis = 1;
    }
    return in.ops().bind(Op::ShardingConstraint, a, std::vector<Tensor>{ct});
  }
  if (!primal->sharded || ct->trace) return ct;
  PartitionSpec ct_spec = primal->sharded->spec;
  if (!ct_spec.unreduced.empty() || !ct_spec.reduced.empty()) {
    std::swap(ct_spec.unreduced, ct_spec.reduced);
    // (JAX's cotangent sharding names every dimension: P(None, unreduced={'x'}))
    if (ct_spec.entries.size() < ct->aval.shape.size())
      ct_spec.entries.resize(ct->aval.shape.size());
  }
  Value target = Value::object(std::make_shared<ShardingObj>(primal->sharded->mesh, ct_spec));
  return in.to_tensor(device_put_leaf(in, make_array(ct), target), Span{});
}

void add_out_sharding(InterpreterImpl&, Value& jax) {
  auto& jv = jax.as<ModuleObj>()->env->vars;
  Value np = jv.at("numpy"), lax = jv.at("lax"), random = jv.at("random");
  for (const char* n : {"arange", "array", "asarray", "empty", "full", "full_like", "ones",
                        "ones_like", "zeros", "zeros_like"})
    wrap(np, n, "jnp.", true, true);
  for (const char* n : {"eye", "linspace", "astype", "empty_like"})
    wrap(np, n, "jnp.", false, true);
  for (const char* n : {"bincount", "broadcast_to", "percentile", "ravel", "repeat", "reshape"})
    wrap(np, n, "jnp.", true, false);
  for (const char* n : {"dot", "einsum", "matmul", "tensordot"})
    wrap(np, n, "jnp.", true, false, true);
  for (const char* n : {"broadcast", "broadcast_in_dim", "broadcasted_iota", "empty", "reduce",
                        "reduce_sum", "reshape"})
    wrap(lax, n, "lax.", true, false);
  for (const char* n : {"conv_general_dilated", "dot", "dot_general"})
    wrap(lax, n, "lax.", true, false, true);
  for (const char* n : {"ball",
                        "bernoulli",
                        "beta",
                        "bits",
                        "categorical",
                        "cauchy",
                        "chisquare",
                        "dirichlet",
                        "exponential",
                        "f",
                        "gamma",
                        "generalized_normal",
                        "geometric",
                        "gumbel",
                        "laplace",
                        "loggamma",
                        "logistic",
                        "lognormal",
                        "maxwell",
                        "multivariate_normal",
                        "normal",
                        "orthogonal",
                        "pareto",
                        "permutation",
                        "poisson",
                        "rademacher",
                        "randint",
                        "rayleigh",
                        "t",
                        "triangular",
                        "truncated_normal",
                        "uniform",
                        "wald"})
    wrap(random, n, "random.", true, false);

  // jax.reshard(x, out_shardings): x (a pytree) laid out by a sharding or spec
  // per leaf (a prefix of x's structure). `always`: also over a mesh whose axes
  // are all Auto, where JAX's reshard changes only the type (which names no
  // axes) and leaves the layout to the compiler; auto_axes (sharding_axes.pxl)
  // lays its arguments out without the axes it makes Auto, so that the
  // Explicit-axes rules of the enclosing jit meet no split over them.
  auto make_reshard = [](const char* name, bool always) {
    return make_builtin(name, [name, always](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(name, a, {"xs", "out_shardings"}, 2);
      return map_tree_with_prefix(
          in, r[0], r[1], [](const Value& v) { return v.is_none() || v.is_obj(ObjKind::Opaque); },
          std::string(name) + "() out_shardings",
          [&](const Value& leaf, const Value& target) {
            if (!always && auto_only(in, target)) return leaf;
            return place(in, leaf, target, Placement::OutSharding, "reshard");
          });
    });
  };
  Value reshard = make_reshard("reshard", false);
  jv["reshard"] = reshard;
  Value sharding = jv.at("sharding");
  auto& sv = sharding.as<ModuleObj>()->env->vars;
  sv["reshard"] = reshard;
  sv["_reshard_always"] = make_reshard("reshard", true);
  sv["set_mesh"] = jv.at("set_mesh");
}

} // namespace pxl
