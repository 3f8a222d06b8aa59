// jit's placement checks (see jit_devices.hpp): what JAX raises before a call
// whose arrays live on devices that cannot run together.
#include "stdlib/jit_devices.hpp"

#include <algorithm>
#include <optional>
#include <tuple>

#include "runtime/eager.hpp"
#include "runtime/sharded.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/sharding_rules.hpp"

namespace pxl {

namespace {

const ShardingObj* as_sharding(const Value& v) {
  return v.is_obj(ObjKind::Opaque) ? dynamic_cast<const ShardingObj*>(v.as<OpaqueObj>()) : nullptr;
}
bool is_spec(const Value& v) {
  return v.is_obj(ObjKind::Opaque) && dynamic_cast<const SpecObj*>(v.as<OpaqueObj>());
}
bool is_sharding_leaf(const Value& v) { return v.is_none() || v.is_obj(ObjKind::Opaque); }

ValueList sharding_leaves(InterpreterImpl& in, const Value& shardings) {
  ValueList leaves;
  Value is_leaf = make_builtin("is_leaf", [](InterpreterImpl&, CallArgs& a) {
    return Value::boolean(!a.pos.empty() && is_sharding_leaf(a.pos[0]));
  });
  tree_flatten(in, shardings, leaves, &is_leaf);
  return leaves;
}

// Where an array lives, as JAX's jax.Array.sharding says and whether it is
// committed to it (array_committed).
struct Placement {
  Mesh mesh; // its devices (one for an array on one device)
  PartitionSpec spec;
  bool single_device = true;
  bool committed = false;
  std::string repr(const std::string& platform) const {
    if (single_device) return pxl::repr(make_single_device_sharding(platform, mesh.device_ids[0]));
    return ShardingObj(mesh, spec).repr();
  }
};

std::optional<Placement> placement_of(const Value& leaf) {
  if (!leaf.is_obj(ObjKind::Array)) return std::nullopt;
  const Tensor& t = leaf.as<ArrayObj>()->tensor;
  Placement p;
  if (t->sharded) {
    p.mesh = t->sharded->mesh;
    p.spec = t->sharded->spec;
    p.single_device = false;
    p.committed = true;
  } else if (t->concrete) {
    p.mesh.device_ids = {t->concrete->device()};
    p.committed = array_committed(leaf);
  } else {
    return std::nullopt; // traced
  }
  return p;
}

// Device -> block of `shape`: two shardings lay an array out alike when these
// agree (JAX compares their HLO shardings).
std::vector<std::tuple<int, std::vector<int64_t>, Shape>>
layout(const Mesh& mesh, const PartitionSpec& spec, const Shape& shape) {
  std::vector<std::tuple<int, std::vector<int64_t>, Shape>> out;
  for (int64_t pos = 0; pos < mesh.size(); ++pos) {
    ShardBlock b = mesh.ndim() ? block_of(mesh, spec, shape, pos)
                               : ShardBlock{std::vector<int64_t>(shape.size(), 0), shape};
    out.emplace_back(mesh.device_ids[pos], b.start, b.shape);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ids_str(const std::vector<int>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

// One device assignment JAX checks (a stages.DeviceAssignmentMismatch).
struct Assignment {
  std::vector<int> ids;
  std::string kind; // "ARG_SHARDING", "explicit output sharding", "context mesh"
};

} // namespace

void name_like_first_argument(std::vector<Tensor>& results, std::span<const Tensor> params) {
  // (The first argument with a sharding of its own: uncommitted ones have none.)
  auto it = std::find_if(params.begin(), params.end(),
                         [](const Tensor& p) { return p->sharded != nullptr; });
  if (it == params.end()) return;
  const ShardedData& first = *(*it)->sharded;
  for (Tensor& t : results) {
    if (!t->sharded || !t->sharded->mesh.same_mesh(first.mesh) ||
        t->aval.ndim() != first.global.ndim() || t->sharded->spec.entries == first.spec.entries ||
        layout(first.mesh, t->sharded->spec, t->aval.shape) !=
            layout(first.mesh, first.spec, t->aval.shape))
      continue;
    auto named = std::make_shared<ShardedData>();
    named->pull_log = t->sharded->pull_log;
    named->mesh = t->sharded->mesh;
    named->spec = first.spec;
    named->global = t->sharded->global;
    named->shards = t->sharded->shards;
    t = make_sharded_tensor(std::move(named));
  }
}

Value named_as(const Value& array, const Value& sharding) {
  const ShardingObj* s = as_sharding(sharding);
  if (!s || s->single_device || !array.is_obj(ObjKind::Array)) return array;
  const Tensor& t = array.as<ArrayObj>()->tensor;
  if (!t->sharded || !t->sharded->mesh.same_mesh(s->mesh) || !(t->sharded->spec == s->spec) ||
      t->sharded->spec.entries == s->spec.entries)
    return array;
  auto named = std::make_shared<ShardedData>();
  named->pull_log = t->sharded->pull_log;
  named->mesh = t->sharded->mesh;
  named->spec = s->spec;
  named->spec.unconstrained.clear();
  named->global = t->sharded->global;
  named->shards = t->sharded->shards;
  Value out = make_array(make_sharded_tensor(std::move(named)));
  out.as<ArrayObj>()->committed = array.as<ArrayObj>()->committed;
  return out;
}

Value keep_one_device_mesh(InterpreterImpl& in, std::span<const Tensor> params, const Value& out) {
  auto it = std::find_if(params.begin(), params.end(),
                         [](const Tensor& p) { return p->sharded != nullptr; });
  if (it == params.end() || (*it)->sharded->mesh.size() != 1) return out;
  const ShardedData& first = *(*it)->sharded;
  ValueList leaves;
  TreeDef def = tree_flatten(in, out, leaves);
  for (Value& leaf : leaves) {
    if (!leaf.is_obj(ObjKind::Array)) continue;
    const Tensor& t = leaf.as<ArrayObj>()->tensor;
    if (!t->concrete || t->concrete->device() != first.mesh.device_ids[0]) continue;
    PartitionSpec spec = t->aval.ndim() == first.global.ndim() ? first.spec : PartitionSpec{};
    leaf = make_array(
        make_sharded_tensor(shard_array(*t->concrete, first.mesh, spec, first.pull_log)));
  }
  return tree_unflatten(def, leaves);
}

bool array_committed(const Value& array) {
  const auto* a = array.as<ArrayObj>();
  return a->committed || a->tensor->sharded ||
         (a->tensor->concrete && a->tensor->concrete->device() != 0);
}

void check_spec_names(const Mesh& mesh, const PartitionSpec& spec, const std::string& what) {
  std::vector<std::string> seen;
  for (const std::string& a : spec.axes()) {
    if (mesh.axis_of(a) < 0) {
      std::string names = "(";
      for (size_t i = 0; i < mesh.axis_names.size(); ++i)
        names += (i ? ", '" : "'") + mesh.axis_names[i] + "'";
      names += mesh.axis_names.size() == 1 ? ",)" : ")";
      throw Error(ErrCode::Value, "Resource axis: " + a + " of " + spec.repr() +
                                      " is not found in mesh: " + names + ".");
    }
    if (std::find(seen.begin(), seen.end(), a) != seen.end())
      throw Error(ErrCode::Value,
                  "A single " + what +
                      " specification can map every mesh axis to at most one positional "
                      "dimension, but " +
                      spec.repr() + " has duplicate entries for `" + a + "`");
    seen.push_back(a);
  }
  // JAX's _check_mesh_unreduced: unreduced/reduced axes are Explicit axes of the mesh.
  for (bool red : {false, true})
    for (const std::string& a : red ? spec.reduced : spec.unreduced) {
      std::string Kind = red ? "Reduced" : "Unreduced", kind = red ? "reduced" : "unreduced";
      if (mesh.axis_of(a) < 0) {
        std::string names = "(";
        for (size_t i = 0; i < mesh.axis_names.size(); ++i)
          names += (i ? ", '" : "'") + mesh.axis_names[i] + "'";
        names += mesh.axis_names.size() == 1 ? ",)" : ")";
        throw Error(ErrCode::Value, Kind + " axes " + a + " is not found in mesh.axis_names=" +
                                        names + ". Got pspec=" + spec.repr());
      }
      if (mesh.axis_type(mesh.axis_of(a)) != AxisType::Explicit) {
        std::string set;
        for (const std::string& n : red ? spec.reduced : spec.unreduced)
          set += (set.empty() ? "'" : ", '") + n + "'";
        throw Error(ErrCode::Value, Kind +
                                        " axes can only refer to mesh axes that is of type "
                                        "`Explicit`. Got " +
                                        kind + " axes: frozenset({" + set +
                                        "}) and mesh: " + mesh.jax_str());
      }
    }
}

void check_sharding_rank(const std::string& which, const std::string& sharding_repr,
                         const PartitionSpec& spec, int rank) {
  if (static_cast<int>(spec.entries.size()) <= rank) return;
  throw Error(ErrCode::Value,
              "One of " + which + " is incompatible with its sharding annotation " + sharding_repr +
                  ": Sharding " + sharding_repr + " is only valid for values of rank at least " +
                  std::to_string(spec.entries.size()) + ", but was applied to a value of rank " +
                  std::to_string(rank) + "." +
                  (rank == 0 ? " For scalars the PartitionSpec should be P()" : ""));
}

void check_out_sharding_ranks(InterpreterImpl& in, const Value& out_shardings, const Value& out) {
  if (out_shardings.is_none()) return;
  ValueList leaves, targets;
  TreeDef def = tree_flatten(in, out, leaves);
  std::vector<std::string> keys = leaf_keystrs(def);
  broadcast_prefix(in, out_shardings, out, targets, is_sharding_leaf, "jit() out_shardings");
  for (size_t i = 0; i < leaves.size() && i < targets.size(); ++i) {
    if (!leaves[i].is_obj(ObjKind::Array)) continue;
    Value target = spec_over_current_mesh(in, targets[i], "jit");
    const ShardingObj* s = as_sharding(target);
    if (s && !s->single_device)
      check_sharding_rank("pjit outputs with pytree key path result" + keys[i], s->repr(), s->spec,
                          leaves[i].as<ArrayObj>()->tensor->aval.ndim());
  }
}

void check_sharding_leaves(InterpreterImpl& in, const Value& shardings, const char* what) {
  if (shardings.is_none()) return;
  for (const Value& leaf : sharding_leaves(in, shardings)) {
    const ShardingObj* s = as_sharding(leaf);
    if (!leaf.is_none() && !s && !is_spec(leaf))
      throw Error(ErrCode::Type, std::string(what) +
                                     " leaf specifications are expected to be PartitionSpec "
                                     "instances or None, but got " +
                                     pxl::str(leaf));
    if (s && !s->spec.unconstrained.empty())
      throw Error(ErrCode::Value,
                  std::string("Unconstrained dims are not allowed when passed to ") + what + ": " +
                      s->repr());
  }
}

void check_specs_have_mesh(InterpreterImpl& in, const Value& shardings, const char* what,
                           const std::string& api) {
  if (shardings.is_none()) return;
  const Value* current = in.context_mesh();
  if (current && value_to_mesh(*current)) return;
  for (const Value& leaf : sharding_leaves(in, shardings))
    if (is_spec(leaf))
      throw Error(
          ErrCode::Value,
          api + " requires a non-empty mesh in context if you are passing `PartitionSpec`s to " +
              what +
              ". You can define a context mesh via `jax.set_mesh(mesh)`. Alternatively, "
              "provide `Sharding`s to " +
              what + " and then the mesh context manager is not required.");
}

void check_jit_placement(InterpreterImpl& in, const JitCallPlacement& c) {
  const std::string platform = in.platform().name();
  std::string upper = platform;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  const Value* current = in.context_mesh();
  const Mesh* ctx = current ? value_to_mesh(*current) : nullptr;

  // The argument leaves, their names (JAX's arg_names with key paths) and
  // the in_shardings leaf each gets.
  struct Leaf {
    std::string name;
    Value value;
    Value target; // None: unspecified
  };
  std::vector<Leaf> leaves;
  for (size_t i = 0; i < c.args.size(); ++i) {
    ValueList vals;
    TreeDef def = tree_flatten(in, c.args[i], vals);
    std::vector<std::string> keys = leaf_keystrs(def);
    ValueList targets(vals.size());
    if (i < c.n_positional && !c.in_shardings.is_none()) {
      // in_shardings is a prefix of the tuple of positional arguments.
      ValueList all;
      ValueList positional(c.args.begin(), c.args.begin() + static_cast<long>(c.n_positional));
      broadcast_prefix(in, c.in_shardings, make_tuple(positional), all, is_sharding_leaf,
                       "jit() in_shardings");
      size_t before = 0;
      for (size_t k = 0; k < i; ++k) {
        ValueList tmp;
        tree_flatten(in, c.args[k], tmp);
        before += tmp.size();
      }
      for (size_t k = 0; k < vals.size() && before + k < all.size(); ++k)
        targets[k] = all[before + k];
    }
    for (size_t k = 0; k < vals.size(); ++k)
      leaves.push_back({c.arg_names[i] + keys[k], vals[k], targets[k]});
  }

  // A committed argument laid out otherwise than its in_shardings says.
  std::vector<Assignment> order; // in JAX's order: arguments, then outputs
  for (const Leaf& l : leaves) {
    std::optional<Placement> p = placement_of(l.value);
    if (!p) continue;
    const Shape& shape = l.value.as<ArrayObj>()->tensor->aval.shape;
    Value target = spec_over_current_mesh(in, l.target, "jit");
    const ShardingObj* s = as_sharding(target);
    if (s && !s->single_device) {
      check_spec_names(s->mesh, s->spec, "in_shardings");
      check_sharding_rank("pjit arguments with pytree key path " + l.name, s->repr(), s->spec,
                          static_cast<int>(shape.size()));
    }
    if (s && !s->is_abstract()) {
      if (p->committed && layout(s->mesh, s->spec, shape) != layout(p->mesh, p->spec, shape))
        throw Error(
            ErrCode::Value,
            "Sharding passed to jit does not match the sharding on the respective arg. Got jit "
            "sharding: " +
                pxl::repr(target) + ",\narg sharding: " + p->repr(platform) + " for arg type: " +
                sharded_type_str(l.value.as<ArrayObj>()->tensor->aval, {}, false));
      order.push_back({s->mesh.device_ids, "ARG_SHARDING"});
    } else if (p->committed) {
      order.push_back({p->mesh.device_ids, "ARG_SHARDING"});
    }
  }
  if (!c.out_shardings.is_none())
    for (const Value& leaf : sharding_leaves(in, c.out_shardings)) {
      Value target = spec_over_current_mesh(in, leaf, "jit");
      const ShardingObj* s = as_sharding(target);
      if (s && !s->single_device) check_spec_names(s->mesh, s->spec, "out_shardings");
      if (s && !s->is_abstract()) order.push_back({s->mesh.device_ids, "explicit output sharding"});
    }

  std::optional<Assignment> first;
  std::optional<std::pair<Assignment, Assignment>> fails;
  for (const Assignment& a : order) {
    if (!first) first = a;
    if (!ctx) {
      if (first->ids != a.ids) {
        fails = std::pair(*first, a);
        break;
      }
    } else if (ctx->device_ids != a.ids) {
      fails = std::pair(Assignment{ctx->device_ids, "context mesh"}, a);
      break;
    }
  }
  if (!fails) return;

  // The message names the arguments whose devices these are (stages.py's
  // _device_assignment_mismatch_error).
  auto describe_arg = [&](const Assignment& a) -> std::optional<std::string> {
    if (a.kind != "ARG_SHARDING") return std::nullopt;
    for (const Leaf& l : leaves) {
      std::optional<Placement> p = placement_of(l.value);
      if (!p || p->mesh.device_ids != a.ids) continue;
      return "argument " + l.name + " of " + c.fun_name + " with shape " +
             sharded_type_str(l.value.as<ArrayObj>()->tensor->aval, {}, false) +
             " and with device ids " + ids_str(a.ids) + " on platform " + upper;
    }
    return std::nullopt;
  };
  auto describe = [&](const Assignment& a) {
    return std::string(a.kind == "context mesh" ? " jit's " : " ") + a.kind + " with device ids " +
           ids_str(a.ids) + " on platform " + upper;
  };
  const auto& [one, two] = *fails;
  std::optional<std::string> d1 = describe_arg(one), d2 = describe_arg(two);
  std::string extra;
  if (d1 && d2)
    extra = " Got " + *d1 + " and " + *d2;
  else if (d1 || d2)
    extra = " Got " + (d1 ? *d1 : *d2) + " and" + describe(one.kind == "ARG_SHARDING" ? two : one);
  else
    extra = " Got" + describe(one) + " and" + describe(two);
  throw Error(ErrCode::Value, "Received incompatible devices for jitted computation." + extra);
}

void check_grad_mesh(InterpreterImpl& in, std::span<const Tensor> params, const AVal& out) {
  if (!dynamic_cast<EagerContext*>(&in.ops())) return;
  if (const Value* cur = in.context_mesh(); cur && value_to_mesh(*cur)) return;
  for (const Tensor& p : params) {
    if (!p->sharded || p->sharded->mesh.size() == 1) continue;
    const Mesh& m = p->sharded->mesh;
    std::string explicit_axes, sizes;
    bool all_explicit = true;
    for (int a = 0; a < m.ndim(); ++a) {
      if (m.axis_type(a) == AxisType::Explicit)
        explicit_axes +=
            (explicit_axes.empty() ? "'" : ", '") + m.axis_names[static_cast<size_t>(a)] + "'";
      else
        all_explicit = false;
      sizes += (a ? ", " : "") + std::to_string(m.axis_sizes[static_cast<size_t>(a)]);
    }
    if (explicit_axes.empty()) continue;
    if (!all_explicit) // (JAX 0.10 fails earlier there, reshaping the one device into the mesh)
      throw Error(ErrCode::Value, "cannot reshape array of size 1 into shape (" + sizes +
                                      (m.ndim() == 1 ? ",)" : ")"));
    if (m.ndim() == 1) explicit_axes += ",";
    throw Error(ErrCode::Value,
                "Length of device assignment 1 is not equal to the size of the mesh " +
                    std::to_string(m.size()) + " of aval " + type_str(out) + "({Explicit: (" +
                    explicit_axes +
                    ")}). Please enter your `jit` into a mesh context via `jax.set_mesh`.");
  }
}

} // namespace pxl
