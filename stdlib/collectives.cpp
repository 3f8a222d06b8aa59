// The collectives of jax.lax (psum, pmean, pmax, pmin, all_gather, psum_scatter,
// ppermute, pshuffle, all_to_all, axis_index, axis_size), on pytrees, over one
// axis name or a tuple of names. They are legal only inside pmap/shard_map,
// where the tracer binds them as IR ops; the axis names are checked here.
#include <algorithm>
#include <cmath>
#include <set>

#include "ir/aval_text.hpp"
#include "lang/args.hpp"
#include "lang/jaxpr_record.hpp"
#include "lang/tracer.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/np.hpp"
#include "stdlib/np_internal.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/sharding.hpp"

namespace pxl {

namespace {

// The axis names of a collective call, validated against the enclosing trace.
struct AxisEnv {
  TraceContext* trace = nullptr;
  std::vector<std::string> names;
  int64_t group_size = 1;                         // the whole group's, or an index group's
  std::vector<std::vector<int64_t>> index_groups; // axis_index_groups (empty: none)
  // axis_index_groups of different sizes (psum/pmax/pmin/pmean only); the
  // runtime's collectives need equal groups, so these are computed by masking.
  std::vector<std::vector<int64_t>> uneven_groups;
  int64_t axis_size = 1; // the named axes' whole size
};

// JAX's NameError for an axis name no enclosing map binds. Its text depends
// on the collective and on whether it is being traced (eagerly, psum's
// evaluation rule and ppermute's missing one answer differently); in a
// shard_map body, over an axis axis_names leaves automatic, the pvary JAX
// inserts before the collective is what meets the name.
std::string unbound_axis_message(const std::string& fn, const std::string& name, bool traced,
                                 bool auto_axis) {
  std::string found = "Found an unbound axis name: " + name + ". To fix this, please call ";
  bool reduction = fn == "psum" || fn == "pmean" || fn == "pmax" || fn == "pmin";
  bool permute = fn == "ppermute" || fn == "pshuffle";
  if (fn == "axis_index") return found + "axis_index under `jax.shard_map`.";
  if (fn == "ragged_all_to_all") return found + "ragged_all_to_all under `jax.shard_map`.";
  if (traced && (fn == "pcast" || (auto_axis && (reduction || permute))))
    return found + "pvary under `jax.shard_map`.";
  if (fn == "pmax" || fn == "pmin" || (reduction && traced))
    return found + "psum under `jax.shard_map`.";
  if (permute)
    return traced ? found + "ppermute under `jax.shard_map`."
                  : "Evaluation rule for 'ppermute' not implemented";
  return "unbound axis name: " + name;
}

std::string unbound_axis_hint(const Function* f, const TraceContext* trace,
                              const std::string& name) {
  if (!f)
    return "wrap the function in pmap(f, axis_name='" + name + "') or shard_map(f, mesh, ...)";
  std::string bound;
  for (const auto& a : f->mesh_axes) bound += (bound.empty() ? "'" : ", '") + a + "'";
  if (f->mesh_axes.size() == 1 && f->mesh_axes[0] == kPmapAxisName)
    return "this pmap has no axis_name: pass axis_name='" + name + "' to pmap";
  if (bound.empty())
    return "the enclosing " + trace->what() +
           " binds no axis names: call it under jax.shard_map (or pmap) with a mesh axis '" + name +
           "'";
  return "the enclosing " + trace->what() + " binds " + bound;
}

// The innermost enclosing pmap or shard_map trace (jit, grad and vmap traces
// inside one share its axes), or nullptr.
TraceContext* enclosing_spmd(OpContext& cx) {
  OpContext* c = &cx;
  while (auto* tc = dynamic_cast<TraceContext*>(c)) {
    if (tc->what() == "pmap" || tc->what() == "shard_map") return tc;
    c = &tc->outer();
  }
  return nullptr;
}

AxisEnv resolve_axes(InterpreterImpl& in, const Value& axis_name, const char* fn) {
  AxisEnv env;
  if (axis_name.is_obj(ObjKind::Str)) {
    env.names.push_back(axis_name.as<StrObj>()->value);
  } else if (const ValueList* items = sequence_items(axis_name)) {
    for (const Value& v : *items)
      env.names.push_back(value_to_str(v, std::string(fn) + "() axis_name"));
  } else {
    throw Error(ErrCode::Type, std::string(fn) +
                                   "() axis_name must be a string or a tuple of strings, not " +
                                   type_name(axis_name));
  }
  if (env.names.empty())
    throw Error(ErrCode::Value, std::string(fn) + "(): axis_name is an empty tuple");
  env.trace = dynamic_cast<TraceContext*>(&in.ops());
  const Function* f = env.trace ? &env.trace->function() : nullptr;
  TraceContext* spmd = env.trace ? enclosing_spmd(*env.trace) : nullptr;
  for (size_t i = 0; i < env.names.size(); ++i) {
    const std::string& n = env.names[i];
    for (size_t j = 0; j < i; ++j)
      if (env.names[j] == n) {
        // In pmap and shard_map JAX's text is that of the moveaxis meeting it.
        if (spmd)
          throw Error(ErrCode::Value, "repeated axis in `source` argument", Span{},
                      std::string(fn) + "(): axis name '" + n + "' is repeated");
        throw Error(ErrCode::Value, std::string(fn) + "(): axis name '" + n + "' is repeated");
      }
    int bit = f ? f->axis_bit(n) : -1;
    if (spmd &&
        std::find(spmd->auto_axes.begin(), spmd->auto_axes.end(), n) != spmd->auto_axes.end())
      throw Error(ErrCode::AxisName, unbound_axis_message(fn, n, true, true), Span{},
                  "shard_map's axis_names leave '" + n +
                      "' automatic: add it to axis_names to use it here");
    // Inside a shard_map, an axis its mesh lacks: JAX fails an assertion; pxl says what is wrong.
    if (bit < 0 && spmd && spmd->what() != "pmap")
      throw Error(ErrCode::AxisName, std::string(fn) + "(): unbound axis name '" + n + "'", Span{},
                  unbound_axis_hint(f, env.trace, n));
    if (bit < 0)
      throw Error(ErrCode::AxisName, unbound_axis_message(fn, n, f != nullptr, false), Span{},
                  unbound_axis_hint(f, env.trace, n));
    env.group_size *= f->mesh_sizes[bit];
  }
  env.axis_size = env.group_size;
  return env;
}

OpAttrs collective_attrs(const AxisEnv& env) {
  OpAttrs a;
  a.axis_names = env.names;
  a.group_size = env.group_size;
  a.index_groups = env.index_groups;
  return a;
}

// The rows of axis_index_groups: a list/tuple of lists/tuples of ints, or a
// 2-d integer array.
std::vector<std::vector<int64_t>> index_group_rows(const Value& v, const char* fn) {
  std::string what = std::string(fn) + "() axis_index_groups";
  std::vector<std::vector<int64_t>> rows;
  if (v.is_obj(ObjKind::Array)) {
    const Tensor& t = v.as<ArrayObj>()->tensor;
    if (!t->concrete || t->aval.ndim() != 2 || is_floating(t->aval.dtype))
      throw Error(ErrCode::Type, what + " must be a list of lists of integers");
    for (int64_t i = 0; i < t->aval.shape[0]; ++i) {
      rows.emplace_back();
      for (int64_t j = 0; j < t->aval.shape[1]; ++j)
        rows.back().push_back(t->concrete->get(i * t->aval.shape[1] + j).i);
    }
    return rows;
  }
  const ValueList* items = sequence_items(v);
  if (!items)
    throw Error(ErrCode::Type, what + " must be a list of lists of integers, not " + type_name(v));
  for (const Value& row : *items) {
    // A row may be a 1-d integer array (JAX's tests pass np.arange(2, n)).
    bool array_row = row.is_obj(ObjKind::Array) && row.as<ArrayObj>()->tensor->aval.ndim() == 1;
    if (!sequence_items(row) && !array_row)
      throw Error(ErrCode::Type,
                  what + " must be a list of lists of integers, not a list of " + type_name(row));
    rows.push_back(value_to_int_list(row, what));
  }
  return rows;
}

// Applies axis_index_groups (None: the whole axis) to a collective's axes:
// checked as JAX checks them (the groups must cover every index of the axes
// exactly once; pxl also needs them of one size), after which the collective
// acts within each group and `group_size` is a group's size.
void apply_index_groups(InterpreterImpl& in, AxisEnv& env, const Value& groups, const char* fn) {
  if (groups.is_none()) return;
  std::vector<std::vector<int64_t>> rows = index_group_rows(groups, fn);
  std::string f = std::string(fn) + "(): ";
  // JAX 0.10 implements them inside shard_map for every collective but psum
  // (and pmean, a psum): its psum raises NotImplementedError there.
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  bool shard_map = spmd_mode(in.ops()) == SpmdMode::ShardMap || (tc && tc->what() == "shard_map");
  if (shard_map && (f == "psum(): " || f == "pmean(): "))
    throw Error(
        ErrCode::Unsupported,
        f + "axis_index_groups is not implemented inside shard_map (NotImplementedError in JAX)",
        Span{}, "compute the groups' results from axis_index, or split the mesh axis in two");
  size_t total = 0;
  for (const auto& r : rows) total += r.size();
  std::vector<bool> seen(total, false);
  bool covers = true;
  for (const auto& r : rows)
    for (int64_t i : r) {
      if (i < 0 || size_t(i) >= total || seen[size_t(i)])
        covers = false;
      else
        seen[size_t(i)] = true;
    }
  if (!covers || rows.empty()) // (JAX's text names no collective)
    throw Error(ErrCode::CollectiveArgs, "axis_index_groups must cover all indices exactly once",
                Span{}, f + "each index of the axis must be in one group");
  if (int64_t(total) != env.group_size)
    throw Error(ErrCode::CollectiveArgs,
                f + "axis_index_groups cover " + std::to_string(total) +
                    " indices, but the axis size is " + std::to_string(env.group_size),
                Span{},
                "list every index 0.." + std::to_string(env.group_size - 1) +
                    " in exactly one group");
  // psum/pmax/pmin (and pmean) reduce within groups of any sizes, as in JAX;
  // then, as in JAX, the group size (psum of a constant, pmean's divisor) is
  // the first group's.
  bool reduction = f == "psum(): " || f == "pmean(): " || f == "pmax(): " || f == "pmin(): ";
  for (const auto& r : rows)
    if (r.size() != rows[0].size() && !reduction)
      throw Error(ErrCode::CollectiveArgs,
                  f + "axis_index_groups must all be the same size, got groups of " +
                      std::to_string(rows[0].size()) + " and " + std::to_string(r.size()));
  env.group_size = int64_t(rows[0].size());
  for (const auto& r : rows)
    if (r.size() != rows[0].size()) {
      env.uneven_groups = std::move(rows); // reduce_collective masks them (see there)
      return;
    }
  // One group over the whole axis is the plain collective.
  if (rows.size() > 1)
    env.index_groups = std::move(rows);
  else
    env.index_groups.clear();
}

// Applies `leaf_fn` to every array leaf of a pytree.
template <class F> Value map_leaves(InterpreterImpl& in, const Value& tree, F&& leaf_fn) {
  return map_tree(in, tree,
                  [&](const Value& l) { return make_array(leaf_fn(in.to_tensor(l, Span{}))); });
}

Tensor bind1(InterpreterImpl& in, Op op, const OpAttrs& a, const Tensor& x) {
  return in.ops().bind(op, a, std::span<const Tensor>(&x, 1));
}

// psum/pmax/pmin within axis_index_groups of different sizes, from
// whole-axis collectives: for each group, the members' values reduced over the
// axis with the others' neutralised (0 for a sum; for a max, the axis-wide
// minimum, which no member exceeds; the reverse for a min), kept by the members.
Tensor uneven_group_reduce(InterpreterImpl& in, const AxisEnv& env, Op op, const Tensor& x) {
  OpContext& cx = in.ops();
  OpAttrs whole;
  whole.axis_names = env.names;
  whole.group_size = env.axis_size;
  Tensor idx = cx.bind(Op::AxisIndex, whole, {});
  std::optional<Tensor> neutral;
  if (op == Op::Pmax) neutral = bind1(in, Op::Pmin, whole, x);
  if (op == Op::Pmin) neutral = bind1(in, Op::Pmax, whole, x);
  if (op == Op::Psum) neutral = np::zeros(cx, x->aval.shape, x->aval.dtype);
  Tensor out = x;
  for (const auto& grp : env.uneven_groups) {
    Tensor member = np::scalar(cx, Scalar::of_bool(false));
    for (int64_t m : grp)
      member = np::binary(
          cx, np::BinOp::BitOr, member,
          np::binary(cx, np::BinOp::Eq, idx, np::scalar(cx, Scalar::of_int(m), DType::Int32)));
    Tensor red = bind1(in, op, whole, np::where(cx, member, x, *neutral));
    out = np::where(cx, member, red, out);
  }
  return out;
}

// The IR value of t in the innermost trace (nullptr off a trace). Constants
// of enclosing traces come in as this trace's constants (no manual types).
IRValue* traced_value(InterpreterImpl& in, const Tensor& t) {
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  if (!tc || !t->trace) return nullptr;
  return &tc->function().values[static_cast<size_t>(tc->value_of(t))];
}

// env's axes as bits of the innermost trace's function.
AxisSet axes_bits(InterpreterImpl& in, const AxisEnv& env) {
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  if (!tc) return 0;
  AxisSet bits = 0;
  for (const std::string& n : env.names)
    if (int b = tc->function().axis_bit(n); b >= 0) bits |= AxisSet{1} << b;
  return bits;
}

// "{'x', 'y'}": a set of axes as JAX prints axes={...} (in mesh order where
// CPython's set order is hash-seeded).
std::string axes_set_str(const Function& f, AxisSet s) {
  std::string out;
  for (size_t i = 0; i < f.mesh_axes.size(); ++i)
    if (s & (AxisSet{1} << i)) out += (out.empty() ? "'" : ", '") + f.mesh_axes[i] + "'";
  return "{" + out + "}";
}

// f32[8]{R:x}: JAX's str_short(True) of a traced value.
std::string short_type(InterpreterImpl& in, const IRValue& v) {
  const Function& f = static_cast<TraceContext&>(in.ops()).function();
  return type_str(v.aval) + mat_suffix(f, v);
}

// Before a collective over env's axes JAX casts an operand invariant over
// them to varying (pvary), which refuses one reduced over them.
void check_pvary_reduced(InterpreterImpl& in, const AxisEnv& env, const Tensor& x) {
  const IRValue* v = traced_value(in, x);
  if (!v || !v->reduced) return;
  AxisSet axes = axes_bits(in, env) & ~v->vma & ~v->unreduced;
  if (!(axes & v->reduced)) return;
  const Function& f = static_cast<TraceContext&>(in.ops()).function();
  throw Error(ErrCode::Value,
              "pvary cannot accept args which are reduced. Got " + short_type(in, *v) +
                  " and axes=" + axes_set_str(f, axes),
              Span{}, "cast it to varying first: jax.lax.pcast(x, axes, to='varying')");
}

// JAX's positional axes of psum/pmax/pmin: integers among the axis names
// reduce those axes of each operand as a sum/max/min does (lax.psum(x, 0) is
// x.sum(0), also eagerly); the named ones remain for the collective.
struct SplitAxes {
  ValueList named;
  std::vector<int64_t> positional;
};

SplitAxes split_axis_names(const Value& axis_name) {
  SplitAxes out;
  const ValueList* items = axis_name.is_obj(ObjKind::Str) ? nullptr : sequence_items(axis_name);
  for (const Value& v : items ? *items : ValueList{axis_name}) {
    if (v.is_int())
      out.positional.push_back(v.as_int());
    else
      out.named.push_back(v);
  }
  return out;
}

// Eagerly JAX reduces with numpy's axis rules (negative axes count from the
// end); a traced operand meets psum's abstract evaluation, which takes axes
// in [0, ndim) only.
Tensor reduce_positional(InterpreterImpl& in, Op op, const std::vector<int64_t>& axes,
                         const Tensor& x) {
  if (axes.empty()) return x;
  int64_t nd = x->aval.ndim();
  auto tuple_text = [](const std::vector<int64_t>& v) {
    std::string t = "(";
    for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
    return t + (v.size() == 1 ? ",)" : ")");
  };
  bool traced = x->trace != nullptr;
  std::vector<int64_t> canon;
  for (int64_t ax : axes) {
    if (traced && (ax < 0 || ax >= nd))
      throw Error(ErrCode::Value, "reduction axes " + tuple_text(axes) +
                                      " contains out-of-bounds indices for " +
                                      array_type_str(x->aval.dtype, x->aval.shape) + ".");
    canon.push_back(np::detail::norm_axis(ax, static_cast<int>(nd)));
  }
  std::vector<int> dims(canon.begin(), canon.end());
  for (size_t i = 0; i < canon.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (canon[i] == canon[j])
        throw Error(ErrCode::Value, "duplicate value in 'axes' of reduction: " + tuple_text(canon));
  np::ReduceOp rop = op == Op::Psum   ? np::ReduceOp::Sum
                     : op == Op::Pmax ? np::ReduceOp::Max
                                      : np::ReduceOp::Min;
  np::ReduceExtras keep_type;
  keep_type.promote_integers = false; // lax.reduce_sum: int8 stays int8
  return np::reduce(in.ops(), rop, x, dims, false, std::nullopt, keep_type);
}

Value reduce_collective(InterpreterImpl& in, CallArgs& a, const char* fn, Op op, bool mean) {
  ArgReader r(fn, a, {"x", "axis_name", "axis_index_groups"}, 2);
  SplitAxes split = split_axis_names(r[1]);
  if (!split.positional.empty()) {
    if (!r[2].is_none())
      throw Error(ErrCode::Value, "axis_index_groups only supported for sums over just named axes");
    // make_jaxpr shows JAX's equation per leaf, axes=(...) as given.
    auto* tc = dynamic_cast<TraceContext*>(&in.ops());
    const ValueList* items = sequence_items(r[1]);
    std::string axes = repr(make_tuple(items ? *items : ValueList{r[1]}));
    Value out = map_leaves(in, r[0], [&](Tensor x) {
      int region = -1;
      if (tc && tc->jaxpr_record && !mean) {
        region = jaxpr_begin_region(*tc, fn, {tc->value_of(x)},
                                    {{"axes", axes}, {"axis_index_groups", "None"}});
        tc->jaxpr_record->regions[static_cast<size_t>(region)].opaque = true;
      }
      if (x->aval.dtype == DType::Bool && op == Op::Psum) x = np::astype(in.ops(), x, DType::Int32);
      x = reduce_positional(in, op, split.positional, x);
      if (!split.named.empty()) {
        CallArgs rest;
        rest.pos = {make_array(x), make_tuple(split.named), Value()};
        x = in.to_tensor(reduce_collective(in, rest, fn, op, mean), Span{});
      }
      if (region >= 0) jaxpr_end_region(*tc, region, {tc->value_of(x)});
      return x;
    });
    if (mean) // JAX divides by psum(1, axis_name), whose positional axes a 0-d 1 lacks
      np::detail::norm_axis(split.positional[0], 0);
    return out;
  }
  // An empty tuple of axes: JAX returns the operand (psum) or binds over none.
  if (const ValueList* items = sequence_items(r[1]); items && items->empty()) {
    if (!mean) return r[0];
    return map_leaves(in, r[0], [&](const Tensor& x) { // x / 1
      return is_inexact(x->aval.dtype) ? x : np::astype(in.ops(), x, DType::Float32);
    });
  }
  AxisEnv env = resolve_axes(in, r[1], fn);
  apply_index_groups(in, env, r[2], fn);
  OpAttrs attrs = collective_attrs(env);
  if (op == Op::Psum) {
    // JAX: a psum of Python numbers only is computed on the host (the group
    // size times each number), so psum(1, 'i') is the Python int axis size.
    ValueList leaves;
    TreeDef def = tree_flatten(in, r[0], leaves);
    bool host = !leaves.empty() && std::all_of(leaves.begin(), leaves.end(), [](const Value& v) {
      return v.is_int() || v.is_float();
    });
    if (host) {
      for (Value& v : leaves) {
        if (v.is_int() && !mean)
          v = Value::integer(v.as_int() * env.group_size);
        else
          v = Value::number(v.as_float() * double(env.group_size) /
                            (mean ? double(env.group_size) : 1.0));
      }
      return tree_unflatten(def, leaves);
    }
  }
  return map_leaves(in, r[0], [&](Tensor x) {
    check_pvary_reduced(in, env, x);
    // JAX: psum of bool counts (int32); pmean of ints is float32.
    if (x->aval.dtype == DType::Bool && op == Op::Psum) x = np::astype(in.ops(), x, DType::Int32);
    if (mean && !is_inexact(x->aval.dtype)) x = np::astype(in.ops(), x, DType::Float32);
    Tensor y =
        env.uneven_groups.empty() ? bind1(in, op, attrs, x) : uneven_group_reduce(in, env, op, x);
    if (!mean) return y;
    Tensor n = np::scalar(in.ops(), Scalar::of_int(env.group_size));
    return np::binary(in.ops(), np::BinOp::TrueDiv, y, n);
  });
}

int64_t norm_axis(int64_t axis, int64_t ndim, const char* fn) {
  if (axis < -ndim ||
      axis >= ndim) // JAX's errors: all_gather's from canonicalize_axis, the others' IndexError
    throw Error(ErrCode::Axis, std::string(fn) == "all_gather"
                                   ? "axis " + std::to_string(axis) +
                                         " is out of bounds for array of dimension " +
                                         std::to_string(ndim)
                                   : std::string("tuple index out of range"));
  return axis < 0 ? axis + ndim : axis;
}

// A concrete integer array's entries (perm given as a NumPy array, as JAX takes it).
std::optional<std::vector<int64_t>> int_entries(const Value& v, size_t rank) {
  if (!v.is_obj(ObjKind::Array)) return std::nullopt;
  const Tensor& t = v.as<ArrayObj>()->tensor;
  if (!t->concrete || t->aval.shape.size() != rank || !is_integer(t->aval.dtype))
    return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t->concrete->size(); ++i)
    out.push_back(static_cast<int64_t>(t->concrete->get_f64(i)));
  return out;
}

std::vector<std::pair<int64_t, int64_t>> perm_arg(const Value& v, const char* fn) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (auto flat = int_entries(v, 2); flat && v.as<ArrayObj>()->tensor->aval.shape[1] == 2) {
    for (size_t i = 0; i + 1 < flat->size(); i += 2) out.push_back({(*flat)[i], (*flat)[i + 1]});
    return out;
  }
  const ValueList* items = sequence_items(v);
  if (!items)
    throw Error(ErrCode::Type,
                std::string(fn) + "() perm must be a list of (source, destination) pairs");
  for (const Value& p : *items) {
    if (auto pair = int_entries(p, 1); pair && pair->size() == 2) {
      out.push_back({(*pair)[0], (*pair)[1]});
      continue;
    }
    // JAX unpacks each entry as `for s, d in perm`: Python's errors.
    const ValueList* pair = sequence_items(p);
    std::string hint =
        std::string(fn) + "() perm entries must be (source, destination) pairs, got " + repr(p);
    if (!pair)
      throw Error(ErrCode::Type, "'" + type_name(p) + "' object is not iterable", Span{}, hint);
    if (pair->size() < 2)
      throw Error(ErrCode::Value,
                  "not enough values to unpack (expected 2, got " + std::to_string(pair->size()) +
                      ")",
                  Span{}, hint);
    if (pair->size() > 2)
      throw Error(ErrCode::Value, "too many values to unpack (expected 2)", Span{}, hint);
    out.push_back(
        {value_to_int((*pair)[0], "perm source"), value_to_int((*pair)[1], "perm destination")});
  }
  return out;
}

// JAX's _get_from: which one state (varying, unreduced, reduced or
// invarying) the value has over all the named axes.
std::string pcast_from(InterpreterImpl& in, const IRValue& v, AxisSet named,
                       const std::vector<std::string>& names) {
  std::set<std::string> states;
  for (size_t i = 0; i < 64; ++i) {
    AxisSet bit = AxisSet{1} << i;
    if (!(named & bit)) continue;
    states.insert(v.vma & bit         ? "varying"
                  : v.unreduced & bit ? "unreduced"
                  : v.reduced & bit   ? "reduced"
                                      : "invarying");
  }
  if (states.size() == 1) return *states.begin();
  std::string axes = "(", st;
  for (size_t i = 0; i < names.size(); ++i) axes += (i ? ", '" : "'") + names[i] + "'";
  axes += names.size() == 1 ? ",)" : ")";
  for (const std::string& x : states) st += (st.empty() ? "'" : ", '") + x + "'";
  const Function& f = static_cast<TraceContext&>(in.ops()).function();
  throw Error(ErrCode::Value,
              "jax.lax.pcast can only accept axis_name which corresponds to one of varying, "
              "unreduced, reduced or invarying state of the input. Got input type: " +
                  array_type_str(v.aval.dtype, v.aval.shape) + mat_suffix(f, v) +
                  ", axes: " + axes + " and input state: {" + st + "}",
              Span{}, "cast over the axes of one state at a time");
}

// pcast(x, axes, to=...): JAX's no-op casts between manual axis types, each
// bound as the identity ppermute (no data moves), its result then retyped:
// invarying -> varying (pvary; its transpose is a psum), invarying -> reduced
// (preduced), varying -> unreduced (vary_unreduced_cast), reduced -> varying
// (reduced_vary_cast). Any other pair is JAX's ValueError.
Value pcast_leaves(InterpreterImpl& in, const AxisEnv& env, const Value& x, const std::string& to) {
  OpAttrs attrs = collective_attrs(env);
  for (int64_t i = 0; i < env.group_size; ++i) attrs.pairs.push_back({i, i});
  return map_leaves(in, x, [&](const Tensor& leaf) {
    AxisSet named = axes_bits(in, env);
    IRValue src;
    if (const IRValue* v = traced_value(in, leaf)) src = *v;
    std::string from = pcast_from(in, src, named, env.names);
    if (!((from == "invarying" && (to == "varying" || to == "reduced")) ||
          (from == "varying" && to == "unreduced") || (from == "reduced" && to == "varying")))
      throw Error(ErrCode::Value, "Unsupported pcast from=" + from + ", to='" + to + "'");
    OpAttrs cast = attrs;
    cast.tiled = to == "reduced"; // (typed invariant, see TraceContext::bind)
    Tensor out = bind1(in, Op::Ppermute, cast, leaf);
    IRValue& v = *traced_value(in, out);
    v.vma = src.vma, v.unreduced = src.unreduced, v.reduced = src.reduced;
    if (to == "varying") v.vma |= named, v.reduced &= ~named;
    if (to == "unreduced") v.vma &= ~named, v.unreduced |= named;
    if (to == "reduced") v.reduced |= named;
    return out;
  });
}

} // namespace

void add_collectives(InterpreterImpl& in, Value& lax) {
  auto& vars = lax.as<ModuleObj>()->env->vars;
  auto def = [&](const std::string& name, NativeFn f) {
    Value v = make_builtin(name, std::move(f));
    vars[name] = v;
    in.define_builtin(name, v);
  };
  def("psum", [](InterpreterImpl& in, CallArgs& a) {
    return reduce_collective(in, a, "psum", Op::Psum, false);
  });
  def("pmean", [](InterpreterImpl& in, CallArgs& a) {
    return reduce_collective(in, a, "pmean", Op::Psum, true);
  });
  def("pmax", [](InterpreterImpl& in, CallArgs& a) {
    return reduce_collective(in, a, "pmax", Op::Pmax, false);
  });
  def("pmin", [](InterpreterImpl& in, CallArgs& a) {
    return reduce_collective(in, a, "pmin", Op::Pmin, false);
  });
  def("all_gather", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("all_gather", a, {"x", "axis_name", "axis_index_groups", "axis", "tiled", "to"}, 2);
    AxisEnv env = resolve_axes(in, r[1], "all_gather");
    apply_index_groups(in, env, r[2], "all_gather");
    // JAX >= 0.8 types the result by `to`; pxl's is invariant either way
    // (DESIGN 3), except to='reduced': reduced over the axes (JAX's
    // all_gather_reduced, whose transpose is a psum_scatter of partial sums).
    std::string to = r.has(5) ? value_to_str(r[5], "all_gather() to") : "varying";
    if (to != "varying" && to != "invarying" && to != "reduced")
      throw Error(ErrCode::Value,
                  "Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` "
                  "values are: {'invarying', 'reduced', 'varying'}");
    int64_t axis = r.get_int(3, 0);
    bool tiled = r.get_bool(4, false);
    return map_leaves(in, r[0], [&](const Tensor& x) {
      OpAttrs attrs = collective_attrs(env);
      int64_t nd = x->aval.ndim();
      attrs.axis =
          tiled ? norm_axis(axis, nd, "all_gather") : norm_axis(axis, nd + 1, "all_gather");
      attrs.tiled = tiled;
      IRValue src;
      if (const IRValue* v = traced_value(in, x)) src = *v;
      if (to == "reduced") {
        const Function& f = static_cast<TraceContext&>(in.ops()).function();
        AxisSet named = axes_bits(in, env);
        if (!src.vma)
          throw Error(ErrCode::Value,
                      "all_gather_reduced only accepts inputs that are varying. Got " +
                          short_type(in, src));
        if (!(src.vma & named)) {
          std::string axes = "(";
          for (size_t i = 0; i < env.names.size(); ++i)
            axes += (i ? ", '" : "'") + env.names[i] + "'";
          axes += env.names.size() == 1 ? ",)" : ")";
          throw Error(ErrCode::Value,
                      "all_gather_reduced is a Varying -> Reduced collective. This means that the "
                      "axis_name=" +
                          axes +
                          " passed to `all_gather_reduced` must be present in "
                          "jax.typeof(x).mat.varying=frozenset(" +
                          axes_set_str(f, src.vma) + ")");
        }
        Tensor out = bind1(in, Op::AllGather, attrs, x);
        IRValue& v = *traced_value(in, out);
        v.vma = src.vma & ~named;
        v.reduced = src.reduced | named;
        return out;
      }
      check_pvary_reduced(in, env, x);
      return bind1(in, Op::AllGather, attrs, x);
    });
  });
  def("psum_scatter", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("psum_scatter", a,
                {"x", "axis_name", "scatter_dimension", "axis_index_groups", "tiled"}, 2);
    AxisEnv env = resolve_axes(in, r[1], "psum_scatter");
    apply_index_groups(in, env, r[3], "psum_scatter");
    int64_t dim = r.get_int(2, 0);
    bool tiled = r.get_bool(4, false);
    return map_leaves(in, r[0], [&](Tensor x) {
      check_pvary_reduced(in, env, x);
      if (x->aval.dtype == DType::Bool) x = np::astype(in.ops(), x, DType::Int32);
      OpAttrs attrs = collective_attrs(env);
      attrs.axis = norm_axis(dim, x->aval.ndim(), "psum_scatter");
      attrs.tiled = tiled;
      return bind1(in, Op::PsumScatter, attrs, x);
    });
  });
  auto ppermute = [](InterpreterImpl& in, const Value& x, const Value& axis_name,
                     std::vector<std::pair<int64_t, int64_t>> pairs, const char* fn) {
    AxisEnv env = resolve_axes(in, axis_name, fn);
    // Over an axis a vmap binds, JAX's batching rule asserts one pair per
    // index. The binder is the outermost trace that has the axis in scope.
    if (env.names.size() == 1) {
      TraceContext* binder = nullptr;
      for (OpContext* c = env.trace; auto* tc = dynamic_cast<TraceContext*>(c); c = &tc->outer()) {
        const auto& axes = tc->function().mesh_axes;
        if (std::find(axes.begin(), axes.end(), env.names[0]) != axes.end()) binder = tc;
      }
      if (binder && binder->what() == "vmap" &&
          static_cast<int64_t>(pairs.size()) != env.group_size)
        throw Error(ErrCode::Assertion, "Permutation doesn't match the axis size!");
      // In pmap and shard_map JAX checks that the pairs are unique, then its
      // lowering indexes the list of devices with them: an index past the
      // axis is Python's IndexError.
      std::vector<int64_t> srcs, dsts;
      for (auto [s, d] : pairs) srcs.push_back(s), dsts.push_back(d);
      auto unique = [](std::vector<int64_t> v) {
        std::sort(v.begin(), v.end());
        return std::adjacent_find(v.begin(), v.end()) == v.end();
      };
      bool past = std::any_of(pairs.begin(), pairs.end(), [&](const auto& p) {
        return p.first >= env.group_size || p.second >= env.group_size;
      });
      if (binder && binder->what() != "vmap" && past && unique(srcs) && unique(dsts))
        throw Error(ErrCode::Index, "list index out of range", Span{},
                    "ppermute's pairs name ranks 0.." + std::to_string(env.group_size - 1) +
                        " of axis '" + env.names[0] + "'");
    }
    // Inside shard_map JAX's ppermute over several axes numbers the devices
    // in mesh order, whatever order axis_name lists them in (on CPU; TPUs
    // reject an out-of-order axis_name).
    if (TraceContext* spmd = env.trace ? enclosing_spmd(*env.trace) : nullptr;
        spmd && spmd->what() == "shard_map") {
      const Function& f = env.trace->function();
      std::stable_sort(env.names.begin(), env.names.end(),
                       [&](const std::string& a, const std::string& b) {
                         return f.axis_bit(a) < f.axis_bit(b);
                       });
    }
    OpAttrs attrs = collective_attrs(env);
    attrs.pairs = std::move(pairs);
    return map_leaves(in, x, [&](const Tensor& t) {
      check_pvary_reduced(in, env, t);
      return bind1(in, Op::Ppermute, attrs, t);
    });
  };
  def("ppermute", [ppermute](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("ppermute", a, {"x", "axis_name", "perm"}, 3);
    return ppermute(in, r[0], r[1], perm_arg(r[2], "ppermute"), "ppermute");
  });
  def("pshuffle", [ppermute](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("pshuffle", a, {"x", "axis_name", "perm"}, 3);
    std::vector<int64_t> perm = value_to_int_list(r[2], "pshuffle() perm");
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != static_cast<int64_t>(i) || (i && sorted[i] == sorted[i - 1]))
        throw Error(ErrCode::Value, "`perm` does not represent a permutation: " + repr(r[2]));
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (size_t i = 0; i < perm.size(); ++i) pairs.push_back({perm[i], static_cast<int64_t>(i)});
    return ppermute(in, r[0], r[1], pairs, "pshuffle");
  });
  def("all_to_all", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("all_to_all", a,
                {"x", "axis_name", "split_axis", "concat_axis", "axis_index_groups", "tiled"}, 4);
    AxisEnv env = resolve_axes(in, r[1], "all_to_all");
    apply_index_groups(in, env, r[4], "all_to_all");
    bool tiled = r.get_bool(5, false);
    return map_leaves(in, r[0], [&](Tensor x) {
      check_pvary_reduced(in, env, x);
      int64_t nd = x->aval.ndim();
      int64_t split = norm_axis(r.get_int(2), nd, "all_to_all");
      int64_t concat = norm_axis(r.get_int(3), nd, "all_to_all");
      OpAttrs attrs = collective_attrs(env);
      if (tiled && x->aval.shape[split] % env.group_size != 0) // JAX's ValueError
        throw Error(ErrCode::CollectiveArgs,
                    "The size of all_to_all split_axis (" + std::to_string(x->aval.shape[split]) +
                        ") has to be divisible by the size of the named axis " + pxl::str(r[1]) +
                        " (" + std::to_string(env.group_size) + ")");
      if (!tiled) {
        // JAX's untiled form: split_axis must equal the axis size; a new axis
        // is concatenated over and the split one squeezed away.
        if (x->aval.shape[split] != env.group_size) // JAX's ValueError
          throw Error(ErrCode::CollectiveArgs,
                      "all_to_all requires the size of the mapped axis axis_name to equal "
                      "x.shape[split_axis], but they are " +
                          std::to_string(env.group_size) + " and " +
                          std::to_string(x->aval.shape[split]) + " respectively.");
        if (split < concat) ++concat;
        x = np::expand_dims(in.ops(), x, {static_cast<int>(concat)});
        if (split >= concat) ++split; // the new axis came before it
      }
      attrs.axis = split;
      attrs.concat_axis = concat;
      Tensor y = bind1(in, Op::AllToAll, attrs, x);
      if (!tiled) y = np::squeeze(in.ops(), y, std::vector<int>{static_cast<int>(split)});
      return y;
    });
  });
  // pcast(x, axis_name, to='varying') (JAX's pvary): the same value, typed as
  // varying over the axes. It is bound as the identity ppermute, whose vma rule
  // is that typing; its transpose is the psum over the axes, as in JAX.
  def("pcast", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("pcast", a, {"x", "axis_name", "to"}, 3);
    if (!r[1].is_obj(ObjKind::Str) && !r[1].is_obj(ObjKind::Tuple))
      throw Error(ErrCode::Type,
                  "axis_name=" + repr(r[1]) + " must be a tuple or a str. Got " + repr(r[1]));
    if (r[1].is_obj(ObjKind::Tuple) && r[1].as<TupleObj>()->items.empty()) return r[0];
    std::string to = value_to_str(r[2], "pcast() to");
    if (to != "varying" && to != "unreduced" && to != "reduced") // (CPython's order is hash-seeded)
      throw Error(ErrCode::Value, "Got unexpected `to` value. Allowed `to` values are: "
                                  "{'reduced', 'unreduced', 'varying'}");
    if (!dynamic_cast<TraceContext*>(&in.ops()))
      throw Error(ErrCode::Value, "pvary should be called under jax.shard_map.", Span{},
                  "call it inside a function given to jax.shard_map");
    AxisEnv env = resolve_axes(in, r[1], "pcast");
    return pcast_leaves(in, env, r[0], to);
  });
  def("ragged_all_to_all", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("ragged_all_to_all", a,
                {"operand", "output", "input_offsets", "send_sizes", "output_offsets", "recv_sizes",
                 "axis_name", "axis_index_groups"},
                7);
    // JAX's abstract evaluation: the offsets and sizes' dtypes, then their shapes.
    static const char* names[] = {"input_offsets", "send_sizes", "output_offsets", "recv_sizes"};
    std::vector<Tensor> meta;
    for (int i = 0; i < 4; ++i) meta.push_back(in.to_tensor(r[size_t(2 + i)], Span{}));
    for (int i = 0; i < 4; ++i)
      if (!is_integer(meta[size_t(i)]->aval.dtype))
        throw Error(ErrCode::Value,
                    std::string("ragged_all_to_all ") + names[i] + " must be integer type.");
    for (int i = 0; i < 4; ++i) {
      const Shape& s = meta[size_t(i)]->aval.shape;
      if (s.size() != 1 || s[0] < 1)
        throw Error(ErrCode::Value,
                    std::string("ragged_all_to_all ") + names[i] +
                        " must be rank 1 with positive dimension size, but got shape " +
                        shape_str(s));
    }
    if (!dynamic_cast<TraceContext*>(&in.ops()))
      throw Error(ErrCode::Value,
                  "ragged_all_to_all must be used within a mapped context like vmap or shard_map.");
    AxisEnv env = resolve_axes(in, r[6], "ragged_all_to_all");
    // JAX's batching rule has no case for the vmap that binds the axis itself.
    for (const std::string& n : env.names) {
      TraceContext* binder = nullptr;
      for (OpContext* c = env.trace; auto* tc = dynamic_cast<TraceContext*>(c); c = &tc->outer()) {
        const auto& axes = tc->function().mesh_axes;
        if (std::find(axes.begin(), axes.end(), n) != axes.end()) binder = tc;
      }
      if (binder && binder->what() == "vmap")
        throw Error(ErrCode::Unsupported, "Please open a feature request!", Span{},
                    "ragged_all_to_all over a vmap's axis is not implemented (nor is it in JAX): "
                    "use shard_map");
    }
    Value groups = r.has(7) ? r[7] : Value();
    if (!groups.is_none()) apply_index_groups(in, env, groups, "ragged_all_to_all");
    Value rest = in.import_module("lax_rest", Span{}, "");
    const Value* impl = rest.as<ModuleObj>()->env->lookup("_ragged_all_to_all_impl");
    if (!impl) throw Error(ErrCode::Internal, "lax_rest._ragged_all_to_all_impl is missing");
    CallArgs c;
    c.pos = {r[0], r[1], r[2], r[3], r[4], r[6], groups, Value::integer(env.axis_size)};
    return in.call(*impl, c, Span{});
  });
  def("axis_index", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("axis_index", a, {"axis_name"}, 1);
    AxisEnv env = resolve_axes(in, r[0], "axis_index");
    return make_array(in.ops().bind(Op::AxisIndex, collective_attrs(env), {}));
  });
  // lax.cond/switch on a traced predicate (stdlib/lax_loops.pxl) select
  // between the branches' results; JAX types the result as varying over the
  // branches' axes only, leaving the predicate's out: `out` (that selection,
  // fresh in this shard_map trace) is retyped so.
  vars["_branch_result"] = make_builtin("_branch_result", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_branch_result", a, {"out", "on_true", "on_false"}, 3);
    auto* tc = dynamic_cast<TraceContext*>(&in.ops());
    if (!tc || tc->what() != "shard_map" || !r[0].is_obj(ObjKind::Array)) return r[0];
    const Tensor& out = r[0].as<ArrayObj>()->tensor;
    if (!tc->owns(out) || out->trace_id < 0) return r[0];
    AxisSet branches =
        vma_of(in.ops(), in.to_tensor(r[1], Span{})) | vma_of(in.ops(), in.to_tensor(r[2], Span{}));
    tc->function().values[static_cast<size_t>(out->trace_id)].vma &= branches;
    return r[0];
  });
  def("axis_size", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("axis_size", a, {"axis_name"}, 1);
    return Value::integer(resolve_axes(in, r[0], "axis_size").group_size);
  });
}

} // namespace pxl
