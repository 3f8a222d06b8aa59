// jax.vmap: traces the function with per-example argument types, then
// evaluates the traced Function with the batching rules (batching_rules.cpp)
// in the current context. No cache: like JAX, every call traces again (the
// enclosing jit/pmap caches the whole).
#include <algorithm>

#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "runtime/eager.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/jit_partition.hpp"
#include "stdlib/mutable_ref.hpp"
#include "stdlib/np.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/trace_util.hpp"
#include "stdlib/transforms.hpp"

namespace pxl {

namespace {

bool is_axis_leaf(const Value& v) { return v.is_none() || v.is_intlike(); }

// JAX's TypeError for an in_axes/out_axes leaf that is not an int or None.
void check_axes_leaves(InterpreterImpl& in, const Value& axes, const char* which,
                       const Span& where) {
  ValueList leaves;
  tree_flatten(in, axes, leaves);
  for (const Value& l : leaves)
    if (!is_axis_leaf(l))
      throw Error(
          ErrCode::Type,
          std::string("vmap ") + which +
              " must be an int, None, or (nested) container with those types as leaves, but got " +
              repr(axes) + ".",
          where);
}

// Called eagerly, a result the traced function constrained last (a
// with_sharding_constraint, a jit's out_shardings over a mesh) comes back laid
// out so over the constraint's mesh, its mapped axis (at `mapped`, -1 for
// none) split over spmd_axis_name (unsplit without one): what JAX's batching
// rule of sharding_constraint gives.
Value lay_out_constrained(InterpreterImpl& in, const Function& fn, size_t r, Value leaf,
                          int64_t mapped, const std::vector<std::string>& spmd_axis_name) {
  if (!dynamic_cast<EagerContext*>(&in.ops()) || !fn.constraint_mesh || r >= fn.results.size())
    return leaf;
  int producer = fn.values[fn.results[r]].producer;
  if (producer < 0 || fn.body[producer].op != Op::ShardingConstraint) return leaf;
  PartitionSpec spec;
  spec.entries = fn.body[producer].attrs.dim_axes;
  if (mapped >= 0) spec.entries.insert(spec.entries.begin() + mapped, spmd_axis_name);
  const Shape& shape = leaf.as<ArrayObj>()->tensor->aval.shape;
  const Mesh& mesh = *fn.constraint_mesh;
  if (spec.entries.size() != shape.size() || !check_spec(mesh, spec, shape).empty()) return leaf;
  while (!spec.entries.empty() && spec.entries.back().empty()) spec.entries.pop_back();
  return device_put_leaf(in, leaf, Value::object(std::make_shared<ShardingObj>(mesh, spec)));
}

// Python's repr of a tuple of axis names: ('x',), ('x', 'y').
std::string py_tuple_repr(const std::vector<std::string>& names) {
  std::string t = "(";
  for (size_t i = 0; i < names.size(); ++i) t += (i ? ", '" : "'") + names[i] + "'";
  return t + (names.size() == 1 ? ",)" : ")");
}

// Over Explicit mesh axes the mapped dimensions must be split alike (the
// batch dimension's sharding is the same for every mapped argument): JAX's
// _mapped_axis_spec. A type's entry prints as JAX's spec entry does.
std::vector<std::string> mapped_axis_spec_check(const std::vector<Tensor>& leaves,
                                                const std::vector<int>& axes, const Span& where) {
  std::optional<std::string> first;
  std::vector<std::string> common;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (axes[i] < 0) continue;
    auto dims = explicit_type_spec(leaves[i]);
    std::vector<std::string> e;
    if (dims && static_cast<size_t>(axes[i]) < dims->size())
      e = (*dims)[static_cast<size_t>(axes[i])];
    std::string spec = e.empty() ? "None" : e.size() == 1 ? e[0] : py_tuple_repr(e);
    if (first && *first != spec)
      throw Error(ErrCode::Value,
                  "Mapped away dimension of inputs passed to vmap should be sharded the same. "
                  "Got inconsistent axis specs: " +
                      *first + " vs " + spec,
                  where);
    first = spec;
    common = e;
  }
  return common;
}

// The mesh of the first mapped argument laid out over one.
const Mesh* mapped_mesh(const std::vector<Tensor>& leaves, const std::vector<int>& axes) {
  for (size_t i = 0; i < leaves.size(); ++i)
    if (axes[i] >= 0 && leaves[i]->sharded) return &leaves[i]->sharded->mesh;
  return nullptr;
}

// An output of a vmap whose mapped arguments are split over Explicit axes
// `split` has its mapped dimension `dim` split so too, as JAX's batching
// gives every output (get_sharding_for_vmap); its other dimensions keep
// theirs. Eagerly it is laid out so; traced, constrained so.
Tensor split_mapped_dim(InterpreterImpl& in, const Tensor& t, size_t dim,
                        const std::vector<std::string>& split, const Mesh* mesh) {
  std::vector<std::vector<std::string>> spec(t->aval.shape.size());
  if (auto typed = explicit_type_spec(t)) spec = *typed;
  spec.resize(t->aval.shape.size());
  for (auto& e : spec)
    std::erase_if(e, [&](const std::string& a) {
      return std::find(split.begin(), split.end(), a) != split.end();
    });
  spec[dim] = split;
  if (auto* tc = dynamic_cast<TraceContext*>(&in.ops())) {
    if (!tc->function().mesh_axes.empty()) return t;
    OpAttrs a;
    a.dim_axes = spec;
    return in.ops().bind(Op::ShardingConstraint, a, std::span<const Tensor>(&t, 1));
  }
  if (!mesh || (t->sharded && !(t->sharded->mesh == *mesh))) return t;
  PartitionSpec ps;
  ps.entries = spec;
  Value target = Value::object(std::make_shared<ShardingObj>(*mesh, std::move(ps)));
  return in.to_tensor(device_put_leaf(in, make_array(t), target), Span{});
}

// Matches an in_axes/out_axes prefix tree against a value tree: an int or None
// applies to a whole subtree.
void axes_prefix(InterpreterImpl& in, const Value& prefix, const Value& tree, ValueList& out,
                 const std::string& what) {
  if (is_axis_leaf(prefix)) {
    ValueList leaves;
    tree_flatten(in, tree, leaves);
    out.insert(out.end(), leaves.size(), prefix);
    return;
  }
  const ValueList* ps = sequence_items(prefix);
  const ValueList* ts = sequence_items(tree);
  auto pt = namedtuple_parts(prefix, &ps), tt = namedtuple_parts(tree, &ts);
  if (pt != tt) ps = ts = nullptr; // a named tuple matches only its own class
  if (ps && ts) {
    if (ps->size() != ts->size())
      throw Error(ErrCode::Value, what + " has " + std::to_string(ps->size()) +
                                      " entries but the value it describes has " +
                                      std::to_string(ts->size()));
    for (size_t i = 0; i < ps->size(); ++i) axes_prefix(in, (*ps)[i], (*ts)[i], out, what);
    return;
  }
  if (prefix.is_obj(ObjKind::Dict) && tree.is_obj(ObjKind::Dict)) {
    ValueList ignored;
    TreeDef td = tree_flatten(in, tree, ignored);
    for (size_t i = 0; i < td.keys.size(); ++i) {
      const Value* p = prefix.as<DictObj>()->find(td.keys[i]);
      if (!p) throw Error(ErrCode::Value, what + " has no entry for key " + repr(td.keys[i]));
      axes_prefix(in, *p, *tree.as<DictObj>()->find(td.keys[i]), out, what);
    }
    return;
  }
  if (!prefix.is_obj(ObjKind::Tuple) && !prefix.is_obj(ObjKind::List) &&
      !prefix.is_obj(ObjKind::Dict) && !pt)
    throw Error(ErrCode::Type,
                what + " entries must be ints, None or pytrees of them, not " + type_name(prefix));
  throw Error(ErrCode::Value, what + " does not match the structure of the value it describes (" +
                                  type_name(prefix) + " vs " + type_name(tree) + ")");
}

// JAX's ValueError for mapped axes of different sizes (api.py
// _mapped_axis_size): the sizes from the most common on, each with an example
// leaf; `sizes` is -1 for unmapped leaves.
std::string inconsistent_sizes_message(const std::vector<std::string>& names,
                                       const std::vector<Tensor>& leaves, const ValueList& per_leaf,
                                       const std::vector<int64_t>& sizes, int64_t axis_size) {
  std::vector<std::pair<int64_t, size_t>> counts; // (size, count) in order of first appearance
  for (int64_t s : sizes) {
    if (s < 0) continue;
    auto it =
        std::find_if(counts.begin(), counts.end(), [s](const auto& c) { return c.first == s; });
    if (it == counts.end())
      counts.push_back({s, 1});
    else
      ++it->second;
  }
  std::stable_sort(counts.begin(), counts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string msg = "vmap got inconsistent sizes for array axes to be mapped:\n";
  if (axis_size >= 0)
    msg += "  * the `axis_size` argument was " + std::to_string(axis_size) + ";\n";
  for (size_t k = 0; k < counts.size(); ++k) {
    size_t i = 0;
    while (sizes[i] != counts[k].first) ++i;
    const AVal& av = leaves[i]->aval;
    std::string ex = "axis " + std::to_string(per_leaf[i].as_int()) + " of " + names[i] +
                     " of type " + dtype_name(av.dtype) + "[";
    for (size_t d = 0; d < av.shape.size(); ++d) ex += (d ? "," : "") + std::to_string(av.shape[d]);
    ex += "]";
    std::string sz = std::to_string(counts[k].first), ct = std::to_string(counts[k].second);
    if (counts[k].second == 1)
      msg += "  * one axis had size " + sz + ": " + ex + ";\n";
    else if (k == 0)
      msg += "  * most axes (" + ct + " of them) had size " + sz + ", e.g. " + ex + ";\n";
    else
      msg += "  * some axes (" + ct + " of them) had size " + sz + ", e.g. " + ex + ";\n";
  }
  return msg.substr(0, msg.size() - 2);
}

// The positions (in the full leaf list) of the leaves that are not static.
std::vector<size_t> dyn_index(size_t total, const std::vector<std::pair<size_t, Value>>& statics) {
  std::vector<size_t> out;
  size_t s = 0;
  for (size_t i = 0; i < total; ++i) {
    if (s < statics.size() && statics[s].first == i) {
      ++s;
      continue;
    }
    out.push_back(i);
  }
  return out;
}

// What JAX's out_axes check sees in place of each output leaf.
struct PytreeLeafObj : OpaqueObj {
  std::string type_name() const override { return "jax._src.api_util.PytreeLeaf"; }
  std::string repr() const override { return "*"; }
};

// JAX's ValueError when in_axes/out_axes is not a tree prefix of the value it
// describes (api.py's flatten_axes), with the details of every mismatch.
void check_axes_prefix(InterpreterImpl& in, const Value& axes, const Value& full,
                       const std::string& what, const Span& where) {
  if (is_axis_leaf(axes)) return;
  ValueList ignored;
  // (None is an axis here, a leaf, as JAX flattens in_axes/out_axes.)
  Value none_leaf = make_builtin("is_leaf", [](InterpreterImpl&, CallArgs& a) {
    return Value::boolean(!a.pos.empty() && a.pos[0].is_none());
  });
  TreeDef d = tree_flatten(in, axes, ignored, &none_leaf);
  if (!pytree_prefix_error(in, d, full, what)) return;
  // The details list every disagreeing subtree, with None a node there (as
  // JAX's prefix_errors flattens the axes tree).
  ValueList ignored_too;
  std::vector<std::string> errors =
      pytree_prefix_errors(in, tree_flatten(in, axes, ignored_too), full, what);
  std::string details;
  for (size_t i = 0; i < errors.size(); ++i) details += (i ? "\n  " : "") + errors[i];
  throw Error(ErrCode::Value,
              what +
                  " specification must be a tree prefix of the corresponding value; \n"
                  "  Mismatch details (" +
                  std::to_string(errors.size()) + " found):\n  " + details,
              where);
}

// The references the vmapped function wrote (trace_function's RefMode::Effects,
// the last of `outs`): a mapped reference argument takes the batched values,
// its axis where in_axes put it (an unbatched value broadcast); writing a
// reference from outside (or an unmapped one) is JAX's error. `outs` and the
// out tree are left with the function's own.
void write_back_refs(InterpreterImpl& in, TracedFunction& traced, std::vector<BVal>& outs,
                     const ValueList& args, const std::vector<int>& axes, int64_t B,
                     const Span& where) {
  if (traced.ref_outputs.empty()) return;
  ValueList arg_leaves;
  tree_flatten(in, make_tuple(args), arg_leaves);
  const size_t base = outs.size() - traced.ref_outputs.size();
  for (size_t j = 0; j < traced.ref_outputs.size(); ++j) {
    const std::shared_ptr<RefObj>& r = traced.ref_outputs[j];
    const BVal& o = outs[base + j];
    int axis = -1;
    for (size_t k = 0; k < arg_leaves.size() && k < axes.size(); ++k)
      if (as_ref(arg_leaves[k]) == r) axis = axes[k];
    if (axis < 0) // (JAX refuses even an unbatched value there)
      throw Error(ErrCode::Unsupported, vmapped_write_message(*r), where);
    Tensor t = o.batched ? o.t : broadcast_batch(in.ops(), o.t, B);
    if (axis != 0) t = np::moveaxis(in.ops(), t, 0, axis);
    store_ref(in, r, make_array(t));
  }
  outs.resize(base);
  traced.out_tree = TreeDef(traced.out_tree.children[0]);
}

struct VmapFunction : OpaqueObj {
  Value fn;
  // Keyword arguments passed on as the trailing positional ones (their names,
  // for error messages).
  std::vector<std::string> kw_names;
  size_t n_pos_args = 0;
  Value sig_fn; // the user's function when `fn` wraps it (keyword calls)

  // How JAX names each (non-static) argument leaf in its errors: "argument
  // x['a']" through the function's signature, "kwargs['y']" for a keyword
  // argument, "args[3]" past the named parameters.
  std::vector<std::string> arg_leaf_names(InterpreterImpl& in, const ValueList& args,
                                          const std::vector<size_t>& keep) const {
    const Value& named = sig_fn.is_none() ? fn : sig_fn;
    const std::vector<Param>* ps =
        named.is_obj(ObjKind::Function) ? named.as<FunctionObj>()->params : nullptr;
    std::vector<std::string> all;
    for (size_t i = 0; i < args.size(); ++i) {
      ValueList ignored;
      TreeDef d = tree_flatten(in, args[i], ignored);
      std::string base;
      if (!kw_names.empty() && i >= n_pos_args)
        base = "kwargs['" + kw_names[i - n_pos_args] + "']";
      else if (ps && i < ps->size() && (*ps)[i].kind == Param::Kind::Normal)
        base = "argument " + (*ps)[i].name;
      else
        base = "args[" + std::to_string(i) + "]";
      for (const std::string& k : leaf_keystrs(d)) all.push_back(base + k);
    }
    std::vector<std::string> out;
    for (size_t i : keep) out.push_back(i < all.size() ? all[i] : "args");
    return out;
  }
  Value in_axes = Value::integer(0), out_axes = Value::integer(0);
  std::string axis_name;
  int64_t axis_size = -1;
  std::vector<std::string> spmd_axis_name; // vmap(spmd_axis_name=...), as a tuple

  std::string type_name() const override { return "function"; }
  std::string repr() const override { return "<vmap of " + pxl::repr(fn) + ">"; }
  const Value* wrapped() const override { return &fn; } // (functools.wraps)
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override {
    if (name == "__wrapped__") return out = fn, true;
    // (functools.wraps: the wrapped function's name, when it has one.)
    if (name == "__name__" && in.has_attr(fn, "__name__"))
      return out = in.get_attr(fn, name, Span{}), true;
    return false;
  }

  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    if (!a.kw.empty()) {
      // As JAX: keyword arguments are mapped over their axis 0 (in_axes
      // describes the positional ones). They go in as trailing positional
      // arguments of a function that hands them on by name.
      if (in_axes.is_obj(ObjKind::Tuple) && sequence_items(in_axes)->size() != a.pos.size())
        throw Error(ErrCode::MappedAxis,
                    "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                    "positional arguments passed to the function, but got len(in_axes)=" +
                        std::to_string(sequence_items(in_axes)->size()) +
                        ", len(args)=" + std::to_string(a.pos.size()),
                    where, "give one entry per positional argument, e.g. in_axes=(0, None)");
      auto by_pos = std::make_shared<VmapFunction>(*this);
      by_pos->n_pos_args = a.pos.size();
      std::vector<std::string> names;
      ValueList axes_items = in_axes.is_obj(ObjKind::Tuple) ? *sequence_items(in_axes)
                                                            : ValueList(a.pos.size(), in_axes);
      CallArgs pos;
      pos.pos = a.pos;
      for (auto& [name, v] : a.kw) {
        names.push_back(name);
        pos.pos.push_back(v);
        axes_items.push_back(Value::integer(0));
      }
      by_pos->in_axes = make_tuple(axes_items);
      by_pos->kw_names = names;
      by_pos->sig_fn = fn;
      Value f = fn;
      size_t npos = a.pos.size();
      by_pos->fn = make_builtin("vmap", [f, names, npos, where](InterpreterImpl& in, CallArgs& c) {
        CallArgs named;
        named.pos.assign(c.pos.begin(), c.pos.begin() + static_cast<long>(npos));
        for (size_t k = 0; k < names.size(); ++k) named.kw.push_back({names[k], c.pos[npos + k]});
        return in.call(f, named, where);
      });
      return by_pos->call(in, pos, where, out);
    }
    const ValueList& args = a.pos;
    Value args_tuple = make_tuple(args);
    check_axes_leaves(in, in_axes, "in_axes", where);
    check_axes_leaves(in, out_axes, "out_axes", where);
    if (in_axes.is_obj(ObjKind::Tuple))
      if (const ValueList* items = sequence_items(in_axes); items->size() != args.size())
        throw Error(ErrCode::MappedAxis,
                    "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                    "positional arguments passed to the function, but got len(in_axes)=" +
                        std::to_string(items->size()) +
                        ", len(args)=" + std::to_string(args.size()),
                    where, "give one entry per positional argument, e.g. in_axes=(0, None)");
    ValueList per_leaf;
    // (A list of per-argument in_axes counts as the tuple, as JAX converts it.)
    {
      // JAX checks in_axes against the arguments with each leaf a PytreeLeaf.
      ValueList arg_leaves;
      TreeDef arg_def = tree_flatten(in, args_tuple, arg_leaves);
      ValueList marks(arg_leaves.size(), Value::object(std::make_shared<PytreeLeafObj>()));
      check_axes_prefix(
          in, in_axes.is_obj(ObjKind::List) ? make_tuple(*sequence_items(in_axes)) : in_axes,
          tree_unflatten(arg_def, marks), "vmap in_axes", where);
    }
    try {
      axes_prefix(in, in_axes, args_tuple, per_leaf, "vmap in_axes");
    } catch (Error& e) {
      e.set_span_if_missing(where);
      throw;
    }
    // Leaves that are not arrays (functions, strings, Python numbers, ...) pass
    // through unmapped when their in_axes is None, as JAX lets them: the trace
    // sees them as they are (a Python int stays one: range(n), static_argnums).
    ValueList all_leaves;
    TreeDef arg_tree = tree_flatten(in, args_tuple, all_leaves);
    std::vector<std::pair<size_t, Value>> statics;
    ValueList dyn_leaves, dyn_axes;
    for (size_t i = 0; i < all_leaves.size(); ++i) {
      const Value& l = all_leaves[i];
      bool data = l.is_obj(ObjKind::Array) || (l.is_number() && !per_leaf[i].is_none()) ||
                  l.is_obj(ObjKind::Complex);
      if (per_leaf[i].is_none() && !data) {
        statics.emplace_back(i, l);
      } else {
        dyn_leaves.push_back(l);
        dyn_axes.push_back(per_leaf[i]);
      }
    }
    Value traced_fn = fn;
    ValueList traced_args = args;
    if (!statics.empty()) {
      size_t total = all_leaves.size();
      Value f = fn;
      traced_fn = make_builtin(
          "vmap", [f, arg_tree, statics, total, where](InterpreterImpl& in, CallArgs& c) {
            Value tup = tree_unflatten(arg_tree, with_static_args(statics, c.pos, total));
            return in.call(f, *sequence_items(tup), where);
          });
      traced_args = dyn_leaves;
      per_leaf = dyn_axes;
    }
    // The outputs that are Python numbers: with out_axes None they come back
    // as they are (JAX's vmap leaves an unbatched non-tracer output alone).
    auto number_outs = std::make_shared<ValueList>();
    {
      Value inner = traced_fn;
      traced_fn =
          make_builtin("vmap", [inner, number_outs, where](InterpreterImpl& in, CallArgs& c) {
            Value out = in.call(inner, c, where);
            ValueList leaves;
            tree_flatten(in, out, leaves);
            number_outs->clear();
            for (const Value& l : leaves) number_outs->push_back(l.is_number() ? l : Value());
            return out;
          });
    }
    std::vector<Tensor> leaves = leaf_tensors(in, traced_args, where);
    // The mapped size, checked across the arguments.
    int64_t B = -1;
    std::vector<int> axes(leaves.size(), -1);
    std::vector<int64_t> sizes(leaves.size(), -1);
    bool consistent = true;
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (per_leaf[i].is_none()) continue;
      const AVal& av = leaves[i]->aval;
      int64_t ax = per_leaf[i].as_int();
      if (ax < -av.ndim() || ax >= av.ndim())
        throw Error(ErrCode::MappedAxis,
                    "vmap was requested to map its argument along axis " + std::to_string(ax) +
                        ", which implies that its rank should be at least " +
                        std::to_string(ax < 0 ? -ax : ax + 1) + ", but is only " +
                        std::to_string(av.ndim()) + " (its shape is " + shape_str(av.shape) + ")",
                    where);
      axes[i] = static_cast<int>(ax < 0 ? ax + av.ndim() : ax);
      int64_t size = av.shape[axes[i]];
      sizes[i] = size;
      if (B >= 0 && size != B) consistent = false;
      B = size;
    }
    if (!consistent || (axis_size >= 0 && B >= 0 && B != axis_size)) {
      // Which argument each leaf is, as JAX names it.
      std::vector<std::string> names =
          arg_leaf_names(in, args, dyn_index(all_leaves.size(), statics));
      throw Error(ErrCode::MappedAxis,
                  inconsistent_sizes_message(names, leaves, per_leaf, sizes, axis_size), where);
    }
    if (axis_size >= 0) B = axis_size;
    if (B < 0 && leaves.empty())
      throw Error(
          ErrCode::MappedAxis,
          "vmap wrapped function must be passed at least one argument containing an array or "
          "axis_size must be specified, got empty *args=" +
              pxl::repr(args_tuple) + " and **kwargs={}",
          where);
    if (B < 0)
      throw Error(
          ErrCode::MappedAxis,
          "vmap must have at least one non-None value in in_axes or axis_size must be specified",
          where, "map at least one argument, or pass axis_size");
    const std::vector<std::string> mapped_split = mapped_axis_spec_check(leaves, axes, where);
    const Mesh* split_mesh = mapped_mesh(leaves, axes);
    // spmd_axis_name may only name the axes the mapped arguments are split over.
    if (!spmd_axis_name.empty() && !mapped_split.empty() && spmd_axis_name != mapped_split) {
      throw Error(ErrCode::Value,
                  "Only one of spmd_axis_name or arrays sharded on `Explicit` mesh axis type is "
                  "allowed. Got spmd_axis_name=" +
                      py_tuple_repr(spmd_axis_name) +
                      " and arrays sharded on explicit_mesh_axis=" + py_tuple_repr(mapped_split),
                  where);
    }
    // Per-example types for the trace; batched params with the axis in front.
    std::vector<AVal> avals;
    std::vector<BVal> params;
    for (size_t i = 0; i < leaves.size(); ++i) {
      AVal av = leaves[i]->aval;
      if (axes[i] < 0) {
        avals.push_back(av);
        params.push_back({leaves[i], false});
        continue;
      }
      av.shape.erase(av.shape.begin() + axes[i]);
      avals.push_back(av);
      Tensor t = leaves[i];
      if (axes[i] != 0) {
        OpAttrs ta;
        for (int d = 0; d < t->aval.ndim(); ++d)
          if (d != axes[i]) ta.perm.push_back(d);
        ta.perm.insert(ta.perm.begin(), axes[i]);
        LocScope loc(in.ops(), where);
        t = in.ops().bind(Op::Transpose, ta, std::span<const Tensor>(&t, 1));
      }
      params.push_back({t, true});
    }
    std::pair<std::string, int64_t> named{axis_name, B};
    // jax.typeof inside sees each example's sharding (the mapped dimension's dropped).
    std::function<void(TraceContext&)> typing = axis_name.empty()
                                                    ? explicit_type_hook(in, leaves, nullptr, &axes)
                                                    : std::function<void(TraceContext&)>{};
    // A traced value prints as JAX's VmapTracer(aval=float32[], batched=float32[3]).
    // Under make_jaxpr the example's trace keeps its own record, carried over
    // below onto the batched instructions (JAX's batched jit is a jit).
    auto* recording = dynamic_cast<TraceContext*>(&in.ops());
    if (recording && !recording->jaxpr_record) recording = nullptr;
    auto record = recording ? std::make_shared<JaxprRecord>() : nullptr;
    auto describe = [&typing, B, record](TraceContext& tc) {
      if (typing) typing(tc);
      if (record) tc.jaxpr_record = record;
      tc.describe = [&tc, B](int id) -> std::optional<std::string> {
        AVal a = tc.function().values[static_cast<size_t>(id)].aval;
        a.weak = false;
        std::string ty = type_str(a), dt = std::string(dtype_name(a.dtype));
        std::string aval = dt + ty.substr(ty.find('['));
        AVal b = a;
        b.shape.insert(b.shape.begin(), B);
        std::string bty = type_str(b);
        return "VmapTracer(aval=" + aval + ", batched=" + dt + bty.substr(bty.find('[')) + ")";
      };
    };
    // (References written inside: results of the trace, see write_back_refs.)
    TracedFunction traced =
        trace_function(in, traced_fn, traced_args, where, "vmap", &avals,
                       axis_name.empty() ? nullptr : &named, describe, false, RefMode::Effects);
    if (in.options().dump_ir) in.out() << print_function(*traced.fn);
    BatchLanding landing;
    const size_t regions_before = record ? recording->jaxpr_record->regions.size() : 0;
    std::vector<BVal> outs =
        batch_function(in.ops(), *traced.fn, params, traced.consts,
                       BatchAxis{B, axis_name, spmd_axis_name}, record ? &landing : nullptr);
    if (record) carry_batched_record(*recording, *traced.fn, *record, landing, regions_before);
    inherit_constraint_mesh(in.ops(), *traced.fn);
    write_back_refs(in, traced, outs, traced_args, axes, B, where);
    // out_axes: where the mapped axis goes in each output.
    ValueList out_leaves;
    for (const BVal& o : outs) out_leaves.push_back(make_array(o.t)); // only for the structure
    ValueList per_out;
    {
      ValueList marks(out_leaves.size(), Value::object(std::make_shared<PytreeLeafObj>()));
      check_axes_prefix(in, out_axes, tree_unflatten(traced.out_tree, marks), "vmap out_axes",
                        where);
    }
    try {
      axes_prefix(in, out_axes, tree_unflatten(traced.out_tree, out_leaves), per_out,
                  "vmap out_axes");
    } catch (Error& e) {
      e.set_span_if_missing(where);
      throw;
    }
    LocScope loc(in.ops(), where);
    // An output that is an argument as given comes back as that argument
    // (a NumPy array, a Python number) where its axis does not move, as JAX's
    // vmap hands back the value it was given.
    ValueList arg_values;
    tree_flatten(in, make_tuple(traced_args), arg_values);
    auto forwarded = [&](size_t r) -> const Value* {
      if (r >= traced.fn->results.size() || arg_values.size() != traced.fn->params.size())
        return nullptr;
      for (size_t k = 0; k < traced.fn->params.size(); ++k) {
        if (traced.fn->params[k] != traced.fn->results[r]) continue;
        if (axes[k] < 0
                ? per_out[r].is_none()
                : !per_out[r].is_none() &&
                      (per_out[r].as_int() < 0 ? per_out[r].as_int() + leaves[k]->aval.ndim()
                                               : per_out[r].as_int()) == axes[k])
          return &arg_values[k];
      }
      return nullptr;
    };
    for (size_t r = 0; r < outs.size(); ++r) {
      const BVal& o = outs[r];
      if (const Value* v = forwarded(r)) {
        out_leaves[r] = *v;
        continue;
      }
      if (per_out[r].is_none() && r < number_outs->size() && !(*number_outs)[r].is_none()) {
        out_leaves[r] = (*number_outs)[r];
        continue;
      }
      if (per_out[r].is_none()) {
        if (o.batched)
          throw Error(ErrCode::MappedAxis,
                      "at vmap out_axes, got axis spec None but output was batched on axis 0",
                      where,
                      "give it an int out_axes, or return a value that does not depend on the "
                      "mapped inputs");
        out_leaves[r] = lay_out_constrained(in, *traced.fn, r, make_array(o.t), -1, {});
        continue;
      }
      Tensor t = o.batched ? o.t : broadcast_batch(in.ops(), o.t, B);
      int64_t nd = t->aval.ndim(), oa = per_out[r].as_int();
      if (oa < -nd || oa >= nd) // JAX's (numpy's) AxisError, a ValueError
        throw Error(ErrCode::Axis,
                    "axis " + std::to_string(oa) + " is out of bounds for array of dimension " +
                        std::to_string(nd),
                    where);
      if (oa < 0) oa += nd;
      if (oa != 0) {
        OpAttrs ta;
        for (int64_t d = 1; d < nd; ++d) ta.perm.push_back(d);
        ta.perm.insert(ta.perm.begin() + oa, 0);
        t = in.ops().bind(Op::Transpose, ta, std::span<const Tensor>(&t, 1));
      }
      if (!mapped_split.empty())
        t = split_mapped_dim(in, t, static_cast<size_t>(oa), mapped_split, split_mesh);
      out_leaves[r] = mapped_split.empty() ? lay_out_constrained(in, *traced.fn, r, make_array(t),
                                                                 oa, spmd_axis_name)
                                           : make_array(t);
    }
    out = restore_float0_outputs(in, traced, tree_unflatten(traced.out_tree, out_leaves));
    return true;
  }
};

Value make_vmap(InterpreterImpl&, CallArgs& a) {
  ArgReader r("vmap", a, {"fun", "in_axes", "out_axes", "axis_name", "axis_size", "spmd_axis_name"},
              1);
  check_callable(r[0]);
  auto v = std::make_shared<VmapFunction>();
  v->fn = r[0];
  if (r.has(1)) v->in_axes = r[1];
  if (r.has(2)) v->out_axes = r[2];
  // As JAX, vmap checks the kind of in_axes when it is applied to the function.
  if (!v->in_axes.is_none() && !v->in_axes.is_int() && !v->in_axes.is_obj(ObjKind::Tuple) &&
      !v->in_axes.is_obj(ObjKind::List))
    throw Error(ErrCode::Type,
                "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                "positional arguments passed to the function, but got " +
                    pxl::str(v->in_axes) + "."); // JAX formats it with str()
  if (r.has(3) && !r[3].is_none()) v->axis_name = value_to_str(r[3], "vmap() axis_name");
  if (r.has(4) && !r[4].is_none()) v->axis_size = r.get_int(4);
  // spmd_axis_name only asks JAX to lay the batch dimension of the SPMD calls
  // inside out over that mesh axis; pxl keeps it unsplit (same values).
  if (r.has(5) && !r[5].is_none()) {
    const ValueList* names = sequence_items(r[5]);
    if (names)
      for (const Value& n : *names)
        v->spmd_axis_name.push_back(value_to_str(n, "vmap() spmd_axis_name"));
    else
      v->spmd_axis_name.push_back(value_to_str(r[5], "vmap() spmd_axis_name"));
  }
  return Value::object(v);
}

} // namespace

void add_vmap(InterpreterImpl& in, Value& jax) {
  Value vmap = make_builtin("vmap", make_vmap);
  jax.as<ModuleObj>()->env->vars["vmap"] = vmap;
  in.define_builtin("vmap", vmap);
}

} // namespace pxl
