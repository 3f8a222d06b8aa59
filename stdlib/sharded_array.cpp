// What jax.Array and its shardings tell about placement: x.sharding,
// x.addressable_shards (Shard objects), x.aval / jax.typeof (ShapedArray),
// sharding.shard_shape / devices_indices_map / device_set, and building arrays
// shard by shard (jax.make_array_from_callback, make_array_from_single_device_arrays).
// Printing follows JAX 0.10.
#include <algorithm>
#include <set>

#include "lang/args.hpp"
#include "lang/bigint.hpp"
#include "lang/py_set.hpp"
#include "lang/tracer.hpp"
#include "runtime/format.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/mutable_ref.hpp"
#include "stdlib/shape_dtype_struct.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/sharding_rules.hpp"

namespace pxl {

namespace {

// How many blocks each of the first `ndim` dimensions is split into.
std::vector<int64_t> split_factors(const Mesh& mesh, const PartitionSpec& spec, size_t ndim) {
  std::vector<int64_t> f(ndim, 1);
  for (size_t d = 0; d < ndim && d < spec.entries.size(); ++d)
    for (const auto& axis : spec.entries[d]) f[d] *= mesh.axis_size(axis);
  return f;
}

bool replicated(const Mesh& mesh, const PartitionSpec& spec) {
  if (mesh.size() > 1 && !spec.unreduced.empty()) return false; // partial sums differ
  for (const auto& axis : spec.axes())
    if (mesh.axis_size(axis) > 1) return false;
  return true;
}

Value full_slice() { return Value::object(std::make_shared<SliceObj>(Value(), Value(), Value())); }

// JAX's index of a block: slice(start, stop, None) for a split dimension,
// slice(None, None, None) for a whole one.
Value block_index(const ShardBlock& b, const std::vector<int64_t>& factors) {
  ValueList parts;
  for (size_t d = 0; d < b.shape.size(); ++d)
    parts.push_back(factors[d] == 1 ? full_slice()
                                    : Value::object(std::make_shared<SliceObj>(
                                          Value::integer(b.start[d]),
                                          Value::integer(b.start[d] + b.shape[d]), Value())));
  return make_tuple(std::move(parts));
}

// Every device's index into an array of `shape` laid out by `s`, in mesh order.
std::vector<Value> device_indices(const ShardingObj& s, const Shape& shape) {
  std::vector<int64_t> factors = split_factors(s.mesh, s.spec, shape.size());
  std::vector<Value> out;
  for (int64_t pos = 0; pos < s.mesh.size(); ++pos)
    out.push_back(block_index(block_of(s.mesh, s.spec, shape, pos), factors));
  return out;
}

// Which copy of its block device `pos` holds (0 for the first device holding it).
int64_t replica_id(const Mesh& mesh, const PartitionSpec& spec, const Shape& shape, int64_t pos) {
  std::vector<int64_t> start = block_of(mesh, spec, shape, pos).start;
  int64_t id = 0;
  for (int64_t q = 0; q < pos; ++q)
    if (block_of(mesh, spec, shape, q).start == start) ++id;
  return id;
}

struct ShardObj : OpaqueObj {
  int device = 0;
  std::string platform; // the device's
  Value index;
  int64_t replica = 0;
  Value data;
  std::string type_name() const override { return "Shard"; }
  std::string repr() const override { // the data prints as str(array), as in JAX
    return "Shard(device=" + pxl::repr(device_value(platform, device)) +
           ", index=" + pxl::repr(index) + ", replica_id=" + std::to_string(replica) +
           ", data=" + pxl::str(data) + ")";
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "device") return out = device_value(platform, device), true;
    if (name == "index") return out = index, true;
    if (name == "replica_id") return out = Value::integer(replica), true;
    if (name == "data") return out = data, true;
    return false;
  }
  std::vector<std::string> attr_names() const override {
    return {"device", "index", "replica_id", "data"};
  }
};

// A set of devices (sharding.device_set, x.devices()): pxl has no sets, so this
// prints as one, in device id order, and supports len, iteration and `in`.
struct DeviceSetObj : OpaqueObj {
  DeviceSetObj(std::string p, std::vector<int> i) : platform(std::move(p)), ids(std::move(i)) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  std::string platform;
  std::vector<int> ids;
  std::string type_name() const override { return "set"; }
  std::string repr() const override {
    if (ids.empty()) return "set()";
    std::string s = "{";
    for (size_t i = 0; i < ids.size(); ++i)
      s += (i ? ", " : "") + pxl::repr(device_value(platform, ids[i]));
    return s + "}";
  }
  bool items(ValueList& out) const override {
    for (int id : ids) out.push_back(device_value(platform, id));
    return true;
  }
  bool equals(const OpaqueObj& o) const override {
    auto* s = dynamic_cast<const DeviceSetObj*>(&o);
    return s && s->ids == ids;
  }
  // x.devices() == {device}: equal to a Python set of the same devices.
  bool apply_operator(InterpreterImpl&, const std::string& op, const Value& other, bool,
                      Value& out) override {
    const ValueList* o = py_set_items(other);
    if (!o || (op != "eq" && op != "ne")) return false;
    ValueList mine;
    items(mine);
    bool eq =
        o->size() == mine.size() && std::all_of(mine.begin(), mine.end(), [&](const Value& v) {
          return std::any_of(o->begin(), o->end(),
                             [&](const Value& x) { return values_equal(x, v); });
        });
    out = Value::boolean(op == "eq" ? eq : !eq);
    return true;
  }
};

// aval.mat: JAX's ManualAxisType, the sets of manual axes a value varies
// over, is unreduced over (partial sums) and is reduced over.
struct ManualAxisTypeObj : OpaqueObj {
  std::vector<std::string> varying;
  std::vector<std::string> unreduced; // JAX's mat.unreduced (a value of partial sums)
  std::vector<std::string> reduced;   // JAX's mat.reduced
  Value set_of(const std::vector<std::string>& names) const {
    ValueList items;
    for (const std::string& n : names) items.push_back(make_str(n));
    return make_py_set(std::move(items), true);
  }
  std::string type_name() const override { return "ManualAxisType"; }
  std::string repr() const override {
    return "ManualAxisType(varying=" + pxl::repr(set_of(varying)) +
           ", unreduced=" + pxl::repr(set_of(unreduced)) +
           ", reduced=" + pxl::repr(set_of(reduced)) + ")";
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "varying") return out = set_of(varying), true;
    if (name == "unreduced") return out = set_of(unreduced), true;
    if (name == "reduced") return out = set_of(reduced), true;
    if (name == "invarying") {
      // invarying(mesh): the mesh's Manual axes the value does not vary over.
      std::vector<std::string> mine = varying;
      out = make_builtin("invarying", [mine, this_set = *this](InterpreterImpl& in, CallArgs& a) {
        if (a.pos.size() != 1 || !a.kw.empty())
          throw Error(ErrCode::Arguments, "invarying() takes exactly one argument (the mesh)");
        std::vector<std::string> names;
        Value axes = in.get_attr(a.pos[0], "manual_axes", Span{});
        if (const ValueList* manual = sequence_items(axes))
          for (const Value& n : *manual) {
            const std::string& s = value_to_str(n, "mesh axis name");
            if (std::find(mine.begin(), mine.end(), s) == mine.end()) names.push_back(s);
          }
        return this_set.set_of(names);
      });
      return true;
    }
    return false;
  }
  std::vector<std::string> attr_names() const override {
    return {"varying", "unreduced", "reduced", "invarying"};
  }
  bool equals(const OpaqueObj& o) const override {
    auto* m = dynamic_cast<const ManualAxisTypeObj*>(&o);
    return m && m->varying == varying && m->unreduced == unreduced && m->reduced == reduced;
  }
};

// jax.typeof(x) / x.aval: str float32[4,8] (~ marks a weak type; a dimension
// split over Explicit mesh axes shows them: float32[4@x,8@(y,z)]), repr
// ShapedArray(float32[4,8], weak_type=True).
struct AvalObj : OpaqueObj {
  AVal aval;
  std::vector<std::string> explicit_axes; // per dimension, "" when none
  std::string varying;                    // inside shard_map: the axes it varies over
  std::vector<std::string> varying_list;  // the same, as names in mesh order
  std::vector<std::string> unreduced;     // the axes it is unreduced over (mesh order)
  std::vector<std::string> reduced;       // the axes it is reduced over (mesh order)
  Value sharding;                         // a NamedSharding over an AbstractMesh
  std::string type_name() const override { return "ShapedArray"; }
  std::string dims(bool short_dtype = false) const {
    std::string name = dtype_name(aval.dtype);
    if (short_dtype) { // "f32": type_str's spelling, up to the shape
      AVal strong = aval;
      strong.weak = false;
      std::string t = type_str(strong);
      name = t.substr(0, t.find('['));
    }
    std::string s = name + "[";
    for (size_t d = 0; d < aval.shape.size(); ++d) {
      s += (d ? "," : "") + std::to_string(aval.shape[d]);
      if (d < explicit_axes.size() && !explicit_axes[d].empty()) s += "@" + explicit_axes[d];
    }
    // JAX's {V:x, U:y, R:z}: the varying axes, the unreduced, the reduced.
    std::string mat = varying.empty() ? "" : "V:" + varying;
    if (!unreduced.empty()) mat += (mat.empty() ? "U:" : ", U:") + axes_label(unreduced);
    if (!reduced.empty()) mat += (mat.empty() ? "R:" : ", R:") + axes_label(reduced);
    return s + "]" + (mat.empty() ? "" : "{" + mat + "}");
  }
  std::string str() const override { return (aval.weak ? "~" : "") + dims(); }
  std::string repr() const override {
    return "ShapedArray(" + dims() + (aval.weak ? ", weak_type=True)" : ")");
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "sharding") return out = sharding, true;
    if (name == "update") { // a copy with fields replaced (JAX's ShapedArray.update)
      auto self = std::make_shared<AvalObj>(*this);
      out = make_builtin("update", [self](InterpreterImpl&, CallArgs& a) {
        ArgReader r("update", a,
                    {"shape", "dtype", "weak_type", "sharding", "vma", "memory_space"});
        auto copy = std::make_shared<AvalObj>(*self);
        if (r.has(0) && !r[0].is_none()) {
          copy->aval.shape = value_to_shape(r[0], "update() shape");
          copy->explicit_axes.clear();
        }
        if (r.has(1) && !r[1].is_none()) copy->aval.dtype = required_dtype(r[1], "update() dtype");
        if (r.has(2) && !r[2].is_none()) copy->aval.weak = r.get_bool(2, false);
        if (r.has(3)) copy->sharding = r[3];
        return Value::object(copy);
      });
      return true;
    }
    if (name == "str_short") { // the type without its weak-type mark: float32[2,3] (f32[2,3])
      std::string full = dims(), brief = dims(true);
      out = make_builtin("str_short", [full, brief](InterpreterImpl&, CallArgs& a) {
        ArgReader r("str_short", a, {"short_dtypes", "mesh_axis_types"});
        return make_str(r.get_bool(0, false) ? brief : full);
      });
      return true;
    }
    if (name == "mat") {
      auto m = std::make_shared<ManualAxisTypeObj>();
      m->varying = varying_list;
      m->unreduced = unreduced;
      m->reduced = reduced;
      return out = Value::object(m), true;
    }
    return aval_attr(aval, name, out);
  }
  std::vector<std::string> attr_names() const override {
    return {"shape",    "dtype", "ndim",      "size",  "weak_type",
            "sharding", "mat",   "str_short", "update"};
  }
  bool equals(const OpaqueObj& o) const override {
    auto* a = dynamic_cast<const AvalObj*>(&o);
    return a && a->aval.dtype == aval.dtype && a->aval.shape == aval.shape &&
           a->aval.weak == aval.weak && a->explicit_axes == explicit_axes &&
           a->varying == varying && a->unreduced == unreduced && a->reduced == reduced;
  }
};

// "a" or "(b,a)": the mesh axes (in mesh order) a value traced inside a
// shard_map varies over, as JAX's types show them; "" elsewhere.
// kind: 0 the varying axes, 1 the unreduced ones, 2 the reduced ones.
std::vector<std::string> varying_names(const Tensor& t, int kind = 0) {
  if (!t->trace) return {};
  auto& tc = *const_cast<TraceContext*>(static_cast<const TraceContext*>(t->trace));
  if (t->trace_id < 0) return {};
  // Inside shard_map, or a trace nested in one (jit, vjp, eval_shape: they
  // share its mesh axes). With check_vma=False JAX's types carry no varying axes.
  TraceContext* sm = nullptr;
  for (OpContext* c = &tc; auto* x = dynamic_cast<TraceContext*>(c); c = &x->outer()) {
    if (x->what() == "pmap") return {};
    if (x->what() == "shard_map") {
      sm = x;
      break;
    }
  }
  if (!sm || !sm->check_vma) return {};
  const Function& f = tc.function();
  const std::vector<std::string>& mesh_axes = sm->function().mesh_axes;
  const IRValue& value = f.values.at(static_cast<size_t>(t->trace_id));
  AxisSet vma = kind == 1 ? value.unreduced : kind == 2 ? value.reduced : value.vma;
  std::vector<std::string> names;
  for (size_t i = 0; i < f.mesh_axes.size(); ++i)
    if ((vma & (AxisSet{1} << i)) &&
        std::find(mesh_axes.begin(), mesh_axes.end(), f.mesh_axes[i]) != mesh_axes.end())
      names.push_back(f.mesh_axes[i]);
  return names;
}

std::string varying_axes(const Tensor& t) {
  std::vector<std::string> names = varying_names(t);
  return names.empty() ? "" : axes_label(names);
}

} // namespace

namespace {

// Where a value's type's sharding comes from: the mesh and layout of a
// concrete array, or what its trace's hook says of a traced one (over the
// current axis types); no mesh for an array on one device. Nullopt for a
// traced value whose trace does not know (no hook, or not partitionable).
struct TypeSource {
  std::optional<Mesh> mesh;
  PartitionSpec spec;
};

std::optional<TypeSource> type_source(const Tensor& t) {
  TypeSource src;
  if (t->sharded) {
    src.mesh = t->sharded->mesh;
    src.spec = t->sharded->spec;
  } else if (t->trace) {
    auto& tc = *const_cast<TraceContext*>(static_cast<const TraceContext*>(t->trace));
    if (t->trace_id < 0 || !tc.type_sharding) return std::nullopt;
    Value s = tc.type_sharding(t->trace_id);
    if (s.is_none()) return std::nullopt;
    auto* so = static_cast<ShardingObj*>(s.as<OpaqueObj>());
    src.mesh = static_cast<AbstractMeshObj*>(so->abstract_mesh.as<OpaqueObj>())->mesh;
    src.spec = so->spec;
  }
  return src;
}

std::vector<std::vector<std::string>> typed_dims(const TypeSource& src, size_t ndim) {
  std::vector<std::vector<std::string>> dims(ndim);
  if (!src.mesh) return dims;
  PartitionSpec typed = explicit_part(src.spec, *src.mesh);
  for (size_t d = 0; d < ndim && d < typed.entries.size(); ++d) dims[d] = typed.entries[d];
  return dims;
}

} // namespace

std::optional<std::vector<std::vector<std::string>>> explicit_type_spec(const Tensor& t) {
  std::optional<TypeSource> src = type_source(t);
  if (!src) return std::nullopt;
  return typed_dims(*src, t->aval.shape.size());
}

std::optional<std::vector<std::vector<std::string>>> explicit_mesh_type(const Tensor& t) {
  std::optional<TypeSource> src = type_source(t);
  if (!src || !src->mesh || !any_explicit_axis(*src->mesh)) return std::nullopt;
  return typed_dims(*src, t->aval.shape.size());
}

namespace {

// The sharding in t's type: over its mesh (or, for a value without one, the
// mesh jax.set_mesh made current), each dimension with the Explicit axes it is
// split over -- Auto axes are the compiler's business, not the type's.
Value type_sharding(InterpreterImpl& in, const Tensor& t) {
  std::optional<TypeSource> src = type_source(t);
  Value mesh = src && src->mesh ? make_abstract_mesh_value(*src->mesh, in.platform().name())
                                : current_abstract_mesh(in);
  const Mesh& m = static_cast<AbstractMeshObj*>(mesh.as<OpaqueObj>())->mesh;
  PartitionSpec typed;
  typed.entries =
      typed_dims(TypeSource{m, src ? src->spec : PartitionSpec{}}, t->aval.shape.size());
  if (src) typed.unreduced = src->spec.unreduced, typed.reduced = src->spec.reduced;
  return make_abstract_sharding(mesh, std::move(typed));
}

Value aval_value(InterpreterImpl& in, const Tensor& t) {
  auto a = std::make_shared<AvalObj>();
  a->aval = t->aval;
  a->varying = varying_axes(t);
  a->varying_list = varying_names(t);
  a->unreduced = varying_names(t, 1);
  a->reduced = varying_names(t, 2);
  // A shard_map's result with unreduced/reduced out_specs (or an array put
  // there): an array, or (in jit) its type.
  if (std::optional<TypeSource> src = type_source(t); src && src->mesh)
    for (const std::string& n : src->mesh->axis_names) {
      auto has = [&](const std::vector<std::string>& v) {
        return std::find(v.begin(), v.end(), n) != v.end();
      };
      if (has(src->spec.unreduced) && !has(a->unreduced)) a->unreduced.push_back(n);
      if (has(src->spec.reduced) && !has(a->reduced)) a->reduced.push_back(n);
    }
  a->sharding = type_sharding(in, t);
  for (const auto& axes : static_cast<ShardingObj*>(a->sharding.as<OpaqueObj>())->spec.entries)
    a->explicit_axes.push_back(axes_label(axes));
  return Value::object(a);
}

// x.sharding: a NamedSharding, or a SingleDeviceSharding for an unsharded array.
Value sharding_of(const std::string& platform, const Tensor& t) {
  if (t->sharded)
    return Value::object(std::make_shared<ShardingObj>(t->sharded->mesh, t->sharded->spec));
  return make_single_device_sharding(platform, t->concrete ? t->concrete->device() : 0);
}

Value shards_of(const std::string& platform, const Tensor& t) {
  ValueList items;
  if (!t->sharded) {
    auto s = std::make_shared<ShardObj>();
    s->device = t->concrete->device();
    s->platform = platform;
    s->index = block_index(ShardBlock{std::vector<int64_t>(t->aval.shape.size(), 0), t->aval.shape},
                           std::vector<int64_t>(t->aval.shape.size(), 1));
    s->data = make_array(t);
    items.push_back(Value::object(s));
    return make_list(std::move(items));
  }
  const ShardedData& d = *t->sharded;
  std::vector<int64_t> factors = split_factors(d.mesh, d.spec, d.global.shape.size());
  for (int64_t pos = 0; pos < d.mesh.size(); ++pos) {
    auto s = std::make_shared<ShardObj>();
    s->device = d.mesh.device_ids[pos];
    s->platform = platform;
    s->index = block_index(block_of(d.mesh, d.spec, d.global.shape, pos), factors);
    s->replica = replica_id(d.mesh, d.spec, d.global.shape, pos);
    s->data = make_array(make_tensor(d.shards[pos]));
    items.push_back(Value::object(s));
  }
  return make_list(std::move(items));
}

Shape shape_arg(CallArgs& a, const char* fn) {
  ArgReader r(fn, a, {"global_shape"}, 1);
  return value_to_shape(r[0], std::string(fn) + "() shape");
}

// The block shape every device holds of an array of `shape` laid out by `s`; a
// clear error when `s` does not fit the shape.
// As JAX's shard_shape, a spec longer than the rank is fine when its extra
// entries are None (they split nothing); an extra entry naming a mesh axis is
// JAX's IndexError from indexing past the rank.
Shape checked_shard_shape(const ShardingObj& s, const Shape& shape, const std::string& fn) {
  if (s.single_device) return shape;
  PartitionSpec fit = s.spec;
  if (fit.entries.size() > shape.size()) {
    for (size_t d = shape.size(); d < fit.entries.size(); ++d)
      if (!fit.entries[d].empty()) throw Error(ErrCode::Index, "list index out of range");
    fit.entries.resize(shape.size());
  }
  std::string problem = check_spec(s.mesh, fit, shape, fn + ": ");
  if (!problem.empty()) throw Error(ErrCode::Spec, problem);
  return block_shape(s.mesh, fit, shape);
}

Value shape_value(const Shape& s) {
  ValueList d;
  for (int64_t x : s) d.push_back(Value::integer(x));
  return make_tuple(std::move(d));
}

} // namespace

bool aval_attr(const AVal& aval, const std::string& name, Value& out) {
  if (name == "shape") {
    ValueList d;
    for (int64_t x : aval.shape) d.push_back(Value::integer(x));
    return out = make_tuple(std::move(d)), true;
  }
  if (name == "dtype") return out = Value::object(std::make_shared<DTypeObj>(aval.dtype)), true;
  if (name == "ndim") return out = Value::integer(aval.ndim()), true;
  if (name == "size") { // math.prod(shape): a ShapeDtypeStruct's may pass 64 bits
    int64_t n = 1;
    bool big = false;
    for (int64_t x : aval.shape) big |= __builtin_mul_overflow(n, x, &n);
    if (!big) return out = Value::integer(n), true;
    BigInt b(1);
    for (int64_t x : aval.shape) b = b * BigInt(x);
    return out = make_int(std::move(b)), true;
  }
  if (name == "weak_type") return out = Value::boolean(aval.weak), true;
  return false;
}

bool ShardingObj::get_attr(InterpreterImpl& in, const std::string& name, Value& out) {
  const std::string plat = in.platform().name();
  if (is_abstract()) { // a type's sharding: no devices
    if (name == "mesh") return out = abstract_mesh, true;
    if (name == "spec") return out = make_spec_value(spec), true;
    return false;
  }
  if (!single_device && name == "mesh") return out = make_mesh_value(mesh), true;
  if (!single_device && name == "spec") return out = make_spec_value(spec), true;
  if (name == "memory_kind") return out = make_str(memory_kind), true;
  if (name == "device_set" || name == "addressable_devices")
    return out = Value::object(std::make_shared<DeviceSetObj>(plat, mesh.device_ids)), true;
  if (name == "_device_assignment") {
    ValueList devs;
    for (int id : mesh.device_ids) devs.push_back(device_value(plat, id));
    return out = make_tuple(std::move(devs)), true;
  }
  if (name == "num_devices") return out = Value::integer(mesh.size()), true;
  if (name == "is_fully_replicated") return out = Value::boolean(replicated(mesh, spec)), true;
  if (name == "is_fully_addressable") return out = Value::boolean(true), true;
  auto self = std::make_shared<ShardingObj>(*this); // the methods outlive no one: they hold a copy
  if (name == "shard_shape") {
    out = make_builtin("shard_shape", [self](InterpreterImpl&, CallArgs& a) {
      return shape_value(checked_shard_shape(*self, shape_arg(a, "shard_shape"), "shard_shape()"));
    });
    return true;
  }
  if (name == "with_memory_kind") {
    out = make_builtin("with_memory_kind", [self](InterpreterImpl&, CallArgs& a) {
      ArgReader r("with_memory_kind", a, {"kind"}, 1);
      auto copy = std::make_shared<ShardingObj>(*self);
      copy->memory_kind = checked_memory_kind(r[0]);
      return Value::object(copy);
    });
    return true;
  }
  if (name == "is_equivalent_to") {
    // JAX: the same devices in the same order, the same memory kind, and the
    // same HLO sharding for arrays of rank `ndim` -- here, every device holding
    // the same block of an array every mesh axis divides.
    out = make_builtin("is_equivalent_to", [self](InterpreterImpl&, CallArgs& a) {
      ArgReader r("is_equivalent_to", a, {"other", "ndim"}, 2);
      auto* o =
          r[0].is_obj(ObjKind::Opaque) ? dynamic_cast<ShardingObj*>(r[0].as<OpaqueObj>()) : nullptr;
      if (!o || o->is_abstract()) return Value::boolean(false);
      if (o->mesh.device_ids != self->mesh.device_ids || o->memory_kind != self->memory_kind)
        return Value::boolean(false);
      int64_t ndim = value_to_int(r[1], "is_equivalent_to() ndim");
      if (ndim < 0) return Value::boolean(false);
      // Entries past the rank must be None (P('x', None) is P('x') for a
      // vector); a spec splitting a dimension the array lacks fits no array.
      ShardingObj lhs = *self, rhs = *o;
      for (ShardingObj* s : {&lhs, &rhs}) {
        auto& e = s->spec.entries;
        if (s->single_device || static_cast<int64_t>(e.size()) <= ndim) continue;
        if (std::any_of(e.begin() + ndim, e.end(), [](const auto& d) { return !d.empty(); }))
          return Value::boolean(false);
        e.resize(static_cast<size_t>(ndim));
      }
      // One device (the lists are equal): every layout of it is the whole array.
      if (self->single_device || o->single_device) return Value::boolean(true);
      Shape shape(static_cast<size_t>(ndim), std::max<int64_t>(self->mesh.size(), 1));
      std::vector<Value> mine = device_indices(lhs, shape), theirs = device_indices(rhs, shape);
      for (size_t p = 0; p < mine.size(); ++p)
        if (!values_equal(mine[p], theirs[p])) return Value::boolean(false);
      return Value::boolean(true);
    });
    return true;
  }
  if (name == "devices_indices_map" || name == "addressable_devices_indices_map") {
    // (one process: every device is addressable)
    out = make_builtin(name, [self, plat, name](InterpreterImpl&, CallArgs& a) {
      Shape shape = shape_arg(a, name.c_str());
      checked_shard_shape(*self, shape, name + "()");
      std::vector<Value> idx = device_indices(*self, shape);
      auto d = std::make_shared<DictObj>();
      for (size_t p = 0; p < idx.size(); ++p)
        d->set(device_value(plat, self->mesh.device_ids[p]), idx[p]);
      return Value::object(d);
    });
    return true;
  }
  return false;
}

std::vector<std::string> ShardingObj::attr_names() const {
  std::vector<std::string> names = {"memory_kind",
                                    "device_set",
                                    "addressable_devices",
                                    "num_devices",
                                    "is_fully_replicated",
                                    "is_fully_addressable",
                                    "shard_shape",
                                    "devices_indices_map",
                                    "is_equivalent_to",
                                    "with_memory_kind",
                                    "addressable_devices_indices_map"};
  if (!single_device) names.insert(names.begin(), {"mesh", "spec"});
  return names;
}

bool sharded_array_attr(InterpreterImpl& in, const Tensor& t, const std::string& name, Value& out) {
  const std::string plat = in.platform().name();
  if (name == "aval") return out = aval_value(in, t), true;
  if (!t->sharded && !t->concrete) return false; // traced values have no placement
  if (name == "sharding") return out = sharding_of(plat, t), true;
  if (name == "addressable_shards" || name == "global_shards")
    return out = shards_of(plat, t), true;
  if (name == "device_buffers" || name == "_arrays") { // _arrays: JAX's private list of them
    ValueList items;
    if (!t->sharded)
      items.push_back(make_array(t));
    else
      for (const Array& s : t->sharded->shards) items.push_back(make_array(make_tensor(s)));
    return out = make_list(std::move(items)), true;
  }
  if (name == "is_fully_replicated")
    return out = Value::boolean(!t->sharded || replicated(t->sharded->mesh, t->sharded->spec)),
           true;
  if (name == "is_fully_addressable") return out = Value::boolean(true), true;
  return false;
}

Value devices_set_value(const std::string& platform, const Tensor& t) {
  return Value::object(std::make_shared<DeviceSetObj>(
      platform, t->sharded ? t->sharded->mesh.device_ids
                           : std::vector<int>{t->concrete ? t->concrete->device() : 0}));
}

namespace {

const ShardingObj& sharding_arg(const Value& v, const char* fn) {
  auto* s = v.is_obj(ObjKind::Opaque) ? dynamic_cast<ShardingObj*>(v.as<OpaqueObj>()) : nullptr;
  if (!s)
    throw Error(ErrCode::Type,
                std::string(fn) + "() sharding must be a NamedSharding, not " + type_name(v));
  if (s->is_abstract())
    throw Error(ErrCode::Type, std::string(fn) + "() needs a NamedSharding over a Mesh, not over " +
                                   pxl::repr(s->abstract_mesh) + " (it has no devices)");
  return *s;
}

// An array of `shape` laid out by `s` from one block per mesh position.
Value assemble(InterpreterImpl& in, const ShardingObj& s, const Shape& shape,
               std::vector<Array> blocks) {
  if (s.single_device) return make_array(make_tensor(blocks[0]));
  auto d = std::make_shared<ShardedData>();
  d->pull_log = in.pull_log();
  d->mesh = s.mesh;
  d->spec = s.spec;
  d->global = AVal{blocks[0].dtype(), shape, false};
  d->shards = std::move(blocks);
  return make_array(make_sharded_tensor(d));
}

// A block a data callback returned: JAX's messages (shape first for the
// callback's blocks, whose dtype the first one sets).
void check_block(const Array& a, const Shape& want, DType dtype, const Shape& global,
                 const Value& sharding) {
  if (a.shape() != want)
    throw Error(ErrCode::Shape, "Expected shard shape " + shape_str(want) +
                                    " doesn't match the single device array shape " +
                                    shape_str(a.shape()) + ". Shape of Array is " +
                                    sharded_type_str(AVal{a.dtype(), global, false}, {}) +
                                    " with sharding " + sharding.as<OpaqueObj>()->repr());
  if (a.dtype() != dtype)
    throw Error(ErrCode::DType,
                std::string("Input buffers to `Array` must have matching dtypes. Got ") +
                    dtype_name(a.dtype()) + ", expected " + dtype_name(dtype) +
                    " for buffer: " + array_str(a));
}

// JAX's _get_and_check_dtype: a dtype= given must be the first block's.
void check_given_dtype(std::optional<DType> given, DType shard, const char* fn) {
  if (given && *given != shard)
    throw Error(ErrCode::Value, std::string("If `dtype` is provided to `jax.") + fn +
                                    "`, it must match the dtype of the addressable shards. Got "
                                    "dtype=" +
                                    dtype_name(*given) + " and shard dtype=" + dtype_name(shard) +
                                    "`.");
}

} // namespace

void add_array_functions(Value& jax_module) {
  auto& jv = jax_module.as<ModuleObj>()->env->vars;
  auto fn = [&jv](const char* name, NativeFn f) { jv[name] = make_builtin(name, std::move(f)); };
  // jax.make_array_from_callback(shape, sharding, data_callback): the callback
  // gets each device's index (a tuple of slices) and returns that block.
  fn("make_array_from_callback", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("make_array_from_callback", a, {"shape", "sharding", "data_callback", "dtype"}, 3);
    Shape shape = value_to_shape(r[0], "make_array_from_callback() shape");
    const ShardingObj& s = sharding_arg(r[1], "make_array_from_callback");
    Shape block = checked_shard_shape(s, shape, "make_array_from_callback()");
    std::vector<Value> idx = device_indices(s, shape);
    if (s.single_device)
      idx = {block_index(ShardBlock{Shape(shape.size(), 0), shape}, Shape(shape.size(), 1))};
    // As JAX, a fully replicated sharding asks the callback once (every
    // device's block is the whole array).
    const bool once = s.single_device || replicated(s.mesh, s.spec);
    std::vector<Array> blocks;
    for (size_t p = 0; p < idx.size(); ++p) {
      if (once && !blocks.empty()) {
        blocks.push_back(blocks[0].on_device(s.mesh.device_ids[p]));
        continue;
      }
      CallArgs ca;
      ca.pos = {idx[p]};
      Tensor bt = in.to_tensor(in.call(r[2], ca, Span{}), Span{});
      if (bt->trace)
        throw Error(ErrCode::Value,
                    "jax.make_array_from_callback cannot be called within a traced context.");
      if (blocks.empty() && r.has(3) && !r[3].is_none())
        check_given_dtype(value_to_dtype(r[3]), bt->aval.dtype, "make_array_from_callback");
      Array b = in.ops().concrete(bt);
      check_block(b, block, blocks.empty() ? b.dtype() : blocks[0].dtype(), shape, r[1]);
      blocks.push_back(b.on_device(s.mesh.device_ids[p]));
    }
    return assemble(in, s, shape, std::move(blocks));
  });
  // jax.make_array_from_single_device_arrays(shape, sharding, arrays): one
  // array per device of the sharding, each on its device.
  fn("make_array_from_single_device_arrays", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("make_array_from_single_device_arrays", a, {"shape", "sharding", "arrays", "dtype"},
                3);
    const char* name = "make_array_from_single_device_arrays";
    Shape shape = value_to_shape(r[0], std::string(name) + "() shape");
    const ShardingObj& s = sharding_arg(r[1], name);
    Shape block = checked_shard_shape(s, shape, std::string(name) + "()");
    // A list or tuple of arrays (JAX's TypeError for anything else, an array
    // included).
    if (!r[2].is_obj(ObjKind::List) && !r[2].is_obj(ObjKind::Tuple)) {
      std::string cls = "<class '" + type_name(r[2]) + "'>";
      if (r[2].is_obj(ObjKind::Array))
        cls = r[2].as<ArrayObj>()->tensor->trace
                  ? "<class 'jax._src.interpreters.partial_eval.DynamicJaxprTracer'>"
                  : "<class 'jaxlib._jax.ArrayImpl'>";
      throw Error(ErrCode::Type, "jax.make_array_from_single_device_arrays `arrays` argument "
                                 "must be a list or tuple, but got " +
                                     cls + ".");
    }
    ValueList arrays = in.iterate(r[2], Span{});
    // JAX's _get_and_check_dtype comes first.
    if (!r.has(3) || r[3].is_none()) {
      if (arrays.empty())
        throw Error(ErrCode::Value,
                    "If the Array has no addressable shards, `dtype` must be provided via the "
                    "`dtype` argument to `jax.make_array_from_single_device_arrays`.");
    } else if (!arrays.empty()) {
      check_given_dtype(value_to_dtype(r[3]), in.to_tensor(arrays[0], Span{})->aval.dtype, name);
    }
    for (const Value& v : arrays)
      if (v.is_obj(ObjKind::Array) && v.as<ArrayObj>()->tensor->trace)
        throw Error(
            ErrCode::Value,
            "jax.make_array_from_single_device_arrays requires a list of concrete arrays as "
            "input, but got types {<class "
            "'jax._src.interpreters.partial_eval.DynamicJaxprTracer'>}");
    // JAX's checks and messages (ArrayImpl._check_and_rearrange), in its order.
    std::vector<Array> given;
    for (const Value& v : arrays) {
      Tensor t = in.to_tensor(v, Span{});
      if (t->sharded && t->sharded->spans_devices())
        throw Error(ErrCode::Value,
                    "When making an array from single-device arrays the input arrays must have "
                    "one shard each. An argument array had " +
                        std::to_string(t->sharded->shards.size()) + " shard(s).");
      // (an array on a mesh of one device: its one block, where it is)
      given.push_back(t->sharded ? t->sharded->shards.at(0) : in.ops().concrete(t));
    }
    if (given.size() != static_cast<size_t>(s.mesh.size()))
      throw Error(ErrCode::Value,
                  "Expected " + std::to_string(s.mesh.size()) +
                      " per-device arrays (this is how many devices are addressable by the "
                      "sharding), but got " +
                      std::to_string(given.size()));
    std::set<int> have, want(s.mesh.device_ids.begin(), s.mesh.device_ids.end());
    std::string ids;
    for (const Array& x : given) {
      have.insert(x.device());
      ids += (ids.empty() ? "" : ", ") + std::to_string(x.device());
    }
    if (have.size() != given.size())
      throw Error(ErrCode::Value,
                  "When making an array from single-device arrays, the input arrays must be from "
                  "distinct devices, but got device IDs [" +
                      ids + "]");
    auto set_str = [](const std::set<int>& a,
                      const std::set<int>& b) { // a - b, as Python prints it
      std::string out;
      for (int x : a)
        if (!b.count(x)) out += (out.empty() ? "" : ", ") + std::to_string(x);
      return out.empty() ? out : "{" + out + "}";
    };
    if (have != want) {
      std::string msg = "Addressable devices and per-device arrays devices do not match.";
      if (std::string d = set_str(want, have); !d.empty())
        msg += " Sharding contains devices " + d + " that are not present in per-device arrays.";
      if (std::string d = set_str(have, want); !d.empty())
        msg += " Per-device arrays contain devices " + d + " that are not present in the sharding.";
      throw Error(ErrCode::Value, msg);
    }
    DType dtype = given[0].dtype();
    for (const Array& x : given) {
      if (x.dtype() != dtype)
        throw Error(ErrCode::DType,
                    std::string("Input buffers to `Array` must have matching dtypes. Got ") +
                        dtype_name(x.dtype()) + ", expected " + dtype_name(dtype) +
                        " for buffer: " + array_str(x));
      if (x.shape() != block)
        throw Error(ErrCode::Shape, "Expected shard shape " + shape_str(block) +
                                        " doesn't match the single device array shape " +
                                        shape_str(x.shape()) + ". Shape of Array is " +
                                        sharded_type_str(AVal{dtype, shape, false}, {}) +
                                        " with sharding " + r[1].as<OpaqueObj>()->repr());
    }
    std::vector<Array> blocks;
    for (int id : s.mesh.device_ids)
      blocks.push_back(*std::find_if(given.begin(), given.end(),
                                     [&](const Array& x) { return x.device() == id; }));
    return assemble(in, s, shape, std::move(blocks));
  });
  // jax.typeof(x): the abstract value (ShapedArray) of an array, a Python
  // scalar or a ShapeDtypeStruct; a mutable array reference's Ref{...} type.
  fn("typeof", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("typeof", a, {"x"}, 1);
    if (auto ref = as_ref(r[0])) return ref_abstract_type(in, *ref);
    if (const AVal* abstract = shape_dtype_struct_aval(r[0])) {
      auto v = std::make_shared<AvalObj>();
      v->aval = *abstract;
      v->varying_list = shape_dtype_struct_varying(r[0]);
      v->varying = v->varying_list.empty() ? "" : axes_label(v->varying_list);
      return Value::object(v);
    }
    return aval_value(in, in.to_tensor(r[0], Span{}));
  });
}

} // namespace pxl
