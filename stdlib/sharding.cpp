// jax.sharding: Mesh, PartitionSpec, NamedSharding, make_mesh, device_put, and
// the attributes of sharded arrays.
#include "stdlib/sharding.hpp"

#include "lang/type_object.hpp"
#include "stdlib/jit_devices.hpp"
#include "stdlib/mesh_context.hpp"

#include <algorithm>
#include <cmath>

#include "lang/args.hpp"
#include "lang/py_set.hpp"
#include "lang/tracer.hpp"
#include "runtime/format.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/debug_print.hpp"
#include "stdlib/host_callback.hpp"
#include "stdlib/inspect_sharding.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/pytree.hpp"

namespace pxl {

namespace {

Value str_tuple(const std::vector<std::string>& names) {
  ValueList items;
  for (const auto& n : names) items.push_back(make_str(n));
  return make_tuple(std::move(items));
}

// Nested lists of `platform`'s devices following the mesh shape.
Value device_grid(const Mesh& m, const std::string& platform, size_t dim, int64_t& pos) {
  ValueList items;
  for (int64_t i = 0; i < m.axis_sizes[dim]; ++i) {
    if (dim + 1 == m.axis_sizes.size())
      items.push_back(device_value(platform, m.device_ids[pos++]));
    else
      items.push_back(device_grid(m, platform, dim + 1, pos));
  }
  return make_list(std::move(items));
}

// Flattens nested lists of Device values; records the nesting shape.
void collect_devices(const Value& v, size_t depth, Shape& shape, std::vector<int>& ids) {
  if (depth == 0 && v.is_obj(ObjKind::Opaque))
    if (auto* g = dynamic_cast<DeviceGridObj*>(v.as<OpaqueObj>())) {
      shape = g->shape;
      ids = g->ids;
      return;
    }
  if (v.is_obj(ObjKind::Device)) {
    if (shape.size() != depth)
      throw Error(ErrCode::Value, "Mesh devices must form a rectangular grid");
    ids.push_back(v.as<DeviceObj>()->id);
    return;
  }
  const ValueList* items = sequence_items(v);
  if (!items)
    throw Error(ErrCode::Type,
                "Mesh devices must be Device values (from jax.devices()), not " + type_name(v));
  if (shape.size() == depth)
    shape.push_back(static_cast<int64_t>(items->size()));
  else if (shape.size() < depth || shape[depth] != static_cast<int64_t>(items->size()))
    throw Error(ErrCode::Value, "Mesh devices must form a rectangular grid");
  for (const Value& x : *items) collect_devices(x, depth + 1, shape, ids);
}

std::vector<std::string> axis_names_arg(const Value& v, const char* fn) {
  std::vector<std::string> names;
  if (v.is_obj(ObjKind::Str)) return {v.as<StrObj>()->value};
  const ValueList* items = sequence_items(v);
  if (!items)
    throw Error(ErrCode::Type, std::string(fn) + "() axis_names must be a tuple of strings");
  for (const Value& x : *items) names.push_back(value_to_str(x, std::string(fn) + "() axis name"));
  for (size_t i = 0; i < names.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (names[i] == names[j])
        throw Error(ErrCode::Value,
                    std::string(fn) + "(): axis name '" + names[i] + "' appears twice");
  return names;
}

// axis_types=: one AxisType for every axis, or a tuple of one per axis;
// None gives `dflt` (Auto for Mesh, Explicit for make_mesh, as in JAX 0.10).
std::vector<AxisType> axis_types_arg(const Value& v, const std::vector<std::string>& names,
                                     AxisType dflt, const char* fn);

Mesh build_mesh(InterpreterImpl& in, const Shape& shape, std::vector<int> ids,
                std::vector<std::string> names, const char* fn) {
  if (names.size() != shape.size())
    throw Error(ErrCode::Value,
                "Mesh requires the ndim of its first argument (`devices`) to equal the length of "
                "its second argument (`axis_names`), but got devices.ndim == " +
                    std::to_string(shape.size()) +
                    " and len(axis_names) == " + std::to_string(names.size()) + ".");
  if (ids.empty())
    throw Error(ErrCode::Value, std::string(fn) + "(): a mesh needs at least one device");
  for (int id : ids)
    if (id < 0 || id >= in.platform().device_count())
      throw Error(ErrCode::Device,
                  std::string(fn) + "(): device " + std::to_string(id) + " does not exist");
  std::vector<int> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw Error(ErrCode::Value, std::string(fn) + "(): a device appears twice in the mesh");
  return Mesh{std::move(names), shape, std::move(ids)};
}

// jax.sharding.AxisType.Auto / Explicit / Manual: repr "Auto", str "AxisType.Auto".
struct AxisTypeObj : OpaqueObj {
  explicit AxisTypeObj(AxisType t) : type(t) {}
  AxisType type;
  std::string type_name() const override { return "AxisType"; }
  std::string repr() const override { return axis_type_name(type); }
  std::string str() const override { return std::string("AxisType.") + axis_type_name(type); }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "name") return out = make_str(axis_type_name(type)), true;
    return false;
  }
  bool equals(const OpaqueObj& o) const override {
    auto* t = dynamic_cast<const AxisTypeObj*>(&o);
    return t && t->type == type;
  }
};

Value axis_type_value(AxisType t) { return Value::object(std::make_shared<AxisTypeObj>(t)); }

std::vector<AxisType> axis_types_arg(const Value& v, const std::vector<std::string>& names,
                                     AxisType dflt, const char* fn) {
  if (v.is_none()) return std::vector<AxisType>(names.size(), dflt);
  auto one = [&](const Value& x) {
    auto* t = x.is_obj(ObjKind::Opaque) ? dynamic_cast<AxisTypeObj*>(x.as<OpaqueObj>()) : nullptr;
    if (!t)
      throw Error(ErrCode::Type, std::string(fn) +
                                     "() axis_types must be jax.sharding.AxisType values, not " +
                                     type_name(x));
    return t->type;
  };
  // One AxisType is a tuple of one, as in JAX.
  const ValueList* items = sequence_items(v);
  ValueList single{v};
  if (!items) items = &single;
  if (items->size() != names.size()) {
    auto tuple = [](const std::vector<std::string>& xs) {
      std::string out = "(";
      for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + xs[i];
      return out + (xs.size() == 1 ? ",)" : ")");
    };
    std::vector<std::string> quoted, types;
    for (const auto& n : names) quoted.push_back(repr_string(n));
    for (const Value& x : *items) types.push_back(axis_type_name(one(x)));
    throw Error(ErrCode::Value,
                "Number of axis names should match the number of axis_types. Got axis_names=" +
                    tuple(quoted) + " and axis_types=" + tuple(types));
  }
  std::vector<AxisType> out;
  for (const Value& x : *items) out.push_back(one(x));
  return out;
}

} // namespace

AxisType axis_type_arg(const Value& v, const char* fn) {
  return axis_types_arg(v, {"axis"}, AxisType::Auto, fn)[0];
}

// ---- device grids ------------------------------------------------------------------

Value device_value(const std::string& platform, int id) {
  return Value::object(std::make_shared<DeviceObj>(id, platform));
}

std::shared_ptr<DeviceGridObj> device_grid_of(const Value& v) {
  if (v.is_obj(ObjKind::Opaque))
    if (auto* g = dynamic_cast<DeviceGridObj*>(v.as<OpaqueObj>()))
      return std::make_shared<DeviceGridObj>(g->shape, g->ids, g->platform);
  const ValueList* items = sequence_items(v);
  if (!items || items->empty()) return nullptr;
  const Value* first = &v;
  // A bounded walk: a list that contains itself (a.append(a)) has no first leaf; deeper
  // than any array's rank is not a grid of devices (the caller reports the nesting).
  for (int depth = 0; const ValueList* inner = sequence_items(*first); ++depth) {
    if (inner->empty() || depth > 64) return nullptr;
    first = &(*inner)[0];
  }
  if (!first->is_obj(ObjKind::Device)) return nullptr;
  Shape shape;
  std::vector<int> ids;
  collect_devices(v, 0, shape, ids);
  return std::make_shared<DeviceGridObj>(shape, ids, first->as<DeviceObj>()->platform);
}

namespace {
std::vector<std::string> device_reprs(const std::string& platform, const std::vector<int>& ids) {
  std::vector<std::string> out;
  for (int id : ids) out.push_back(pxl::repr(device_value(platform, id)));
  return out;
}
} // namespace

std::string DeviceGridObj::repr() const {
  return object_array_repr(shape, device_reprs(platform, ids));
}
std::string DeviceGridObj::str() const {
  return object_array_str(shape, device_reprs(platform, ids));
}

// Iterating over the first axis gives devices (1-d) or sub-grids.
bool DeviceGridObj::items(ValueList& out) const {
  if (shape.empty()) return false;
  Shape inner(shape.begin() + 1, shape.end());
  size_t n = static_cast<size_t>(shape_size(inner));
  for (int64_t i = 0; i < shape[0]; ++i) {
    if (inner.empty())
      out.push_back(device_value(platform, ids[i]));
    else
      out.push_back(Value::object(std::make_shared<DeviceGridObj>(
          inner, std::vector<int>(ids.begin() + i * n, ids.begin() + (i + 1) * n), platform)));
  }
  return true;
}

// numpy's basic indexing of an object array: per axis an integer (the axis
// goes) or a slice (it stays, with the picked positions), e.g. grid[:, 0].
bool DeviceGridObj::get_item(InterpreterImpl& in, const Value& index, Value& out) {
  ValueList parts;
  if (const ValueList* p = sequence_items(index))
    parts = *p;
  else
    parts.push_back(index);
  if (parts.size() > shape.size())
    throw Error(ErrCode::Index,
                "too many indices for a " + std::to_string(shape.size()) + "-d device array");
  std::vector<std::vector<int64_t>> picked(shape.size());
  Shape out_shape;
  for (size_t k = 0; k < shape.size(); ++k) {
    int64_t n = shape[k];
    if (k >= parts.size() || parts[k].is_obj(ObjKind::Slice)) {
      ValueList positions;
      for (int64_t i = 0; i < n; ++i) positions.push_back(Value::integer(i));
      Value all = make_list(std::move(positions));
      Value kept = k < parts.size() ? in.get_item(all, parts[k], Span{}) : all;
      for (const Value& v : *sequence_items(kept)) picked[k].push_back(v.as_int());
      out_shape.push_back(static_cast<int64_t>(picked[k].size()));
      continue;
    }
    int64_t i = value_to_int(parts[k], "device array index");
    if (i < -n || i >= n)
      throw Error(ErrCode::Index, "index " + std::to_string(i) +
                                      " is out of bounds for a device axis of size " +
                                      std::to_string(n));
    picked[k].push_back(i < 0 ? i + n : i);
  }
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) strides[k - 1] = strides[k] * shape[k];
  std::vector<int> out_ids;
  std::vector<size_t> at(shape.size(), 0);
  bool empty = false;
  for (const auto& p : picked) empty = empty || p.empty();
  while (!empty) {
    int64_t src = 0;
    for (size_t k = 0; k < shape.size(); ++k) src += picked[k][at[k]] * strides[k];
    out_ids.push_back(ids[static_cast<size_t>(src)]);
    size_t k = shape.size();
    while (k-- > 0) {
      if (++at[k] < picked[k].size()) break;
      at[k] = 0;
    }
    if (k == static_cast<size_t>(-1)) break;
  }
  if (out_shape.empty()) return out = device_value(platform, out_ids.at(0)), true;
  out = Value::object(std::make_shared<DeviceGridObj>(out_shape, std::move(out_ids), platform));
  return true;
}

namespace {
// The grid with its axes permuted (numpy's transpose of an object array).
Value permuted_grid(const Shape& shape, const std::vector<int>& ids, const std::string& platform,
                    const std::vector<int64_t>& perm) {
  size_t n = shape.size();
  std::vector<bool> seen(n, false);
  if (perm.size() != n) throw Error(ErrCode::Value, "axes don't match array");
  for (int64_t p : perm) {
    if (p < -static_cast<int64_t>(n) || p >= static_cast<int64_t>(n) ||
        seen[static_cast<size_t>(p < 0 ? p + n : p)])
      throw Error(ErrCode::Value, "axes don't match array");
    seen[static_cast<size_t>(p < 0 ? p + n : p)] = true;
  }
  Shape out_shape(n), strides(n, 1);
  for (size_t k = n; k-- > 1;) strides[k - 1] = strides[k] * shape[k];
  std::vector<int64_t> axes(n);
  for (size_t k = 0; k < n; ++k)
    axes[k] = perm[k] < 0 ? perm[k] + static_cast<int64_t>(n) : perm[k];
  for (size_t k = 0; k < n; ++k) out_shape[k] = shape[static_cast<size_t>(axes[k])];
  std::vector<int> out_ids(ids.size());
  std::vector<int64_t> idx(n, 0);
  for (size_t flat = 0; flat < ids.size(); ++flat) {
    int64_t src = 0;
    for (size_t k = 0; k < n; ++k) src += idx[k] * strides[static_cast<size_t>(axes[k])];
    out_ids[flat] = ids[static_cast<size_t>(src)];
    for (size_t k = n; k-- > 0;) {
      if (++idx[k] < out_shape[k]) break;
      idx[k] = 0;
    }
  }
  return Value::object(std::make_shared<DeviceGridObj>(out_shape, std::move(out_ids), platform));
}
} // namespace

bool DeviceGridObj::get_attr(InterpreterImpl&, const std::string& name, Value& out) {
  if (name == "T" || name == "transpose" || name == "swapaxes") {
    Shape s0 = shape;
    std::vector<int> ids0 = ids;
    std::string p0 = platform;
    std::vector<int64_t> reversed;
    for (size_t k = shape.size(); k-- > 0;) reversed.push_back(static_cast<int64_t>(k));
    if (name == "T") return out = permuted_grid(s0, ids0, p0, reversed), true;
    if (name == "transpose") {
      out = make_builtin("transpose", [s0, ids0, p0, reversed](InterpreterImpl&, CallArgs& a) {
        std::vector<int64_t> perm;
        if (a.pos.empty() || (a.pos.size() == 1 && a.pos[0].is_none()))
          perm = reversed;
        else if (a.pos.size() == 1)
          perm = value_to_int_list(a.pos[0], "transpose() axes");
        else
          for (const Value& v : a.pos) perm.push_back(value_to_int(v, "transpose() axes"));
        return permuted_grid(s0, ids0, p0, perm);
      });
      return true;
    }
    out = make_builtin("swapaxes", [s0, ids0, p0](InterpreterImpl&, CallArgs& a) {
      ArgReader r("swapaxes", a, {"axis1", "axis2"}, 2);
      int64_t n = static_cast<int64_t>(s0.size());
      int64_t a1 = r.get_int(0), a2 = r.get_int(1);
      if (a1 < -n || a1 >= n || a2 < -n || a2 >= n)
        throw Error(ErrCode::Axis, "axis " + std::to_string(a1 < -n || a1 >= n ? a1 : a2) +
                                       " is out of bounds for array of dimension " +
                                       std::to_string(n));
      std::vector<int64_t> perm(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) perm[static_cast<size_t>(k)] = k;
      std::swap(perm[static_cast<size_t>(a1 < 0 ? a1 + n : a1)],
                perm[static_cast<size_t>(a2 < 0 ? a2 + n : a2)]);
      return permuted_grid(s0, ids0, p0, perm);
    });
    return true;
  }
  if (name == "shape") {
    ValueList d;
    for (int64_t x : shape) d.push_back(Value::integer(x));
    return out = make_tuple(std::move(d)), true;
  }
  if (name == "ndim") return out = Value::integer(static_cast<int64_t>(shape.size())), true;
  if (name == "size") return out = Value::integer(static_cast<int64_t>(ids.size())), true;
  if (name == "flat") {
    ValueList all;
    for (int id : ids) all.push_back(device_value(platform, id));
    return out = make_list(std::move(all)), true;
  }
  if (name == "tolist") {
    int64_t pos = 0;
    Value grid =
        device_grid(Mesh{std::vector<std::string>(shape.size()), shape, ids}, platform, 0, pos);
    out = make_builtin("tolist", [grid](InterpreterImpl&, CallArgs&) { return grid; });
    return true;
  }
  if (name == "reshape") {
    Shape s0 = shape;
    std::vector<int> ids0 = ids;
    std::string p0 = platform;
    out = make_builtin("reshape", [s0, ids0, p0](InterpreterImpl&, CallArgs& a) {
      Shape s;
      if (a.pos.size() == 1)
        s = value_to_int_list(a.pos[0], "reshape() shape");
      else
        for (const Value& v : a.pos) s.push_back(value_to_int(v, "reshape() shape"));
      int64_t known = 1, unknown = -1;
      for (size_t k = 0; k < s.size(); ++k) {
        if (s[k] == -1 && unknown < 0)
          unknown = static_cast<int64_t>(k);
        else
          known *= s[k];
      }
      if (unknown >= 0 && known > 0) s[unknown] = static_cast<int64_t>(ids0.size()) / known;
      if (shape_size(s) != static_cast<int64_t>(ids0.size()))
        throw Error(ErrCode::Reshape, "cannot reshape a device array of " +
                                          std::to_string(ids0.size()) + " devices into shape " +
                                          shape_str(s));
      return Value::object(std::make_shared<DeviceGridObj>(s, ids0, p0));
    });
    return true;
  }
  return false;
}

// ---- Mesh --------------------------------------------------------------------

namespace {
// The attributes of a mesh's axes, which Mesh and AbstractMesh share.
// JAX's queries of the axis types: are_all_axes_manual, _any_axis_explicit
// (false for a mesh with no axes), auto_axes, explicit_axes, manual_axes.
bool axis_type_query(const Mesh& mesh, const std::string& name, Value& out) {
  static const std::pair<const char*, AxisType> kinds[] = {
      {"auto", AxisType::Auto}, {"explicit", AxisType::Explicit}, {"manual", AxisType::Manual}};
  for (auto [kind, type] : kinds) {
    int n = 0;
    ValueList names;
    for (int i = 0; i < mesh.ndim(); ++i)
      if (mesh.axis_type(i) == type) ++n, names.push_back(make_str(mesh.axis_names[i]));
    std::string k = kind;
    if (name == "are_all_axes_" + k) return out = Value::boolean(n > 0 && n == mesh.ndim()), true;
    if (name == "_any_axis_" + k) return out = Value::boolean(n > 0), true;
    if (name == k + "_axes") return out = make_tuple(std::move(names)), true;
  }
  return false;
}

bool mesh_axes_attr(const Mesh& mesh, const std::string& name, Value& out) {
  if (name == "shape") { // an OrderedDict in JAX
    auto d = std::make_shared<DictObj>();
    d->ordered = true;
    for (int i = 0; i < mesh.ndim(); ++i)
      d->set(make_str(mesh.axis_names[i]), Value::integer(mesh.axis_sizes[i]));
    out = Value::object(d);
  } else if (name == "axis_names") {
    out = str_tuple(mesh.axis_names);
  } else if (name == "size") {
    int64_t n = 1;
    for (int64_t x : mesh.axis_sizes) n *= x;
    out = Value::integer(n);
  } else if (name == "axis_types") {
    ValueList t;
    for (int i = 0; i < mesh.ndim(); ++i) t.push_back(axis_type_value(mesh.axis_type(i)));
    out = make_tuple(std::move(t));
  } else if (name == "shape_tuple") {
    ValueList t;
    for (int i = 0; i < mesh.ndim(); ++i)
      t.push_back(make_tuple({make_str(mesh.axis_names[i]), Value::integer(mesh.axis_sizes[i])}));
    out = make_tuple(std::move(t));
  } else if (name == "empty") {
    out = Value::boolean(mesh.ndim() == 0);
  } else if (name == "axis_sizes") {
    ValueList s;
    for (int64_t x : mesh.axis_sizes) s.push_back(Value::integer(x));
    out = make_tuple(std::move(s));
  } else if (!axis_type_query(mesh, name, out)) {
    return false;
  }
  return true;
}
} // namespace

bool MeshObj::get_attr(InterpreterImpl& in, const std::string& name, Value& out) {
  if (name == "size") return out = Value::integer(mesh.size()), true;
  if (mesh_axes_attr(mesh, name, out)) return true;
  if (name == "devices") { // a numpy object array in JAX
    out = Value::object(
        std::make_shared<DeviceGridObj>(Shape(mesh.axis_sizes.begin(), mesh.axis_sizes.end()),
                                        mesh.device_ids, in.platform().name()));
  } else if (name == "local_devices") {
    ValueList devs;
    for (int id : mesh.device_ids) devs.push_back(device_value(in.platform().name(), id));
    out = make_list(std::move(devs));
  } else if (name == "device_ids") {
    // A numpy int array of the mesh's shape in JAX.
    Array ids(DType::Int32, Shape(mesh.axis_sizes.begin(), mesh.axis_sizes.end()));
    for (size_t i = 0; i < mesh.device_ids.size(); ++i)
      ids.set(static_cast<int64_t>(i), Scalar::of_int(mesh.device_ids[i]));
    out = make_array(make_tensor(std::move(ids)));
  } else if (name == "abstract_mesh") {
    out = make_abstract_mesh_value(mesh, in.platform().name());
  } else {
    return false;
  }
  return true;
}

std::vector<std::string> MeshObj::attr_names() const {
  return {"shape",      "axis_names",  "size",          "devices", "device_ids",   "axis_sizes",
          "axis_types", "shape_tuple", "local_devices", "empty",   "abstract_mesh"};
}

namespace {
// An entry of the interpreter's mesh context stack: the mesh jax.set_mesh made
// current (`concrete`) and the one `with mesh:` made current (`physical`),
// each None when there is none. JAX 0.10 keeps them apart: `with mesh:` (a
// deprecated context manager there) sets only the legacy resource
// environment's mesh, which pjit and with_sharding_constraint read; jit,
// device_put, reshard, shard_map and array creation read jax.set_mesh's only.
// value_to_mesh of an entry is its concrete mesh.
struct MeshContextObj : OpaqueObj {
  MeshContextObj(Value c, Value p) : concrete(std::move(c)), physical(std::move(p)) {}
  Value concrete, physical;
  std::string type_name() const override { return "mesh_context"; }
  std::string repr() const override { return "<mesh_context>"; }
};

const MeshContextObj* context_entry(InterpreterImpl& in) {
  const Value* cur = in.context_mesh();
  return cur && cur->is_obj(ObjKind::Opaque)
             ? dynamic_cast<const MeshContextObj*>(cur->as<OpaqueObj>())
             : nullptr;
}

// Pushes `with mesh:`'s entry (the jax.set_mesh mesh stays as it was).
void push_legacy_mesh(InterpreterImpl& in, const Value& mesh) {
  const Value* cur = in.context_mesh();
  Value concrete = cur && value_to_mesh(*cur)
                       ? (context_entry(in) ? context_entry(in)->concrete : *cur)
                       : Value();
  in.push_context_mesh(Value::object(std::make_shared<MeshContextObj>(concrete, mesh)));
}
} // namespace

std::string spec_needs_mesh_message(const PartitionSpec& spec) {
  return "Using PartitionSpec when you are not under a mesh context is not allowed. Please pass a "
         "NamedSharding instance or enter into a mesh context via `jax.set_mesh`. Got " +
         spec.repr();
}

std::string wsc_needs_mesh_message() {
  return "with_sharding_constraint requires a non-empty mesh in context if you are passing "
         "`PartitionSpec`s to shardings. You can define a context mesh via `jax.set_mesh(mesh)`. "
         "Alternatively, provide `Sharding`s to shardings and then the mesh context manager is not "
         "required.";
}

const Mesh* legacy_context_mesh(InterpreterImpl& in) {
  const MeshContextObj* e = context_entry(in);
  return e ? value_to_mesh(e->physical) : nullptr;
}

bool MeshObj::enter(InterpreterImpl& in, Value& bound) {
  bound = make_mesh_value(mesh);
  push_legacy_mesh(in, bound);
  return true;
}

bool MeshObj::call(InterpreterImpl&, CallArgs& args, const Span&, Value& out) {
  if (args.pos.size() != 1 || !args.kw.empty())
    throw Error(ErrCode::Arguments,
                "a Mesh used as a decorator takes the one function it decorates");
  Value fn = args.pos[0], mesh_value = make_mesh_value(mesh);
  out = make_builtin("mesh_decorated", [fn, mesh_value](InterpreterImpl& in, CallArgs& a) {
    struct Scope {
      InterpreterImpl& in;
      ~Scope() { in.pop_context_mesh(); }
    };
    push_legacy_mesh(in, mesh_value);
    Scope scope{in};
    return in.call(fn, a, Span{});
  });
  return true;
}

namespace {
// jax.set_mesh(mesh) / jax.sharding.use_mesh(mesh): the mesh is current from
// the call on; used in `with`, until the block ends.
struct MeshScopeObj : OpaqueObj {
  Value mesh;
  explicit MeshScopeObj(Value m) : mesh(std::move(m)) {}
  std::string type_name() const override { return "set_mesh"; }
  std::string repr() const override { return "<set_mesh " + pxl::repr(mesh) + ">"; }
  bool enter(InterpreterImpl&, Value& bound) override {
    return bound = Value(), true;
  } // binds None, as JAX
  void exit(InterpreterImpl& in) override { in.pop_context_mesh(); }
};
} // namespace

Value make_set_mesh(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("set_mesh", a, {"mesh"}, 1);
  if (!value_to_mesh(r[0]))
    throw Error(ErrCode::Type, "set_mesh() expects a Mesh, not " + type_name(r[0]));
  // The `with mesh:` mesh stays current for what reads it (pjit).
  const MeshContextObj* outer = context_entry(in);
  in.push_context_mesh(outer && !outer->physical.is_none()
                           ? Value::object(std::make_shared<MeshContextObj>(r[0], outer->physical))
                           : r[0]);
  return Value::object(std::make_shared<MeshScopeObj>(r[0]));
}

bool MeshObj::equals(const OpaqueObj& o) const {
  auto* m = dynamic_cast<const MeshObj*>(&o);
  return m && m->mesh.same_mesh(mesh); // axis types too, as JAX's Mesh.__eq__
}

// ---- AbstractMesh ------------------------------------------------------------

std::string AbstractMeshObj::repr() const {
  if (mesh.ndim() == 0) return "AbstractMesh((), axis_types=())";
  // Mesh('x': 2, axis_types=(Auto,)) with the device kind before the ")".
  std::string s = "Abstract" + mesh.jax_str();
  s.pop_back();
  if (!device_kind.empty())
    s += ", device_kind=" + device_kind + ", num_cores=None, platform=" + device_kind;
  return s + ")";
}

bool AbstractMeshObj::get_attr(InterpreterImpl&, const std::string& name, Value& out) {
  if (name == "abstract_mesh") return out = make_abstract_mesh_value(mesh, device_kind), true;
  if (name == "update_axis_types") return out = update_axis_types_method(mesh, device_kind), true;
  return mesh_axes_attr(mesh, name, out);
}

std::vector<std::string> AbstractMeshObj::attr_names() const {
  return {"shape",       "axis_names", "size",          "axis_sizes",       "axis_types",
          "shape_tuple", "empty",      "abstract_mesh", "update_axis_types"};
}

bool AbstractMeshObj::equals(const OpaqueObj& o) const {
  auto* m = dynamic_cast<const AbstractMeshObj*>(&o);
  if (!m || m->device_kind != device_kind || m->mesh.axis_names != mesh.axis_names ||
      m->mesh.axis_sizes != mesh.axis_sizes)
    return false;
  for (int i = 0; i < mesh.ndim(); ++i)
    if (m->mesh.axis_type(i) != mesh.axis_type(i)) return false;
  return true;
}

Value make_abstract_mesh_value(const Mesh& m, const std::string& platform) {
  Mesh axes{m.axis_names, m.axis_sizes, {}, m.axis_types};
  if (axes.axis_types.empty()) axes.axis_types.assign(axes.axis_names.size(), AxisType::Auto);
  return Value::object(std::make_shared<AbstractMeshObj>(std::move(axes), platform));
}

Value make_abstract_sharding(const Value& abstract_mesh, PartitionSpec spec) {
  auto* am = dynamic_cast<AbstractMeshObj*>(abstract_mesh.as<OpaqueObj>());
  auto s = std::make_shared<ShardingObj>(am->mesh, std::move(spec));
  s->abstract_mesh = abstract_mesh;
  return Value::object(s);
}

Value current_abstract_mesh(InterpreterImpl& in) {
  // Inside a shard_map body its mesh's axes are Manual.
  if (auto* tc = dynamic_cast<TraceContext*>(&in.ops()))
    if (!tc->function().mesh_axes.empty() && tc->what() == "shard_map") {
      const Function& f = tc->function();
      Mesh m{f.mesh_axes, f.mesh_sizes, {}, {}};
      m.axis_types.assign(f.mesh_axes.size(), AxisType::Manual);
      return make_abstract_mesh_value(m, in.platform().name());
    }
  const Value* cur = in.context_mesh();
  const Mesh* m = cur ? value_to_mesh(*cur) : nullptr;
  return m ? make_abstract_mesh_value(*m, in.platform().name())
           : make_abstract_mesh_value(Mesh{}, "");
}

// ---- PartitionSpec / NamedSharding --------------------------------------------

namespace {
// PartitionSpec.UNCONSTRAINED: a dimension left to the compiler.
struct UnconstrainedObj : OpaqueObj {
  std::string type_name() const override { return "UnconstrainedSingleton"; }
  std::string repr() const override { return "UNCONSTRAINED"; }
};
} // namespace

namespace {
Value names_set(const std::vector<std::string>& names) {
  ValueList items;
  for (const std::string& n : names) items.push_back(make_str(n));
  return make_py_set(std::move(items), true);
}

// unreduced= / reduced=: a set or frozenset of axis names (JAX's TypeError
// otherwise); None among them is JAX's ValueError, raised by the caller.
std::vector<std::string> ur_arg(const Value& v, const char* what, bool& has_none) {
  const ValueList* items = py_set_items(v);
  if (!items)
    throw Error(ErrCode::Type, std::string(what) +
                                   " argument of PartitionSpec should of type `frozenset` or "
                                   "`set`. Got type " +
                                   str(v));
  std::vector<std::string> names;
  for (const Value& x : *items) {
    if (x.is_none()) {
      has_none = true;
      continue;
    }
    names.push_back(value_to_str(x, std::string("PartitionSpec ") + what + " axis"));
  }
  return names;
}

Value partitions_tuple(const PartitionSpec& s) { return make_tuple(SpecObj(s).partitions()); }
} // namespace

PartitionSpec make_partition_spec(const ValueList& partitions, const Value& unreduced_arg,
                                  const Value& reduced_arg) {
  PartitionSpec s;
  for (const Value& v : partitions) {
    std::vector<std::string> names; // empty: None (also for an empty tuple)
    if (v.is_obj(ObjKind::Opaque) && dynamic_cast<UnconstrainedObj*>(v.as<OpaqueObj>())) {
      s.unconstrained.push_back(s.entries.size());
    } else if (v.is_none()) {
    } else if (v.is_obj(ObjKind::Str)) {
      names.push_back(v.as<StrObj>()->value);
    } else if (const ValueList* items = sequence_items(v)) {
      for (const Value& x : *items) names.push_back(value_to_str(x, "PartitionSpec entry"));
    } else {
      throw Error(
          ErrCode::Type,
          "PartitionSpec entries must be None, a mesh axis name, or a tuple of names, not " +
              type_name(v));
    }
    s.entries.push_back(std::move(names));
  }
  // JAX's __new__ checks the types, then _check the contents, in this order.
  bool u_none = false, r_none = false;
  s.unreduced = ur_arg(unreduced_arg, "unreduced", u_none);
  s.reduced = ur_arg(reduced_arg, "reduced", r_none);
  if (s.unreduced.empty() && s.reduced.empty() && !u_none && !r_none) return s;
  if (u_none)
    throw Error(ErrCode::Value, "unreduced cannot contain None. All elements in unreduced should "
                                "refer to the mesh axes.");
  if (r_none)
    throw Error(ErrCode::Value,
                "reduced cannot contain None. All elements in reduced should refer to the mesh "
                "axes.");
  auto has = [](const std::vector<std::string>& xs, const std::string& x) {
    return std::find(xs.begin(), xs.end(), x) != xs.end();
  };
  for (const std::string& u : s.unreduced)
    if (has(s.reduced, u))
      throw Error(ErrCode::Value,
                  "`unreduced` and `reduced` argument to PartitionSpec cannot overlap. Got "
                  "unreduced: " +
                      repr(names_set(s.unreduced)) + " and reduced: " + repr(names_set(s.reduced)));
  for (const auto& entry : s.entries)
    for (const std::string& a : entry)
      for (bool red : {false, true})
        if (has(red ? s.reduced : s.unreduced, a))
          throw Error(
              ErrCode::Value,
              std::string("partitions cannot overlap with ") + (red ? "reduced" : "unreduced") +
                  " axes passed to PartitionSpec. Got partitions: " + repr(partitions_tuple(s)) +
                  " and " + (red ? "reduced" : "unreduced") +
                  " axes: " + repr(names_set(red ? s.reduced : s.unreduced)));
  return s;
}

ValueList SpecObj::partitions() const {
  ValueList out;
  for (size_t i = 0; i < spec.entries.size(); ++i) {
    const auto& entry = spec.entries[i];
    if (std::find(spec.unconstrained.begin(), spec.unconstrained.end(), i) !=
        spec.unconstrained.end()) {
      out.push_back(Value::object(std::make_shared<UnconstrainedObj>()));
    } else if (entry.empty()) {
      out.push_back(Value());
    } else if (entry.size() == 1) {
      out.push_back(make_str(entry[0]));
    } else {
      ValueList names;
      for (const std::string& a : entry) names.push_back(make_str(a));
      out.push_back(make_tuple(std::move(names)));
    }
  }
  return out;
}

// A PartitionSpec's tuple methods (count, index) are its entries' tuple's;
// unreduced, reduced, partitions and the methods JAX's transforms use.
bool SpecObj::get_attr(InterpreterImpl& in, const std::string& name, Value& out) {
  PartitionSpec self = spec;
  if (name == "count" || name == "index") {
    out = in.get_attr(make_tuple(partitions()), name, Span{});
    return true;
  }
  if (name == "unreduced") return out = names_set(spec.unreduced), true;
  if (name == "reduced") return out = names_set(spec.reduced), true;
  if (name == "partitions") return out = make_tuple(partitions()), true;
  if (name == "__len__") { // len() works whatever the sets (iteration may not)
    int64_t n = static_cast<int64_t>(spec.entries.size());
    out = make_builtin("__len__", [n](InterpreterImpl&, CallArgs&) { return Value::integer(n); });
    return true;
  }
  if (name == "update") {
    out = make_builtin("update", [self](InterpreterImpl&, CallArgs& a) {
      ArgReader r("update", a, {"partitions", "unreduced", "reduced"});
      ValueList parts = SpecObj(self).partitions();
      if (r.has(0) && !r[0].is_none()) {
        const ValueList* p = sequence_items(r[0]);
        if (!p) throw Error(ErrCode::Type, "update() partitions must be a sequence");
        parts = *p;
      }
      Value u = r.has(1) && !r[1].is_none() ? r[1] : names_set(self.unreduced);
      Value d = r.has(2) && !r[2].is_none() ? r[2] : names_set(self.reduced);
      return make_spec_value(make_partition_spec(parts, u, d));
    });
    return true;
  }
  if (name == "to_tangent_spec" || name == "to_ct_spec" || name == "to_lo") {
    out = make_builtin(name, [self, name](InterpreterImpl&, CallArgs& a) {
      ArgReader r(name, a, {});
      PartitionSpec s = self;
      if (name == "to_ct_spec") std::swap(s.unreduced, s.reduced);
      Value v = make_spec_value(std::move(s));
      return name == "to_lo" ? make_list({v}) : v;
    });
    return true;
  }
  if (name == "_normalized_spec_for_aval") {
    out = make_builtin(name, [self](InterpreterImpl&, CallArgs& a) {
      ArgReader r("_normalized_spec_for_aval", a, {"ndim"}, 1);
      PartitionSpec s = self;
      s.unconstrained.clear();
      if (int64_t n = r.get_int(0); static_cast<int64_t>(s.entries.size()) < n)
        s.entries.resize(static_cast<size_t>(n));
      return make_spec_value(std::move(s));
    });
    return true;
  }
  if (name == "_check_compatible_wrt_shape") {
    out = make_builtin(name, [self](InterpreterImpl&, CallArgs& a) {
      ArgReader r("_check_compatible_wrt_shape", a, {"shape"}, 1);
      Shape shape = value_to_shape(r[0], "_check_compatible_wrt_shape() shape");
      if (shape.size() < self.entries.size())
        throw Error(ErrCode::Value, "PartitionSpec " + self.repr() +
                                        " is only valid for values of rank at least " +
                                        std::to_string(self.entries.size()) +
                                        ", but was applied to a value of rank " +
                                        std::to_string(shape.size()) + "." +
                                        (shape.empty() ? " For scalars the PartitionSpec should "
                                                         "be P()"
                                                       : ""));
      return Value();
    });
    return true;
  }
  return false;
}

std::vector<std::string> SpecObj::attr_names() const {
  return {"count",  "index",           "unreduced",  "reduced", "partitions",
          "update", "to_tangent_spec", "to_ct_spec", "to_lo"};
}

bool SpecObj::items(ValueList& out) const {
  if (!spec.unreduced.empty() || !spec.reduced.empty())
    throw Error(ErrCode::Value, "Using *pspec is dangerous when PartitionSpec has non-empty "
                                "unreduced/reduced set. Please use *spec.partitions");
  ValueList p = partitions();
  out.insert(out.end(), p.begin(), p.end());
  return true;
}

bool SpecObj::get_item(InterpreterImpl& in, const Value& index, Value& out) {
  if (!spec.unreduced.empty() || !spec.reduced.empty())
    throw Error(ErrCode::Value, "Using pspec[...] is dangerous when PartitionSpec has non-empty "
                                "unreduced/reduced set. Please use spec.partitions[...]");
  out = in.get_item(make_tuple(partitions()), index, Span{}); // as a tuple's
  return true;
}

bool SpecObj::apply_operator(InterpreterImpl&, const std::string& op, const Value& other,
                             bool self_first, Value& out) {
  if (op != "add") return false;
  auto* o = other.is_obj(ObjKind::Opaque) ? dynamic_cast<SpecObj*>(other.as<OpaqueObj>()) : nullptr;
  if (o) { // P + P: the entries and both sets joined
    const SpecObj& a = self_first ? *this : *o;
    const SpecObj& b = self_first ? *o : *this;
    ValueList parts = a.partitions(), more = b.partitions();
    parts.insert(parts.end(), more.begin(), more.end());
    std::vector<std::string> u = a.spec.unreduced, r = a.spec.reduced;
    for (const auto& x : b.spec.unreduced)
      if (std::find(u.begin(), u.end(), x) == u.end()) u.push_back(x);
    for (const auto& x : b.spec.reduced)
      if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
    out = make_spec_value(make_partition_spec(parts, names_set(u), names_set(r)));
    return true;
  }
  if (!other.is_obj(ObjKind::Tuple))
    throw Error(ErrCode::Unsupported, "", Span{},
                "JAX's PartitionSpec.__add__ raises NotImplementedError: add a PartitionSpec "
                "or a tuple");
  for (bool red : {false, true})
    if (!(red ? spec.reduced : spec.unreduced).empty())
      throw Error(ErrCode::Type, "other " + pxl::repr(other) +
                                     " cannot be of instance `tuple` when self " + spec.repr() +
                                     " has " + (red ? "reduced" : "unreduced") + " in `" +
                                     (self_first ? "__add__" : "__radd__") + "` of PartitionSpec.");
  ValueList parts = partitions();
  const ValueList& t = *sequence_items(other);
  parts.insert(self_first ? parts.end() : parts.begin(), t.begin(), t.end());
  out = make_spec_value(make_partition_spec(parts, names_set({}), names_set({})));
  return true;
}

bool SpecObj::equals(const OpaqueObj& o) const {
  auto* s = dynamic_cast<const SpecObj*>(&o);
  return s && s->spec.entries == spec.entries && s->spec.unconstrained == spec.unconstrained &&
         s->spec.same_ur(spec); // as in JAX, P(x) != P(x, None)
}

std::string ShardingObj::repr() const {
  if (is_abstract())
    return "NamedSharding(mesh=" + pxl::repr(abstract_mesh) + ", spec=" + spec.repr() + ")";
  if (gspmd_replicated) return "GSPMDSharding({replicated}, memory_kind=" + memory_kind + ")";
  if (single_device)
    return "SingleDeviceSharding(device=" + pxl::repr(device_value(platform, mesh.device_ids[0])) +
           ", memory_kind=" + memory_kind + ")";
  return "NamedSharding(mesh=" + mesh.jax_str() + ", spec=" + spec.repr() +
         ", memory_kind=" + memory_kind + ")";
}

// JAX compares NamedShardings by mesh, spec (as written: P('x') and P('x', None)
// differ) and memory kind; is_equivalent_to compares the layouts.
bool ShardingObj::equals(const OpaqueObj& o) const {
  auto* s = dynamic_cast<const ShardingObj*>(&o);
  if (s && (s->is_abstract() || is_abstract()))
    return s->is_abstract() && is_abstract() && values_equal(s->abstract_mesh, abstract_mesh) &&
           s->spec == spec;
  return s && s->single_device == single_device && s->gspmd_replicated == gspmd_replicated &&
         s->mesh.same_mesh(mesh) && s->spec.entries == spec.entries &&
         s->spec.unconstrained == spec.unconstrained && s->spec.same_ur(spec) &&
         s->memory_kind == memory_kind;
}

std::string checked_memory_kind(const Value& v) {
  std::string kind = value_to_str(v, "memory_kind");
  if (kind != "device" && kind != "pinned_host" && kind != "unpinned_host")
    throw Error(
        ErrCode::Value,
        "Could not find memory addressable by device cpu. Device cpu can address the following "
        "memory kinds: device, pinned_host, unpinned_host. Got memory kind: " +
            kind);
  return kind;
}

Value make_single_device_sharding(const std::string& platform, int device) {
  auto s = std::make_shared<ShardingObj>(Mesh{{}, {}, {device}}, PartitionSpec{});
  s->single_device = true;
  s->platform = platform;
  return Value::object(s);
}

const Mesh* value_to_mesh(const Value& v) {
  if (!v.is_obj(ObjKind::Opaque)) return nullptr;
  if (auto* e = dynamic_cast<MeshContextObj*>(v.as<OpaqueObj>())) return value_to_mesh(e->concrete);
  auto* m = dynamic_cast<MeshObj*>(v.as<OpaqueObj>());
  return m ? &m->mesh : nullptr;
}

PartitionSpec value_to_spec(const Value& v, const std::string& what) {
  if (v.is_none()) return {};
  if (v.is_obj(ObjKind::Opaque))
    if (auto* s = dynamic_cast<SpecObj*>(v.as<OpaqueObj>())) return s->spec;
  throw Error(ErrCode::Type,
              what + " must be a PartitionSpec (P(...)) or None, not " + type_name(v));
}

Value make_mesh_value(Mesh m) { return Value::object(std::make_shared<MeshObj>(std::move(m))); }
Value make_spec_value(PartitionSpec s) {
  return Value::object(std::make_shared<SpecObj>(std::move(s)));
}

Value spec_over_current_mesh(InterpreterImpl& in, const Value& target, const std::string& fn) {
  if (!target.is_obj(ObjKind::Opaque)) return target;
  auto* spec = dynamic_cast<SpecObj*>(target.as<OpaqueObj>());
  auto* typed = dynamic_cast<ShardingObj*>(target.as<OpaqueObj>());
  if (!spec && !(typed && typed->is_abstract())) return target;
  const Value* current = in.context_mesh();
  const Mesh* mesh = current ? value_to_mesh(*current) : nullptr;
  if (!mesh && spec && fn != "device_put")
    throw Error(ErrCode::Value, spec_needs_mesh_message(spec->spec));
  if (!mesh)
    throw Error(ErrCode::Value,
                spec
                    ? "Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed to " + fn
                    : fn + "() got a NamedSharding over an AbstractMesh (no devices): set a mesh "
                           "with the same axes via `jax.set_mesh`, or pass a Mesh's NamedSharding");
  // A type's sharding names the current mesh's axes: placed on its devices.
  if (typed &&
      (typed->mesh.axis_names != mesh->axis_names || typed->mesh.axis_sizes != mesh->axis_sizes))
    throw Error(ErrCode::Value, fn + "(): the sharding's " + pxl::repr(typed->abstract_mesh) +
                                    " does not match the current mesh " + mesh->jax_str());
  // JAX makes a NamedSharding of it, whose checks name unknown unreduced axes.
  if (spec && (!spec->spec.unreduced.empty() || !spec->spec.reduced.empty()))
    check_spec_names(*mesh, spec->spec, "NamedSharding spec");
  return Value::object(std::make_shared<ShardingObj>(*mesh, spec ? spec->spec : typed->spec));
}

// ---- module functions -------------------------------------------------------------

namespace {
// An array device_put placed on purpose (JAX's committed arrays).
Value committed(Value array) {
  array.as<ArrayObj>()->committed = true;
  return array;
}

// JAX's error when an array typed with Explicit axes does not divide: a
// dimension split over an Explicit axis is checked as the array's type is
// made, with that text (Auto axes give the IndivisibleError of check_spec).
[[noreturn]] void explicit_indivisible_error(InterpreterImpl& in, const ShardingObj& s,
                                             const Shape& shape, size_t d, int64_t parts) {
  // (the dimension's axes as a Python tuple)
  const auto& names = s.spec.entries[d];
  std::string entries;
  for (size_t k = 0; k < names.size(); ++k) entries += (k ? ", '" : "'") + names[k] + "'";
  if (names.size() == 1) entries += ",";
  PartitionSpec padded = s.spec; // JAX prints the spec padded with None to the rank
  if (padded.entries.size() < shape.size()) padded.entries.resize(shape.size());
  throw Error(ErrCode::Value,
              "Sharding spec (" + entries + ") implies that array axis " + std::to_string(d) +
                  " is partitioned " + std::to_string(parts) +
                  " times, but does not evenly divide the dimension size " +
                  std::to_string(shape[d]) + ". Got shape: " + shape_str(shape) +
                  " and sharding NamedSharding(mesh=" +
                  pxl::repr(make_abstract_mesh_value(s.mesh, in.platform().name())) +
                  ", spec=" + padded.repr() + ")");
}

void explicit_indivisible(InterpreterImpl& in, const ShardingObj& s, const Shape& shape) {
  std::vector<int64_t> parts = tiling_factors(s.mesh, s.spec, shape.size());
  for (size_t d = 0; d < shape.size() && d < s.spec.entries.size(); ++d) {
    if (shape[d] % parts[d] == 0) continue;
    for (const std::string& a : s.spec.entries[d]) {
      int ax = s.mesh.axis_of(a);
      if (ax >= 0 && s.mesh.axis_type(ax) == AxisType::Explicit)
        explicit_indivisible_error(in, s, shape, d, parts[d]);
    }
    return;
  }
}
} // namespace

// device_put of one array to a Device, a NamedSharding or (None) the default device.
Value device_put_leaf(InterpreterImpl& in, const Value& leaf, const Value& target_arg) {
  // In a shard_map body called eagerly, JAX refuses a device; under jit the
  // device_put is ignored.
  if (auto* tc = dynamic_cast<TraceContext*>(&in.ops());
      tc && tc->what() == "shard_map" && !dynamic_cast<TraceContext*>(&tc->outer()) &&
      target_arg.is_obj(ObjKind::Device)) {
    const auto* d = target_arg.as<DeviceObj>();
    throw Error(ErrCode::Value, "device_put with explicit device not allowed within "
                                "shard_map-decorated functions, but got device " +
                                    d->platform + ":" + std::to_string(d->id));
  }
  Tensor t = in.to_tensor(leaf, Span{});
  // Inside traced code (jit, a shard_map body) device_put places nothing: the
  // value goes through, as JAX's device_put under a trace.
  if (t->trace) return make_array(t);
  Value target = target_arg;
  // A device's memory (d.memory("pinned_host")) is no placement JAX's
  // device_put takes on CPU: its ValueError.
  if (type_name(target) == "Memory")
    throw Error(ErrCode::Value,
                "`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, `jax.Device`, "
                "`Format`, `jax.memory.Space` or a pytree of these values. Received invalid "
                "value: " +
                    str(target));
  target = spec_over_current_mesh(in, target, "device_put");
  if (target.is_obj(ObjKind::Opaque)) {
    auto* s = dynamic_cast<ShardingObj*>(target.as<OpaqueObj>());
    if (!s)
      throw Error(ErrCode::Type,
                  "device_put() expects a Device or a NamedSharding, not " + type_name(target));
    // A SingleDeviceSharding: onto its device.
    if (s->single_device && !s->mesh.device_ids.empty()) {
      const Array& x = in.ops().concrete(t);
      return committed(make_array(make_tensor(x.on_device(s->mesh.device_ids[0]))));
    }
    // Already laid out so: nothing moves (JAX returns the same buffers).
    if (t->sharded && t->sharded->mesh.same_mesh(s->mesh) && t->sharded->spec == s->spec)
      return committed(make_array(t));
    const Array& x = in.ops().concrete(t);
    if (!s->single_device && s->spec.entries.size() > x.shape().size()) { // JAX's text
      std::string annot = s->repr(), rank = std::to_string(s->spec.entries.size());
      throw Error(ErrCode::Value,
                  "One of device_put args is incompatible with its sharding annotation " + annot +
                      ": Sharding " + annot + " is only valid for values of rank at least " + rank +
                      ", but was applied to a value of rank " + std::to_string(x.shape().size()) +
                      (x.shape().empty() ? ". For scalars the PartitionSpec should be P()" : "."));
    }
    std::string problem = check_spec(s->mesh, s->spec, x.shape(), "device_put(): ");
    if (!problem.empty()) {
      explicit_indivisible(in, *s, x.shape());
      throw Error(ErrCode::Shape, problem);
    }
    return make_array(make_sharded_tensor(shard_array(x, s->mesh, s->spec, in.pull_log())));
  }
  // device_put(x) leaves an array where it is (JAX: device=None keeps its
  // placement, a sharded one's too).
  if (target.is_none() && leaf.is_obj(ObjKind::Array)) return leaf;
  const Array& x = in.ops().concrete(t);
  if (target.is_none()) return make_array(in.ops().constant(x));
  if (target.is_obj(ObjKind::Device))
    return committed(make_array(make_tensor(x.on_device(target.as<DeviceObj>()->id))));
  throw Error(ErrCode::Type,
              "device_put() expects a Device or a NamedSharding, not " + type_name(target));
}

void add_sharding_functions(InterpreterImpl& in, Value& sharding, Value& jax) {
  (void)in;
  auto& sv = sharding.as<ModuleObj>()->env->vars;
  auto& jv = jax.as<ModuleObj>()->env->vars;
  Value mesh_fn = make_builtin("Mesh", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("Mesh", a, {"devices", "axis_names", "axis_types"}, 2);
    Shape shape;
    std::vector<int> ids;
    collect_devices(r[0], 0, shape, ids);
    Mesh m = build_mesh(in, shape, ids, axis_names_arg(r[1], "Mesh"), "Mesh");
    m.axis_types = axis_types_arg(r.has(2) ? r[2] : Value(), m.axis_names, AxisType::Auto, "Mesh");
    return make_mesh_value(std::move(m));
  });
  Value make_mesh_fn = make_builtin("make_mesh", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("make_mesh", a, {"axis_shapes", "axis_names", "devices", "axis_types"}, 2);
    Shape shape = value_to_shape(r[0], "make_mesh() axis_shapes");
    std::vector<int> ids;
    int64_t n = shape_size(shape);
    if (r.has(2) && !r[2].is_none()) {
      Shape s;
      collect_devices(r[2], 0, s, ids);
    } else {
      if (n > in.platform().device_count())
        throw Error(ErrCode::Value,
                    "Number of devices " + std::to_string(in.platform().device_count()) +
                        " must be >= the product of mesh_shape " + shape_str(shape),
                    Span{}, "run with --devices " + std::to_string(n));
      for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int>(i));
    }
    if (static_cast<int64_t>(ids.size()) < n)
      throw Error(ErrCode::Value, "Number of devices " + std::to_string(ids.size()) +
                                      " must be >= the product of mesh_shape " + shape_str(shape));
    ids.resize(static_cast<size_t>(n)); // the first ones, as JAX takes them
    Mesh m = build_mesh(in, shape, ids, axis_names_arg(r[1], "make_mesh"), "make_mesh");
    // JAX 0.10's make_mesh makes Explicit axes by default; pxl records the type
    // (printing, equality) and propagates shardings as for Auto axes.
    m.axis_types =
        axis_types_arg(r.has(3) ? r[3] : Value(), m.axis_names, AxisType::Explicit, "make_mesh");
    return make_mesh_value(std::move(m));
  });
  Value unconstrained = Value::object(std::make_shared<UnconstrainedObj>());
  Value p_fn = make_builtin("PartitionSpec", [](InterpreterImpl&, CallArgs& a) {
    Value unreduced = make_py_set({}, true), reduced = unreduced;
    for (const auto& [k, v] : a.kw) {
      if (k == "unreduced")
        unreduced = v;
      else if (k == "reduced")
        reduced = v;
      else
        throw Error(ErrCode::Type, "P.__new__() got an unexpected keyword argument '" + k + "'");
    }
    return make_spec_value(make_partition_spec(a.pos, unreduced, reduced));
  });
  p_fn.as<BuiltinObj>()->attrs.emplace_back("UNCONSTRAINED", unconstrained);
  Value named_fn = make_builtin("NamedSharding", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("NamedSharding", a, {"mesh", "spec", "memory_kind"}, 2);
    auto* am = r[0].is_obj(ObjKind::Opaque) ? dynamic_cast<AbstractMeshObj*>(r[0].as<OpaqueObj>())
                                            : nullptr;
    const Mesh* m = am ? &am->mesh : value_to_mesh(r[0]);
    if (!m)
      throw Error(ErrCode::Type, "NamedSharding() mesh must be a Mesh, not " + type_name(r[0]));
    PartitionSpec s = value_to_spec(r[1], "NamedSharding() spec");
    check_spec_names(*m, s, "NamedSharding spec");
    if (am) return make_abstract_sharding(r[0], s);
    auto out = std::make_shared<ShardingObj>(*m, s);
    if (r.has(2) && !r[2].is_none()) out->memory_kind = checked_memory_kind(r[2]);
    return Value::object(out);
  });
  Value put_fn = make_builtin("device_put", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("device_put", a, {"x", "device", "src", "donate", "may_alias"}, 1);
    // x is a pytree; device a Device, a NamedSharding, None, or a pytree prefix of them.
    Value where = r.has(1) ? r[1] : Value();
    if (where.is_obj(ObjKind::Str) || where.is_number())
      throw Error(
          ErrCode::Value,
          "`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, `jax.Device`, "
          "`Format`, `jax.memory.Space` or a pytree of these values. Received invalid value: " +
              str(where));
    // donate= (a bool, or a pytree prefix of bools): a donated array whose
    // result is a new array is deleted, as JAX's donated buffer is.
    std::vector<std::pair<Value, bool>> donated; // each array leaf, and whether donated
    if (r.has(3) && !r[3].is_none())
      map_tree_with_prefix(
          in, r[0], r[3], [](const Value& v) { return v.is_none() || v.is_bool(); },
          "device_put() donate",
          [&](const Value& leaf, const Value& flag) {
            donated.emplace_back(leaf, flag.is_bool() && flag.as_int() != 0);
            return leaf;
          });
    Value out = map_tree_with_prefix(
        in, r[0], where,
        [](const Value& v) {
          return v.is_none() || v.is_obj(ObjKind::Device) || v.is_obj(ObjKind::Opaque);
        },
        "device_put() device",
        [&](const Value& leaf, const Value& target) { return device_put_leaf(in, leaf, target); });
    if (!donated.empty()) {
      ValueList outs;
      tree_flatten(in, out, outs);
      for (size_t i = 0; i < outs.size() && i < donated.size(); ++i) {
        const auto& [leaf, flag] = donated[i];
        if (flag && leaf.is_obj(ObjKind::Array) && outs[i].is_obj(ObjKind::Array) &&
            outs[i].as<ArrayObj>() != leaf.as<ArrayObj>())
          leaf.as<ArrayObj>()->deleted = true;
      }
    }
    return out;
  });
  // visualize_array_sharding(arr, **kwargs) and visualize_sharding(shape,
  // sharding, *, use_color, scale, min_width, max_width, color_map): the picture
  // JAX draws without colour (as it does where matplotlib is missing), so
  // use_color and color_map change nothing.
  auto picture_options = [](ArgReader& r, size_t first) {
    PictureOptions o;
    o.scale = r.get_float(first + 1, 1.0);
    if (std::isnan(o.scale)) throw Error(ErrCode::Value, "cannot convert float NaN to integer");
    // JAX draws int(10 * scale) lines a row; pxl refuses a picture past a million.
    if (!(std::abs(o.scale) <= 1e5))
      throw Error(ErrCode::Value, "visualize_sharding(): scale=" + pxl::repr(r[first + 1]) +
                                      " would draw more than a million lines");
    // Widths beyond any table's (a console of 10**12 columns) draw the same.
    auto width = [&](size_t i, int64_t dflt) {
      return static_cast<int>(std::clamp<int64_t>(r.get_int(i, dflt), -(1 << 20), 1 << 20));
    };
    o.min_width = width(first + 2, 9);
    o.max_width = width(first + 3, 80);
    return o;
  };
  Value vis_fn =
      make_builtin("visualize_array_sharding", [picture_options](InterpreterImpl& in, CallArgs& a) {
        ArgReader r("visualize_array_sharding", a,
                    {"arr", "use_color", "scale", "min_width", "max_width", "color_map"}, 1);
        if (!r[0].is_obj(ObjKind::Array))
          throw Error(ErrCode::Type, "visualize_array_sharding() expects an array");
        const Tensor& t = r[0].as<ArrayObj>()->tensor;
        PictureOptions opts = picture_options(r, 1);
        if (&in.ops() != &in.root_ops()) {
          // A traced value: drawn as the program is compiled, from the layout it gets.
          Value s = compiled_sharding(in, r[0]);
          auto* so = static_cast<ShardingObj*>(s.as<OpaqueObj>());
          auto d = std::make_shared<ShardedData>();
          d->mesh = so->single_device ? Mesh{{}, {}, {so->mesh.device_ids.at(0)}} : so->mesh;
          d->spec = so->spec;
          d->global = t->aval;
          at_compile(in, [&in, d, opts] {
            in.out() << sharding_picture(*d, in.platform().picture_label(), opts);
          });
        } else if (t->sharded) {
          in.out() << sharding_picture(*t->sharded, in.platform().picture_label(), opts);
        } else {
          auto d = std::make_shared<ShardedData>();
          d->mesh = Mesh{{}, {}, {t->concrete ? t->concrete->device() : 0}};
          d->global = t->aval;
          in.out() << sharding_picture(*d, in.platform().picture_label(), opts);
        }
        return Value();
      });
  Value vis_sharding_fn =
      make_builtin("visualize_sharding", [picture_options](InterpreterImpl& in, CallArgs& a) {
        ArgReader r(
            "visualize_sharding", a,
            {"shape", "sharding", "use_color", "scale", "min_width", "max_width", "color_map"}, 2);
        auto* s = r[1].is_obj(ObjKind::Opaque) ? dynamic_cast<ShardingObj*>(r[1].as<OpaqueObj>())
                                               : nullptr;
        if (!s || s->is_abstract())
          throw Error(ErrCode::Type, "visualize_sharding() expects a NamedSharding or "
                                     "SingleDeviceSharding over devices, not " +
                                         type_name(r[1]));
        ShardedData d;
        d.mesh = s->mesh;
        d.spec = s->spec;
        d.global = AVal{DType::Float32, value_to_shape(r[0], "visualize_sharding() shape"), false};
        std::string problem = check_spec(d.mesh, d.spec, d.global.shape, "visualize_sharding(): ");
        if (!problem.empty()) throw Error(ErrCode::Value, problem);
        in.out() << sharding_picture(d, in.platform().picture_label(), picture_options(r, 2));
        return Value();
      });
  sv["Mesh"] = mesh_fn;
  ModuleBuilder axis_type("jax.sharding.AxisType");
  for (AxisType t : {AxisType::Auto, AxisType::Explicit, AxisType::Manual})
    axis_type.val(axis_type_name(t), axis_type_value(t));
  sv["AxisType"] = axis_type.value();
  sv["PartitionSpec"] = p_fn;
  sv["P"] = p_fn;
  sv["NamedSharding"] = named_fn;
  jv["make_mesh"] = make_mesh_fn;
  Value set_mesh_fn = make_builtin("set_mesh", make_set_mesh);
  jv["set_mesh"] = set_mesh_fn;
  sv["use_mesh"] = set_mesh_fn;
  jv["P"] = p_fn; // jax.P and jax.NamedSharding, as in recent JAX
  jv["NamedSharding"] = named_fn;
  jv["device_put"] = put_fn;
  // The mesh `with mesh:` made current, or None: what jax.experimental.pjit
  // resolves its PartitionSpecs against and runs calls over, as JAX's reads
  // the resource environment (experimental_pjit.pxl).
  sv["_context_mesh"] = make_builtin("_context_mesh", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_context_mesh", a, {});
    const MeshContextObj* e = context_entry(in);
    return e ? e->physical : Value();
  });
  add_array_functions(jax);
  sv["AbstractMesh"] = make_builtin("AbstractMesh", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("AbstractMesh", a, {"axis_sizes", "axis_names", "axis_types"}, 2);
    Shape sizes = value_to_shape(r[0], "AbstractMesh() axis_sizes");
    std::vector<std::string> names = axis_names_arg(r[1], "AbstractMesh");
    if (names.size() != sizes.size())
      throw Error(ErrCode::Value, "AbstractMesh(): " + std::to_string(sizes.size()) +
                                      " axis sizes but " + std::to_string(names.size()) +
                                      " axis names");
    Mesh m{names, std::vector<int64_t>(sizes.begin(), sizes.end()), {}, {}};
    m.axis_types = axis_types_arg(r.has(2) ? r[2] : Value(), names, AxisType::Auto, "AbstractMesh");
    return make_abstract_mesh_value(m, "");
  });
  sv["use_abstract_mesh"] = make_builtin("use_abstract_mesh", make_use_abstract_mesh);
  sv["get_abstract_mesh"] = make_builtin("get_abstract_mesh", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("get_abstract_mesh", a, {}, 0);
    return current_abstract_mesh(in);
  });
  // jax.sharding.get_mesh(): the concrete mesh jax.set_mesh made current, else an empty one;
  // outside traces only, as in JAX.
  sv["get_mesh"] = make_builtin("get_mesh", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("get_mesh", a, {}, 0);
    if (dynamic_cast<TraceContext*>(&in.ops()))
      throw Error(ErrCode::Value, "`get_mesh` can only be used outside of `jax.jit`. Maybe you "
                                  "want `jax.sharding.get_abstract_mesh()`?");
    const Value* cur = in.context_mesh();
    return cur && value_to_mesh(*cur) ? *cur : make_mesh_value(Mesh{});
  });
  // jax.sharding.Sharding: the base class of NamedSharding and SingleDeviceSharding.
  sv["Sharding"] = make_type_at("Sharding", "jaxlib._jax.Sharding");
  sv["SingleDeviceSharding"] = make_builtin("SingleDeviceSharding", [](InterpreterImpl&,
                                                                       CallArgs& a) {
    ArgReader r("SingleDeviceSharding", a, {"device", "memory_kind"}, 1);
    if (!r[0].is_obj(ObjKind::Device))
      throw Error(ErrCode::Type, "SingleDeviceSharding() expects a Device, not " + type_name(r[0]));
    Value out =
        make_single_device_sharding(r[0].as<DeviceObj>()->platform, r[0].as<DeviceObj>()->id);
    if (r.has(1) && !r[1].is_none())
      dynamic_cast<ShardingObj*>(out.as<OpaqueObj>())->memory_kind = checked_memory_kind(r[1]);
    return out;
  });
  // jax.experimental.mesh_utils.create_device_mesh(mesh_shape, devices=None):
  // the devices (all of them by default) in order, in the mesh's shape.
  auto device_mesh = [](InterpreterImpl& in, const Value& shape_arg, const Value& devices) {
    Shape shape = value_to_shape(shape_arg, "create_device_mesh() mesh_shape");
    std::vector<int> ids;
    if (!devices.is_none()) {
      Shape s;
      collect_devices(devices, 0, s, ids);
    } else { // all of them, as JAX
      for (int i = 0; i < in.platform().device_count(); ++i) ids.push_back(i);
    }
    if (static_cast<int64_t>(ids.size()) != shape_size(shape))
      throw Error(ErrCode::Value, "Number of devices " + std::to_string(ids.size()) +
                                      " must equal the product of mesh_shape " + shape_str(shape));
    return std::make_pair(shape, ids);
  };
  ModuleBuilder mesh_utils("jax.experimental.mesh_utils");
  mesh_utils.fn("create_device_mesh", [device_mesh](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("create_device_mesh", a,
                {"mesh_shape", "devices", "contiguous_submeshes", "allow_split_physical_axes"}, 1);
    auto [shape, ids] = device_mesh(in, r[0], r.has(1) ? r[1] : Value());
    return Value::object(std::make_shared<DeviceGridObj>(shape, ids, in.platform().name()));
  });
  // create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape, devices=None, *,
  // process_is_granule=False, ...): one mesh per granule (slice or process),
  // the granules laid out by dcn_mesh_shape. CPU devices have no slice_index
  // and one process is one granule, so dcn_mesh_shape must be all ones (JAX's
  // errors otherwise); np.block's result gains leading 1s up to its rank.
  mesh_utils.fn("create_hybrid_device_mesh", [device_mesh](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("create_hybrid_device_mesh", a,
                {"mesh_shape", "dcn_mesh_shape", "devices", "process_is_granule",
                 "should_sort_granules_by_key", "allow_split_physical_axes"},
                2);
    Value devices = r.has(2) ? r[2] : Value();
    int first = 0;
    if (!devices.is_none()) {
      Shape s;
      std::vector<int> ids;
      collect_devices(devices, 0, s, ids);
      if (!ids.empty()) first = ids[0];
    }
    if (!(r.has(3) && in.truthy(r[3], Span{})))
      throw Error(ErrCode::Value, "Device " + str(device_value(in.platform().name(), first)) +
                                      " does not have attribute slice_index. See "
                                      "`process_is_granule` option.");
    Shape dcn = value_to_shape(r[1], "create_hybrid_device_mesh() dcn_mesh_shape");
    if (shape_size(dcn) != 1)
      throw Error(ErrCode::Value,
                  "Number of slices 1 must equal the product of dcn_mesh_shape " + str(r[1]));
    auto [shape, ids] = device_mesh(in, r[0], devices);
    while (shape.size() < dcn.size()) shape.insert(shape.begin(), 1);
    return Value::object(std::make_shared<DeviceGridObj>(shape, ids, in.platform().name()));
  });
  in.register_module("jax.experimental.mesh_utils", mesh_utils.value());
  ModuleBuilder debug("jax.debug");
  debug.val("visualize_array_sharding", vis_fn);
  debug.val("visualize_sharding", vis_sharding_fn);
  add_inspect_array_sharding(debug);
  add_debug_print(in, debug);
  add_host_callback(debug);
  jv["debug"] = debug.value();
  in.register_module("jax.debug", debug.value());
  for (auto [name, v] : {std::pair<const char*, Value>{"Mesh", mesh_fn},
                         {"P", p_fn},
                         {"PartitionSpec", p_fn},
                         {"NamedSharding", named_fn},
                         {"make_mesh", make_mesh_fn},
                         {"device_put", put_fn},
                         {"visualize_sharding", vis_fn}})
    in.define_builtin(name, v);
}

} // namespace pxl
