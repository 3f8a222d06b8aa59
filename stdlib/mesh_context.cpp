// jax.sharding.use_abstract_mesh and AbstractMesh.update_axis_types: what
// auto_axes/explicit_axes (stdlib/sharding_axes.pxl) change the mesh's axis
// types with for the code they wrap.
#include "stdlib/mesh_context.hpp"
#include "stdlib/sharding.hpp"

#include "lang/args.hpp"
#include "lang/interp_impl.hpp"
#include "runtime/platform.hpp"

namespace pxl {

namespace {

// An abstract mesh's size (it has no devices to count).
int64_t axes_size(const Mesh& m) {
  int64_t n = 1;
  for (int64_t s : m.axis_sizes) n *= s;
  return n;
}

const AbstractMeshObj* as_abstract_mesh(const Value& v) {
  return v.is_obj(ObjKind::Opaque) ? dynamic_cast<const AbstractMeshObj*>(v.as<OpaqueObj>())
                                   : nullptr;
}

// The concrete mesh an abstract one stands for while it is current: the
// current mesh's devices (arranged in its axes), else the first devices.
Value concrete_for(InterpreterImpl& in, const Mesh& abstract) {
  if (abstract.axis_names.empty()) return Value(); // no mesh
  const Value* cur = in.context_mesh();
  const Mesh* m = cur ? value_to_mesh(*cur) : nullptr;
  std::vector<int> ids;
  const int64_t n = axes_size(abstract);
  if (m && m->size() == n) {
    ids = m->device_ids;
  } else {
    if (n > in.platform().device_count())
      throw Error(ErrCode::Device, "use_abstract_mesh(): the mesh has " + std::to_string(n) +
                                       " devices but " +
                                       std::to_string(in.platform().device_count()) + " exist");
    for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int>(i));
  }
  Mesh out{abstract.axis_names, abstract.axis_sizes, std::move(ids), abstract.axis_types};
  return make_mesh_value(std::move(out));
}

// `with jax.sharding.use_abstract_mesh(am):` -- am's axis types are current
// in the block (pxl keeps one mesh context: am over the current devices).
struct UseAbstractMeshObj : OpaqueObj {
  Value mesh; // the AbstractMesh
  explicit UseAbstractMeshObj(Value m) : mesh(std::move(m)) {}
  std::string type_name() const override { return "use_abstract_mesh"; }
  std::string repr() const override { return "<use_abstract_mesh " + pxl::repr(mesh) + ">"; }
  bool enter(InterpreterImpl& in, Value& bound) override {
    const Mesh& next = as_abstract_mesh(mesh)->mesh;
    Value prev = current_abstract_mesh(in);
    const Mesh& p = as_abstract_mesh(prev)->mesh;
    if (!p.axis_names.empty() && !next.axis_names.empty() && axes_size(p) != axes_size(next))
      throw Error(
          ErrCode::Value,
          "use_abstract_mesh cannot change the size of the mesh. Got new mesh: " + pxl::repr(mesh) +
              " with size=" + std::to_string(axes_size(next)) +
              " and prev mesh: " + pxl::repr(prev) + " with size=" + std::to_string(axes_size(p)));
    in.push_context_mesh(concrete_for(in, next));
    bound = Value(); // binds None, as JAX
    return true;
  }
  void exit(InterpreterImpl& in) override { in.pop_context_mesh(); }
};

} // namespace

Value update_axis_types_method(const Mesh& mesh, const std::string& device_kind) {
  return make_builtin("update_axis_types", [mesh, device_kind](InterpreterImpl&, CallArgs& a) {
    ArgReader r("update_axis_types", a, {"name_to_type"}, 1);
    if (!r[0].is_obj(ObjKind::Dict))
      throw Error(ErrCode::Type,
                  "update_axis_types() expects a dict from axis names to AxisType values, not " +
                      type_name(r[0]));
    Mesh m = mesh;
    if (m.axis_types.size() != m.axis_names.size())
      m.axis_types.assign(m.axis_names.size(), AxisType::Auto);
    r[0].as<DictObj>()->for_each([&](const Value& k, const Value& v) {
      AxisType t = axis_type_arg(v, "update_axis_types");
      // As JAX: names the mesh does not have are ignored.
      int axis = k.is_obj(ObjKind::Str) ? m.axis_of(k.as<StrObj>()->value) : -1;
      if (axis >= 0) m.axis_types[static_cast<size_t>(axis)] = t;
    });
    return make_abstract_mesh_value(m, device_kind);
  });
}

Value make_use_abstract_mesh(InterpreterImpl&, CallArgs& a) {
  ArgReader r("use_abstract_mesh", a, {"mesh"}, 1);
  if (!as_abstract_mesh(r[0]))
    throw Error(ErrCode::Value,
                "Expected mesh of type `jax.sharding.AbstractMesh`. Got type: " + type_name(r[0]));
  return Value::object(std::make_shared<UseAbstractMeshObj>(r[0]));
}

} // namespace pxl
