// Device meshes and partition specs (the runtime side of jax.sharding).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/aval.hpp"
#include "runtime/collectives.hpp"

namespace pxl {

// jax.sharding.AxisType. pxl propagates shardings the same way for all three
// (as JAX does for Auto axes); the type is kept for printing and equality.
enum class AxisType { Auto, Explicit, Manual };
const char* axis_type_name(AxisType t); // "Auto", "Explicit", "Manual"

// An n-d arrangement of devices with named axes. Device positions are
// row-major over the axes; `device_ids[pos]` is the platform device id.
struct Mesh {
  std::vector<std::string> axis_names;
  std::vector<int64_t> axis_sizes;
  std::vector<int> device_ids;
  // One per axis; empty means every axis is Auto.
  std::vector<AxisType> axis_types = {};

  int64_t size() const { return static_cast<int64_t>(device_ids.size()); }
  int ndim() const { return static_cast<int>(axis_names.size()); }
  int axis_of(const std::string& name) const; // -1 if absent
  int64_t axis_size(const std::string& name) const;
  // The mesh coordinates of the device at `pos` (row-major).
  std::vector<int64_t> coords(int64_t pos) const;
  int64_t position(const std::vector<int64_t>& coords) const;
  // Groups of positions for a collective over `axes` (listed order: first name
  // major): devices that share every other coordinate form a group, in rank order.
  GroupLayout groups(const std::vector<std::string>& axes) const;
  // The same, each group split by axis_index_groups (lists of ranks within a
  // group): one group per (group, index group), its members in the listed
  // order -- JAX's replica groups. Empty index_groups: groups(axes).
  GroupLayout groups(const std::vector<std::string>& axes,
                     const std::vector<std::vector<int64_t>>& index_groups) const;
  // Rank of device `pos` within its group for `axes`.
  int64_t rank_in(const std::vector<std::string>& axes, int64_t pos) const;
  AxisType axis_type(int axis) const;
  // The same devices in the same layout: axis types do not matter here (they
  // change no block placement); jax.sharding.Mesh equality compares them too
  // (same_mesh).
  bool operator==(const Mesh& o) const {
    return axis_names == o.axis_names && axis_sizes == o.axis_sizes && device_ids == o.device_ids;
  }
  bool same_mesh(const Mesh& o) const;
  std::string repr() const; // Mesh('batch': 4, 'model': 2): the short form of diagnostics and IR
  // JAX's str: Mesh('batch': 4, 'model': 2, axis_types=(Auto, Auto))
  std::string jax_str() const;
  // JAX's repr: Mesh(axis_sizes=(4, 2), axis_names=('batch', 'model'), axis_types=(Auto, Auto))
  std::string jax_repr() const;
};

// PartitionSpec: one entry per leading array dimension; each entry lists the
// mesh axes that dimension is split over (empty = None, i.e. replicated).
struct PartitionSpec {
  std::vector<std::vector<std::string>> entries;
  // Dimensions written P.UNCONSTRAINED (their entries empty): JAX leaves them
  // to the compiler; pxl lays them out as None.
  std::vector<size_t> unconstrained;
  // JAX's unreduced= / reduced= sets of mesh axes (in the order written; JAX
  // keeps frozensets). Over an unreduced axis each device holds a partial sum
  // of the value (the whole is the sum over the axis); over a reduced axis the
  // value is replicated, typed as the result of a reduction.
  std::vector<std::string> unreduced = {}, reduced = {};
  // Trailing None entries do not change the layout: P('x') == P('x', None).
  bool operator==(const PartitionSpec& o) const;
  // P('batch', None, ('x', 'y')), or P('x', unreduced={'y'}), as JAX 0.10 prints it
  std::string repr() const;
  // The same unreduced and reduced sets (compared as sets).
  bool same_ur(const PartitionSpec& o) const;
  // Axes the spec mentions, in order of appearance.
  std::vector<std::string> axes() const;
};

// How a global array is split: per device, the block's start offsets and shape.
struct ShardBlock {
  std::vector<int64_t> start;
  Shape shape;
};

// The block of `global` that device `pos` holds under `spec` (shape rule, no checks).
ShardBlock block_of(const Mesh& mesh, const PartitionSpec& spec, const Shape& global, int64_t pos);
// The per-device block shape (every device's is the same).
Shape block_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& global);
// Checks a spec against a mesh and a global shape: check_spec_axes, then
// check_divisible. Each returns a message, empty when fine. `axes_prefix`
// (the caller's name) leads a check_spec_axes message only: JAX's
// IndivisibleError text stands on its own.
std::string check_spec(const Mesh& mesh, const PartitionSpec& spec, const Shape& global,
                       const std::string& axes_prefix = {});
// No more entries than the rank, every axis the mesh's, none twice.
std::string check_spec_axes(const Mesh& mesh, const PartitionSpec& spec, const Shape& global);
// Every dimension divisible by the product of its axes' sizes; the message is
// JAX's IndivisibleError (names the dimension, both sizes and the sharding).
std::string check_divisible(const Mesh& mesh, const PartitionSpec& spec, const Shape& global);
// How many parts each dimension is split into (1 for unsplit ones).
std::vector<int64_t> tiling_factors(const Mesh& mesh, const PartitionSpec& spec, size_t rank);

} // namespace pxl
