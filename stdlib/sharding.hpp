// Host objects of jax.sharding (Mesh, PartitionSpec, NamedSharding) and the
// SPMD transformations (pmap, shard_map) and collectives built on them.
#pragma once
#include "lang/interp_impl.hpp"
#include "runtime/mesh.hpp"
#include "runtime/sharded.hpp"
#include <optional>

namespace pxl {

struct MeshObj : OpaqueObj {
  explicit MeshObj(Mesh m) : mesh(std::move(m)) {}
  Mesh mesh;
  std::string type_name() const override { return "Mesh"; }
  std::string repr() const override { return mesh.jax_repr(); }
  std::string str() const override { return mesh.jax_str(); }
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override;
  std::vector<std::string> attr_names() const override;
  bool equals(const OpaqueObj& o) const override;
  // `with mesh:` makes it the current mesh for the block.
  bool enter(InterpreterImpl& in, Value& bound) override;
  void exit(InterpreterImpl& in) override { in.pop_context_mesh(); }
  // `@mesh` on a function: each call runs with the mesh current (JAX's Mesh
  // is a ContextDecorator).
  bool call(InterpreterImpl& in, CallArgs& args, const Span& where, Value& out) override;
};

// jax.sharding.AbstractMesh: a mesh's axes (names, sizes, types) without its
// devices -- what types carry (jax.typeof(x).sharding.mesh, mesh.abstract_mesh).
// `device_kind` is set ("cpu") for one taken from a concrete mesh; JAX prints it.
struct AbstractMeshObj : OpaqueObj {
  AbstractMeshObj(Mesh m, std::string kind) : mesh(std::move(m)), device_kind(std::move(kind)) {}
  Mesh mesh; // no device_ids
  std::string device_kind;
  std::string type_name() const override { return "AbstractMesh"; }
  std::string repr() const override;
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override;
  std::vector<std::string> attr_names() const override;
  bool equals(const OpaqueObj& o) const override;
};
// The abstract mesh of `m` (its devices dropped) on `platform`.
Value make_abstract_mesh_value(const Mesh& m, const std::string& platform);
// NamedSharding(abstract_mesh, spec): a type's sharding.
Value make_abstract_sharding(const Value& abstract_mesh, PartitionSpec spec);
// The abstract mesh of jax.set_mesh's current mesh (AbstractMesh((), ...) when none).
Value current_abstract_mesh(InterpreterImpl& in);

struct SpecObj : OpaqueObj {
  explicit SpecObj(PartitionSpec s) : spec(std::move(s)) {}
  PartitionSpec spec;
  std::string type_name() const override { return "PartitionSpec"; }
  std::string repr() const override { return spec.repr(); }
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override;
  std::vector<std::string> attr_names() const override;
  bool equals(const OpaqueObj& o) const override;
  // JAX's PartitionSpec is a tuple: its entries (None, 'x', ('x', 'y')); with
  // unreduced/reduced axes, iterating or indexing it is JAX's ValueError.
  bool items(ValueList& out) const override;
  bool get_item(InterpreterImpl& in, const Value& index, Value& out) override;
  // P + P, P + tuple, tuple + P (JAX's __add__/__radd__).
  bool apply_operator(InterpreterImpl& in, const std::string& op, const Value& other,
                      bool self_first, Value& out) override;
  // The entries as JAX's canonical partitions tuple (no unreduced check).
  ValueList partitions() const;
};
// P(*partitions, unreduced=..., reduced=...), checked as JAX's constructor
// checks it; pass empty frozensets for sets not given.
PartitionSpec make_partition_spec(const ValueList& partitions, const Value& unreduced,
                                  const Value& reduced);

// A NamedSharding, or (single_device) the SingleDeviceSharding of an array on
// one device: a mesh of that one device with no axes.
struct ShardingObj : OpaqueObj {
  ShardingObj(Mesh m, PartitionSpec s) : mesh(std::move(m)), spec(std::move(s)) {}
  Mesh mesh;
  PartitionSpec spec;
  bool single_device = false;
  // GSPMDSharding({replicated}): how JAX reports the layout of a value in a
  // program compiled for one device (a single_device sharding otherwise).
  bool gspmd_replicated = false;
  std::string platform = "cpu"; // the device's, for a SingleDeviceSharding's repr
  // The memory the sharding names ("device", "pinned_host", "unpinned_host"):
  // printed and compared as JAX does; pxl's arrays all live in device memory.
  std::string memory_kind = "device";
  // An AbstractMeshObj when this is a type's sharding (jax.typeof(x).sharding):
  // `mesh` then has the axes but no devices, and nothing can be placed on it.
  Value abstract_mesh;
  bool is_abstract() const { return !abstract_mesh.is_none(); }
  std::string type_name() const override {
    if (gspmd_replicated) return "GSPMDSharding";
    return single_device ? "SingleDeviceSharding" : "NamedSharding";
  }
  std::string repr() const override;
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override;
  std::vector<std::string> attr_names() const override;
  bool equals(const OpaqueObj& o) const override;
};
Value make_single_device_sharding(const std::string& platform, int device);
// A sharding's memory_kind= argument: one the CPU devices address (JAX's
// ValueError naming them otherwise).
std::string checked_memory_kind(const Value& v);

// An n-d grid of devices: what np.array(jax.devices()) and
// mesh_utils.create_device_mesh give (numpy object arrays of devices in JAX).
struct DeviceGridObj : OpaqueObj {
  DeviceGridObj(Shape s, std::vector<int> i, std::string p)
      : shape(std::move(s)), ids(std::move(i)), platform(std::move(p)) {}
  Shape shape;
  std::vector<int> ids; // row-major
  std::string platform; // the devices' ("cpu" | "cuda")
  std::string type_name() const override { return "ndarray"; }
  std::string repr() const override;
  std::string str() const override;
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override;
  std::vector<std::string> attr_names() const override {
    return {"shape", "ndim", "size", "reshape", "tolist", "flat"};
  }
  bool items(ValueList& out) const override;
  bool get_item(InterpreterImpl& in, const Value& index, Value& out) override;
};
// The Device object of `platform`'s device `id`: CpuDevice(id=N) / CudaDevice(id=N)
// as JAX prints them. Every device value pxl hands out (jax.devices(), mesh and
// shard devices, x.devices()) is made here, so they all print alike.
Value device_value(const std::string& platform, int id);
// A DeviceGridObj when `v` is a (nested) list of devices or already a grid, else null.
std::shared_ptr<DeviceGridObj> device_grid_of(const Value& v);

// The mesh axis of a pmap without axis_name (JAX's name: pmap results'
// shardings print it).
inline constexpr const char* kPmapAxisName = "_internal_pmap_axis_name";

// Value conversions.
const Mesh* value_to_mesh(const Value& v);                            // nullptr if not a Mesh
PartitionSpec value_to_spec(const Value& v, const std::string& what); // P(...) or None
Value make_mesh_value(Mesh m);
Value make_spec_value(PartitionSpec s);

// Array attributes that only sharded arrays have (sharding, addressable_shards,
// device_buffers, ...); false when `name` is not one of them.
bool sharded_array_attr(InterpreterImpl& in, const Tensor& t, const std::string& name, Value& out);

// .shape, .dtype, .ndim, .size, .weak_type of an abstract value (ShapedArray,
// ShapeDtypeStruct); false for other names.
bool aval_attr(const AVal& aval, const std::string& name, Value& out);

// The sharding that is part of an array's type (JAX's typeof(x).sharding.spec):
// per dimension, the Explicit mesh axes it is split over; all empty for an
// array on one device or split over Auto axes only. Nullopt for a traced value
// whose type's sharding is not known (jit knows it over Explicit meshes).
std::optional<std::vector<std::vector<std::string>>> explicit_type_spec(const Tensor& t);
// explicit_type_spec of a value whose type's mesh is known to have Explicit
// axes (a concrete array laid out over one, a value jit types over one);
// nullopt otherwise. What JAX's transpose rules pass on as a cotangent's
// out_sharding: the cotangent is typed as its primal.
std::optional<std::vector<std::vector<std::string>>> explicit_mesh_type(const Tensor& t);

// x.devices(): the set of devices holding `t` (on `platform`).
Value devices_set_value(const std::string& platform, const Tensor& t);

// jax.make_array_from_callback, jax.make_array_from_single_device_arrays,
// jax.typeof (stdlib/sharded_array.cpp).
void add_array_functions(Value& jax_module);

// The mesh `with mesh:` (or a Mesh used as a decorator) made current, which
// JAX 0.10 reads only in pjit and with_sharding_constraint; null when none.
// (value_to_mesh of in.context_mesh() is jax.set_mesh's mesh.)
const Mesh* legacy_context_mesh(InterpreterImpl& in);
// JAX's RuntimeError text for with_sharding_constraint of a bare
// PartitionSpec with no mesh in context.
std::string wsc_needs_mesh_message();
// JAX's ValueError (canonicalize_sharding) for a bare PartitionSpec where no
// mesh is in context (reshard, device_put's, out_sharding=).
std::string spec_needs_mesh_message(const PartitionSpec& spec);

// `target` itself, or a bare PartitionSpec made a NamedSharding over the mesh
// jax.set_mesh made current (JAX's error naming `fn` when there is none).
Value spec_over_current_mesh(InterpreterImpl& in, const Value& target, const std::string& fn);

// A cotangent `ct` typed as its primal (JAX's cotangents have their primal's
// type): over Explicit mesh axes, laid out as `primal` is (eagerly) or
// constrained to its type's sharding (traced); `ct` itself otherwise.
Tensor typed_like_primal(InterpreterImpl& in, const Tensor& ct, const Tensor& primal);

// Inside traced code: `leaf` with a sharding_constraint to `target` (a
// NamedSharding or a PartitionSpec), which jit's partitioner honours; `leaf`
// itself inside shard_map/pmap (whose axes are manual there) or for None.
Value constrain_traced(InterpreterImpl& in, const Value& leaf, const Value& target,
                       const std::string& fn);
// JAX's ValueError when a with_sharding_constraint's spec names Explicit axes
// of `mesh` ("... can only refer to Auto axes of the mesh. ... reshard API?").
void check_wsc_auto_axes(InterpreterImpl& in, const Mesh& mesh, const PartitionSpec& spec);

// jax.device_put of one array leaf to `target`: a Device, a NamedSharding, or
// None (the default device). An array already laid out so is returned as is.
Value device_put_leaf(InterpreterImpl& in, const Value& leaf, const Value& target);

// Module contents (stdlib/sharding.cpp, stdlib/spmd.cpp, stdlib/collectives.cpp).
void add_sharding_functions(InterpreterImpl& in, Value& sharding_module, Value& jax_module);
void add_spmd_functions(InterpreterImpl& in, Value& jax_module, Value& shard_map_module);
void add_collectives(InterpreterImpl& in, Value& lax_module);

// out_sharding= / device= of jnp, lax and jax.random functions, and
// jax.reshard (stdlib/out_sharding.cpp); after every module is installed.
void add_out_sharding(InterpreterImpl& in, Value& jax_module);

// What the REPL's :ir, :comm, :llvm and :ptx show of a call.
enum class Lowered { Ir, Comm, Llvm, Ptx };
// The IR, communication report, optimized LLVM IR of the kernels, or their
// PTX, of calling fn(*args), traced but not run.
std::string lower_call(InterpreterImpl& in, const Value& fn, CallArgs& args, const Span& where,
                       Lowered what);

// visualize_sharding's keyword arguments that change the picture: the height
// of a whole 2-d array in lines is int(10 * scale), a cell's width is kept
// within [min_width, max_width].
struct PictureOptions {
  double scale = 1.0;
  int min_width = 9, max_width = 80;
};
// "a visualization of which device holds which block" (visualize_sharding).
// `platform` labels the cells as JAX does ("CPU 0", "GPU 0": Platform::picture_label).
std::string sharding_picture(const ShardedData& d, const std::string& platform = "CPU",
                             const PictureOptions& opts = {});

} // namespace pxl
