#include "stdlib/shard_map_nested.hpp"

#include <algorithm>

#include "lang/diag.hpp"
#include "lang/interp_impl.hpp"
#include "lang/tracer.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/shard_map_checks.hpp"
#include "stdlib/sharding.hpp"

namespace pxl {

TraceContext* enclosing_shard_map(OpContext& cx) {
  OpContext* c = &cx;
  while (auto* tc = dynamic_cast<TraceContext*>(c)) {
    if (tc->what() == "shard_map") return tc;
    if (tc->what() == "pmap") return nullptr;
    c = &tc->outer();
  }
  return nullptr;
}

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

} // namespace

Value call_nested_shard_map(InterpreterImpl& in, TraceContext& outer, const Value& fn,
                            const Mesh& mesh, const std::vector<std::string>& manual,
                            const ValueList& per_leaf, const Value& out_specs, bool check_vma,
                            const ValueList& args, const Span& where) {
  const Function& of = outer.function();
  if (of.mesh_axes != mesh.axis_names || of.mesh_sizes != mesh.axis_sizes)
    throw Error(ErrCode::Value,
                "context mesh " + mesh.repr() + " should match the mesh passed to shard_map", where,
                "a shard_map inside another must use the same mesh");
  // The inner manual axes: those named (or all) among the outer's automatic ones.
  std::vector<std::string> inner;
  for (const std::string& n : manual.empty() ? outer.auto_axes : manual) {
    if (!contains(outer.auto_axes, n))
      throw Error(ErrCode::Unsupported,
                  "shard_map inside shard_map: axis '" + n +
                      "' is already manual in the enclosing shard_map",
                  where, "give the inner shard_map axis_names the outer one leaves automatic");
    inner.push_back(n);
  }
  Value module = in.import_module("shard_map_nested", Span{}, "");
  Value split = in.get_attr(module, "_split", Span{});
  Value gather = in.get_attr(module, "_gather", Span{});
  // In the inner body its manual axes are bound: collectives may use them.
  std::vector<std::string> saved = outer.auto_axes;
  struct Restore {
    TraceContext& tc;
    std::vector<std::string> axes;
    ~Restore() { tc.auto_axes = std::move(axes); }
  } restore{outer, saved};
  std::vector<std::string> still_auto;
  for (const std::string& n : saved)
    if (!contains(inner, n)) still_auto.push_back(n);
  outer.auto_axes = still_auto;

  ValueList leaves;
  TreeDef in_tree = tree_flatten(in, make_tuple(args), leaves);
  for (size_t i = 0; i < leaves.size(); ++i)
    if (!per_leaf[i].is_none() && leaves[i].is_obj(ObjKind::Array))
      leaves[i] = in.call(split, ValueList{leaves[i], per_leaf[i]}, where);
  Value blocks = tree_unflatten(in_tree, leaves);
  Value result = in.call(fn, *sequence_items(blocks), where);

  ValueList outs, out_leaf_specs;
  TreeDef out_tree = tree_flatten(in, result, outs);
  broadcast_prefix(
      in, out_specs, result, out_leaf_specs,
      [](const Value& v) { return v.is_none() || v.is_obj(ObjKind::Opaque); },
      "shard_map out_specs");
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].is_obj(ObjKind::Array)) continue;
    PartitionSpec spec = value_to_spec(out_leaf_specs[i], "shard_map out_specs entry");
    if (check_vma) {
      Tensor t = outs[i].as<ArrayObj>()->tensor;
      AxisSet vma = vma_of(in.ops(), t);
      std::vector<std::string> named = spec.axes(), varying;
      bool bad = false;
      for (size_t b = 0; b < of.mesh_axes.size(); ++b) {
        if (!(vma & (AxisSet{1} << b))) continue;
        varying.push_back(of.mesh_axes[b]);
        if (contains(inner, of.mesh_axes[b]) && !contains(named, of.mesh_axes[b])) bad = true;
      }
      if (bad) {
        Mesh inner_mesh = mesh;
        throw Error(ErrCode::Vma,
                    out_vma_message(shard_map_fun_name(fn), inner_mesh,
                                    SpecLeaf{spec, t->aval, "", ""}, varying),
                    where);
      }
    }
    outs[i] = in.call(gather, ValueList{outs[i], out_leaf_specs[i]}, where);
  }
  return tree_unflatten(out_tree, outs);
}

} // namespace pxl
